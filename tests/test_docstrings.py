"""Run the examples in the docstrings of the backend-agnostic modules (they must stay true)."""

import doctest
import importlib

import pytest

MODULES = [
    "keras_bert_lab.models.config",
    "keras_bert_lab.models.bert",
    "keras_bert_lab.layers.embeddings",
    "keras_bert_lab.layers.attention",
    "keras_bert_lab.layers.encoder",
    "keras_bert_lab.layers.heads",
    "keras_bert_lab.tasks.pretraining",
    "keras_bert_lab.training.optimizers",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0
