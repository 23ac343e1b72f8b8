"""Throughput of BERT tokenization + packing: keras_bert_lab in tf.data against HF BertTokenizerFast.

What is timed: turning raw paragraphs into BERT model inputs — WordPiece tokenization with the real
bert-base-uncased vocabulary (uncased), then ``[CLS] A [SEP]`` packing, truncation and padding to
128 tokens (``token_ids``, ``segment_ids``, ``padding_mask``) — on the first 20,000 non-empty
paragraphs of WikiText-2 train (9.1 M characters), in batches of 256. ``--pairs`` packs consecutive
paragraphs as ``[CLS] A [SEP] B [SEP]`` with longest-first truncation instead.

Implementations:

- ``keras_bert_lab``: ``WordPieceTokenizer`` + ``BertPacker`` inside
  ``tf.data.Dataset.from_tensor_slices(texts).batch(256).map(..., num_parallel_calls=AUTOTUNE)
  .prefetch(AUTOTUNE)``, iterated to the end (what ``model.fit`` consumes), outputs as NumPy.
- ``hf``: ``transformers.BertTokenizerFast(vocab=..., do_lower_case=True)`` called on each batch
  of 256 with ``truncation=True, max_length=128, padding="max_length", return_tensors="np"`` (its
  Rust batch encoder is multi-threaded). The reference for ids.
- ``tf_text_fast_bert`` (context only): tensorflow-text's ``FastBertTokenizer`` (lower-case + NFD +
  strip accents) + the same packer in the same tf.data pipeline: the speed of a fused C++ op that
  does *not* give the reference ids.
- ``keras_hub`` (context only): keras-hub 0.32's ``BertTokenizer(lowercase=True)`` +
  ``MultiSegmentPacker`` (its round-robin pair truncation) in the same tf.data pipeline.

Every implementation's packed outputs are compared with ``hf``'s; the number of sequences that
differ in any of the three arrays is reported ("mismatched"). Threads: library defaults (all cores).

Method: one process; each implementation is warmed up once on the full set (tracing, caches), then
``--repeats`` timed passes are interleaved (order rotating per repeat); the figure is the median
sequences/s over repeats. tokens/s counts real (non-padding) tokens of the packed outputs. The
share of the machine's CPU time used by *other* processes during each implementation's passes is
read from ``/proc/stat`` (column "other%"): a high value means the figure is contended.

Usage::

    .venv/bin/python benchmarks/tokenization.py               # ≈ 1 min on 2 cores
    .venv/bin/python benchmarks/tokenization.py --pairs
    .venv/bin/python benchmarks/tokenization.py --paragraphs 2000 --repeats 1   # smoke test
"""

import os
import sys

# Run as a script: this folder off the path (no sibling may shadow a standard-library module),
# the repository root on it.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks.machine import cpu_jiffies, own_seconds  # noqa: E402

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

KEYS = (("token_ids", "input_ids"), ("segment_ids", "token_type_ids"),
        ("padding_mask", "attention_mask"))


def make_ours(texts, pairs, length, batch):
    import tensorflow as tf

    from keras_bert_lab.data import registry as datasets
    from keras_bert_lab.preprocessing.packer import BertPacker
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(datasets.locate("bert_uncased_vocab"))
    packer = BertPacker.from_tokenizer(tokenizer, length)
    return _tf_data_runner(texts, pairs, batch, lambda *x: packer.pack(*map(tokenizer, x)))


def make_fast_bert(texts, pairs, length, batch):
    import tensorflow_text as tf_text

    from keras_bert_lab.data import registry as datasets
    from keras_bert_lab.preprocessing.packer import BertPacker
    from keras_bert_lab.presets.vocabulary import read_vocabulary

    vocab = read_vocabulary(datasets.locate("bert_uncased_vocab"))
    import tensorflow as tf

    fast = tf_text.FastBertTokenizer(vocab, token_out_type=tf.int32,
                                     lower_case_nfd_strip_accents=True)
    packer = BertPacker(length, vocab.index("[CLS]"), vocab.index("[SEP]"), vocab.index("[PAD]"))
    return _tf_data_runner(texts, pairs, batch, lambda *x: packer.pack(*map(fast.tokenize, x)))


def _tf_data_runner(texts, pairs, batch, fn):
    import numpy as np
    import tensorflow as tf

    inputs = (texts[:-1], texts[1:]) if pairs else texts
    ds = (tf.data.Dataset.from_tensor_slices(inputs).batch(batch)
          .map(fn, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))

    def run():
        parts = [{k: v.numpy() for k, v in b.items()} for b in ds]
        return {k: np.concatenate([p[k] for p in parts]) for k, _ in KEYS}
    return run


def make_hf(texts, pairs, length, batch):
    import numpy as np
    from transformers import BertTokenizerFast

    from keras_bert_lab.data import registry as datasets

    hf = BertTokenizerFast(vocab=str(datasets.locate("bert_uncased_vocab")), do_lower_case=True)
    assert len(hf) == 30522, len(hf)
    a, b = (texts[:-1], texts[1:]) if pairs else (texts, None)

    def run():
        parts = []
        for i in range(0, len(a), batch):
            enc = hf(a[i:i + batch], None if b is None else b[i:i + batch], truncation=True,
                     max_length=length, padding="max_length", return_tensors="np")
            parts.append({ours: enc[theirs] for ours, theirs in KEYS})
        return {k: np.concatenate([p[k] for p in parts]) for k, _ in KEYS}
    return run


def make_keras_hub(texts, pairs, length, batch):
    import keras_hub
    import tensorflow as tf

    from keras_bert_lab.data import registry as datasets

    tokenizer = keras_hub.tokenizers.BertTokenizer(
        vocabulary=str(datasets.locate("bert_uncased_vocab")), lowercase=True)
    packer = keras_hub.layers.MultiSegmentPacker(
        length, start_value=tokenizer.cls_token_id, end_value=tokenizer.sep_token_id,
        pad_value=tokenizer.pad_token_id)  # round-robin pair truncation (keras-hub's default)

    def fn(*x):
        ids, segments = packer(tuple(tokenizer(t) for t in x))
        return {"token_ids": ids, "segment_ids": segments,
                "padding_mask": tf.cast(ids != tokenizer.pad_token_id, tf.int32)}
    return _tf_data_runner(texts, pairs, batch, fn)


IMPLEMENTATIONS = {"keras_bert_lab": make_ours, "hf": make_hf, "tf_text_fast_bert": make_fast_bert,
                   "keras_hub": make_keras_hub}
DEFAULT_IMPLS = "keras_bert_lab,hf,tf_text_fast_bert,keras_hub"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=20000)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", action="store_true", help="pack consecutive paragraphs as pairs")
    parser.add_argument("--impls", default=DEFAULT_IMPLS, help=f"any of {', '.join(IMPLEMENTATIONS)}")
    args = parser.parse_args()

    import numpy as np

    from keras_bert_lab.data import registry as datasets

    texts = datasets.wikitext2_paragraphs("train")[:args.paragraphs]
    impls = args.impls.split(",")
    if "hf" not in impls:
        impls.insert(0, "hf")  # the reference every result is checked against
    print(f"{len(texts):,} WikiText-2 train paragraphs ({sum(map(len, texts)) / 1e6:.1f} M chars), "
          f"{'pairs' if args.pairs else 'single segments'}, sequence length "
          f"{args.sequence_length}, batch {args.batch_size}, {os.cpu_count()} CPUs", flush=True)
    runners, outputs = {}, {}
    for name in impls:
        start = time.time()
        runners[name] = IMPLEMENTATIONS[name](texts, args.pairs, args.sequence_length,
                                              args.batch_size)
        outputs[name] = runners[name]()  # warm-up pass (tracing, caches); also the checked output
        print(f"  {name}: set up and warmed up in {time.time() - start:.1f}s", flush=True)
    rates = {name: [] for name in impls}
    other = {name: [] for name in impls}
    for rep in range(args.repeats):
        order = impls[rep % len(impls):] + impls[:rep % len(impls)]
        for name in order:
            j0, own0, t0 = cpu_jiffies(), own_seconds(), time.perf_counter()
            runners[name]()
            elapsed = time.perf_counter() - t0
            j1, own1 = cpu_jiffies(), own_seconds()
            rates[name].append(len(outputs[name]["token_ids"]) / elapsed)
            if j0 and j1 and j1[1] > j0[1]:
                ticks = os.sysconf("SC_CLK_TCK")
                busy = (j1[0] - j0[0]) / ticks
                total = (j1[1] - j0[1]) / ticks
                other[name].append(max(0.0, busy - (own1 - own0)) / total * 100)
    reference = outputs["hf"]
    hf_rate = statistics.median(rates["hf"])
    print(f"\n{'implementation':<20}{'seq/s':>9}{'tokens/s':>12}{'vs hf':>8}{'other%':>8}"
          f"{'mismatched':>12}")
    for name in impls:
        out = outputs[name]
        differs = np.zeros(len(out["token_ids"]), bool)
        for key, _ in KEYS:
            differs |= (out[key] != reference[key]).any(axis=1)
        rate = statistics.median(rates[name])
        tokens = rate * out["padding_mask"].sum() / len(out["padding_mask"])
        load = f"{statistics.median(other[name]):.0f}" if other[name] else "n/a"
        print(f"{name:<20}{rate:>9,.0f}{tokens:>12,.0f}{rate / hf_rate:>7.2f}x{load:>8}"
              f"{int(differs.sum()):>7,}/{len(differs):,}")


if __name__ == "__main__":
    main()
