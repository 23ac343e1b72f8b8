"""ELMo vs BERT inference: words/s of every layer's per-word features, per backend, same sentences.

What is timed is the feature-extraction path a user runs (``kbl features extract``): word-split
sentences in, one ``(words, layers, width)`` array per sentence out —
:class:`~keras_bert_lab.features.ElmoWordFeatures` (character ids, the char-CNN, both LSTM
directions; ``<S>``/``</S>`` added) and :class:`~keras_bert_lab.features.BertWordFeatures`
(WordPiece, every block's output, each word's first piece), both in batches of ``--batch-size``
sentences cut to the batch's longest. The sentences are the first ``--sentences`` tweets of
WNUT-16's training file (the feature table's data set).

Models (``--models``):

- ``elmo-small`` / ``elmo-medium`` / ``elmo-original``: ELMo biLMs of allennlp's published sizes
  (13.6 M / 28.0 M / 93.6 M weights) with random weights — speed does not depend on the values;
- ``elmo-preset``: the biLM of ``--elmo-preset`` (e.g. the one ``benchmarks/elmo_pretrain.py``
  trained);
- ``minilm``: the registry preset ``minilm_l6_en_uncased`` (22.7 M weights, real);
- ``bert-base``: BERT-base's shape (12 × 768, 109.5 M weights) with random weights and MiniLM's
  vocabulary.

Each backend runs in its own process. Per model: one untimed pass over all sentences (it
compiles every batch shape), then the median of ``--repeats`` timed passes. "busy%" is the
machine's CPU use during the backend's run (this process's own threads included; 100 % = both
cores).

Usage::

    python benchmarks/elmo_inference.py                                   # ~15 min on 2 cores
    python benchmarks/elmo_inference.py --elmo-preset /work/runs/elmo_wt2/preset
    python benchmarks/elmo_inference.py --backends jax --sentences 16 --repeats 1 \\
        --models elmo-small minilm                                          # a smoke run
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

MODELS = ("elmo-small", "elmo-medium", "elmo-original", "elmo-preset", "minilm", "bert-base")
BACKENDS = ("tensorflow", "jax", "torch")
MINILM = "minilm_l6_en_uncased"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    parser.add_argument("--models", nargs="+", choices=MODELS,
                        default=["elmo-small", "elmo-medium", "elmo-original", "minilm",
                                 "bert-base"])
    parser.add_argument("--elmo-preset", default=None,
                        help="an ELMo preset directory (adds the elmo-preset row)")
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.elmo_preset and "elmo-preset" not in args.models:
        args.models.append("elmo-preset")
    if "elmo-preset" in args.models and not args.elmo_preset:
        parser.error("--models elmo-preset needs --elmo-preset DIR")
    return args


def sentences(count):
    from keras_bert_lab.data import conll, registry

    rows = conll.read_conll(registry.locate("wnut16"), **registry.source("wnut16").options)
    return [list(s.words) for s in rows[:count]]


def feature_source(name, args):
    """``(source, weights)`` for a model name."""
    from keras_bert_lab.models.bert.word_features import BertWordFeatures
    from keras_bert_lab.models.elmo.word_features import ElmoWordFeatures
    from keras_bert_lab.models.bert.backbone import BertBackbone
    from keras_bert_lab.models.bert.config import BertConfig
    from keras_bert_lab.models.elmo.backbone import ElmoBackbone
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    if name.startswith("elmo"):
        bilm = ElmoBackbone.from_preset(args.elmo_preset) if name == "elmo-preset" else \
            ElmoBackbone(name.split("-", 1)[1])
        return ElmoWordFeatures(bilm, batch_size=args.batch_size), bilm.count_params()
    if name == "minilm":
        source = BertWordFeatures.from_preset(MINILM, batch_size=args.batch_size)
        return source, source.backbone.count_params()
    tokenizer = WordPieceTokenizer.from_preset(MINILM)
    backbone = BertBackbone(BertConfig.from_size("base", vocabulary_size=tokenizer.vocabulary_size))
    return BertWordFeatures(backbone, tokenizer, batch_size=args.batch_size), \
        backbone.count_params()


def child(args):
    """Time every model on this process's backend; print one JSON line."""
    import keras

    from benchmarks.machine import cpu_jiffies

    data = sentences(args.sentences)
    words = sum(len(s) for s in data)
    start, rows = cpu_jiffies(), []
    for name in args.models:
        source, weights = feature_source(name, args)
        began = time.perf_counter()
        first = source(data)                       # compiles every batch shape
        warm = time.perf_counter() - began
        times = []
        for _ in range(args.repeats):
            began = time.perf_counter()
            source(data)
            times.append(time.perf_counter() - began)
        seconds = statistics.median(times)
        rows.append({"model": name, "weights": int(weights), "layers": first[0].shape[1],
                     "width": first[0].shape[2], "words": words, "seconds": seconds,
                     "first_pass_s": warm, "words_per_s": words / seconds})
        print(f"  {keras.backend.backend()} {name}: {words / seconds:,.0f} words/s "
              f"({seconds:.1f} s a pass; first pass {warm:.1f} s)", file=sys.stderr, flush=True)
    end = cpu_jiffies()
    busy = None if start is None else (end[0] - start[0]) / max(1, end[1] - start[1])
    print(json.dumps({"backend": keras.backend.backend(), "busy": busy, "rows": rows}))


def main():
    args = parse_args()
    if args.child:
        return child(args)
    results = {}
    for backend in args.backends:
        command = [sys.executable, os.path.abspath(__file__), "--child",
                   "--models", *args.models, "--sentences", str(args.sentences),
                   "--batch-size", str(args.batch_size), "--repeats", str(args.repeats)]
        if args.elmo_preset:
            command += ["--elmo-preset", args.elmo_preset]
        print(f"{backend}: running", flush=True)
        done = subprocess.run(command, env={**os.environ, "KERAS_BACKEND": backend},
                              stdout=subprocess.PIPE, text=True, check=True)
        results[backend] = json.loads(done.stdout.strip().splitlines()[-1])
    first = next(iter(results.values()))
    print(f"\n{first['rows'][0]['words']:,} words in {args.sentences} WNUT-16 sentences, batches "
          f"of {args.batch_size}; words/s (median of {args.repeats} passes)\n")
    print("| model | weights | layers × width | " +
          " | ".join(results) + " |")
    print("|---|---:|---|" + "---:|" * len(results))
    for i, row in enumerate(first["rows"]):
        cells = " | ".join(f"{r['rows'][i]['words_per_s']:,.0f}" for r in results.values())
        print(f"| {row['model']} | {row['weights'] / 1e6:.1f} M | {row['layers']} × "
              f"{row['width']} | {cells} |")
    print("\nbusy% (both cores) per backend: " + ", ".join(
        f"{b} {r['busy']:.0%}" for b, r in results.items() if r["busy"] is not None))


if __name__ == "__main__":
    main()
