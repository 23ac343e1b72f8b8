"""Throughput of the BERT pretraining input pipeline: keras_bert_lab in tf.data against HF.

What is timed: raw WikiText-2 train paragraphs (the articles' text lines, headings and titles left
out) → pretraining batches of 32 × 128 with dynamic masked-LM masks (15 %, 80/10/10), as NumPy.

- ``keras_bert_lab``: paragraphs split into sentences (``data.sentences.split_sentences``) → every
  sentence tokenized once (``TokenizedCorpus.from_documents``, WordPieceTokenizer) →
  ``pretraining_dataset``: google-style next-sentence pairs (new each epoch) → ``BertPacker`` →
  ``MaskedLMMasker`` → ``(features, labels, sample_weight)``, iterated to the end of the epoch.
- ``hf``: what ``transformers``' ``run_mlm.py`` does (there is no NSP pipeline in transformers 5):
  ``BertTokenizerFast`` on the paragraphs in batches of 1,000 (as ``datasets.map(batched=True)``),
  ``group_texts`` (concatenate, cut into 128-token blocks), then
  ``DataCollatorForLanguageModeling(mlm_probability=0.15)`` on each batch of 32 — with
  ``return_tensors="pt"`` (the default, what ``Trainer`` uses) and ``"np"``; the faster counts.

Two figures per implementation:

- **end to end**: one pass from paragraphs to the last batch — text processing included;
- **per epoch**: what every later epoch costs once the text is tokenized — ours: new pairs +
  pack + new masks; HF: the collator's padding + new masks over the same blocks.

Method: one process; each implementation is warmed up once, then ``--repeats`` timed passes are
interleaved (order rotating); the figure is the median. ``cpu-seq/s`` divides by this process's own
CPU seconds instead of wall time (robust when other processes share the CPUs); ``other%`` is the
share of all CPU time that other processes used during the passes (from ``/proc/stat``).
Sequence counts differ (our NSP instances vary in length; HF's blocks are all full), so tokens/s
(real, non-padding tokens) is shown too.

Usage::

    .venv/bin/python benchmarks/pipeline.py                     # ≈ 2-3 min on 2 busy cores
    .venv/bin/python benchmarks/pipeline.py --documents 60 --repeats 1   # smoke test
"""

import argparse
import os
import statistics
import sys
import time

# Run as a script: this folder off the path (no sibling may shadow a standard-library module),
# the repository root on it.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks.machine import cpu_jiffies, own_seconds  # noqa: E402
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

BATCH, LENGTH = 32, 128


def wikitext_documents(limit):
    """WikiText-2 train as documents of paragraphs (title lines start one, headings dropped)."""
    from keras_bert_lab.data.corpora import read_documents

    return list(read_documents("wikitext2", split=False))[:limit]


# ---- ours -----------------------------------------------------------------------------------
def make_ours(documents, whole_word_masking=False):
    from keras_bert_lab.data import registry as datasets
    from keras_bert_lab.data.sentences import split_sentences
    from keras_bert_lab.pipelines.pretraining import (TokenizedCorpus, create_instances,
                                                      pretraining_dataset)
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(datasets.locate("bert_uncased_vocab"))
    state = {"seed": 0}

    def consume(ds):
        n = tokens = 0
        for features, labels, weights in ds.as_numpy_iterator():
            n += len(labels["nsp"])
            tokens += int(features["padding_mask"].sum())
        return n, tokens

    def end_to_end():
        sentences = [[s for p in d for s in split_sentences(p)] for d in documents]
        corpus = TokenizedCorpus.from_documents(sentences, tokenizer)
        state["corpus"] = corpus
        state["seed"] += 1
        return consume(pretraining_dataset(corpus, tokenizer, batch_size=BATCH,
                                           sequence_length=LENGTH, num_epochs=1,
                                           whole_word_masking=whole_word_masking, seed=state["seed"]))

    def per_epoch():
        # An endless stream, as model.fit sees it; one epoch's worth of batches per pass.
        if "stream" not in state:
            ds = pretraining_dataset(state["corpus"], tokenizer, batch_size=BATCH,
                                     sequence_length=LENGTH, whole_word_masking=whole_word_masking)
            state["stream"] = ds.as_numpy_iterator()
            state["per_epoch"] = len(create_instances(state["corpus"])["a_start"]) // BATCH
        n = tokens = 0
        for _ in range(state["per_epoch"]):
            features, labels, weights = next(state["stream"])
            n += len(labels["nsp"])
            tokens += int(features["padding_mask"].sum())
        return n, tokens

    return end_to_end, per_epoch


# ---- Hugging Face ---------------------------------------------------------------------------
def make_hf(documents, return_tensors):
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling

    from keras_bert_lab.data import registry as datasets

    hf = BertTokenizerFast(vocab=str(datasets.locate("bert_uncased_vocab")), do_lower_case=True)
    assert len(hf) == 30522, len(hf)
    collator = DataCollatorForLanguageModeling(hf, mlm_probability=0.15,
                                               return_tensors=return_tensors)
    paragraphs = [p for d in documents for p in d]
    state = {}

    def collate(blocks):
        n = 0
        for i in range(0, len(blocks) - BATCH + 1, BATCH):
            batch = collator(blocks[i:i + BATCH])
            n += len(batch["input_ids"])
        return n, n * LENGTH  # every block is full

    def end_to_end():
        ids, special = [], []
        for i in range(0, len(paragraphs), 1000):  # datasets.map(batched=True)'s batch size
            enc = hf(paragraphs[i:i + 1000], return_special_tokens_mask=True)
            ids.extend(enc["input_ids"])
            special.extend(enc["special_tokens_mask"])
        # run_mlm.py's group_texts: concatenate every column, cut into blocks of LENGTH.
        flat = [t for row in ids for t in row]
        flat_special = [t for row in special for t in row]
        blocks = [{"input_ids": flat[i:i + LENGTH],
                   "special_tokens_mask": flat_special[i:i + LENGTH]}
                  for i in range(0, len(flat) - LENGTH + 1, LENGTH)]
        state["blocks"] = blocks
        return collate(blocks)

    def per_epoch():
        return collate(state["blocks"])

    return end_to_end, per_epoch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=600, help="WikiText-2 train articles")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--impls", default="keras_bert_lab,keras_bert_lab_wwm,hf_pt,hf_np")
    args = parser.parse_args()

    documents = wikitext_documents(args.documents)
    paragraphs = sum(len(d) for d in documents)
    chars = sum(len(p) for d in documents for p in d)
    print(f"{len(documents)} WikiText-2 train articles, {paragraphs:,} paragraphs "
          f"({chars / 1e6:.1f} M chars) → batches of {BATCH} × {LENGTH}, 15% masking; "
          f"{os.cpu_count()} CPUs", flush=True)
    makers = {"keras_bert_lab": lambda: make_ours(documents),
              "keras_bert_lab_wwm": lambda: make_ours(documents, whole_word_masking=True),
              "hf_pt": lambda: make_hf(documents, "pt"), "hf_np": lambda: make_hf(documents, "np")}
    impls = args.impls.split(",")
    runners = {}
    for name in impls:
        start = time.time()
        runners[name] = makers[name]()
        runners[name][0]()   # warm-up: tracing, caches
        runners[name][1]()
        print(f"  {name}: set up and warmed up in {time.time() - start:.1f}s", flush=True)
    results = {(name, kind): [] for name in impls for kind in (0, 1)}
    for rep in range(args.repeats):
        order = impls[rep % len(impls):] + impls[:rep % len(impls)]
        for name in order:
            for kind in (0, 1):
                j0, own0, t0 = cpu_jiffies(), own_seconds(), time.perf_counter()
                n, tokens = runners[name][kind]()
                wall = time.perf_counter() - t0
                j1, own1 = cpu_jiffies(), own_seconds()
                other = None
                if j0 and j1 and j1[1] > j0[1]:
                    ticks = os.sysconf("SC_CLK_TCK")
                    busy, total = (j1[0] - j0[0]) / ticks, (j1[1] - j0[1]) / ticks
                    other = max(0.0, busy - (own1 - own0)) / total * 100
                results[(name, kind)].append((n / wall, tokens / wall, n / max(own1 - own0, 1e-9),
                                              other, n))
    med = {key: [statistics.median(v[i] for v in values) if values[0][i] is not None else None
                 for i in range(5)] for key, values in results.items()}
    for kind, title in ((0, "end to end (paragraphs → masked batches, one pass)"),
                        (1, "per epoch (already tokenized: pairs/blocks + pack + new masks)")):
        hf = max((med[(n, kind)][0] for n in impls if n.startswith("hf")), default=None)
        print(f"\n{title}\n{'implementation':<22}{'sequences':>10}{'seq/s':>10}{'tokens/s':>12}"
              f"{'cpu-seq/s':>11}{'vs best hf':>11}{'other%':>8}")
        for name in impls:
            seq, tok, cpu_seq, other, n = med[(name, kind)]
            ratio = f"{seq / hf:.2f}x" if hf else "n/a"
            load = f"{other:.0f}" if other is not None else "n/a"
            print(f"{name:<22}{int(n):>10,}{seq:>10,.0f}{tok:>12,.0f}{cpu_seq:>11,.0f}{ratio:>11}"
                  f"{load:>8}")


if __name__ == "__main__":
    main()
