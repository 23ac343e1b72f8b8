"""Left-to-right vs. bidirectional: GPT-mini and BERT-mini pretrained alike, fine-tuned alike.

The argument of the BERT paper (Devlin et al. 2019, §1, §5.1) against GPT (Radford et al. 2018):
a left-to-right model cannot let a token see what follows it, a severe limit for token-level
tasks such as QA. Here both sides get the same footing:

1. **Vocabularies of one size** learned on WikiText-2 train: WordPiece for BERT, GPT-1's BPE for
   GPT (``kbl vocab``), so the embedding tables match.
2. **Pretraining** on WikiText-2 train with one shape (``--size``, ``--steps``, batch, sequence
   length: the same number of token positions): BERT's masked LM + NSP (``kbl pretrain``) and
   GPT's next-token LM (``kbl pretrain --model gpt``); the wall time of each is printed.
3. **Fine-tuning**, the same recipe (AdamW, warm-up + linear decay, epochs, batch, learning
   rate) per task: Rotten Tomatoes (test accuracy), STS-B (test Pearson), WNUT-16 NER (entity F1
   on a held-out 20 %), and templated SQuAD-format QA (``tests/synthetic_squad.py``: three facts
   per context; EM on held-out questions; ``qa-same``: the three facts of one kind, so only the
   asked person picks the answer), each with several seeds; mean ± standard deviation.
4. **GPT's own ablations**: no pretraining (the same architecture and vocabulary, random
   weights), and GPT-1's auxiliary LM loss (λ = 0.5) on and off (not for NER, whose head has
   none); BERT without pretraining too.

Everything runs through the ``kbl`` commands in this process; each finished fine-tuning run is
appended to ``OUT/runs.jsonl`` and skipped when the script is run again (a stopped benchmark
resumes where it was). Run it alone: the figures include wall times.

Usage::

    python benchmarks/gpt_vs_bert.py --out /tmp/gvb                  # the full comparison
    python benchmarks/gpt_vs_bert.py --out /tmp/gvb-smoke --quick    # plumbing, ~4 minutes
    python benchmarks/gpt_vs_bert.py --out /tmp/gvb --report         # the table so far
"""

import argparse
import itertools
import json
import os
import pathlib
import shutil
import statistics
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# row: (model, pretrained, auxiliary LM weight)
ROWS = {
    "bert": ("bert", True, 0.0),
    "gpt": ("gpt", True, 0.0),
    "gpt+aux": ("gpt", True, 0.5),
    "gpt-scratch": ("gpt", False, 0.0),
    "bert-scratch": ("bert", False, 0.0),
}
# task: (kbl finetune arguments, metric, where the metric is read: "test" or "best")
TASKS = {
    "rt": (["classify", "--dataset", "rotten_tomatoes", "--sequence-length", "64"],
           "accuracy", "test"),
    "stsb": (["pair", "--dataset", "stsb", "--sequence-length", "64"], "pearson", "test"),
    "wnut16": (["ner", "--dataset", "wnut16", "--sequence-length", "64", "--test-fraction",
                "0.2"], "f1", "test"),
    "qa": (["squad", "--sequence-length", "96", "--doc-stride", "48"], "exact_match", "test"),
    # every fact of a context of the asked kind: only the asked person picks the answer
    "qa-same": (["squad", "--sequence-length", "96", "--doc-stride", "48"], "exact_match",
                "test"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="working folder (reused on a rerun)")
    parser.add_argument("--size", default="mini")
    parser.add_argument("--vocabulary-size", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=1100, help="pretraining steps of each model")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--ner-epochs", type=int, default=12,
                        help="WNUT-16 is small and its entities rare: a mini model needs more")
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--report", action="store_true",
                        help="print the table of the finished runs in OUT/runs.jsonl and stop")
    parser.add_argument("--quick", action="store_true",
                        help="tiny models, a few steps, 200 examples per task: plumbing only")
    args = parser.parse_args()
    if args.quick:
        args.size, args.vocabulary_size, args.steps, args.epochs, args.ner_epochs = \
            "tiny", 2000, 6, 1, 1
        args.seeds = args.seeds[:1]
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    done = {(r["row"], r["task"], r["seed"]): r for r in map(json.loads, log.read_text().split(
        "\n")[:-1])} if log.exists() else {}
    if args.report:
        print(table(done, [r for r in ROWS if any(k[0] == r for k in done)],
                    [t for t in TASKS if any(k[1] == t for k in done)]))
        return

    import keras

    from keras_bert_lab.cli import main as kbl
    from tests.synthetic_squad import synthetic_squad

    print(f"backend {keras.backend.backend()}, {os.cpu_count()} CPUs; load before: "
          f"{os.getloadavg()[0]:.1f}")

    def call(argv):
        keras.backend.clear_session()
        started = time.perf_counter()
        code = kbl([str(a) for a in argv])
        if code != 0:
            raise SystemExit(f"kbl {' '.join(map(str, argv))} exited with {code}")
        return time.perf_counter() - started

    # 1. vocabularies of one size
    wordpiece, bpe = out / "wordpiece" / "vocab.txt", out / "bpe"
    if not wordpiece.exists():
        wordpiece.parent.mkdir(exist_ok=True)
        call(["vocab", "--corpus", "wikitext2:train", "--vocabulary-size", args.vocabulary_size,
              "--output", wordpiece, "--quiet"])
    if not (bpe / "merges.txt").exists():
        call(["vocab", "--bpe", "--corpus", "wikitext2:train", "--vocabulary-size",
              args.vocabulary_size, "--output", bpe, "--quiet"])

    # 2. pretraining, one shape for both
    shape = ["--size", args.size, "--steps", args.steps, "--batch-size", args.batch_size,
             "--sequence-length", args.sequence_length, "--seed", 0]
    pretrain = {"bert": ["--model", "bert", "--vocabulary", wordpiece],
                "gpt": ["--model", "gpt", "--vocabulary", bpe]}
    pretrained = {}
    needed = {ROWS[row][0] for row in args.rows}   # a scratch row needs its model's vocabulary
    for model, extra in pretrain.items():
        if model not in needed:
            continue
        run = out / f"pretrain-{model}"
        if not (run / "preset").exists():
            seconds = call(["pretrain", *extra, *shape, "--eval-every", max(args.steps // 5, 1),
                            "--checkpoint-every", max(args.steps // 5, 1), "--output", run,
                            "--overwrite"])
            (run / "wall_seconds.txt").write_text(f"{seconds:.1f}\n")
        pretrained[model] = run / "preset"
        summary = json.loads((run / "metrics.json").read_text()) \
            if (run / "metrics.json").exists() else {}
        print(f"pretrained {model}: {(run / 'wall_seconds.txt').read_text().strip()} s wall; "
              f"held-out {_heldout(summary)}")
    scratch = {model: _scratch_preset(model, pretrained[model], out / f"scratch-{model}")
               for model in pretrained}

    # 3. the QA files: three facts per context, so the question must pick one
    for task, same_kind in (("qa", False), ("qa-same", True)):
        qa = out / task
        if not (qa / "test.json").exists():
            qa.mkdir(exist_ok=True)
            for name, count, seed in (("train", 2000, 1), ("valid", 300, 2), ("test", 300, 3)):
                (qa / f"{name}.json").write_text(json.dumps(synthetic_squad(
                    count, seed=seed, same_kind=same_kind)))

    # 4. fine-tuning: every row x task x seed, appended to runs.jsonl as it finishes
    for seed, row, task in itertools.product(args.seeds, args.rows, args.tasks):  # seed by seed
        command, metric, where = TASKS[task]
        model, is_pretrained, aux = ROWS[row]
        if (row, task, seed) in done or (aux and task == "wnut16"):  # no auxiliary LM in NER
            continue
        preset = pretrained[model] if is_pretrained else scratch[model]
        run = out / "finetune" / f"{row}-{task}-{seed}"
        epochs = args.ner_epochs if task == "wnut16" else args.epochs
        argv = ["finetune", *command, "--preset", preset, "--output", run, "--overwrite",
                "--epochs", epochs, "--patience", epochs,   # every epoch runs; the best is kept
                "--batch-size", args.batch_size, "--learning-rate", args.learning_rate,
                "--seed", seed]
        if task.startswith("qa"):
            qa = out / task
            argv += ["--train", qa / "train.json", "--valid", qa / "valid.json",
                     "--predict", qa / "test.json"]
        if aux:
            argv += ["--lm-loss-weight", aux]
        if args.quick:
            argv += ["--limit", 200]
        seconds = call(argv)
        metrics = json.loads((run / "metrics.json").read_text())
        result = {"row": row, "task": task, "seed": seed, "metric": metric,
                  "value": (metrics[where] or {}).get(metric),
                  "valid": metrics["best"].get(metric), "seconds": round(seconds, 1)}
        done[(row, task, seed)] = result
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(result) + "\n")
        shutil.rmtree(run / "preset", ignore_errors=True)   # keep metrics, not weights
        print(json.dumps(result))
    print(table(done, args.rows, args.tasks))


def _heldout(metrics):
    keys = ("heldout_perplexity", "kneser_ney_trigram_perplexity", "heldout_accuracy",
            "heldout_mlm_accuracy", "heldout_nsp_accuracy")
    found = {k: v for k, v in metrics.items() if k in keys and isinstance(v, (int, float))}
    return ", ".join(f"{k} {v:.4g}" for k, v in found.items()) or "(see metrics.json)"


def _scratch_preset(model, pretrained, folder):
    """The pretrained preset's architecture and vocabulary with freshly drawn weights."""
    if (folder / "preset").exists():
        return folder / "preset"
    import keras

    from keras_bert_lab import BertBackbone, GPTBackbone
    from keras_bert_lab.presets.registry import read_preset

    keras.utils.set_random_seed(0)
    info = read_preset(pretrained, verify=False)
    backbone_class = BertBackbone if model == "bert" else GPTBackbone
    backbone = backbone_class(backbone_class.config_from_preset(info))
    extra = {"merges": info.merges()} if model == "gpt" else {}
    return backbone.save_to_preset(folder / "preset", vocabulary=info.vocabulary(), **extra)


def table(done, rows, tasks):
    """Markdown: one row per model row, one column per task, mean ± sd over seeds (n)."""
    lines = ["| row | " + " | ".join(f"{t} ({TASKS[t][1]})" for t in tasks) + " |",
             "|---|" + "---:|" * len(tasks)]
    for row in rows:
        cells = []
        for task in tasks:
            digits = 1 if TASKS[task][1] == "exact_match" else 3   # EM is in percent
            values = [r["value"] for (r_, t, _), r in sorted(done.items())
                      if r_ == row and t == task and r["value"] is not None]
            if not values:
                cells.append("—")
            elif len(values) == 1:
                cells.append(f"{values[0]:.{digits}f} (n=1)")
            else:
                cells.append(f"{statistics.mean(values):.{digits}f} ± "
                             f"{statistics.stdev(values):.{digits}f} (n={len(values)})")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
