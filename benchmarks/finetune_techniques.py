"""ULMFiT's fine-tuning techniques on a Transformer preset, and ``kbl finetune``'s defaults
against the best setting found.

Issue 14 asks whether discriminative rates, slanted triangular rates and gradual unfreezing help
a Transformer here, and whether ``kbl finetune classify`` with no tuning flags lands near the
best setting these runs find. Each configuration is one ``kbl finetune classify`` run (the
command a user runs, in a subprocess, on the backend of ``KERAS_BACKEND``) from the same preset,
on each ``--datasets`` set, for each seed. A configuration is a name and flags:

- ``default``: no tuning flag at all — the task's defaults or the preset's recommendation;
- ``full``, ``last``, ``full+discr``, ``full+stlr``, ``freez``, ``all``: ULMFiT's Table 7 rows
  (as in ``benchmarks/ulmfit.py``), each with the ``--common`` flags;
- ``NAME:flag=value,flag=value``: any other setting, e.g. ``lr1e-4:learning-rate=1e-4``.

The best configuration is chosen per data set by its mean *validation* accuracy over seeds;
its test accuracy is reported next to ``default``'s (chosen on validation, reported on test).

Usage::

    python benchmarks/finetune_techniques.py --datasets trec6 rotten_tomatoes --seeds 0 1 \\
        --configs default lr1e-4:learning-rate=1e-4 full full+discr full+stlr freez all \\
        --common learning-rate=1e-4
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# Run as a script: this folder off the path, the repository root on it.
_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, _ROOT)
from benchmarks.ulmfit import CONFIGS  # noqa: E402

# ULMFiT's rows (benchmarks/ulmfit.py) as `kbl finetune` flags, without `scratch`: a Transformer
# preset has no from-scratch twin there. The --common flags are added to each.
ROWS = {name: {k: v for k, v in (("unfreeze", unfreeze), ("schedule", schedule),
                                 ("layer-decay", f"{decay:.4f}"))
               if v not in ("all", "linear", "1.0000")}
        for name, (pretrained, unfreeze, schedule, decay) in CONFIGS.items() if pretrained}
SEQUENCE_LENGTH = {"rotten_tomatoes": 64, "trec6": 32}


def _flags(text):
    """``"a=1,b=2"`` → ``{"a": "1", "b": "2"}``."""
    out = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"finetune_techniques.py: {item!r} is not flag=value")
        out[key.strip().lstrip("-")] = value.strip()
    return out


def parse_config(text, common):
    """A --configs entry → (name, flags)."""
    name, _, flags = text.partition(":")
    if name == "default" and not flags:
        return name, {}
    if name in ROWS and not flags:
        return name, {**common, **ROWS[name]}
    if not flags:
        raise SystemExit(f"finetune_techniques.py: unknown configuration {name!r}; use default, "
                         f"{', '.join(ROWS)} or NAME:flag=value,...")
    return name, _flags(flags)


def run_one(preset, dataset, flags, seed, sequence_length, limit):
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "keras_bert_lab.cli", "finetune", "classify",
                   "--dataset", dataset, "--preset", preset, "--output", out, "--overwrite",
                   "--seed", str(seed), "--sequence-length", str(sequence_length)]
        command += ["--limit", str(limit)] if limit else []
        for key, value in flags.items():
            command += [f"--{key}", value]
        started = time.time()
        done = subprocess.run(command, cwd=_ROOT, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"failed: {' '.join(command)}\n{done.stderr[-3000:]}")
        with open(os.path.join(out, "metrics.json")) as f:
            metrics = json.load(f)
    return metrics, time.time() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="minilm_l6_en_uncased")
    parser.add_argument("--datasets", nargs="+", default=["rotten_tomatoes", "trec6"])
    parser.add_argument("--configs", nargs="+", default=["default", *ROWS])
    parser.add_argument("--common", default="",
                        help="flags added to the Table 7 rows, e.g. learning-rate=1e-4,epochs=3")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--limit", type=int, default=0, help="first N training examples")
    args = parser.parse_args()
    common = _flags(args.common)
    configs = [parse_config(c, common) for c in args.configs]
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    print(f"preset {args.preset}; backend {backend}; seeds {args.seeds}; common {common}")
    for name, flags in configs:
        print(f"  {name:<12} {' '.join(f'--{k} {v}' for k, v in flags.items()) or '(no flags)'}")
    print(f"{'dataset':<16} {'config':<12} {'seed':>4} {'epoch':>5} {'valid':>7} {'test':>7} "
          f"{'s':>5}", flush=True)
    results = {}
    for dataset in args.datasets:
        length = SEQUENCE_LENGTH.get(dataset, 128)
        for name, flags in configs:
            for seed in args.seeds:
                metrics, seconds = run_one(args.preset, dataset, flags, seed, length, args.limit)
                valid, test = metrics["best"]["accuracy"], metrics["test"]["accuracy"]
                results.setdefault((dataset, name), []).append((valid, test))
                print(f"{dataset:<16} {name:<12} {seed:>4} {metrics['best_epoch']:>5} "
                      f"{valid:>7.4f} {test:>7.4f} {seconds:>5.0f}", flush=True)
    print("\naccuracy, mean over seeds (spread = max − min):")
    for dataset in args.datasets:
        rows = {name: results[(dataset, name)] for name, _ in configs}
        for name, pairs in rows.items():
            valid = [v for v, _ in pairs]
            test = [t for _, t in pairs]
            print(f"  {dataset:<16} {name:<12} valid {100 * statistics.mean(valid):5.2f} "
                  f"(±{50 * (max(valid) - min(valid)):.2f})  test "
                  f"{100 * statistics.mean(test):5.2f} (±{50 * (max(test) - min(test)):.2f})")
        best = max(rows, key=lambda n: statistics.mean(v for v, _ in rows[n]))
        line = f"  {dataset}: best on valid: {best} (test " \
               f"{100 * statistics.mean(t for _, t in rows[best]):.2f})"
        if "default" in rows:
            line += f"; default test {100 * statistics.mean(t for _, t in rows['default']):.2f}"
        print(line)


if __name__ == "__main__":
    main()
