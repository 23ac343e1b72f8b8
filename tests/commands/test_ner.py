"""``kbl finetune ner``: data splits, a tiny end-to-end run and its reports."""

import argparse
import csv
import json

import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.commands.finetune import ner
from keras_bert_lab.models.bert.token_classifier import BertTokenClassifier
from keras_bert_lab.data.conll import TaggedSentence
from keras_bert_lab.preprocessing.tagging import TaggingPreprocessor
from tests.presets.helpers import tiny_vocab

CONFIG = BertConfig.from_size("tiny", vocabulary_size=300, num_layers=2, max_positions=64)


def parse(*argv):
    parser = argparse.ArgumentParser()
    ner.register(parser.add_subparsers(dest="task"))
    return parser.parse_args(["ner", *argv])


def write_conll(path, sentences):
    path.write_text("".join("".join(f"{w} {t}\n" for w, t in zip(s.words, s.tags)) + "\n"
                            for s in sentences), encoding="utf-8")
    return path


def toy_sentences(n, seed):
    """Sentences of tiny-vocab words where w1..w9 are PER (two-word names w1 w2 are B I), the
    rest O — a pattern a tiny model learns in a few epochs."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words, tags = [], []
        for _ in range(rng.integers(3, 6)):
            if rng.random() < 0.25:
                words += ["w1", "w2"]
                tags += ["B-PER", "I-PER"]
            elif rng.random() < 0.2:
                words.append("w4")
                tags.append("B-LOC")
            else:
                words.append(f"w{rng.choice([20, 22, 23, 25, 26, 28])}")
                tags.append("O")
        out.append(TaggedSentence(words, tags))
    return out


def test_wnut16_split_is_seeded_and_disjoint():
    splits, how = ner.load_splits(parse("--dataset", "wnut16", "--test-fraction", "0.1",
                                        "--seed", "7"))
    sizes = {k: len(v) for k, v in splits.items()}
    assert sum(sizes.values()) == 2394 and sizes["valid"] == 479 and sizes["test"] == 239
    assert how == ("registry data set 'wnut16' (20% validation and 10% test held out of train "
                   "with seed 7)")
    again, _ = ner.load_splits(parse("--dataset", "wnut16", "--test-fraction", "0.1",
                                     "--seed", "7"))
    assert [s.words for s in again["valid"]] == [s.words for s in splits["valid"]]
    train_ids = {id(s) for s in splits["train"]}
    assert not train_ids & {id(s) for s in splits["valid"] + splits["test"]}


def test_split_arguments_are_checked(tmp_path):
    path = write_conll(tmp_path / "t.conll", toy_sentences(5, 0))
    with pytest.raises(ConfigError, match="either --dataset"):
        ner.load_splits(parse("--dataset", "wnut16", "--train", str(path)))
    with pytest.raises(ConfigError, match="either --dataset"):
        ner.load_splits(parse())
    with pytest.raises(ConfigError, match="valid-fraction"):
        ner.load_splits(parse("--train", str(path), "--valid-fraction", "0.6",
                              "--test-fraction", "0.5"))


def test_encoding_flag_reads_a_latin1_file_and_its_absence_is_one_clear_line(tmp_path, capsys):
    from keras_bert_lab.cli import main

    path = tmp_path / "latin.conll"
    path.write_bytes("".join(f"Müller{i} B-PER\nsagt O\n\n" for i in range(10)).encode("latin-1"))
    splits, _ = ner.load_splits(parse("--train", str(path), "--encoding", "latin-1"))
    assert sorted(w for s in splits["train"] + splits["valid"] for w in s.words
                  if w.startswith("M"))[0] == "Müller0"
    out = tmp_path / "run"
    assert main(["finetune", "ner", "--train", str(path), "--output", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "line 1: bytes that are not utf-8" in error
    assert "--encoding latin-1" in error and not out.exists()


def test_tiny_run_writes_metrics_per_type_and_predictions(tmp_path):
    preset = BertBackbone(CONFIG).save_to_preset(tmp_path / "tiny", vocabulary=tiny_vocab(300))
    train = write_conll(tmp_path / "train.conll", toy_sentences(48, 0))
    valid = write_conll(tmp_path / "valid.conll", toy_sentences(16, 1))
    test = write_conll(tmp_path / "test.conll", toy_sentences(16, 2))
    out = tmp_path / "run"
    args = parse("--train", str(train), "--valid", str(valid), "--test", str(test),
                 "--preset", str(preset), "--output", str(out), "--epochs", "6",
                 "--learning-rate", "3e-3", "--batch-size", "8", "--sequence-length", "16",
                 "--label-all-pieces")
    metrics = args.run(args)
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["best"]["f1"] == metrics["best"]["f1"] > 0.5
    assert saved["labels"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert set(saved["test"]) >= {"precision", "recall", "f1", "strict_f1"}
    # the reported test F1 is seqeval's on the written predictions
    gold, predicted = [], []
    for block in (out / "test_predictions.conll").read_text().strip().split("\n\n"):
        rows = [line.split(" ") for line in block.split("\n")]
        gold.append([r[1] for r in rows])
        predicted.append([r[2] for r in rows])
    seqeval = pytest.importorskip("seqeval.metrics")
    assert saved["test"]["f1"] == pytest.approx(seqeval.f1_score(gold, predicted), abs=1e-12)
    with open(out / "per_type.csv") as f:
        rows = list(csv.DictReader(f))
    assert {(r["split"], r["type"]) for r in rows} >= {("valid", "PER"), ("test", "LOC")}
    tagger = BertTokenClassifier.from_preset(out / "preset")
    assert tagger.labels == saved["labels"]
    preprocessor = TaggingPreprocessor.from_preset(out / "preset")  # labels and length of the run
    assert preprocessor.labels == saved["labels"] and preprocessor.sequence_length == 16
    data = preprocessor([["w1", "w2", "w20"]])
    assert preprocessor.decode(tagger.predict_packed(data.features), data)[0][2] in saved["labels"]


def test_unknown_validation_tag_is_named(tmp_path):
    preset = BertBackbone(CONFIG).save_to_preset(tmp_path / "tiny", vocabulary=tiny_vocab(300))
    train = write_conll(tmp_path / "train.conll", toy_sentences(8, 0))
    valid = write_conll(tmp_path / "valid.conll",
                        [TaggedSentence(["w1", "w5"], ["B-PER", "B-ORG"])])
    args = parse("--train", str(train), "--valid", str(valid), "--preset", str(preset),
                 "--output", str(tmp_path / "run"))
    with pytest.raises(DataError, match="valid split .*'B-ORG'"):
        args.run(args)
