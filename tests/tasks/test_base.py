import pytest

from keras_bert_lab import BertBackbone
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.tasks.sentence_embedding import SentenceEmbedder


def test_tokenizer_is_settable_and_missing_one_is_explained():
    model = SentenceEmbedder(BertBackbone("tiny"))
    with pytest.raises(ConfigError, match="not loaded from a preset"):
        model.tokenizer  # noqa: B018
    tokenizer = object()
    model.tokenizer = tokenizer  # TensorFlow's tracking reads the attribute first
    assert model.tokenizer is tokenizer
