"""Child process of the distributed-flag tests: ``kbl`` commands on 8 simulated JAX devices.

Run as ``python -m tests.distribution.cli_runs OUT.json SCRATCH`` with ``KERAS_BACKEND=jax`` and
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` (the flag only works before JAX is
imported, hence a process of its own). It runs ``kbl pretrain`` (BERT and GPT) and ``kbl finetune
classify`` on one device (no flag), with ``--data-parallel`` and with ``--model-parallel 4x2``
(GPT: 2 steps on 4x2 only), and the commands that must fail; the log rows, metrics, exit codes
and error lines go to OUT.json for the parent (tests/commands/test_distributed_flags.py) to compare.
"""

import contextlib
import csv
import io
import json
import os
import sys
import time

import numpy as np

from keras_bert_lab import cli

WORDS = ("river city music album team season film station school bridge war king history "
         "church island song road league army village").split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_corpus(folder, documents=40):
    """A small Google-format corpus (blank line between documents) and a WordPiece vocabulary
    that covers it (a short vocabulary keeps the gradients' all-reduce small)."""
    rng = np.random.default_rng(0)
    lines = []
    for doc in range(documents):
        for _ in range(6):
            words = rng.choice(WORDS, size=rng.integers(5, 12))
            lines.append(f"the {' '.join(words)} of document {doc} .")
        lines.append("")
    corpus, vocab = os.path.join(folder, "corpus.txt"), os.path.join(folder, "vocab.txt")
    with open(corpus, "w") as f:
        f.write("\n".join(lines))
    digits = [str(i) for i in range(10)]
    with open(vocab, "w") as f:
        f.write("\n".join(SPECIALS + WORDS + ["the", "of", "document", "."] + digits
                          + ["##" + d for d in digits]) + "\n")
    return corpus, vocab


def pretrain_args(corpus, vocab, output, steps=8, batch=8, model="bert", every=4):
    common = ["--corpus", corpus, "--eval-corpus", corpus, "--eval-batches", "1", "--size",
              "tiny", "--sequence-length", "32", "--batch-size", str(batch), "--steps",
              str(steps), "--checkpoint-every", str(every), "--eval-every", str(every),
              "--log-every", "1",              "--seed", "3", "--learning-rate", "1e-3", "--output", output]
    extra = ["--vocabulary", vocab] if model == "bert" else ["--model", "gpt", "--bpe-merges",
                                                             "40"]
    return ["pretrain", *common, *extra]


def kbl(argv):
    """``(exit code, stderr's last line)`` of ``kbl ARGV`` run in this process."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(argv)
    lines = [line for line in err.getvalue().splitlines() if line.startswith("kbl: error")]
    return code, lines[-1] if lines else ""


def rows(path):
    with open(path) as f:
        return [{k: v for k, v in r.items() if k in ("step", "split", "loss")}
                for r in csv.DictReader(f)]


def write_classification(folder):
    texts = ("A warm, funny film.", "Dull and slow.", "Loved it.", "A mess.",
             "Great acting.", "Boring plot.", "A joy to watch.", "Too long.")
    paths = {}
    for name, count in (("train", 16), ("valid", 5)):  # 16 = 2 full batches; 5: a short one
        paths[name] = os.path.join(folder, f"{name}.csv")
        with open(paths[name], "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["text", "label"])
            writer.writerows((texts[i % 8], "pos" if i % 2 == 0 else "neg")
                             for i in range(count))
    return paths


def finetune_classify(scratch, preset, paths, name, flags, epochs):
    """``kbl finetune classify`` of ``preset`` on :func:`write_classification`'s files with
    ``flags``: its per-epoch metrics and how many test predictions it wrote."""
    out = os.path.join(scratch, "classify-" + name.replace(" ", "_"))
    code, error = kbl(["finetune", "classify", "--train", paths["train"], "--valid",
                       paths["valid"], "--test", paths["valid"], "--preset", preset,
                       "--output", out, "--epochs", str(epochs), "--batch-size", "8",
                       "--sequence-length", "16", "--learning-rate", "1e-3", *flags])
    assert code == 0, (name, error)
    with open(os.path.join(out, "metrics.json")) as f:
        metrics = json.load(f)
    with open(os.path.join(out, "test_predictions.csv")) as f:
        predictions = len(list(csv.DictReader(f)))
    return {"epochs": metrics["epochs"], "predictions": predictions}


def main(out_path, scratch):
    import jax  # here: the TensorFlow child (mirrored_runs) imports this module's helpers

    assert jax.device_count() == 8, f"{jax.device_count()} devices: set XLA_FLAGS before jax"
    started = time.time()
    corpus, vocab = write_corpus(scratch)
    result = {"pretrain": {}, "gpt": {}, "finetune": {}, "errors": {}, "seconds": {}}
    for name, flags in (("1 device", []), ("data", ["--data-parallel"]),
                        ("model 4x2", ["--model-parallel", "4x2"])):
        start = time.time()
        out = os.path.join(scratch, "bert-" + name.replace(" ", "_"))
        code, error = kbl(pretrain_args(corpus, vocab, out) + flags)
        assert code == 0, (name, error)
        result["pretrain"][name] = {"log": rows(os.path.join(out, "log.csv")),
                                    "settings": json.load(open(os.path.join(out,
                                                                             "settings.json")))}
        result["seconds"]["bert " + name] = round(time.time() - start, 1)
    # Resume the 8-device run's checkpoint on one device: the flags are not the run's settings.
    out = os.path.join(scratch, "bert-data")
    code, error = kbl(pretrain_args(corpus, vocab, out, steps=8) + ["--resume"])
    result["resumed_on_one_device"] = {"code": code, "error": error}
    start = time.time()  # GPT: the flags reach its recipe (its losses: the sharded child's)
    out = os.path.join(scratch, "gpt-model_4x2")
    code, error = kbl(pretrain_args(corpus, vocab, out, steps=2, model="gpt")
                      + ["--model-parallel", "4x2"])
    assert code == 0, error
    result["gpt"]["model 4x2"] = rows(os.path.join(out, "log.csv"))
    result["seconds"]["gpt model 4x2"] = round(time.time() - start, 1)
    from keras_bert_lab.models.bert.backbone import BertBackbone
    from keras_bert_lab.models.bert.config import BertConfig

    preset = os.path.join(scratch, "preset")
    BertBackbone(BertConfig.from_size("tiny", vocabulary_size=300, num_heads=4, max_positions=64)
                 ).save_to_preset(preset, vocabulary=SPECIALS + [f"w{i}" for i in range(295)])
    paths = write_classification(scratch)
    for name, flags in (("1 device", []), ("data", ["--data-parallel"]),
                        ("model 4x2", ["--model-parallel", "4x2"])):
        start = time.time()
        result["finetune"][name] = finetune_classify(scratch, preset, paths, name, flags,
                                                     epochs=1)
        result["seconds"]["classify " + name] = round(time.time() - start, 1)
    bad = {"batch": (["--data-parallel"], 6), "mesh": (["--model-parallel", "3x2"], 8),
           "heads": (["--model-parallel", "2x4"], 8),
           "both": (["--data-parallel", "--model-parallel", "4x2"], 8)}
    for name, (flags, batch) in bad.items():
        out = os.path.join(scratch, "bad-" + name)
        code, error = kbl(pretrain_args(corpus, vocab, out, batch=batch) + flags)
        result["errors"][name] = {"code": code, "error": error, "wrote": os.path.exists(out)}
    result["seconds"]["child total"] = round(time.time() - started, 1)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
