"""``kbl finetune classify | pair | choice``: arguments, data errors and tiny end-to-end runs."""

import argparse
import csv
import json

import pytest

from keras_bert_lab import BertBackbone
from keras_bert_lab.data.registry import locate
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.presets import read_preset
from keras_bert_lab.commands.finetune import classify
from keras_bert_lab.commands.finetune import common as finetune
from keras_bert_lab.models.bert.classifier import BertClassifier
from keras_bert_lab.models.bert.multiple_choice import BertMultipleChoice


def parse(*argv):
    parser = argparse.ArgumentParser()
    classify.register(parser.add_subparsers(dest="task"))
    return parser.parse_args(list(argv))


# ---- arguments and data ----------------------------------------------------------------------
def test_subcommands_and_defaults():
    args = parse("pair", "--dataset", "stsb", "--regression")
    assert args.run is classify.run_classification and args.pair and args.regression
    assert args.text_column == "sentence1" and args.text_pair_column == "sentence2"
    args = parse("choice", "--train", "x.jsonl")
    assert args.run is classify.run_choice and args.batch_size.value == 16   # unless the preset says
    with pytest.raises(SystemExit):
        parse("classify", "--dataset", "stsb")       # stsb is a pair data set


def test_either_dataset_or_train(tmp_path):
    args = parse("classify", "--output", str(tmp_path / "out"))
    with pytest.raises(ConfigError, match="either --dataset NAME or --train FILE"):
        classify.run_classification(args)


def test_label_outside_the_given_set_is_named(tmp_path):
    train = tmp_path / "train.csv"
    train.write_text("text,label\nnice,pos\nbad,neg\nmeh,neutral\n", encoding="utf-8")
    args = parse("classify", "--train", str(train), "--labels", "neg,pos", "--valid-fraction",
                 "0.5", "--output", str(tmp_path / "out"), "--preset", str(tiny_preset(tmp_path)))
    with pytest.raises(DataError, match=r"label 'neutral' is not in the label set \['neg', 'pos'\]"):
        classify.run_classification(args)


# ---- tiny end-to-end runs ----------------------------------------------------------------------
def tiny_preset(tmp_path, **preprocessor):
    path = tmp_path / ("tiny" + "".join(f"-{k}" for k in preprocessor))
    if not path.exists():
        BertBackbone("tiny").save_to_preset(path, vocabulary=locate("bert_uncased_vocab"),
                                            preprocessor=preprocessor or None)
    return path


def test_pooling_follows_the_preset_unless_given(tmp_path):
    # what `kbl pretrain` writes for a run without next-sentence prediction (untrained pooler)
    advised = str(tiny_preset(tmp_path, finetune={"pooling": "mean"}))
    plain = str(tiny_preset(tmp_path))
    for command in ("classify", "pair", "choice"):
        choice = lambda *flags: finetune.preset_choice(parse(command, *flags), "pooling")  # noqa
        assert choice("--preset", advised) == "mean"
        assert choice("--preset", advised, "--pooling", "cls") == "cls"
        assert choice("--preset", plain) == "cls"


def test_classify_run_from_csv_files(tmp_path):
    rows = [("A warm, funny film.", "pos"), ("Dull and slow.", "neg"), ("Loved it.", "pos"),
            ("A mess.", "neg")] * 4
    for name in ("train", "test"):
        with open(tmp_path / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["review", "sentiment"])
            writer.writerows(rows)
    out = tmp_path / "out"
    args = parse("classify", "--train", str(tmp_path / "train.csv"), "--test",
                 str(tmp_path / "test.csv"), "--text-column", "review", "--label-column",
                 "sentiment", "--preset", str(tiny_preset(tmp_path, finetune={"pooling": "mean"})),
                 "--output", str(out),
                 "--epochs", "1", "--batch-size", "4", "--sequence-length", "16",
                 "--valid-fraction", "0.25")
    metrics = args.run(args)
    assert metrics["labels"] == ["neg", "pos"] and metrics["sizes"] == {
        "train": 12, "valid": 4, "test": 16}
    assert set(metrics["test"]) == {"accuracy", "macro_f1"}
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["best"]["accuracy"] == metrics["best"]["accuracy"]
    model = BertClassifier.from_preset(out / "preset")
    assert model.labels == ["neg", "pos"] and model.pooling == "mean"   # the preset's advice
    assert read_preset(out / "preset").preprocessor == {   # what `kbl predict` reads back
        "sequence_length": 16, "pair": False, "text_column": "review", "pair_column": None}
    predictions = list(csv.DictReader(open(out / "test_predictions.csv", encoding="utf-8")))
    assert len(predictions) == 16 and {p["predicted"] for p in predictions} <= {"neg", "pos"}


def test_limit_keeps_every_class_of_the_training_file(tmp_path):
    # The first two examples are both 'pos': the label set still comes from the whole file.
    rows = [("Loved it.", "pos"), ("Great fun.", "pos"), ("A mess.", "neg"), ("Dull.", "neg")]
    for name in ("train", "valid"):
        with open(tmp_path / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([("text", "label"), *rows])
    args = parse("classify", "--train", str(tmp_path / "train.csv"), "--valid",
                 str(tmp_path / "valid.csv"), "--preset", str(tiny_preset(tmp_path)),
                 "--output", str(tmp_path / "out"), "--epochs", "1", "--batch-size", "2",
                 "--sequence-length", "8", "--limit", "2")
    metrics = args.run(args)
    assert metrics["labels"] == ["neg", "pos"] and metrics["sizes"]["train"] == 2


def test_pair_regression_and_choice_runs(tmp_path):
    pairs = [{"sentence1": "A man plays.", "sentence2": "A man is playing.", "score": 4.5},
             {"sentence1": "A cat sleeps.", "sentence2": "The market fell.", "score": 0.2}] * 4
    train = tmp_path / "pairs.jsonl"
    train.write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    args = parse("pair", "--regression", "--train", str(train), "--valid", str(train),
                 "--label-column", "score", "--preset", str(tiny_preset(tmp_path)),
                 "--output", str(tmp_path / "pair"), "--epochs", "1", "--batch-size", "4",
                 "--sequence-length", "16", "--limit", "4")
    metrics = args.run(args)
    assert metrics["problem"] == "regression" and metrics["sizes"]["train"] == 4
    assert {"pearson", "spearman", "mse"} <= set(metrics["best"])
    assert read_preset(tmp_path / "pair" / "preset").preprocessor["pair"] is True
    rows = [{"context": "He opened the door", "choices": ["and walked in.", "and ate it."],
             "label": 0}] * 6
    mc = tmp_path / "mc.jsonl"
    mc.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = parse("choice", "--train", str(mc), "--valid", str(mc), "--test", str(mc),
                 "--preset", str(tiny_preset(tmp_path)), "--output", str(tmp_path / "mc"),
                 "--epochs", "1", "--batch-size", "3", "--sequence-length", "16",
                 "--pooling", "mean")
    metrics = args.run(args)
    assert 0.0 <= metrics["test"]["accuracy"] <= 1.0
    model = BertMultipleChoice.from_preset(tmp_path / "mc" / "preset")
    assert model.dropout is None and model.pooling == "mean"
    assert read_preset(tmp_path / "mc" / "preset").preprocessor == {"sequence_length": 16}
