"""GPT-1 BPE tokenization: ids against transformers' OpenAIGPTTokenizer, and throughput.

Reference: ``transformers.OpenAIGPTTokenizer(vocab=dict, merges=[(a, b), ...])`` (transformers
5.x: ``BertNormalizer(lowercase=True)`` + ``BertPreTokenizer`` + a Rust BPE model with
``end_of_word_suffix="</w>"``), with GPT-1's ``_start_ _delimiter_ _classify_`` added as special
tokens. GPT-1's own 40,000-merge files are not in any installed package (the allennlp fixture's
tiny encoder_bpe.json/vocab.bpe cannot even be loaded by ``tokenizers``: its merges name
characters that are not in its vocabulary), so the vocabulary and merges are learned here by
Hugging Face ``tokenizers``' ``BpeTrainer`` (the reference's own library) on WikiText-2 train:
``--merges`` merges (default 40,000, GPT-1's count), every character, ``<unk>``. Our tokenizer
and the reference read that same vocabulary and merges.

Checked: the ids of every non-empty line of WikiText-2 valid, for our Python path
(``BytePairTokenizer.encode``) and our TensorFlow path (the tokenizer mapped over a
``tf.data.Dataset``); lines whose ids differ from the reference are counted ("mismatched").

Timed (tokens/s = reference tokens / seconds, median of ``--repeats`` passes over all lines):

- ``transformers``: one call on the list of lines (its Rust batch encoder; all cores).
- ``ours python (cold)``: ``encode(lines)`` with an empty word cache (a fresh tokenizer);
  ``ours python (warm)``: the same tokenizer again, every word cached.
- ``ours tf.data``: ``Dataset.from_tensor_slices(lines).batch(B).map(tokenizer, AUTOTUNE)
  .prefetch(AUTOTUNE)`` iterated to the end, after one warm-up pass (tracing).
- training: ``bpe_trainer.learn_merges`` on the word counts of WikiText-2 train (counting
  excluded) against ``tokenizers``' ``BpeTrainer`` on the same words, given our base-symbol
  order; the merges are compared one by one.

Usage::

    .venv/bin/python benchmarks/bpe_tokenizer.py                 # ≈ 1.5 min on 2 cores
    .venv/bin/python benchmarks/bpe_tokenizer.py --merges 10000 --repeats 1
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def reference_files(train_lines, num_merges):
    """Vocabulary and merges learned by `tokenizers` the way GPT-1's were laid out."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    model = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    model.normalizer = normalizers.BertNormalizer(lowercase=True)
    model.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # Learn until pairs get rarer than 2 (≈ 60 k merges), then keep the first `num_merges`.
    trainer = trainers.BpeTrainer(vocab_size=10**7, min_frequency=2, special_tokens=["<unk>"],
                                  end_of_word_suffix="</w>", show_progress=False)
    start = time.perf_counter()
    model.train_from_iterator(train_lines, trainer)
    seconds = time.perf_counter() - start
    data = json.loads(model.to_str())["model"]
    merges = [tuple(m) for m in data["merges"]][:num_merges]
    # Trim to the first `num_merges` merges: base symbols + <unk> + those merges' results.
    made = {a + b for a, b in merges}
    vocab = {t: i for t, i in data["vocab"].items()
             if t == "<unk>" or len(t.replace("</w>", "")) == 1 or t in made}
    vocab = {t: n for n, (t, _) in enumerate(sorted(vocab.items(), key=lambda kv: kv[1]))}
    return vocab, merges, seconds


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--merges", type=int, default=40000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()

    import tensorflow as tf
    from transformers import OpenAIGPTTokenizer

    from keras_bert_lab.data import registry
    from keras_bert_lab.preprocessing.bpe import GPT_SPECIAL_TOKENS, BytePairTokenizer
    from keras_bert_lab.preprocessing.bpe_trainer import learn_merges
    from keras_bert_lab.preprocessing.wordpiece_trainer import count_words

    train = registry.wikitext2_paragraphs("train")
    lines = [line for line in registry.load("wikitext2", "valid") if line.strip()]
    vocab, merges, hf_train_s = reference_files(train, args.merges)
    print(f"reference vocabulary: {len(vocab):,} tokens, {len(merges):,} merges "
          f"(learned by tokenizers in {hf_train_s:.1f} s); {len(lines):,} valid lines")

    reference = OpenAIGPTTokenizer(vocab=vocab, merges=merges)
    reference.add_special_tokens({"additional_special_tokens": list(GPT_SPECIAL_TOKENS)})
    expected, ref_s = timed(lambda: reference(lines, add_special_tokens=False)["input_ids"],
                            args.repeats)
    tokens = sum(map(len, expected))
    rows = [("transformers OpenAIGPTTokenizer", ref_s, 0)]

    cold = []
    for _ in range(args.repeats):
        ours = BytePairTokenizer(vocab, merges)
        start = time.perf_counter()
        got = ours.encode(lines)
        cold.append(time.perf_counter() - start)
    assert ours.vocabulary_size == len(reference)
    rows.append(("ours python (cold cache)", statistics.median(cold),
                 sum(a != b for a, b in zip(expected, got))))
    got, warm_s = timed(lambda: ours.encode(lines), args.repeats)
    rows.append(("ours python (warm cache)", warm_s, sum(a != b for a, b in zip(expected, got))))

    ours = BytePairTokenizer(vocab, merges)
    dataset = (tf.data.Dataset.from_tensor_slices(lines).batch(args.batch)
               .map(ours, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))

    def run():
        return [row for batch in dataset for row in batch.to_list()]

    run()  # trace
    got, tf_s = timed(run, args.repeats)
    rows.append((f"ours tf.data (batch {args.batch})", tf_s,
                 sum(a != b for a, b in zip(expected, got))))

    print(f"\n{'implementation':38s} {'seconds':>8s} {'tokens/s':>10s} {'mismatched':>10s}")
    for name, seconds, bad in rows:
        print(f"{name:38s} {seconds:8.2f} {tokens / seconds:10,.0f} {bad:10d}")
    print(f"({tokens:,} tokens)")

    # Training: both trainers on the same word counts, tokenizers given our base symbol order
    # (else it numbers the "c</w>" symbols in hash-map order, and ties fall differently).
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    counts = count_words(train, max_chars_per_word=2**31 - 1)
    start = time.perf_counter()
    _, learned = learn_merges(counts, num_merges=len(merges), min_frequency=2)
    ours_train_s = time.perf_counter() - start
    alphabet = sorted({c for word in counts for c in word})
    base = alphabet + [c + "</w>" for c in alphabet]
    model = Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=len(base) + len(merges), min_frequency=2,
                                  special_tokens=base, end_of_word_suffix="</w>",
                                  show_progress=False)
    start = time.perf_counter()
    model.train_from_iterator((" ".join([w] * n) for w, n in counts.items()), trainer)
    hf_s = time.perf_counter() - start
    theirs = [tuple(m) for m in json.loads(model.to_str())["model"]["merges"]]
    print(f"\nbpe training on WikiText-2 train ({sum(counts.values()):,} words, {len(counts):,} "
          f"distinct), {len(learned):,} merges: ours {ours_train_s:.1f} s, tokenizers "
          f"{hf_s:.1f} s (its input: the words repeated as text); merges equal: "
          f"{learned == theirs} ({sum(a != b for a, b in zip(learned, theirs))} differ)")

if __name__ == "__main__":
    main()
