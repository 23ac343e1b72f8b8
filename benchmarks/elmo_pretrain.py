"""ELMo biLM pretraining on WikiText-2: held-out forward and backward perplexity vs Kneser-Ney.

Runs ``kbl pretrain --model elmo`` (:mod:`keras_bert_lab.models.elmo.pretrain`) in this process
on the backend of ``KERAS_BACKEND``, with the recipe's defaults unless overridden (every field of
``ElmoPretrainSettings`` is a flag: ``--steps``, ``--size``, ``--optimizer``, ...), then prints
the held-out perplexity of each direction next to interpolated Kneser-Ney trigrams fit on the
same training words and scored on exactly the same targets (the backward one on the reversed
streams), the seconds per step and each direction's guesses for the probe sentences' blanks.

Usage::

    python benchmarks/elmo_pretrain.py                       # the defaults: ~7 min on 2 cores
    python benchmarks/elmo_pretrain.py --steps 4000 --sampled-softmax 2048 --eval-every 500 \
        --checkpoint-every 500 --eval-batches 60 --log-every 100 --output out/elmo_wt2  # RESULTS
    python benchmarks/elmo_pretrain.py --steps 20 --eval-batches 4      # a smoke test
    KERAS_BACKEND=jax python benchmarks/elmo_pretrain.py --optimizer adagrad --output out/elmo
"""

import argparse
import dataclasses
import json
import os
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def parse_args():
    from keras_bert_lab.models.elmo.pretrain import ElmoPretrainSettings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=None,
                        help="run directory (default: a temporary one, deleted at the end)")
    defaults = ElmoPretrainSettings()
    for field in dataclasses.fields(ElmoPretrainSettings):
        if field.name == "model":
            continue
        value = getattr(defaults, field.name)
        flag = "--" + field.name.replace("_", "-")
        if field.name == "corpus":
            parser.add_argument(flag, nargs="+", default=list(value))
        elif value is None:
            kind = float if field.name == "learning_rate" else \
                int if field.name.endswith("steps") else str
            parser.add_argument(flag, type=kind, default=None)
        else:
            parser.add_argument(flag, type=type(value), default=value)
    args = parser.parse_args()
    fields = {k: v for k, v in vars(args).items() if k != "output"}
    if fields["eval_corpus"] in ("", "none"):
        fields["eval_corpus"] = None
    return args.output, ElmoPretrainSettings(**fields)


def step_seconds(log_path):
    """Seconds per step between the first and the last train rows of ``log.csv`` (compilation
    excluded, held-out evaluations in between included)."""
    from keras_bert_lab.training.run import read_rows

    rows = [r for r in read_rows(log_path) if r["split"] == "train"]
    if len(rows) < 2:
        return float("nan")
    first, last = rows[0], rows[-1]
    return (float(last["elapsed_s"]) - float(first["elapsed_s"])) / \
        (int(last["step"]) - int(first["step"]))


def main():
    import keras

    from benchmarks.machine import cpu_jiffies
    from keras_bert_lab.models.elmo.pretrain import run

    output, settings = parse_args()
    print(f"backend {keras.backend.backend()}; settings {json.dumps(settings.to_dict())}",
          flush=True)
    start = cpu_jiffies()
    with tempfile.TemporaryDirectory() as scratch:
        directory = output or os.path.join(scratch, "run")
        metrics = run(settings, directory, overwrite=output is not None, verbose=2)
        per_step = step_seconds(os.path.join(directory, "log.csv"))
    end = cpu_jiffies()
    print(f"\n{metrics['train_words']:,} training words, {metrics['word_types']:,} types, "
          f"{metrics['vocabulary_size']:,} softmax words (<UNK> {metrics['train_unk_rate']:.1%} "
          f"of the training words); {metrics['steps']} steps, {metrics['tokens_seen']:,} tokens "
          f"seen; {per_step:.2f} s/step; {metrics['seconds']:.0f} s in all")
    if "heldout_forward_perplexity" in metrics:
        print(f"\n{'held-out':<10} {'targets':>8} {'biLM ppl':>10} {'KN-3 ppl':>10} "
              f"{'biLM acc':>9}")
        for d in ("forward", "backward"):
            print(f"{d:<10} {metrics[f'heldout_{d}_targets']:>8,} "
                  f"{metrics[f'heldout_{d}_perplexity']:>10.1f} "
                  f"{metrics[f'kneser_ney_trigram_{d}_perplexity']:>10.1f} "
                  f"{metrics[f'heldout_{d}_accuracy']:>9.1%}")
    print("\nthe blank, guessed by each direction:")
    for blank in metrics["blanks"]:
        print(f"  {blank['text']}\n    forward  {' | '.join(blank['forward'])}\n"
              f"    backward {' | '.join(blank['backward'])}")
    if start and end:
        print(f"\nmachine busy {100 * (end[0] - start[0]) / max(end[1] - start[1], 1):.0f}% over "
              "the run (2 cores; this run's own threads included)")


if __name__ == "__main__":
    main()
