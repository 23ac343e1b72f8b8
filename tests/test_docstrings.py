"""Run the examples in every module's docstrings (they must stay true)."""

import doctest
import importlib
import pkgutil

import pytest

import keras_bert_lab

MODULES = sorted(info.name for info in pkgutil.walk_packages(keras_bert_lab.__path__,
                                                             "keras_bert_lab."))
# The modules that teach by example: each must have at least one.
MUST_HAVE_EXAMPLES = {
    "keras_bert_lab.datasets", "keras_bert_lab.models.config", "keras_bert_lab.models.bert",
    "keras_bert_lab.layers.embeddings", "keras_bert_lab.layers.attention",
    "keras_bert_lab.layers.encoder", "keras_bert_lab.layers.heads",
    "keras_bert_lab.tasks.pretraining", "keras_bert_lab.training.optimizers",
    "keras_bert_lab.text.normalization", "keras_bert_lab.text.tokenizer",
    "keras_bert_lab.text.packing", "keras_bert_lab.text.vocab", "keras_bert_lab.finetune.common",
}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0
