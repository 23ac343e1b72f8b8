"""Task: what every task shares beyond the contract checks — presets of other families and of
older versions, and no text handling on the model side."""

import json

import pytest

from keras_bert_lab import Backbone, BertBackbone, BertClassifier, BertConfig, Task
from keras_bert_lab.errors import PresetError
from tests.presets.helpers import tiny_vocab

CONFIG = BertConfig.from_size("tiny", vocabulary_size=300, max_positions=32)


def test_a_stored_argument_the_class_no_longer_takes_is_dropped_with_a_warning(tmp_path):
    path = BertClassifier(BertBackbone(CONFIG), num_classes=3).save_to_preset(
        tmp_path / "old", vocabulary=tiny_vocab())
    config = json.loads((path / "config.json").read_text())
    config["task"]["config"]["sequence_length"] = 64  # an argument of an older version
    (path / "config.json").write_text(json.dumps(config))
    with pytest.warns(UserWarning, match=r"no longer takes \['sequence_length'\]"):
        model = BertClassifier.from_preset(path, verify=False)
    assert model.num_classes == 3


def test_a_preset_of_another_backbone_family_is_refused(tmp_path):
    """One line naming both families and the class that loads the preset."""
    path = BertBackbone(CONFIG).save_to_preset(tmp_path / "p", vocabulary=tiny_vocab())
    config = json.loads((path / "config.json").read_text())
    config["family"], config["backbone_class"] = "gpt", "GPTBackbone"
    (path / "config.json").write_text(json.dumps(config))
    for load in (BertBackbone.from_preset, BertClassifier.from_preset):
        with pytest.raises(PresetError, match=r"holds a gpt model \(GPTBackbone\), not a bert "
                                              r"one.*Load it with GPTBackbone.from_preset"):
            load(path, verify=False)


def test_a_preset_whose_family_and_backbone_disagree_is_refused(tmp_path):
    path = BertBackbone(CONFIG).save_to_preset(tmp_path / "p", vocabulary=tiny_vocab())
    config = json.loads((path / "config.json").read_text())
    config["backbone_class"] = "GPTBackbone"          # but still "family": "bert"
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(PresetError, match="records family 'bert' but holds a GPTBackbone"):
        BertBackbone.from_preset(path, verify=False)


def test_a_preset_of_an_unknown_family_is_refused(tmp_path):
    path = BertBackbone(CONFIG).save_to_preset(tmp_path / "p", vocabulary=tiny_vocab())
    config = json.loads((path / "config.json").read_text())
    config["family"], config["backbone_class"] = "t5", "T5Backbone"
    (path / "config.json").write_text(json.dumps(config))
    for load in (BertBackbone.from_preset, Backbone.from_preset, Task.from_preset):
        with pytest.raises(PresetError, match=r"family 't5' \(T5Backbone\), which this "
                                              r"keras_bert_lab does not know.*load it with "
                                              r"keras_bert_lab \d"):
            load(path, verify=False)


def test_the_generic_loaders_pick_the_family(tmp_path):
    path = BertClassifier(BertBackbone(CONFIG), num_classes=3).save_to_preset(
        tmp_path / "p", vocabulary=tiny_vocab())
    assert type(Backbone.from_preset(path)) is BertBackbone
    model = Task.from_preset(path)
    assert type(model) is BertClassifier and model.num_classes == 3
    headless = BertBackbone(CONFIG).save_to_preset(tmp_path / "b", vocabulary=tiny_vocab())
    with pytest.raises(PresetError, match="without a task head; load it with Backbone"):
        Task.from_preset(headless)


def test_tasks_have_no_text_methods():
    model = BertClassifier(BertBackbone(CONFIG))
    for name in ("tokenizer", "preprocess", "predict_texts"):
        assert not hasattr(model, name), name
