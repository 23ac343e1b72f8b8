"""BertTextPreprocessor: texts, pairs and choices → the backbone's inputs, as HF packs them."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lab.data.labelled import load_dataset
from keras_bert_lab.data.registry import locate
from keras_bert_lab.errors import DataError
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer


def test_pack_texts_matches_transformers_with_truncation():
    transformers = pytest.importorskip("transformers")
    vocab = str(locate("bert_uncased_vocab"))
    reference = transformers.BertTokenizerFast(vocab=vocab, do_lower_case=True)
    tokenizer = WordPieceTokenizer(vocab)
    preprocessor = BertTextPreprocessor(tokenizer, sequence_length=24, chunk_size=16)
    texts = load_dataset("rotten_tomatoes")["valid"].texts[:40]
    got = preprocessor(texts)
    expected = reference(texts, max_length=24, padding="max_length", truncation=True)
    assert got["token_ids"].tolist() == expected["input_ids"]
    assert got["padding_mask"].tolist() == expected["attention_mask"]
    assert got["token_ids"].dtype == np.int32
    with pytest.raises(DataError, match="2 texts but 1 second texts"):
        preprocessor(["a", "b"], ["c"])
    contexts, choices = ["He sat", "It fell"], [["down.", "up.", "in."], ["over.", "a", "b"]]
    short = BertTextPreprocessor(tokenizer, sequence_length=12)
    packed = short.pack_choices(contexts, choices)
    flat = short([c for c in contexts for _ in range(3)], sum(choices, []))
    assert packed["token_ids"].shape == (2, 3, 12)
    np.testing.assert_array_equal(packed["segment_ids"].reshape(6, 12), flat["segment_ids"])


def test_same_inputs_in_tf_data_and_from_python(tokenizer):
    preprocessor = BertTextPreprocessor(tokenizer, sequence_length=16)
    texts, pairs = ["A first text.", "Another, longer second text here."], ["Yes.", "No, not it."]
    expected = preprocessor(texts, pairs)
    ds = tf.data.Dataset.from_tensor_slices((texts, pairs)).batch(2).map(preprocessor)
    got = next(iter(ds))
    for key in expected:
        np.testing.assert_array_equal(got[key].numpy(), expected[key])
    empty = preprocessor([])
    assert empty["token_ids"].shape == (0, 16)


def test_from_preset_reads_the_recorded_length(tmp_path):
    from keras_bert_lab import BertBackbone, BertConfig

    backbone = BertBackbone(BertConfig.from_size("tiny", vocabulary_size=30522, max_positions=64))
    path = backbone.save_to_preset(tmp_path / "p", vocabulary=locate("bert_uncased_vocab"),
                                   preprocessor={"sequence_length": 40})
    assert BertTextPreprocessor.from_preset(path).sequence_length == 40
    assert BertTextPreprocessor.from_preset(path, sequence_length=8)("a b c")[
        "token_ids"].shape == (1, 8)
