"""Preset directories: format, atomic save, loading on every backend, and every kind of bad input."""

import doctest
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import h5py
import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer, presets
from keras_bert_lab.errors import PresetError
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.commands.finetune.common import RECOMMENDABLE
from tests.presets.helpers import (CONFIG, assert_outputs_close, batch, outputs, random_pretrainer,
                                   tiny_vocab)

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def saved_once(tmp_path_factory):
    model = random_pretrainer()
    path = model.save_to_preset(tmp_path_factory.mktemp("saved") / "p", vocabulary=tiny_vocab(),
                                source="a test", license="CC0-1.0")
    return model, path


@pytest.fixture()
def pretrainer_preset(saved_once, tmp_path):
    """The model and a private copy of its preset (tests may damage it)."""
    model, path = saved_once
    return model, pathlib.Path(shutil.copytree(path, tmp_path / "p"))


def rewrite(path, name, data):
    """Replace a preset file and update its checksum, so later checks (not sha256) are reached."""
    (path / name).write_bytes(data)
    meta = json.loads((path / "metadata.json").read_text())
    meta["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    (path / "metadata.json").write_text(json.dumps(meta))


def test_directory_format_and_metadata(pretrainer_preset):
    model, path = pretrainer_preset
    assert sorted(os.listdir(path)) == ["config.json", "metadata.json", "model.weights.h5",
                                        "vocab.txt"]
    config = json.loads((path / "config.json").read_text())
    assert BertConfig.from_dict(config["backbone"]) == CONFIG
    assert config["family"] == "bert" and config["backbone_class"] == "BertBackbone"
    assert config["task"]["class_name"] == "BertPretrainer"
    assert config["tokenizer"] == {"lowercase": True, "class_name": "WordPieceTokenizer"}
    meta = json.loads((path / "metadata.json").read_text())
    assert meta["source"] == "a test" and meta["license"] == "CC0-1.0"
    assert meta["parameter_count"] == model.count_params()
    assert meta["backbone_parameter_count"] == CONFIG.num_parameters()
    for name in ("config.json", "model.weights.h5", "vocab.txt"):
        data = (path / name).read_bytes()
        assert meta["files"][name] == {"sha256": hashlib.sha256(data).hexdigest(),
                                       "bytes": len(data)}
    assert (path / "vocab.txt").read_text().split("\n")[:-1] == tiny_vocab()
    with h5py.File(path / "model.weights.h5") as f:
        assert f["backbone/encoder_layer_0/attention/qkv/kernel"].shape == (128, 3, 4, 32)
        assert f["task/next_sentence_head/kernel"].shape == (128, 2)


def test_round_trips_backbone_and_task(pretrainer_preset):
    model, path = pretrainer_preset
    x = batch()
    expected = outputs(model, x)
    assert_outputs_close(outputs(BertPretrainer.from_preset(path), x), expected, atol=0)
    backbone = BertBackbone.from_preset(str(path))  # the heads in the file are ignored
    assert_outputs_close(outputs(backbone, x),
                         {k: expected[k] for k in ("sequence_output", "pooled_output")}, atol=0)
    # A backbone-only preset gives a pretrainer whose heads are new but whose backbone is loaded.
    again = backbone.save_to_preset(path.parent / "b")  # vocabulary carried over from the preset
    assert presets.read_preset(again).vocabulary() == tiny_vocab()
    fresh = BertPretrainer.from_preset(again)
    got = outputs(fresh, x)
    np.testing.assert_array_equal(got["pooled_output"], expected["pooled_output"])
    assert np.abs(got["nsp"] - expected["nsp"]).max() > 1e-3  # a new NSP head


def test_save_is_atomic_and_refuses_to_clobber(pretrainer_preset, monkeypatch):
    model, path = pretrainer_preset
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    with pytest.raises(PresetError, match="already exists.*overwrite=True"):
        model.save_to_preset(path, vocabulary=tiny_vocab())

    def crash(*args):
        raise RuntimeError("disk full")

    monkeypatch.setattr(preset_format, "write_weights", crash)
    with pytest.raises(RuntimeError, match="disk full"):
        model.save_to_preset(path, vocabulary=tiny_vocab(), overwrite=True)
    with pytest.raises(RuntimeError):
        model.save_to_preset(path.parent / "new", vocabulary=tiny_vocab())
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before  # untouched
    assert sorted(p.name for p in path.parent.iterdir()) == ["p"]  # no temporary left behind
    other = random_pretrainer(seed=5)
    other.save_to_preset(path, vocabulary=tiny_vocab(), overwrite=True)
    assert_outputs_close(outputs(BertPretrainer.from_preset(path), batch()),
                         outputs(other, batch()), atol=0)
    assert sorted(p.name for p in path.parent.iterdir()) == ["p"]


# Loading a preset saved here under the other two backends: tests/tasks/test_task_contract.py
# (every task, BertPretrainer included, on every backend).


# ---- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", preset_format.REQUIRED_FILES)
def test_missing_file_is_named(pretrainer_preset, name):
    _, path = pretrainer_preset
    (path / name).unlink()
    with pytest.raises(PresetError, match=f"lacks {name}.*it has: "):
        BertBackbone.from_preset(path)


def test_truncated_or_corrupted_weights(pretrainer_preset):
    _, path = pretrainer_preset
    weights = path / "model.weights.h5"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(PresetError, match="model.weights.h5 does not match metadata.json.*truncated"):
        BertBackbone.from_preset(path)
    with pytest.raises(PresetError, match="truncated or corrupt and cannot be read"):
        BertBackbone.from_preset(path, verify=False)  # without the checksum, h5 itself fails
    flipped = bytearray(data)
    flipped[len(data) // 2: len(data) // 2 + 64] = bytes(64)  # same size, different bytes
    weights.write_bytes(bytes(flipped))
    with pytest.raises(PresetError, match="sha256"):
        BertBackbone.from_preset(path)


def test_config_that_disagrees_with_weights_names_first_tensor_and_shapes(pretrainer_preset):
    _, path = pretrainer_preset
    config = json.loads((path / "config.json").read_text())
    config["backbone"]["intermediate_size"] = 256
    rewrite(path, "config.json", json.dumps(config).encode())
    with pytest.raises(PresetError) as info:
        BertBackbone.from_preset(path)
    message = str(info.value)
    assert "backbone/encoder_layer_0/ffn_in/kernel is (128, 512)" in message
    assert "config builds (128, 256)" in message


def test_missing_and_unexpected_tensors_listed_strict_by_default(pretrainer_preset):
    model, path = pretrainer_preset
    weights = path / "model.weights.h5"
    with h5py.File(weights, "a") as f:
        del f["backbone/pooler/bias"]
        f["backbone/extra/kernel"] = np.zeros(3, "float32")
    rewrite(path, "model.weights.h5", weights.read_bytes())
    with pytest.raises(PresetError) as info:
        BertBackbone.from_preset(path)
    assert "missing ['backbone/pooler/bias']" in str(info.value)
    assert "unexpected ['backbone/extra/kernel']" in str(info.value)
    assert "allow_partial=True" in str(info.value)
    with pytest.warns(UserWarning, match="pooler/bias"):
        partial = BertBackbone.from_preset(path, allow_partial=True)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(partial.pooler.kernel),
                                  keras.ops.convert_to_numpy(model.backbone.pooler.kernel))


def test_vocab_size_must_match_embedding(pretrainer_preset, tmp_path):
    model, path = pretrainer_preset
    rewrite(path, "vocab.txt", "".join(t + "\n" for t in tiny_vocab()[:-1]).encode())
    with pytest.raises(PresetError, match="vocab.txt has 299 tokens but the token embedding has "
                                          "300 rows"):
        BertBackbone.from_preset(path)
    with pytest.raises(PresetError, match="301 tokens but the token embedding has 300 rows"):
        model.save_to_preset(tmp_path / "v", vocabulary=tiny_vocab() + ["extra"])
    with pytest.raises(PresetError, match="needs its vocabulary"):
        BertBackbone(CONFIG).save_to_preset(tmp_path / "v")


def test_unknown_preset_name_lists_known_ones(tmp_path):
    with pytest.raises(PresetError, match="Unknown preset 'bert_huge'.*minilm_l6_en_uncased"):
        BertBackbone.from_preset("bert_huge")
    with pytest.raises(PresetError, match="does not exist"):
        BertBackbone.from_preset(str(tmp_path / "nowhere"))


def test_not_a_preset_directory(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"class_name": "BertBackbone"}))
    for name in ("model.weights.h5", "vocab.txt", "metadata.json"):
        (tmp_path / name).write_text("{}")
    with pytest.raises(PresetError, match="not a keras_bert_lab preset.*import-keras-hub"):
        BertBackbone.from_preset(tmp_path)


# ---- registry, import hygiene, docstrings ---------------------------------------------------------
def test_registry_entries_are_consistent():
    entries = presets.named_presets()
    assert "minilm_l6_en_uncased" in presets.list_presets()
    for name, entry in entries.items():
        config = BertConfig(**entry["config"])
        assert config.num_parameters() == entry["parameter_count"], name
        for key in ("package", "version", "module", "format"):
            assert entry["source"][key], (name, key)
        assert entry["license"] and entry["build"].startswith("kbl preset import-")
        # fine-tuning advice (`kbl finetune` defaults): only settings a preset may recommend
        assert set(entry.get("finetune", {})) <= set(RECOMMENDABLE), name


def test_registry_search_path_and_bad_entry(tmp_path, monkeypatch):
    (tmp_path / "mine.json").write_text(json.dumps({"name": "mine", "source": {}}))
    monkeypatch.setenv("KBL_PRESETS_PATH", str(tmp_path))
    assert "mine" in presets.list_presets()
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(PresetError, match="broken.json is not valid JSON"):
        presets.list_presets()


def test_docstring_examples():
    for module in (preset_format, presets.registry):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0


# ---- command line and import hygiene ------------------------------------------------------------
def test_cli_preset_commands(pretrainer_preset, tmp_path, capsys):
    from keras_bert_lab.cli import main

    model, path = pretrainer_preset
    assert main(["preset", "list"]) == 0
    assert "minilm_l6_en_uncased" in capsys.readouterr().out
    assert main(["preset", "export-hf", str(path), str(tmp_path / "hf")]) == 0
    assert (tmp_path / "hf" / "model.safetensors").is_file()
    assert main(["preset", "import-hf", str(tmp_path / "hf"), str(tmp_path / "back")]) == 0
    assert "task BertPretrainer" in capsys.readouterr().out
    assert_outputs_close(outputs(BertPretrainer.from_preset(tmp_path / "back"), batch()),
                         outputs(model, batch()))
    assert main(["preset", "import-hf", str(tmp_path / "hf"), str(tmp_path / "back")]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["preset", "export-hf", "no_such_preset", str(tmp_path / "x")]) == 2
    assert "kbl: error: Unknown preset 'no_such_preset'" in capsys.readouterr().err
    assert main(["preset", "import-google", str(tmp_path), str(tmp_path / "g")]) == 2
    assert "no TensorFlow checkpoint" in capsys.readouterr().err


@pytest.mark.skipif(keras.backend.backend() == "tensorflow", reason="TF is loaded anyway")
def test_importing_presets_and_converters_does_not_import_tensorflow():
    code = ("import sys, keras_bert_lab, keras_bert_lab.presets, keras_bert_lab.models.bert.convert_hf,"
            " keras_bert_lab.models.bert.convert_google, keras_bert_lab.models.bert.convert_keras_hub,"
            " keras_bert_lab.models.bert.sentence_embedder, keras_bert_lab.cli;"
            " bad = [m for m in ('tensorflow', 'keras_hub', 'transformers') if m in sys.modules];"
            " assert not bad, bad")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            env=dict(os.environ))
    assert result.returncode == 0, result.stderr[-2000:]


def test_tokenizer_from_preset_matches_the_named_preset_vocabulary():
    from keras_bert_lab import presets
    from keras_bert_lab.data.registry import locate
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    path = presets.resolve_preset("minilm_l6_en_uncased")
    tokenizer = WordPieceTokenizer.from_preset(path)
    reference = WordPieceTokenizer(locate("bert_uncased_vocab"))
    assert tokenizer.lowercase and tokenizer.vocabulary == reference.vocabulary
    assert tokenizer.tokenize("Hello, Ångström!") == reference.tokenize("Hello, Ångström!")
