"""The bad-input suite (issue 18): every mistake a new user makes, through ``kbl`` and the API.

Each case runs in this process (``keras_bert_lab.cli.main([...])`` or a library call, never a
subprocess, never more than a handful of tiny training steps) and its outcome is classified:

- **clear error**: one readable line — a ``KblError`` from the API, or ``kbl`` exiting with
  status 2 after ``kbl: error: …`` (or argparse's ``usage`` line) and no traceback;
- **handled**: the call succeeds and does the right thing (checked per case);

or a failure: a **traceback** (any other exception), a **silent** result (no error where one was
due, or a wrong result), **data loss** (a sentinel file in the output folder or next to it
changed or vanished, a folder that should have stayed untouched was written) or **partial
files** (a ``*.tmp`` left behind). ``test_summary`` prints the tally (``pytest -rA``) and fails
on any failure. Cases of the text side and the command line run once (TensorFlow); the model
input cases run on every backend.
"""

import collections
import dataclasses
import errno
import hashlib
import json
import os
import pathlib
import re
import shutil
import traceback

import keras
import numpy as np
import pytest

from keras_bert_lab import (BertBackbone, BertClassifier, BertConfig, BertPretrainer,
                            BertTokenClassifier)
from keras_bert_lab.cli import main
from keras_bert_lab.errors import KblError
from tests.conftest import locate_or_skip
from tests.markers import backend_independent

FAILURES = ("traceback", "silent", "data loss", "partial files", "wrong message", "refused")
TALLY = collections.Counter()
POSITIONS = 64           # the tiny presets' position table
LENGTH = 16              # the sequence length their preprocessors record


@dataclasses.dataclass
class Case:
    """One bad input: ``argv`` for ``kbl`` or ``api`` (a function); ``expect`` ``"error"`` (a
    clear error whose message matches ``match``) or ``"ok"`` (then ``check(result)``, where
    result is the API's return value or ``kbl``'s stdout, must not raise); ``keep`` lists paths
    whose state (present or absent, every byte) must not change."""

    argv: list = None
    api: object = None
    expect: str = "error"
    match: str = ""
    check: object = None
    keep: tuple = ()
    setup: object = None


CASES = {}


def case(name):
    def register(build):
        assert name not in CASES, name
        CASES[name] = build
        return build
    return register


# ---- classifying an outcome ------------------------------------------------------------------
def snapshot(path):
    """Every file under ``path`` (or the file) with a digest of its bytes; ``None`` if absent."""
    path = pathlib.Path(path)
    if not path.exists():
        return None
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return {str(p.relative_to(path)): (hashlib.sha256(p.read_bytes()).hexdigest()
                                       if p.is_file() else "dir")
            for p in sorted(path.rglob("*"))}


def run_case(spec, capsys):
    """``(kind, detail)``: kind is ``"clear"``, ``"ok"`` or ``"traceback"``."""
    if spec.setup is not None:
        spec.setup()
    capsys.readouterr()
    if spec.argv is not None:
        try:
            status = main([str(a) for a in spec.argv])
        except SystemExit as exit:      # argparse: usage errors (2) and --help (0)
            status = exit.code
        except Exception:               # noqa: BLE001 - what the suite is looking for
            return "traceback", traceback.format_exc()
        out, err = capsys.readouterr()
        if status == 0:
            return "ok", out
        lines = [line for line in err.splitlines() if line.strip()]
        last = lines[-1] if lines else ""
        if status == 2 and "Traceback" not in err and (
                last.startswith("kbl: error: ") or re.match(r"kbl( [\w-]+)*: error: ", last)):
            return "clear", last
        return "traceback", f"exit status {status}; stderr:\n{err}"
    try:
        result = spec.api()
    except KblError as error:
        message = str(error)
        if "\n" in message.strip():
            return "traceback", f"a KblError of several lines:\n{message}"
        return "clear", message
    except Exception:                   # noqa: BLE001
        return "traceback", traceback.format_exc()
    return "ok", result


def classify(spec, kind, detail):
    """The tally category of an outcome against what the case expects."""
    if kind == "traceback":
        return "traceback", detail
    if spec.expect == "error":
        if kind == "ok":
            return "silent", f"no error; result: {str(detail)[:300]}"
        if spec.match and not re.search(spec.match, detail):
            return "wrong message", f"{detail!r} does not match {spec.match!r}"
        return "clear error", detail
    if kind == "clear":
        return "refused", detail
    try:
        if spec.check is not None and spec.check(detail) is False:
            raise AssertionError(f"check {spec.check} failed on {str(detail)[:300]!r}")
    except AssertionError as error:
        return "silent", f"wrong result: {error}"
    return "handled", ""


def partial_files(root):
    return sorted(str(p) for p in pathlib.Path(root).rglob("*") if p.name.endswith(".tmp"))


# ---- tiny presets and data files ---------------------------------------------------------------
@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Tiny presets (3,000-token slice of the real vocabulary, 64 positions), data files and a
    finished ``kbl finetune classify`` run (the corrected command after a failed start)."""
    root = tmp_path_factory.mktemp("bad_inputs")
    words = locate_or_skip("bert_uncased_vocab").read_text(encoding="utf-8").split("\n")[:3000]
    vocab_file = root / "vocab.txt"
    vocab_file.write_text("\n".join(words) + "\n", encoding="utf-8")
    keras.utils.set_random_seed(0)

    def backbone():
        return BertBackbone(BertConfig.from_size("tiny", vocabulary_size=len(words),
                                                 max_positions=POSITIONS))

    presets = {
        "backbone": backbone().save_to_preset(root / "p_backbone", vocabulary=words),
        "single": BertClassifier(backbone(), labels=["neg", "pos"]).save_to_preset(
            root / "p_single", vocabulary=words, preprocessor={
                "sequence_length": LENGTH, "pair": False, "text_column": "text"}),
        "pair": BertClassifier(backbone(), labels=["no", "yes"]).save_to_preset(
            root / "p_pair", vocabulary=words, preprocessor={"sequence_length": LENGTH,
                                                             "pair": True}),
        "mlm": BertPretrainer(backbone()).save_to_preset(root / "p_mlm", vocabulary=words),
        "tagger": BertTokenClassifier(backbone(), labels=["O", "B-X", "I-X"]).save_to_preset(
            root / "p_tagger", vocabulary=words),
    }
    files = root / "files"
    files.mkdir()
    rows = [("A warm, funny film.", "pos"), ("Dull and slow.", "neg"), ("Loved it.", "pos"),
            ("A mess.", "neg")] * 3
    write(files / "train.csv", "text,label\n" + "".join(f'"{t}",{l}\n' for t, l in rows))
    write(files / "texts.txt", "A fine film.\nDull.\n\nLoved every minute.\n")
    write(files / "train.conll", "Ada B-X\nwrote O\ncode O\n\nBob B-X\nran O\n\n" * 4)
    write(files / "mc.jsonl", '{"context": "He sat", "choices": ["down.", "up."], "label": 0}\n'
          * 6)
    write(files / "corpus.txt", "".join(
        f"the river city number {d} flows into the sea .\nthe team played a long season .\n"
        f"an album came out in year {d} .\n\n" for d in range(12)))
    write(files / "squad.json", json.dumps(squad([{"text": "Paris", "answer_start": 0}])))
    common = ["--preset", presets["backbone"], "--epochs", "1", "--batch-size", "4",
              "--sequence-length", str(LENGTH)]
    finished = root / "finished"
    first = main([str(a) for a in ["finetune", "classify", "--train", files / "train.csv",
                                   "--output", finished, *common[2:], "--preset",
                                   root / "no_such_preset"]])
    failed_start_left = snapshot(finished)
    second = main(["finetune", "classify", "--train", str(files / "train.csv"), "--output",
                   str(finished), *map(str, common)])
    return {"root": root, "words": words, "vocab": vocab_file, "presets": presets,
            "files": files, "finished": finished, "common": [str(c) for c in common],
            "failed_start": (first, failed_start_left, second)}


def write(path, text, encoding="utf-8"):
    pathlib.Path(path).write_text(text, encoding=encoding)
    return str(path)


def squad(answers, context="Paris is the capital of France.", question="What is the capital?"):
    return {"version": "v1.1", "data": [{"title": "t", "paragraphs": [{
        "context": context, "qas": [{"id": "q1", "question": question, "answers": answers}]}]}]}


@pytest.fixture()
def work(env, tmp_path, monkeypatch):
    """A fresh folder per case (the current directory too) with a sentinel next to outputs."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "sentinel.txt", "a file next to the output; it must survive")
    return tmp_path


def finished_copy(env, work, name="run"):
    """A copy of the finished fine-tuning run (a run folder the user would hate to lose)."""
    target = work / name
    shutil.copytree(env["finished"], target)
    return target


def busy(work, name="busy"):
    folder = work / name
    folder.mkdir()
    write(folder / "notes.txt", "my notes: not a run")
    return folder


def classify_argv(env, output, *extra, train=None):
    return ["finetune", "classify", "--train", train or env["files"] / "train.csv", "--output",
            output, *env["common"], *extra]


# ==== 1. Output folders: nothing outside a run's own files is ever deleted ========================
@case("overwrite a finished run, then a missing --train: the run stays")
def _(env, work):
    run = finished_copy(env, work)
    return Case(classify_argv(env, run, "--overwrite", train=work / "nope.csv"),
                match="does not exist", keep=(run, work / "sentinel.txt"))


@case("finetune squad --output . --overwrite with missing files: the current folder stays")
def _(env, work):
    return Case(["finetune", "squad", "--train", "nope.json", "--valid", "nope.json", "--output",
                 ".", "--overwrite"], match="No SQuAD file", keep=(work,))


@case("overwrite a finished run with an unknown preset: the run stays")
def _(env, work):
    run = finished_copy(env, work)
    return Case(classify_argv(env, run, "--overwrite", "--preset", "no_such_preset"),
                match="no_such_preset", keep=(run,))


@case("overwrite a finished run with --sequence-length above the preset's positions")
def _(env, work):
    run = finished_copy(env, work)
    return Case(classify_argv(env, run, "--overwrite", "--sequence-length", POSITIONS + 1),
                match=f"--sequence-length {POSITIONS + 1}.*{POSITIONS} positions", keep=(run,))


@case("overwrite a finished run with a label set that misses a label")
def _(env, work):
    run = finished_copy(env, work)
    return Case(classify_argv(env, run, "--overwrite", "--labels", "neg,meh"),
                match="not in the label set", keep=(run,))


@case("overwrite a finished run with a one-label training file")
def _(env, work):
    run = finished_copy(env, work)
    train = write(work / "one.csv", "text,label\n" + "fine,pos\n" * 8)
    return Case(classify_argv(env, run, "--overwrite", train=train), match="only the label",
                keep=(run,))


@case("overwrite a finished run with a GPT-only flag on a BERT preset")
def _(env, work):
    run = finished_copy(env, work)
    return Case(classify_argv(env, run, "--overwrite", "--lm-loss-weight", "0.5"),
                match="--lm-loss-weight",
                keep=(run,))


@case("overwrite a finished run with kbl finetune ner on a one-column CoNLL file")
def _(env, work):
    run = finished_copy(env, work)
    conll = write(work / "one.conll", "Ada\nwrote\n\nBob\n")
    return Case(["finetune", "ner", "--train", conll, "--output", run, "--overwrite",
                 *env["common"]], match="same column", keep=(run,))


@case("overwrite a finished run with kbl finetune choice on ragged choices")
def _(env, work):
    run = finished_copy(env, work)
    mc = write(work / "mc.jsonl", '{"context": "a", "choices": ["b", "c"], "label": 0}\n'
               '{"context": "a", "choices": ["b", "c", "d"], "label": 0}\n')
    return Case(["finetune", "choice", "--train", mc, "--output", run, "--overwrite",
                 *env["common"]], match="choices", keep=(run,))


@case("overwrite a finished run with kbl pretrain --corpus typo.txt")
def _(env, work):
    run = finished_copy(env, work)
    return Case(["pretrain", "--corpus", "typo.txt", "--output", run, "--overwrite", "--size",
                 "tiny", "--vocabulary", env["vocab"], "--eval-corpus", env["files"] /
                 "corpus.txt"], match="typo.txt", keep=(run,))


@case("overwrite a finished run with kbl pretrain --size huge")
def _(env, work):
    run = finished_copy(env, work)
    return Case(["pretrain", "--corpus", env["files"] / "corpus.txt", "--output", run,
                 "--overwrite", "--size", "huge"], match="--size 'huge'", keep=(run,))


@case("overwrite a finished run with kbl pretrain --vocabulary missing.txt")
def _(env, work):
    run = finished_copy(env, work)
    return Case(["pretrain", "--corpus", env["files"] / "corpus.txt", "--output", run,
                 "--overwrite", "--size", "tiny", "--vocabulary", work / "missing.txt"],
                match="missing.txt", keep=(run,))


@case("overwrite a finished run with kbl word2vec on a missing corpus")
def _(env, work):
    run = finished_copy(env, work)
    return Case(["word2vec", "--corpus", work / "nope.txt", "--output", run, "--overwrite"],
                match="nope.txt", keep=(run,))


@case("--overwrite into a folder of notes that holds no run")
def _(env, work):
    folder = busy(work)
    return Case(classify_argv(env, folder, "--overwrite"), match="holds no run", keep=(folder,))


@case("--overwrite into a folder of notes and a half download (*.tmp): both stay")
def _(env, work):
    folder = busy(work)
    write(folder / "film.mkv.tmp", "half a download")
    return Case(classify_argv(env, folder, "--overwrite"), match="holds no run", keep=(folder,))


@case("no --overwrite into a folder of notes that holds no run")
def _(env, work):
    folder = busy(work)
    return Case(classify_argv(env, folder), match="holds no run", keep=(folder,))


@case("kbl pretrain --overwrite into a folder of notes")
def _(env, work):
    folder = busy(work)
    return Case(["pretrain", "--corpus", env["files"] / "corpus.txt", "--output", folder,
                 "--overwrite", "--size", "tiny", "--vocabulary", env["vocab"]],
                match="holds no run", keep=(folder,))


@case("--overwrite on a folder with a settings.json that no kbl run wrote")
def _(env, work):
    folder = busy(work, "project")
    write(folder / "settings.json", '{"editor.tabSize": 4}')
    return Case(classify_argv(env, folder, "--overwrite"), match="no kbl-run.json marker",
                keep=(folder,))


@case("--output is a file (finetune)")
def _(env, work):
    target = write(work / "model.bin", "weights")
    return Case(classify_argv(env, target), match="is a file", keep=(target,))


@case("--output is a file (pretrain)")
def _(env, work):
    target = write(work / "out.txt", "x")
    return Case(["pretrain", "--corpus", env["files"] / "corpus.txt", "--output", target,
                 "--size", "tiny", "--vocabulary", env["vocab"]], match="is a file",
                keep=(target,))


@case("--output is a file (word2vec)")
def _(env, work):
    target = write(work / "out.txt", "x")
    return Case(["word2vec", "--corpus", env["files"] / "corpus.txt", "--output", target],
                match="is a file", keep=(target,))


@case("--output below a file")
def _(env, work):
    target = write(work / "afile", "x")
    return Case(classify_argv(env, work / "afile" / "run"), match="is a file", keep=(target,))


@case("--resume and --overwrite together")
def _(env, work):
    run = finished_copy(env, work)
    return Case(["pretrain", "--corpus", env["files"] / "corpus.txt", "--output", run,
                 "--resume", "--overwrite", "--size", "tiny"], match="--resume.*--overwrite",
                keep=(run,))


@case("--resume of a fine-tuning run with other settings")
def _(env, work):
    run = finished_copy(env, work)
    return Case(["pretrain", "--corpus", env["files"] / "corpus.txt", "--output", run,
                 "--resume", "--size", "tiny", "--vocabulary", env["vocab"]],
                match="different settings", keep=(run,))


@case("--resume where there is no run")
def _(env, work):
    return Case(["pretrain", "--corpus", env["files"] / "corpus.txt", "--output", work / "new",
                 "--resume", "--size", "tiny", "--vocabulary", env["vocab"]],
                match="holds no run to resume", keep=(work / "new",))


@case("a failed start leaves nothing; the corrected command is not refused")
def _(env, work):
    first, left, second = env["failed_start"]

    def check(_):
        assert first == 2, f"the failed start exited {first}"
        assert left is None, f"the failed start left {left}"
        assert second == 0 and (env["finished"] / "metrics.json").is_file()
    return Case(api=lambda: None, expect="ok", check=check)


@case("a failed start (unknown preset) into a new folder leaves no folder")
def _(env, work):
    return Case(classify_argv(env, work / "new", "--preset", work / "missing_preset"),
                match="does not exist", keep=(work / "new",))


@case("a failed start inside a new nested folder leaves no folders")
def _(env, work):
    return Case(classify_argv(env, work / "a" / "b" / "run", "--labels", "x,y"),
                match="not in the label set", keep=(work / "a",))


@case("--overwrite replaces a run but keeps the user's own file in it")
def _(env, work):
    run = finished_copy(env, work)
    notes = write(run / "notes.txt", "mine")
    before = (run / "settings.json").read_text()

    def check(_):
        assert (run / "notes.txt").read_text() == "mine", "notes.txt was deleted"
        assert (run / "settings.json").read_text() != before, "the run was not replaced"
        assert (run / "metrics.json").is_file()
    return Case(classify_argv(env, run, "--overwrite", "--seed", "7"), expect="ok", check=check,
                keep=(notes, work / "sentinel.txt"))


@case("kbl demo --output on a folder that is not a demo run")
def _(env, work):
    folder = busy(work)
    return Case(["demo", "--output", folder, "--size", "tiny", "--steps", "1"],
                match="holds no demo run", keep=(folder,))


@case("kbl demo --output on a fine-tuning run")
def _(env, work):
    run = finished_copy(env, work)
    return Case(["demo", "--output", run, "--size", "tiny", "--steps", "1"],
                match="holds no demo run", keep=(run,))


@case("kbl demo --output on a file")
def _(env, work):
    target = write(work / "demo.txt", "x")
    return Case(["demo", "--output", target, "--size", "tiny", "--steps", "1"],
                match="is a file", keep=(target,))


# ---- the run folder's rules, through the API -------------------------------------------------
@case("a run folder that never trained is taken by the next command (other settings)")
def _(env, work):
    from keras_bert_lab.training.run import prepare_output

    prepare_output(work / "run", {"steps": 1})   # then killed before its first step

    def check(run):
        assert json.loads((run / "settings.json").read_text()) == {"steps": 2}
    return Case(api=lambda: prepare_output(work / "run", {"steps": 2}), expect="ok", check=check)


@case("a run folder of an older keras_bert_lab (no marker) is resumed and marked")
def _(env, work):
    from keras_bert_lab.training.run import MARKER_FILE, prepare_output

    (work / "old").mkdir()
    write(work / "old" / "settings.json", '{"steps": 3}')
    write(work / "old" / "log.csv", "step,loss\n1,2.0\n")

    def check(run):
        assert (run / MARKER_FILE).is_file() and (run / "log.csv").read_text().count("\n") == 2
    return Case(api=lambda: prepare_output(work / "old", {"steps": 3}, resume=True),
                expect="ok", check=check)


@case("a run folder of an older keras_bert_lab is not deleted by --overwrite")
def _(env, work):
    from keras_bert_lab.training.run import prepare_output

    (work / "old").mkdir()
    write(work / "old" / "settings.json", '{"steps": 3}')
    write(work / "old" / "log.csv", "step,loss\n1,2.0\n")
    return Case(api=lambda: prepare_output(work / "old", {"steps": 4}, overwrite=True),
                match="no kbl-run.json marker", keep=(work / "old",))


@case("a corrupt settings.json is not resumed")
def _(env, work):
    from keras_bert_lab.training.run import prepare_output

    run = prepare_output(work / "run", {"steps": 3})
    write(run / "log.csv", "step\n1\n")
    write(run / "settings.json", "{not json")
    return Case(api=lambda: prepare_output(run, {"steps": 3}, resume=True),
                match="missing or unreadable", keep=(run,))


@case("disk full while writing metrics.json: one line, no .tmp left")
def _(env, work, patch):
    from keras_bert_lab.training import run as run_folder

    def fill_the_disk(path, *args, **kwargs):
        pathlib.Path.write_bytes(path, b"x" * 5000)   # a partial write, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    @run_folder.guarded()
    def recipe(output_dir):
        output = run_folder.prepare_output(output_dir, {"steps": 1})
        write(output / "log.csv", "step\n1\n")
        patch.setattr(pathlib.Path, "write_text", fill_the_disk)
        run_folder.write_json(output / "metrics.json", {"f1": 1.0})

    return Case(api=lambda: recipe(work / "run"),
                match=r"disk holding .*run is full \(.* free\); free some space, then resume")


@case("pretraining killed after a checkpoint, then resumed: log.csv holds each step once")
def _(env, work):
    from keras_bert_lab.models.bert.pretrain import PretrainSettings, run

    settings = PretrainSettings(corpus=(str(env["files"] / "corpus.txt"),), eval_corpus=None,
                                vocabulary=str(env["vocab"]), size="tiny", sequence_length=32,
                                batch_size=4, steps=4, checkpoint_every=2, eval_every=4,
                                log_every=1, seed=1, next_sentence=False)

    class KillAt(keras.callbacks.Callback):   # a kill -9 after step 3 was logged
        def on_train_batch_end(self, batch, logs=None):
            if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == 3:
                raise KeyboardInterrupt

    def interrupted_then_resumed():
        with pytest.raises(KeyboardInterrupt):
            run(settings, work / "run", verbose=0, callbacks=[KillAt()])
        return run(settings, work / "run", resume=True, verbose=0)

    def check(_):
        from keras_bert_lab.training.run import read_rows

        steps = [row["step"] for row in read_rows(work / "run" / "log.csv")
                 if row["split"] == "train"]
        assert steps == ["1", "2", "3", "4"], steps
    return Case(api=interrupted_then_resumed, expect="ok", check=check)


@case("disk full at the first checkpoint of kbl pretrain: one line, no .tmp left")
def _(env, work, patch):
    from keras_bert_lab.models.bert.pretrain import PretrainSettings, run

    settings = PretrainSettings(corpus=(str(env["files"] / "corpus.txt"),), eval_corpus=None,
                                vocabulary=str(env["vocab"]), size="tiny", sequence_length=32,
                                batch_size=4, steps=2, checkpoint_every=2, eval_every=2,
                                log_every=1, seed=1, next_sentence=False)

    def fill_the_disk(file, *args, **kwargs):
        pathlib.Path(file).write_bytes(b"x" * 30000)    # 30 kB written, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    def full():
        patch.setattr(np, "savez", fill_the_disk)
        return run(settings, work / "run", verbose=0)
    return Case(api=full, match=r"full \(.* free\); free at least 30 kB more .*--resume",
                keep=(work / "sentinel.txt",))


@case("disk full while kbl predict writes its output: one line, no partial file")
def _(env, work, patch):
    import csv

    def fill_the_disk(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    return Case(["predict", env["presets"]["single"], "--input", env["files"] / "texts.txt",
                 "--output", work / "out.csv", "--quiet"], match="No space left",
                setup=lambda: patch.setattr(csv.DictWriter, "writerow", fill_the_disk),
                keep=(work / "out.csv",))


# ==== 2. The command line: flags parsed strictly, ranges checked before any work =================
def pretrain_argv(env, work, *extra):
    """A tiny ``kbl pretrain`` (a flag accepted by mistake costs a step, not a real run)."""
    corpus = env["files"] / "corpus.txt"
    return ["pretrain", "--corpus", corpus, "--eval-corpus", corpus, "--output", work / "p",
            "--size", "tiny", "--vocabulary", env["vocab"], "--steps", "1", "--batch-size", "2",
            "--eval-batches", "1", *extra]


PRETRAIN_FLAGS = {
    "--whole-word-masking ture": (["--whole-word-masking", "ture"], "not a boolean"),
    "--next-sentence maybe": (["--next-sentence", "maybe"], "not a boolean"),
    "--sequence-length 1": (["--sequence-length", "1"], "at least 5"),
    "--sequence-length 3": (["--sequence-length", "3"], "at least 5"),
    "--sequence-length 4": (["--sequence-length", "4"], "at least 5"),
    "--sequence-length 2 without next sentence": (
        ["--sequence-length", "2", "--next-sentence", "false"], "at least 3"),
    "--sequence-length 513": (["--sequence-length", "513"], "512 positions"),
    "--phase2-sequence-length 1024": (["--phase2-steps", "10", "--phase2-sequence-length",
                                       "1024"], "--phase2-sequence-length 1024"),
    "--steps 0": (["--steps", "0"], "--steps must be at least 1"),
    "--steps abc": (["--steps", "abc"], "invalid int value"),
    "--batch-size -1": (["--batch-size", "-1"], "--batch-size must be at least 1"),
    "--size huge": (["--size", "huge"], "--size 'huge'"),
    "--optimizer sgd": (["--optimizer", "sgd"], "adamw or lamb"),
    "--precision float8": (["--precision", "float8"], "--precision 'float8'"),
    "--jit-compile ture": (["--jit-compile", "ture"], "--jit-compile 'ture'"),
    "--mask-selection-rate 1.5": (["--mask-selection-rate", "1.5"], "mask-selection-rate"),
    "--mask-selection-length 0": (["--mask-selection-length", "0"], "at least 1"),
    "--learning-rate 0": (["--learning-rate", "0"], "--learning-rate 0.0 must be above 0"),
    "--accumulation 0": (["--accumulation", "0"], "--accumulation must be at least 1"),
    "--model gpt with --whole-word-masking": (["--model", "gpt", "--whole-word-masking", "true"],
                                              "apply to --model bert or electra only"),
    "--bpe-merges with --model bert": (["--bpe-merges", "10"], "--model gpt"),
    "--model t5": (["--model", "t5"], "invalid choice"),
    "--model gpt --sequence-length 513": (["--model", "gpt", "--sequence-length", "513"],
                                         "GPT-tiny has 512 positions"),
    "--model gpt --size huge": (["--model", "gpt", "--size", "huge"], "Unknown GPT size"),
}
for _name, (_flags, _match) in PRETRAIN_FLAGS.items():
    case(f"kbl pretrain {_name}")(
        lambda env, work, flags=_flags, match=_match: Case(
            pretrain_argv(env, work, *flags), match=match, keep=(work / "p",)))


FINETUNE_FLAGS = {
    "--epochs 0": (["--epochs", "0"], "--epochs=0 is out of range"),
    "--learning-rate -1": (["--learning-rate", "-1"], "--learning-rate=-1.0 is out of range"),
    "--batch-size 0": (["--batch-size", "0"], "--batch-size=0"),
    "--warmup-ratio 1": (["--warmup-ratio", "1"], "--warmup-ratio"),
    "--layer-decay 0": (["--layer-decay", "0"], "--layer-decay"),
    "--sequence-length 2": (["--sequence-length", "2"], "--sequence-length=2"),
    f"--sequence-length {POSITIONS + 1} (above the preset's positions)": (
        ["--sequence-length", str(POSITIONS + 1)], f"{POSITIONS} positions"),
    "--valid-fraction 1.5": (["--valid-fraction", "1.5"], "--valid-fraction"),
    "--schedule cosine": (["--schedule", "cosine"], "invalid choice"),
    "--limit 0": (["--limit", "0"], "--limit=0"),
    "--epochs three": (["--epochs", "three"], "invalid int value"),
    "--dataset with --train": (["--dataset", "rotten_tomatoes"], "either --dataset NAME or"),
    "--format xml": (["--format", "xml"], "invalid choice"),
}
for _name, (_flags, _match) in FINETUNE_FLAGS.items():
    case(f"kbl finetune classify {_name}")(
        lambda env, work, flags=_flags, match=_match: Case(
            classify_argv(env, work / "out", *flags), match=match, keep=(work / "out",)))


@case("kbl finetune squad --sequence-length above the preset's positions")
def _(env, work):
    squad_file = env["files"] / "squad.json"
    return Case(["finetune", "squad", "--train", squad_file, "--valid", squad_file, "--output",
                 work / "out", "--preset", env["presets"]["backbone"], "--sequence-length",
                 "128"], match="64 positions", keep=(work / "out",))


@case("kbl finetune squad --doc-stride 0")
def _(env, work):
    squad_file = env["files"] / "squad.json"
    return Case(["finetune", "squad", "--train", squad_file, "--valid", squad_file, "--output",
                 work / "out", "--preset", env["presets"]["backbone"], "--sequence-length",
                 "32", "--doc-stride", "0"], match="doc.stride", keep=(work / "out",))


@case("kbl finetune ner --tag-column 5 on a two-column file")
def _(env, work):
    return Case(["finetune", "ner", "--train", env["files"] / "train.conll", "--output",
                 work / "out", "--tag-column", "5", *env["common"]], match="tag_column=5",
                keep=(work / "out",))


@case("kbl predict --sequence-length above the preset's positions")
def _(env, work):
    return Case(["predict", env["presets"]["single"], "--input", env["files"] / "texts.txt",
                 "--sequence-length", POSITIONS + 1], match=f"{POSITIONS} rows")


@case("kbl predict --sequence-length 1")
def _(env, work):
    return Case(["predict", env["presets"]["single"], "--input", env["files"] / "texts.txt",
                 "--sequence-length", 1], match="at least 2")


@case("kbl embed --sequence-length above the preset's positions")
def _(env, work):
    return Case(["embed", env["presets"]["backbone"], "--input", env["files"] / "texts.txt",
                 "--sequence-length", POSITIONS + 1], match=f"{POSITIONS}")


@case("kbl predict --batch-size 0")
def _(env, work):
    return Case(["predict", env["presets"]["single"], "--input", env["files"] / "texts.txt",
                 "--batch-size", 0], match="--batch-size 0")


@case("kbl fill-mask -k 0")
def _(env, work):
    return Case(["fill-mask", env["presets"]["mlm"], "a [MASK] film", "-k", "0"], match="-k 0")


@case("kbl fill-mask on a text without [MASK]")
def _(env, work):
    return Case(["fill-mask", env["presets"]["mlm"], "a fine film"], match=r"no \[MASK\]")


@case("kbl embed -k 0 with a query")
def _(env, work):
    return Case(["embed", env["presets"]["backbone"], "--input", env["files"] / "texts.txt",
                 "--query", "film", "-k", "0", "--quiet"], match="-k")


@case("kbl vocab --output at a folder")
def _(env, work):
    return Case(["vocab", "--corpus", env["files"] / "corpus.txt", "--output", work,
                 "--quiet"], match="is a directory", keep=(work,))


@case("kbl vocab --output in a missing folder (made)")
def _(env, work):
    target = work / "new" / "vocab.txt"
    return Case(["vocab", "--corpus", env["files"] / "corpus.txt", "--output", target,
                 "--vocabulary-size", "60", "--min-frequency", "1", "--quiet"], expect="ok",
                check=lambda _: target.read_text().split("\n")[:1] == ["[PAD]"])


@case("kbl vocab --corpus of a labelled set, not a corpus")
def _(env, work):
    return Case(["vocab", "--corpus", "rotten_tomatoes", "--output", work / "v.txt"],
                match="neither a file nor a known corpus", keep=(work / "v.txt",))


@case("kbl vocab --vocabulary-size 3")
def _(env, work):
    return Case(["vocab", "--corpus", env["files"] / "corpus.txt", "--vocabulary-size", "3",
                 "--output", work / "v.txt", "--quiet"], match="no room")


@case("kbl export --output at a file")
def _(env, work):
    target = write(work / "model.txt", "x")
    return Case(["export", env["presets"]["single"], "--output", target, "--overwrite"],
                match="not a keras_bert_lab", keep=(target,))


@case("kbl features table --output at a file")
def _(env, work):
    target = write(work / "table.txt", "x")
    return Case(["features", "table", "--train", env["files"] / "train.conll", "--output", target,
                 "--preset", env["presets"]["backbone"]], match="is a file", keep=(target,))


@case("kbl features extract --cache onto a folder of notes with --overwrite")
def _(env, work):
    folder = busy(work)
    (folder / "train").mkdir()
    write(folder / "train" / "notes.txt", "mine")
    return Case(["features", "extract", "--train", env["files"] / "train.conll", "--cache",
                 folder, "--overwrite", "--preset", env["presets"]["backbone"],
                 "--sequence-length", "32"], match="did not write", keep=(folder,))


@case("kbl nonsense (unknown command)")
def _(env, work):
    return Case(["nonsense"], match="invalid choice")


@case("kbl finetune classify --help shows the defaults")
def _(env, work):
    return Case(["finetune", "classify", "--help"], expect="ok",
                check=lambda out: "(default: text)" in out and "default: 0" in out
                and "default 128, or the preset's positions" in " ".join(out.split()))


@case("kbl pretrain --help shows the defaults")
def _(env, work):
    return Case(["pretrain", "--help"], expect="ok",
                check=lambda out: "default: 128" in " ".join(out.split())
                and "(default: bert)" in " ".join(out.split()))


# ==== 3. Readers: every file problem is one line naming the file (and line) ======================
def conll_api(path, **options):
    from keras_bert_lab.data.conll import read_conll

    return lambda: read_conll(path, **options)


def labelled_api(path, **options):
    from keras_bert_lab.data.labelled import read_labelled

    return lambda: read_labelled(path, **options)


def multiple_choice_api(path):
    from keras_bert_lab.data.labelled import read_multiple_choice

    return lambda: read_multiple_choice(path)


def squad_api(path):
    from keras_bert_lab.data.squad import read_squad

    return lambda: read_squad(path)


LATIN1 = "Müller B-PER\nwohnt O\nin O\nKöln B-LOC\n\n"
BINARY = bytes(range(256)) * 8


@case("CoNLL with one column (token and tag the same column)")
def _(env, work):
    return Case(api=conll_api(write(work / "a.conll", "Ada\nwrote\n\nBob\n")),
                match=r"a\.conll, line 1: .*same column")


@case("CoNLL in latin-1")
def _(env, work):
    return Case(api=conll_api(write(work / "a.conll", LATIN1, "latin-1")),
                match=r"a\.conll, line 1: bytes that are not utf-8.*--encoding")


@case("CoNLL in latin-1 with encoding='latin-1'")
def _(env, work):
    path = write(work / "a.conll", LATIN1, "latin-1")
    return Case(api=conll_api(path, encoding="latin-1"), expect="ok",
                check=lambda s: s[0].words == ["Müller", "wohnt", "in", "Köln"])


@case("CoNLL that is binary")
def _(env, work):
    (work / "a.conll").write_bytes(BINARY)
    return Case(api=conll_api(work / "a.conll"), match="not utf-8")


@case("CoNLL that is empty")
def _(env, work):
    return Case(api=conll_api(write(work / "a.conll", "\n\n")), match="holds no tagged tokens")


@case("CoNLL with ragged columns")
def _(env, work):
    return Case(api=conll_api(write(work / "a.conll", "Ada NNP B-X\nwrote O\n")),
                match=r"line 2: 2 columns")


@case("CoNLL with -DOCSTART- only")
def _(env, work):
    return Case(api=conll_api(write(work / "a.conll", "-DOCSTART- O\n\n")),
                match="holds no tagged tokens")


@case("CoNLL in the wrong place (a folder)")
def _(env, work):
    return Case(api=conll_api(work), match="does not exist")


@case("kbl finetune ner on a one-sentence file: refused before training")
def _(env, work):
    one = write(work / "one.conll", "Ada B-X\nwrote O\n")
    return Case(["finetune", "ner", "--train", one, "--output", work / "out", *env["common"]],
                match="too few", keep=(work / "out",))


@case("kbl finetune ner on a latin-1 file without --encoding")
def _(env, work):
    path = write(work / "a.conll", LATIN1 * 5, "latin-1")
    return Case(["finetune", "ner", "--train", path, "--output", work / "out", *env["common"]],
                match="--encoding", keep=(work / "out",))


@case("kbl finetune ner with a validation tag unseen in training")
def _(env, work):
    valid = write(work / "valid.conll", "Ada B-Y\nwrote O\n")
    return Case(["finetune", "ner", "--train", env["files"] / "train.conll", "--valid", valid,
                 "--output", work / "out", *env["common"]], match="'B-Y'",
                keep=(work / "out",))


CSV_PROBLEMS = {
    "a duplicate column name": ("text,label,label\nfine,pos,neg\n", "more than once"),
    "no text column": ("review,label\nfine,pos\n", "no column 'text'"),
    "an empty text": ('text,label\n"",pos\n', "column 'text' is empty"),
    "a row without its label": ("text,label\nfine film\n", "column 'label' is empty"),
    "an unquoted comma": ("text,label\nfine, funny film,pos\n", "3 fields but the header has 2"),
    "only a header": ("text,label\n", "holds no examples"),
    "nothing at all": ("", "is empty"),
}
for _name, (_text, _match) in CSV_PROBLEMS.items():
    case(f"CSV with {_name}")(lambda env, work, text=_text, match=_match: Case(
        api=labelled_api(write(work / "d.csv", text)), match=match))


@case("CSV in latin-1")
def _(env, work):
    return Case(api=labelled_api(write(work / "d.csv", "text,label\ncafé crème,pos\n",
                                       "latin-1")), match=r"line 2: bytes that are not utf-8")


@case("CSV that is binary")
def _(env, work):
    (work / "d.csv").write_bytes(BINARY)
    return Case(api=labelled_api(work / "d.csv"), match="not utf-8")


@case("CSV with a byte-order mark (Excel)")
def _(env, work):
    path = write(work / "d.csv", "\ufefftext,label\nfine,pos\n")
    return Case(api=labelled_api(path), expect="ok", check=lambda d: d.texts == ["fine"])


@case("TSV with a score that is not a number (regression)")
def _(env, work):
    return Case(api=labelled_api(write(work / "d.tsv", "text\tlabel\nfine\thigh\n"),
                                 regression=True), match="'high'.*not a number")


@case("TSV with a score of nan (regression)")
def _(env, work):
    return Case(api=labelled_api(write(work / "d.tsv", "text\tlabel\nfine\tnan\n"),
                                 regression=True), match="not finite")


@case("JSONL with a line that is not JSON")
def _(env, work):
    return Case(api=labelled_api(write(work / "d.jsonl", '{"text": "a", "label": 1}\n{oops\n')),
                match="line 2: not valid JSON")


@case("JSONL with an array line")
def _(env, work):
    return Case(api=labelled_api(write(work / "d.jsonl", '["a", 1]\n')),
                match="not an object")


@case("JSONL with a key given twice")
def _(env, work):
    return Case(api=labelled_api(write(work / "d.jsonl",
                                       '{"text": "a", "label": "pos", "label": "neg"}\n')),
                match="'label' appears more than once")


@case("JSONL with a text that is a number")
def _(env, work):
    return Case(api=labelled_api(write(work / "d.jsonl", '{"text": 5, "label": "pos"}\n')),
                match="not text")


@case("a data file with an unknown extension")
def _(env, work):
    return Case(api=labelled_api(write(work / "d.xlsx", "x")), match="Cannot tell the format")


@case("kbl finetune classify on a duplicate-column CSV: refused before the output")
def _(env, work):
    train = write(work / "d.csv", "text,label,label\n" + "fine,pos,neg\nbad,neg,pos\n" * 4)
    return Case(classify_argv(env, work / "out", train=train), match="more than once",
                keep=(work / "out",))


@case("kbl finetune choice on a CSV file")
def _(env, work):
    train = write(work / "mc.csv", "context,choices,label\na,b,0\n")
    return Case(["finetune", "choice", "--train", train, "--output", work / "out",
                 *env["common"]], match="JSON", keep=(work / "out",))


MC_PROBLEMS = {
    "choices that are not a list": ('{"context": "a", "choices": "b c", "label": 0}\n',
                                    "list of at least 2"),
    "a label outside the choices": ('{"context": "a", "choices": ["b", "c"], "label": 5}\n',
                                    "label"),
    "an empty choice": ('{"context": "a", "choices": ["b", ""], "label": 0}\n', "choice 1"),
}
for _name, (_text, _match) in MC_PROBLEMS.items():
    case(f"multiple choice with {_name}")(lambda env, work, text=_text, match=_match: Case(
        api=multiple_choice_api(write(work / "mc.jsonl", text)), match=match))


SQUAD_PROBLEMS = {
    "a non-integer answer_start": (squad([{"text": "Paris", "answer_start": "zero"}]),
                                   "answer_start='zero'"),
    "an answer without text": (squad([{"answer_start": 0}]), "without a 'text'"),
    "no data list": ({"version": "v1.1"}, "no 'data' list"),
    "an article that is a string": ({"data": ["an article"]}, "article 0 is a str"),
    "a context that is a number": ({"data": [{"paragraphs": [{"context": 5, "qas": []}]}]},
                                   "'context' is a int"),
    "qas that is an object": ({"data": [{"paragraphs": [{"context": "c", "qas": {}}]}]},
                              "'qas' is a dict"),
    "a question without id": ({"data": [{"paragraphs": [{"context": "c", "qas": [
        {"question": "q?", "answers": []}]}]}]}, "lacks the field 'id'"),
    "answers that is a string": (squad("Paris"), "'answers' is a str"),
    "an empty question": (squad([{"text": "Paris", "answer_start": 0}], question=" "),
                          "no question text"),
}
for _name, (_data, _match) in SQUAD_PROBLEMS.items():
    case(f"SQuAD with {_name}")(lambda env, work, data=_data, match=_match: Case(
        api=squad_api(write(work / "s.json", json.dumps(data))), match=match))


@case("SQuAD with every answer offset wrong: kbl finetune squad stops before the output")
def _(env, work):
    path = write(work / "s.json", json.dumps(squad([{"text": "Paris", "answer_start": 3}])))
    return Case(["finetune", "squad", "--train", path, "--valid", path, "--output", work / "out",
                 "--preset", env["presets"]["backbone"], "--sequence-length", "32"],
                match="nothing can train", keep=(work / "out",))


@case("SQuAD in latin-1")
def _(env, work):
    text = json.dumps(squad([{"text": "Köln", "answer_start": 0}],
                            context="Köln liegt am Rhein."), ensure_ascii=False)
    return Case(api=squad_api(write(work / "s.json", text, "latin-1")), match="not utf-8")


@case("SQuAD in latin-1 with encoding='latin-1'")
def _(env, work):
    from keras_bert_lab.data.squad import read_squad

    text = json.dumps(squad([{"text": "Köln", "answer_start": 0}],
                            context="Köln liegt am Rhein."), ensure_ascii=False)
    path = write(work / "s.json", text, "latin-1")
    return Case(api=lambda: read_squad(path, encoding="latin-1"), expect="ok",
                check=lambda r: r[0][0].answers == (("Köln", 0),))


@case("kbl finetune squad on a latin-1 file: the --encoding it names exists")
def _(env, work):
    text = json.dumps(squad([{"text": "Köln", "answer_start": 0}],
                            context="Köln liegt am Rhein."), ensure_ascii=False)
    path = write(work / "s.json", text, "latin-1")
    return Case(["finetune", "squad", "--train", path, "--valid", path, "--output", work / "out",
                 "--preset", env["presets"]["backbone"], "--sequence-length", "32",
                 "--encoding", "utf-8"], match="--encoding latin-1", keep=(work / "out",))


@case("SQuAD that is binary")
def _(env, work):
    (work / "s.json").write_bytes(BINARY)
    return Case(api=squad_api(work / "s.json"), match="not utf-8")


@case("SQuAD that is not JSON")
def _(env, work):
    return Case(api=squad_api(write(work / "s.json", "{'data': []}")), match="not valid JSON")


@case("SQuAD with one answer offset wrong: warned, the rest train")
def _(env, work):
    data = squad([{"text": "Paris", "answer_start": 0}])
    data["data"][0]["paragraphs"][0]["qas"].append(
        {"id": "q2", "question": "Which country?", "answers": [{"text": "France",
                                                               "answer_start": 0}]})

    def read():
        with pytest.warns(UserWarning, match="1 answer"):
            return squad_api(write(work / "s.json", json.dumps(data)))()
    return Case(api=read, expect="ok",
                check=lambda r: [bool(e.answers) for e in r[0]] == [True, False])


def corpus_api(source):
    from keras_bert_lab.data.corpora import load_corpus

    return lambda: load_corpus(str(source))


@case("a corpus file that is empty")
def _(env, work):
    return Case(api=corpus_api(write(work / "c.txt", "")), match="No document could be read")


@case("a corpus file of blank lines")
def _(env, work):
    return Case(api=corpus_api(write(work / "c.txt", "\n \n\t\n")),
                match="No document could be read")


@case("a corpus file that is binary")
def _(env, work):
    (work / "c.txt").write_bytes(b"\x00" + BINARY)
    return Case(api=corpus_api(work / "c.txt"), match="No document could be read")


@case("a corpus with a few undecodable lines: repaired and counted")
def _(env, work):
    (work / "c.txt").write_bytes("a good line .\n".encode() + b"caf\xe9 au lait .\n")

    def check(corpus):
        assert corpus.stats.repaired_lines == 1 and len(corpus.documents) == 1
    return Case(api=corpus_api(work / "c.txt"), expect="ok", check=check)


@case("a corpus folder without text files")
def _(env, work):
    (work / "empty_dir").mkdir()
    return Case(api=corpus_api(work / "empty_dir"), match="empty_dir")


@case("a corpus glob that matches nothing")
def _(env, work):
    return Case(api=corpus_api(work / "*.nothing"), match="nothing")


@case("kbl pretrain --eval-corpus missing")
def _(env, work):
    return Case(pretrain_argv(env, work, "--eval-corpus", work / "nope.txt"),
                match="nope.txt", keep=(work / "p",))


@case("kbl pretrain --vocabulary that is binary")
def _(env, work):
    (work / "v.txt").write_bytes(b"\x00\x01" * 100)
    return Case(["pretrain", "--corpus", env["files"] / "corpus.txt", "--output", work / "p",
                 "--size", "tiny", "--vocabulary", work / "v.txt"], match="v.txt",
                keep=(work / "p",))


@case("a WordPiece vocabulary without [UNK]")
def _(env, work):
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    path = write(work / "v.txt", "[PAD]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
    return Case(api=lambda: WordPieceTokenizer(path), match=r"\[UNK\]")


@case("a WordPiece vocabulary with a token twice")
def _(env, work):
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    path = write(work / "v.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nthe\n")
    return Case(api=lambda: WordPieceTokenizer(path), match="the")


# ==== 4. Using a preset: kbl predict / embed / fill-mask, and the presets themselves ==============
def predict_argv(env, preset, source, *extra):
    return ["predict", env["presets"].get(preset, preset), "--input", source, "--quiet", *extra]


@case("kbl predict on a good file")
def _(env, work):
    target = work / "out.csv"

    def check(_):
        rows = target.read_text().splitlines()
        assert rows[0].startswith("id,text,label,score") and len(rows) == 4, rows
    return Case(predict_argv(env, "single", env["files"] / "texts.txt", "--output", target),
                expect="ok", check=check)


@case("kbl predict --input that is empty")
def _(env, work):
    return Case(predict_argv(env, "single", write(work / "in.txt", "\n\n")), match="holds no texts")


@case("kbl predict --input that is binary")
def _(env, work):
    (work / "in.txt").write_bytes(BINARY)
    return Case(predict_argv(env, "single", work / "in.txt"), match="not utf-8")


@case("kbl predict --input that is missing")
def _(env, work):
    return Case(predict_argv(env, "single", work / "in.txt"), match="does not exist")


@case("kbl predict --input with an unknown extension")
def _(env, work):
    return Case(predict_argv(env, "single", write(work / "in.xyz", "a\n")),
                match="Cannot tell the format")


@case("kbl predict on a table without the column the model was trained on")
def _(env, work):
    return Case(predict_argv(env, "single", write(work / "in.csv", "review\nfine\n")),
                match="no column 'text'")


@case("kbl predict on a preset of another task (token classification)")
def _(env, work):
    return Case(predict_argv(env, "tagger", env["files"] / "texts.txt"),
                match="BertTokenClassifier.*kbl predict runs fine-tuned BertClassifier")


@case("kbl predict on a backbone preset")
def _(env, work):
    return Case(predict_argv(env, "backbone", env["files"] / "texts.txt"),
                match="without a task head.*kbl embed")


@case("kbl predict on a masked-LM preset")
def _(env, work):
    return Case(predict_argv(env, "mlm", env["files"] / "texts.txt"), match="kbl fill-mask")


@case("kbl predict with a pair model on a plain text file")
def _(env, work):
    return Case(predict_argv(env, "pair", env["files"] / "texts.txt"),
                match="reads sentence pairs")


@case("kbl predict with a single-text model and --pair-column")
def _(env, work):
    return Case(predict_argv(env, "single", write(work / "in.csv", "text,b\na,b\n"),
                             "--pair-column", "b"), match="drop --pair-column")


@case("kbl predict --output that exists, without --overwrite")
def _(env, work):
    target = write(work / "out.csv", "precious")
    return Case(predict_argv(env, "single", env["files"] / "texts.txt", "--output", target),
                match="already exists", keep=(target,))


@case("kbl predict --output that is a folder")
def _(env, work):
    (work / "out.csv").mkdir()
    return Case(predict_argv(env, "single", env["files"] / "texts.txt", "--output",
                             work / "out.csv"), match="is a folder", keep=(work / "out.csv",))


@case("kbl predict --output with an unknown extension")
def _(env, work):
    return Case(predict_argv(env, "single", env["files"] / "texts.txt", "--output",
                             work / "out.xlsx"), match="extension", keep=(work / "out.xlsx",))


@case("kbl predict --output in a missing folder")
def _(env, work):
    return Case(predict_argv(env, "single", env["files"] / "texts.txt", "--output",
                             work / "no" / "out.csv"), match="does not exist",
                keep=(work / "no",))


@case("kbl predict with an unknown preset name")
def _(env, work):
    return Case(predict_argv(env, "no_such_preset", env["files"] / "texts.txt"),
                match="Unknown preset 'no_such_preset'")


@case("kbl embed on a classifier's column that is missing")
def _(env, work):
    return Case(["embed", env["presets"]["backbone"], "--input",
                 write(work / "in.csv", "review\nfine\n"), "--quiet"], match="no column 'text'")


@case("kbl embed --search on a file that is not .npy")
def _(env, work):
    return Case(["embed", env["presets"]["backbone"], "--search", write(work / "x.npy", "nope"),
                 "--query", "film"], match="x.npy")


@case("kbl fill-mask on a classifier preset")
def _(env, work):
    return Case(["fill-mask", env["presets"]["single"], "a [MASK] film"],
                match="no masked-LM head")


@case("kbl fill-mask on a text longer than the positions")
def _(env, work):
    return Case(["fill-mask", env["presets"]["mlm"], "the [MASK] " + "film " * 100],
                match=f"at most {POSITIONS}")


@case("kbl fill-mask on a good text")
def _(env, work):
    return Case(["fill-mask", env["presets"]["mlm"], "a [MASK] film", "-k", "2"], expect="ok",
                check=lambda out: "[MASK]" in out or "a [MASK] film" in out)


def broken_preset(env, work, name="p", source="single"):
    target = work / name
    shutil.copytree(env["presets"][source], target)
    return target


@case("a preset folder that does not exist")
def _(env, work):
    return Case(api=lambda: BertClassifier.from_preset(work / "nope"), match="does not exist")


@case("a preset without its weights file")
def _(env, work):
    preset = broken_preset(env, work)
    (preset / "model.weights.h5").unlink()
    return Case(api=lambda: BertClassifier.from_preset(preset), match="lacks model.weights.h5")


@case("a preset whose weights are truncated")
def _(env, work):
    preset = broken_preset(env, work)
    data = (preset / "model.weights.h5").read_bytes()
    (preset / "model.weights.h5").write_bytes(data[:len(data) // 2])
    return Case(api=lambda: BertClassifier.from_preset(preset),
                match=r"does not match metadata\.json.*truncated.*verify=False")


@case("a preset whose weights are truncated, loaded with verify=False")
def _(env, work):
    preset = broken_preset(env, work)
    data = (preset / "model.weights.h5").read_bytes()
    (preset / "model.weights.h5").write_bytes(data[:len(data) // 2])
    return Case(api=lambda: BertClassifier.from_preset(preset, verify=False),
                match="truncated or corrupt")


@case("a preset whose config.json is not JSON")
def _(env, work):
    preset = broken_preset(env, work)
    write(preset / "config.json", "{")
    return Case(api=lambda: BertClassifier.from_preset(preset), match="config.json")


@case("a preset whose metadata lists no files")
def _(env, work):
    preset = broken_preset(env, work)
    meta = json.loads((preset / "metadata.json").read_text())
    meta.pop("files")
    write(preset / "metadata.json", json.dumps(meta))
    return Case(api=lambda: BertClassifier.from_preset(preset), match="lists no files")


@case("a preset whose vocabulary belongs to another model")
def _(env, work):
    from keras_bert_lab.presets.format import read_preset

    preset = broken_preset(env, work)
    write(preset / "vocab.txt", "\n".join(env["words"][:100]) + "\n")
    return Case(api=lambda: read_preset(preset, verify=False), match="100 tokens but")


@case("a keras-hub folder given as a preset")
def _(env, work):
    preset = broken_preset(env, work)
    write(preset / "config.json", json.dumps({"module": "keras_hub.src.models.bert"}))
    return Case(api=lambda: BertClassifier.from_preset(preset, verify=False),
                match="import-keras-hub")


@case("a classifier preset loaded as a token classifier")
def _(env, work):
    return Case(api=lambda: BertTokenClassifier.from_preset(env["presets"]["single"]),
                match="label")


@case("kbl predict on a preset with a corrupt weights file")
def _(env, work):
    preset = broken_preset(env, work)
    (preset / "model.weights.h5").write_bytes(b"not hdf5")
    return Case(predict_argv(env, preset, env["files"] / "texts.txt"),
                match="does not match metadata.json")


@case("save_to_preset(overwrite=True) onto a folder of notes")
def _(env, work):
    folder = busy(work)
    model = BertBackbone(BertConfig.from_size("tiny", vocabulary_size=100, max_positions=16))
    return Case(api=lambda: model.save_to_preset(folder, vocabulary=env["words"][:100],
                                                 overwrite=True),
                match="did not write", keep=(folder,))


@case("save_to_preset(overwrite=True) onto a file")
def _(env, work):
    target = write(work / "preset", "x")
    model = BertBackbone(BertConfig.from_size("tiny", vocabulary_size=100, max_positions=16))
    return Case(api=lambda: model.save_to_preset(target, vocabulary=env["words"][:100],
                                                 overwrite=True),
                match="is a file", keep=(target,))


@case("kbl preset import-hf with a pickle that runs code")
def _(env, work):
    torch = pytest.importorskip("torch")
    source = work / "hf"
    source.mkdir()
    write(source / "config.json", json.dumps({
        "model_type": "bert", "vocab_size": 100, "hidden_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 512, "max_position_embeddings": 16,
        "type_vocab_size": 2}))
    write(source / "vocab.txt", "\n".join(env["words"][:100]) + "\n")

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(work / "pwned"),))

    torch.save({"x": Evil()}, source / "pytorch_model.bin")
    return Case(["preset", "import-hf", source, work / "out"],
                match=r"pytorch_model\.bin.*Python objects besides tensors \(posix\.system\)",
                keep=(work / "pwned",))


# ==== 5. Model inputs through the API (every backend: the checks run in each backend's path) =====
MODEL_CASES = {}
# Inputs are checked in eager calls but not on the predict paths (`Model.predict`,
# `predict_on_batch`, hence `Task.predict_packed`): on TensorFlow a raw InvalidArgumentError, on
# JAX a silently clamped gather, on PyTorch the InputError wrapped by Keras into many lines. The
# fix (validating NumPy inputs before Keras' predict machinery) belongs in tasks/base.py and
# models/backbone.py, outside this suite's reach; these cases count as "pending" until then.
PREDICT_PATH_GAP = set()


def model_case(name, gap=()):
    def register(build):
        MODEL_CASES[name] = (build, set(gap))
        return build
    return register


def features(ids, segments=None, mask=None):
    ids = np.asarray(ids, "int32") if not isinstance(ids, np.ndarray) else ids
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids) if segments is None else segments,
            "padding_mask": np.ones(ids.shape, "int32") if mask is None else mask}


@pytest.fixture(scope="module")
def tiny_models():
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(BertConfig.from_size("tiny", vocabulary_size=100, max_positions=16))
    return {"backbone": backbone, "classifier": BertClassifier(backbone, num_classes=2)}


@model_case("token id above the vocabulary")
def _(m):
    return lambda: m["backbone"](features([[1, 2, 500]])), "id 500 outside"


@model_case("negative token id")
def _(m):
    return lambda: m["backbone"](features([[1, -3, 5]])), "id -3 outside"


@model_case("segment id 2")
def _(m):
    return lambda: m["backbone"](features([[1, 2, 3]], segments=np.array([[0, 1, 2]]))), \
        "'segment_ids' holds id 2"


@model_case("a sequence longer than the position table")
def _(m):
    return lambda: m["backbone"](features(np.ones((1, 20), "int32"))), "20 exceeds"


@model_case("token ids of rank 1")
def _(m):
    return lambda: m["backbone"](features([1, 2, 3])), r"shape \(batch, tokens\)"


@model_case("a missing input")
def _(m):
    return lambda: m["backbone"]({"token_ids": np.ones((1, 4), "int32")}), "lack"


@model_case("float token ids")
def _(m):
    return lambda: m["backbone"](features(np.full((1, 4), 1.5, "float32"))), "integer ids"


@model_case("inputs of different shapes")
def _(m):
    return lambda: m["backbone"](features([[1, 2, 3]], segments=np.zeros((1, 2), "int32"))), \
        "disagree in shape"


@model_case("a list instead of a dict")
def _(m):
    return lambda: m["backbone"]([np.ones((1, 4), "int32")] * 3), "takes a dict"


@model_case("token id above the vocabulary, through predict", gap=PREDICT_PATH_GAP)
def _(m):
    return lambda: m["classifier"].predict(features([[1, 2, 500]]), verbose=0), "id 500 outside"


@model_case("token id above the vocabulary, through predict_packed", gap=PREDICT_PATH_GAP)
def _(m):
    return lambda: m["classifier"].predict_packed(features([[1, 2, 500]])), "id 500 outside"


# ---- the tests ---------------------------------------------------------------------------------
def record(category, why, where):
    TALLY[category] += 1
    assert category in ("clear error", "handled", "pending"), f"{category}: {why}\n({where})"


@backend_independent
@pytest.mark.parametrize("name", list(CASES))
def test_bad_input(name, env, work, monkeypatch, capsys):
    import inspect

    build = CASES[name]
    spec = build(env, work, monkeypatch) if len(inspect.signature(build).parameters) == 3 \
        else build(env, work)
    before = [(path, snapshot(path)) for path in spec.keep]
    partial_before = set(partial_files(work) + partial_files(env["root"]))
    kind, detail = run_case(spec, capsys)
    monkeypatch.undo()                   # a case's fake writer must not leak into the checks
    category, why = classify(spec, kind, detail)
    if category in ("clear error", "handled"):
        changed = [str(path) for path, state in before if snapshot(path) != state]
        left = sorted(set(partial_files(work) + partial_files(env["root"])) - partial_before)
        if changed:
            category, why = "data loss", f"changed or deleted: {changed}"
        elif left:
            category, why = "partial files", f"left behind: {left}"
    record(category, why, name)


@pytest.mark.parametrize("name", list(MODEL_CASES))
def test_bad_model_input(name, tiny_models, capsys):
    build, gap = MODEL_CASES[name]
    call, match = build(tiny_models)
    kind, detail = run_case(Case(api=call), capsys)
    category, why = classify(Case(api=call, match=match), kind, detail)
    if keras.backend.backend() in gap:
        # Known gap in files outside this suite's reach (models/backbone.py, tasks/base.py);
        # strict: once fixed this must say so, and the case leaves the gap list.
        assert category != "clear error", f"{name} is fixed on {keras.backend.backend()}: " \
                                          "remove it from PREDICT_PATH_GAP"
        category = "pending"
    record(category, why, name)


def test_summary():
    """The count of every case that ran in this session (``pytest -rA`` shows it)."""
    total = sum(TALLY.values())
    if not total:
        pytest.skip("no bad-input case ran")
    failed = {k: TALLY[k] for k in FAILURES if TALLY[k]}
    line = (f"bad-input suite: {total} cases, {TALLY['clear error']} clear errors, "
            f"{TALLY['handled']} handled, {TALLY['traceback']} tracebacks, "
            f"{TALLY['silent']} silent, {TALLY['data loss']} data loss"
            + (f", {TALLY['pending']} pending (model predict path)" if TALLY["pending"] else "")
            + (f"; other failures {failed}" if failed else ""))
    print("\n" + line)
    assert not failed, line
