"""Serving throughput of an exported SavedModel against the Keras model it came from.

What is timed: classifying raw sentences end to end — text in, class probabilities out — on the
first ``--limit`` sentences (default 1,000) of the Rotten Tomatoes test split, in batches of
``--batch-size`` (32):

- ``saved_model``: ``tf.saved_model.load(export).serve(tf.constant(batch))`` per batch — WordPiece,
  packing, the model and softmax all inside the TensorFlow graph
  (:func:`keras_bert_lab.export.export_saved_model`; each batch is cut to its longest text);
- ``keras``: the library's Python path on the current ``KERAS_BACKEND`` —
  ``BertTextPreprocessor`` (tensorflow-text WordPiece, packed to ``--sequence-length``) then
  ``BertClassifier.predict_labels`` (batches cut to their longest text, rounded up to 16).

The model is ``--preset``: a fine-tuned ``BertClassifier`` preset directory, or by default
``minilm``: all-MiniLM-L6-v2 (the registry preset ``minilm_l6_en_uncased``, 22.7 M parameters)
under a two-class head with mean pooling — an *untrained* head (no fine-tuned MiniLM classifier
ships offline), which times the same computation and checks parity, not accuracy. ``tiny`` is a
random BERT-tiny with the real vocabulary, for a quick smoke run.

Reported: sentences/s (median over ``--repeats`` interleaved timed passes, after one warm-up pass
each), the export time, and max |Δ score| between the two paths over all sentences. "other%" is
the share of the machine's CPU time used by other processes during the passes (contention).

Usage::

    .venv/bin/python benchmarks/export_serving.py                       # MiniLM, 1,000 sentences
    .venv/bin/python benchmarks/export_serving.py --preset out/sentiment/preset
    .venv/bin/python benchmarks/export_serving.py --preset tiny --limit 64 --repeats 1  # smoke
"""

import os
import sys

# Run as a script: this folder off the path, the repository root on it.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks.machine import cpu_jiffies, own_seconds  # noqa: E402
from benchmarks.presets import classifier_preset  # noqa: E402

import argparse  # noqa: E402
import pathlib  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="minilm",
                        help="'minilm' (default), 'tiny', or the directory of a single-text "
                             "BertClassifier preset")
    parser.add_argument("--limit", type=int, default=1000, help="sentences to classify")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import keras

    from keras_bert_lab.data.labelled import load_dataset

    keras.utils.set_random_seed(0)
    texts = load_dataset("rotten_tomatoes")["test"].texts[:args.limit]
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="kbl-export-bench-"))
    try:
        measure(args, texts, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(args, texts, scratch):
    """Build or take the preset, export it, time both paths and compare their scores."""
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_bert_lab import BertClassifier
    from keras_bert_lab.export import export_saved_model
    from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor

    preset = args.preset
    if preset in ("minilm", "tiny"):
        preset = classifier_preset(preset, scratch / "preset", args.sequence_length)
    start = time.perf_counter()
    exported = export_saved_model(preset, scratch / "export",  # a single-text model
                                  sequence_length=args.sequence_length, pair=False)
    export_seconds = time.perf_counter() - start
    print(f"backend {keras.backend.backend()}; {len(texts)} sentences, batch {args.batch_size}, "
          f"length {args.sequence_length}; exported in {export_seconds:.1f}s to {exported}",
          flush=True)

    model = BertClassifier.from_preset(preset)
    preprocessor = BertTextPreprocessor.from_preset(preset, args.sequence_length)
    served = tf.saved_model.load(str(exported))
    b = args.batch_size

    def run_keras():
        return model.predict_labels(preprocessor(texts), batch_size=b)["probabilities"]

    def run_saved_model():
        return np.concatenate([served.serve(tf.constant(texts[i:i + b]))["scores"].numpy()
                               for i in range(0, len(texts), b)])

    runners = {"keras": run_keras, "saved_model": run_saved_model}
    outputs = {name: run() for name, run in runners.items()}  # warm-up; the compared outputs
    rates = {name: [] for name in runners}
    other = {name: [] for name in runners}
    names = list(runners)
    for rep in range(args.repeats):
        for name in names[rep % 2:] + names[:rep % 2]:
            j0, own0, t0 = cpu_jiffies(), own_seconds(), time.perf_counter()
            runners[name]()
            elapsed = time.perf_counter() - t0
            j1, own1 = cpu_jiffies(), own_seconds()
            rates[name].append(len(texts) / elapsed)
            if j0 and j1 and j1[1] > j0[1]:
                ticks = os.sysconf("SC_CLK_TCK")
                busy, total = (j1[0] - j0[0]) / ticks, (j1[1] - j0[1]) / ticks
                other[name].append(max(0.0, busy - (own1 - own0)) / total * 100)
    delta = float(np.abs(outputs["saved_model"] - outputs["keras"]).max())
    same = float((outputs["saved_model"].argmax(-1) == outputs["keras"].argmax(-1)).mean())
    keras_rate = statistics.median(rates["keras"])
    print(f"\n{'path':<14}{'sentences/s':>13}{'vs keras':>10}{'other%':>8}")
    for name in names:
        rate = statistics.median(rates[name])
        load = f"{statistics.median(other[name]):.0f}" if other[name] else "n/a"
        print(f"{name:<14}{rate:>13.1f}{rate / keras_rate:>9.2f}x{load:>8}")
    print(f"\nmax |Δ score| over {len(texts)} sentences: {delta:.2e}; same label on "
          f"{same:.1%}")


if __name__ == "__main__":
    main()
