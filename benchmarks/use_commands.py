"""``kbl predict`` and ``kbl embed`` throughput against the model's bare ``predict``.

The issue's target: on 10,000 sentences, the commands (with their progress bar) run at ≥ 90 % of
the model's ``predict`` throughput measured alone. What is timed, on the current
``KERAS_BACKEND``, over ``--limit`` sentences (Rotten Tomatoes: all 10,568 polar sentences, cycled
if more are asked for) written one per line to a text file:

- ``kbl predict PRESET --input in.txt --output p.csv`` and ``kbl embed PRESET --input in.txt
  --output e.npy`` through ``keras_bert_lab.cli.main``, in this process, each run from scratch
  (``end to end``: preset loading, model building and compiling, reading, tokenizing, the model,
  writing) and as the command reports it (``after loading``: from the first text to the written
  file);
- the bare model on the **same pre-tokenized inputs** (``BertTextPreprocessor`` output, packed to
  ``--sequence-length``; tokenization not timed), after one warm-up pass:
  ``keras predict``: ``model.predict(features, batch_size=B)`` (Keras' own loop, every batch
  padded to the full length); ``predict_packed``: ``Task.predict_packed`` in file order (each
  batch cut to its longest text); ``same batches``: the command's own batches (length-sorted
  within chunks of 4,096) through ``predict_packed`` — the model's share of the command alone.

The ratio column is each command's rate over the fastest bare path (the strict reading of the
target) and, in brackets, over ``keras predict``. The model is ``--preset``: by default
``minilm`` — all-MiniLM-L6-v2 (the registry preset ``minilm_l6_en_uncased``, 22.7 M parameters)
under an untrained two-class mean-pooling head (no fine-tuned MiniLM classifier ships offline:
this times the computation, not accuracy); ``tiny`` (a random BERT-tiny with the real vocabulary)
for a smoke run; or the directory of a fine-tuned single-text ``BertClassifier`` preset. "other%"
is the share of the machine's CPU used by other processes during a pass (contention).

Usage::

    .venv/bin/python benchmarks/use_commands.py                    # MiniLM, 10,000 sentences
    .venv/bin/python benchmarks/use_commands.py --preset tiny --limit 200 --repeats 1  # smoke
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
import contextlib  # noqa: E402
import csv  # noqa: E402
import io  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def sentences(limit):
    """``limit`` Rotten Tomatoes sentences (all three parts, cycled when more are asked for)."""
    from keras_bert_lab.data.labelled import load_dataset

    parts = load_dataset("rotten_tomatoes")
    pool = [t for name in ("train", "valid", "test") for t in parts[name].texts]
    return [pool[i % len(pool)] for i in range(limit)]


class Timer:
    """Wall seconds of a block and the other processes' share of the CPU meanwhile."""

    def __enter__(self):
        self.j0, self.own0, self.t0 = cpu_jiffies(), own_seconds(), time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
        j1, own1 = cpu_jiffies(), own_seconds()
        self.other = None
        if self.j0 and j1 and j1[1] > self.j0[1]:
            ticks = os.sysconf("SC_CLK_TCK")
            busy, total = (j1[0] - self.j0[0]) / ticks, (j1[1] - self.j0[1]) / ticks
            self.other = max(0.0, busy - (own1 - self.own0)) / total * 100


def run_command(argv):
    """``(end-to-end seconds, seconds the command reports after loading, other%)``; the
    command's stdout is echoed (its progress bar goes to stderr as usual)."""
    from keras_bert_lab.cli import main

    captured = io.StringIO()
    with Timer() as timer, contextlib.redirect_stdout(captured):
        status = main([str(a) for a in argv])
    print(captured.getvalue(), end="")
    if status != 0:
        raise SystemExit(f"kbl {argv[0]} failed with status {status}")
    found = re.search(r"texts in ([0-9.]+) s:", captured.getvalue())
    return timer.seconds, float(found.group(1)) if found else float("nan"), timer.other


def command_order(features, chunk=4096):
    """The command's batches: length-sorted (longest first) within chunks, as run_batches."""
    import numpy as np

    lengths = features["padding_mask"].sum(-1)
    return np.concatenate([begin + np.argsort(-lengths[begin:begin + chunk], kind="stable")
                           for begin in range(0, len(lengths), chunk)])


def bare_rates(model, features, batch_size, repeats):
    """``{path: (sentences/s, other%)}`` of the bare model on packed ``features``, median of
    ``repeats`` passes after a warm-up pass each."""
    order = command_order(features)
    n = len(features["token_ids"])

    def same_batches():
        for begin in range(0, n, batch_size):
            rows = order[begin:begin + batch_size]
            model.predict_packed({k: v[rows] for k, v in features.items()}, batch_size)

    head = {k: v[:2 * batch_size] for k, v in features.items()}
    paths = {"keras predict": lambda: model.predict(features, batch_size=batch_size, verbose=0),
             "predict_packed": lambda: model.predict_packed(features, batch_size),
             "same batches": same_batches}
    warm_ups = {"keras predict": lambda: model.predict(head, batch_size=batch_size, verbose=0)}
    out = {}
    for name, run in paths.items():
        warm_ups.get(name, run)()  # compiles every shape (keras predict has one: two batches)
        passes = []
        for _ in range(repeats):
            with Timer() as timer:
                run()
            passes.append((n / timer.seconds, timer.other))
        out[name] = (statistics.median(p[0] for p in passes),
                     statistics.median(p[1] for p in passes if p[1] is not None)
                     if any(p[1] is not None for p in passes) else None)
    return out


def report(title, n, commands, bare):
    best = max(rate for rate, _ in bare.values())
    keras_rate = bare["keras predict"][0]
    print(f"\n{title}: {n:,} sentences")
    print(f"{'path':<34}{'sentences/s':>13}{'ratio':>16}{'other%':>8}")
    for name, (rate, other) in list(commands.items()) + list(bare.items()):
        load = f"{other:.0f}" if other is not None else "n/a"
        print(f"{name:<34}{rate:>13.1f}{rate / best:>7.2f} ({rate / keras_rate:.2f}){load:>8}")


def measure(args, texts, scratch):
    import keras
    import numpy as np

    from keras_bert_lab import BertClassifier
    from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
    from keras_bert_lab.models.bert.sentence_embedder import SentenceEmbedder

    preset = args.preset
    if preset in ("minilm", "tiny"):
        preset = classifier_preset(preset, scratch / "preset", args.sequence_length,
                                   sentence_embedding={"pooling": "mean", "normalize": True})
    source = scratch / "in.txt"
    source.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    n, b = len(texts), args.batch_size
    print(f"backend {keras.backend.backend()}; {n:,} sentences, batch {b}, length "
          f"{args.sequence_length}; preset {preset}", flush=True)
    flags = ["--input", source, "--batch-size", b, "--sequence-length", args.sequence_length,
             "--overwrite"]

    features = BertTextPreprocessor.from_preset(preset, args.sequence_length)(texts)
    for command, model_class, out in (("predict", BertClassifier, scratch / "p.csv"),
                                      ("embed", SentenceEmbedder, scratch / "e.npy")):
        runs = [run_command([command, preset, "--output", out, *flags])
                for _ in range(args.repeats)]
        commands = {
            f"kbl {command} (end to end)": (n / statistics.median(r[0] for r in runs),
                                            runs[0][2]),
            f"kbl {command} (after loading)": (n / statistics.median(r[1] for r in runs),
                                               runs[0][2])}
        model = model_class.from_preset(preset)
        bare = bare_rates(model, features, b, args.repeats)
        report(f"{command} vs the bare model", n, commands, bare)
        checked = min(n, 1000)   # the first 1,000 texts: keras predict pads each to the length
        reference = model.predict({k: v[:checked] for k, v in features.items()}, batch_size=b,
                                  verbose=0)
        if command == "predict":
            with open(out, encoding="utf-8") as f:
                got = np.array([[float(r["score_negative"]), float(r["score_positive"])]
                                for r in csv.DictReader(f)])[:checked]
            e = np.exp(reference - reference.max(-1, keepdims=True))
            reference = e / e.sum(-1, keepdims=True)
        else:
            got = np.load(out)[:checked]
        print(f"max |Δ| between the command's output and keras predict ({checked:,} texts): "
              f"{float(np.abs(got - reference).max()):.2e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="minilm",
                        help="'minilm' (default), 'tiny', or a single-text BertClassifier "
                             "preset directory")
    parser.add_argument("--limit", type=int, default=10000, help="sentences")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=1,
                        help="timed passes per path (median); each command pass is cold")
    args = parser.parse_args()

    import keras

    keras.utils.set_random_seed(0)
    texts = sentences(args.limit)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="kbl-use-bench-"))
    try:
        measure(args, texts, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
