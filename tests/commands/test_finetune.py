"""The shared steps of the fine-tuning recipes: settings and flags, data splits, the run."""

import argparse
import json

import pytest

from keras_bert_lab.errors import ConfigError, DataError, TrainingError
from keras_bert_lab.training.run import prepare_output
from keras_bert_lab.commands.finetune.common import (FinetuneSettings, add_common_arguments,
                                            add_data_arguments, load_splits, recommended,
                                            settings_from_args, start)


def test_settings_flags_and_output_dir(tmp_path):
    parser = argparse.ArgumentParser()
    add_common_arguments(parser, learning_rate=1e-4)
    args = parser.parse_args(["--output", str(tmp_path / "a"), "--layer-decay", "0.9",
                              "--limit", "100"])
    settings = settings_from_args(args)
    assert (settings.learning_rate, settings.layer_decay, settings.limit) == (1e-4, 0.9, 100)
    out = start(settings)                      # checks and seeds; nothing written yet
    assert not out.exists()
    prepare_output(out, settings.to_dict())    # what fine_tune() does first
    assert json.loads((out / "settings.json").read_text())["layer_decay"] == 0.9
    (out / "log.csv").write_text("epoch\n1\n")  # the run trained
    with pytest.raises(TrainingError, match="--overwrite"):
        start(settings)
    with pytest.raises(ConfigError, match="--warmup-ratio"):
        FinetuneSettings(warmup_ratio=1.5)


def test_a_preset_recommends_what_no_flag_sets(tmp_path):
    from keras_bert_lab.models.bert.backbone import BertBackbone
    from tests.presets.helpers import CONFIG, tiny_vocab

    preset = BertBackbone(CONFIG).save_to_preset(
        tmp_path / "p", vocabulary=tiny_vocab(),
        preprocessor={"finetune": {"learning_rate": 3e-3, "unfreeze": "gradual", "epochs": 5}})
    parser = argparse.ArgumentParser()
    add_common_arguments(parser, learning_rate=1e-4)
    settings = settings_from_args(parser.parse_args(["--preset", str(preset), "--epochs", "2"]))
    assert (settings.learning_rate, settings.unfreeze, settings.epochs) == (3e-3, "gradual", 2)
    bare = BertBackbone(CONFIG).save_to_preset(tmp_path / "bare", vocabulary=tiny_vocab())
    plain = settings_from_args(parser.parse_args(["--preset", str(bare)]))   # no advice
    assert (plain.learning_rate, plain.unfreeze, plain.epochs) == (1e-4, "all", 3)


def test_a_named_preset_recommends_through_its_registry_file(tmp_path, monkeypatch):
    entry = {"name": "tiny_named", "finetune": {"learning_rate": 2e-4, "schedule": "slanted",
                                                "pooling": "mean", "no_such_flag": 1},
             "source": {"format": "huggingface", "package": "kbl-no-such-package",
                        "version": "0", "module": "kbl_no_such_module"}}
    (tmp_path / "tiny_named.json").write_text(json.dumps(entry))
    monkeypatch.setenv("KBL_PRESETS_PATH", str(tmp_path))
    monkeypatch.setenv("KBL_PRESET_HOME", str(tmp_path / "built"))
    assert recommended("tiny_named") == {"learning_rate": 2e-4, "schedule": "slanted",
                                         "pooling": "mean"}   # a key no flag takes is dropped
    parser = argparse.ArgumentParser()
    add_common_arguments(parser)
    settings = settings_from_args(parser.parse_args(["--preset", "tiny_named",
                                                     "--schedule", "linear"]))
    assert (settings.learning_rate, settings.schedule) == (2e-4, "linear")


def test_ulmfit_technique_flags():
    parser = argparse.ArgumentParser()
    add_common_arguments(parser)
    settings = settings_from_args(parser.parse_args(
        ["--schedule", "slanted", "--cut-fraction", "0.2", "--slanted-ratio", "16",
         "--unfreeze", "gradual", "--layer-decay", "0.385"]))
    assert (settings.schedule, settings.cut_fraction, settings.slanted_ratio, settings.unfreeze,
            settings.layer_decay) == ("slanted", 0.2, 16.0, "gradual", 0.385)
    with pytest.raises(SystemExit):
        parser.parse_args(["--unfreeze", "bottom"])
    with pytest.raises(ConfigError, match="--cut-fraction"):
        FinetuneSettings(cut_fraction=1.0)


def parse(*argv, test_fraction=True):
    parser = argparse.ArgumentParser()
    add_data_arguments(parser, ["set"], test_fraction=test_fraction, default_valid_fraction=0.2)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(list(argv))


def test_load_splits_holds_out_validation_and_test_parts():
    items = list(range(50))
    splits, how = load_splits(parse("--dataset", "set", "--test-fraction", "0.1"), None,
                              lambda name: items)
    assert [len(splits[k]) for k in ("train", "valid", "test")] == [35, 10, 5]
    assert sorted(splits["train"] + splits["valid"] + splits["test"]) == items
    assert how == "registry data set 'set' (20% validation and 10% test held out of train " \
                  "with seed 0)"
    files = {"t.txt": list(range(10)), "v.txt": [100]}
    splits, how = load_splits(parse("--train", "t.txt", "--valid", "v.txt"), files.get, None)
    assert splits == {"train": files["t.txt"], "valid": [100], "test": None}
    assert how == "train t.txt, valid v.txt"


@pytest.mark.parametrize("argv, error, match", [
    ((), ConfigError, "either --dataset NAME or --train FILE"),
    (("--dataset", "set", "--train", "t.txt"), ConfigError, "either --dataset"),
    (("--train", "t.txt", "--valid-fraction", "1.5"), ConfigError, "--valid-fraction 1.5"),
    (("--train", "t.txt", "--valid-fraction", "0"), ConfigError, "validation > 0"),
    (("--train", "one.txt"), DataError, "too few to hold out"),
])
def test_load_splits_errors(argv, error, match):
    files = {"t.txt": list(range(10)), "one.txt": [1]}
    with pytest.raises(error, match=match):
        load_splits(parse(*argv), files.get, lambda name: list(range(10)))
