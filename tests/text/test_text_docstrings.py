"""The examples in the docstrings of the text front door run and stay true."""

import doctest
import importlib

import pytest

MODULES = ["keras_bert_lab.datasets", "keras_bert_lab.text.normalization",
           "keras_bert_lab.text.tokenizer", "keras_bert_lab.text.packing",
           "keras_bert_lab.text.vocab"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    pytest.importorskip("tokenizers")  # vocab's example trains a vocabulary
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0
