"""Run the examples in every module's docstrings (they must stay true)."""

import doctest
import importlib
import pkgutil

import pytest

import keras_bert_lab
from tests.markers import examples_once

MODULES = sorted(info.name for info in pkgutil.walk_packages(keras_bert_lab.__path__,
                                                             "keras_bert_lab."))
# The modules that teach by example: each must have at least one.
MUST_HAVE_EXAMPLES = {
    "keras_bert_lab.data.registry", "keras_bert_lab.data.splits", "keras_bert_lab.data.corpora",
    "keras_bert_lab.data.tables",
    "keras_bert_lab.models.bert.config", "keras_bert_lab.models.bert.backbone",
    "keras_bert_lab.layers.embeddings", "keras_bert_lab.layers.attention",
    "keras_bert_lab.layers.encoder", "keras_bert_lab.layers.heads", "keras_bert_lab.layers.pooling",
    "keras_bert_lab.models.bert.pretrainer", "keras_bert_lab.models.bert.classifier",
    "keras_bert_lab.training.optimizers", "keras_bert_lab.training.run",
    "keras_bert_lab.distribution.layouts", "keras_bert_lab.distribution.strategies",
    "keras_bert_lab.preprocessing.normalization", "keras_bert_lab.preprocessing.wordpiece",
    "keras_bert_lab.preprocessing.packer", "keras_bert_lab.preprocessing.wordpiece_trainer",
    "keras_bert_lab.preprocessing.encoder_text", "keras_bert_lab.preprocessing.span_qa",
    "keras_bert_lab.preprocessing.tagging", "keras_bert_lab.pipelines.pretraining",
    "keras_bert_lab.pipelines.batches", "keras_bert_lab.metrics.classification",
    "keras_bert_lab.presets.format", "keras_bert_lab.presets.registry",
    "keras_bert_lab.preprocessing.words", "keras_bert_lab.models.word2vec.pipeline",
    "keras_bert_lab.models.word2vec.model", "keras_bert_lab.tasks.word_vector_classifier",
    "keras_bert_lab.vectors", "keras_bert_lab.vectors.keyed", "keras_bert_lab.vectors.evaluate",
    "keras_bert_lab.vectors.embedding", "keras_bert_lab.vectors.plots",
    "keras_bert_lab.layers.scalar_mix", "keras_bert_lab.tasks.feature_tagger",
    "keras_bert_lab.features", "keras_bert_lab.features.cache", "keras_bert_lab.features.extract",
    "keras_bert_lab.metrics.ngram", "keras_bert_lab.preprocessing.bpe",
    "keras_bert_lab.preprocessing.bpe_trainer", "keras_bert_lab.studies.word_sense",
    "keras_bert_lab.preprocessing.tokenizer",
    "keras_bert_lab.preprocessing.characters", "keras_bert_lab.models.elmo.char_cnn",
    "keras_bert_lab.layers.lstm", "keras_bert_lab.models.elmo.config", "keras_bert_lab.models.elmo.backbone",
    "keras_bert_lab.models.elmo.language_model", "keras_bert_lab.models.elmo.convert",
    "keras_bert_lab.models.gpt.preprocessor", "keras_bert_lab.models.gpt.classifier",
    "keras_bert_lab.pipelines.language_model", "keras_bert_lab.models.gpt.config",
    "keras_bert_lab.models.gpt.backbone", "keras_bert_lab.layers.decoder", "keras_bert_lab.models.gpt.causal_lm",
    "keras_bert_lab.models.gpt.convert", "keras_bert_lab.models.elmo.pretrain",
    "keras_bert_lab.training.transfer", "keras_bert_lab.models.awd_lstm.layers",
    "keras_bert_lab.models.awd_lstm.config", "keras_bert_lab.models.awd_lstm.backbone",
    "keras_bert_lab.models.awd_lstm.language_model", "keras_bert_lab.models.awd_lstm.ulmfit_classifier",
    "keras_bert_lab.preprocessing.word_tokenizer", "keras_bert_lab.models.awd_lstm.finetune",
    "keras_bert_lab.layers.rotary", "keras_bert_lab.models.bert.convert_modernbert",
}


@examples_once
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0
