"""Mean pooling + L2 normalisation on a backbone (real-weight parity: tests/models/bert/test_minilm.py)."""

import doctest

import numpy as np

import keras_bert_lab.models.bert.sentence_embedder as sentence_embedding
from keras_bert_lab import BertBackbone
from keras_bert_lab.layers.pooling import l2_normalize, mean_pool
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from keras_bert_lab.models.bert.sentence_embedder import SentenceEmbedder
from tests.conftest import to_numpy
from tests.presets.helpers import CONFIG, batch, random_pretrainer, tiny_vocab


def test_mean_pool_ignores_padding_and_normalizes():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0]])
    got = to_numpy(mean_pool(x, mask))
    np.testing.assert_allclose(got[0], x[0].mean(0), atol=1e-6)
    np.testing.assert_allclose(got[1], x[1, :2].mean(0), atol=1e-6)
    np.testing.assert_array_equal(got[2], np.zeros(4))  # no real token: zeros, not NaN
    unit = to_numpy(l2_normalize(got))
    np.testing.assert_allclose(np.linalg.norm(unit[:2], axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(unit[2], np.zeros(4))


def test_embedder_matches_numpy_recipe_and_padding_does_not_matter():
    backbone = random_pretrainer().backbone
    x = batch()
    sequence = to_numpy(backbone(x)["sequence_output"])
    mask = x["padding_mask"][..., None]
    expected = (sequence * mask).sum(1) / mask.sum(1)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(to_numpy(SentenceEmbedder(backbone)(x)), expected, atol=1e-6)
    raw = to_numpy(SentenceEmbedder(backbone, normalize=False)(x))
    np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), expected,
                               atol=1e-6)
    # whatever sits under the padding does not change the vectors
    garbage = dict(x, token_ids=np.where(x["padding_mask"] == 1, x["token_ids"], 123),
                   segment_ids=np.where(x["padding_mask"] == 1, x["segment_ids"], 1))
    np.testing.assert_allclose(to_numpy(SentenceEmbedder(backbone)(garbage)), expected, atol=1e-5)


def test_preset_records_the_pooling_recipe(tmp_path):
    backbone = random_pretrainer().backbone
    path = SentenceEmbedder(backbone, normalize=False).save_to_preset(
        tmp_path / "p", vocabulary=tiny_vocab())
    loaded = SentenceEmbedder.from_preset(path)
    assert loaded.normalize is False
    assert loaded.backbone.config == CONFIG
    np.testing.assert_allclose(to_numpy(loaded(batch())),
                               to_numpy(SentenceEmbedder(backbone, normalize=False)(batch())),
                               atol=0)
    assert SentenceEmbedder.from_preset(path, normalize=True).normalize


def test_docstring_examples():
    assert BertBackbone  # used by the module's examples
    result = doctest.testmod(sentence_embedding)
    assert result.attempted > 0 and result.failed == 0


def test_embeddings_of_text_do_not_depend_on_the_batch(tmp_path):
    backbone = random_pretrainer().backbone
    embedder = SentenceEmbedder(backbone)
    preprocessor = BertTextPreprocessor(WordPieceTokenizer(tiny_vocab()), sequence_length=40)
    texts = ["w1 w2 w4", "W5", "w7 zzz w8"]  # upper case is lowered; zzz is [UNK]
    assert preprocessor.tokenizer(texts) == [[9, 10, 12], [13], [15, 4, 16]]
    one_batch = embedder.predict_packed(preprocessor(texts), batch_size=3)
    np.testing.assert_allclose(embedder.predict_packed(preprocessor(texts), batch_size=2),
                               one_batch, atol=1e-5)
    np.testing.assert_allclose(embedder.predict_packed(preprocessor(texts[1]))[0], one_batch[1],
                               atol=1e-5)
    x = {"token_ids": np.array([[5, 9, 10, 12, 6], [5, 13, 6, 0, 0], [5, 15, 4, 16, 6]]),
         "segment_ids": np.zeros((3, 5), "int32"),
         "padding_mask": np.array([[1] * 5, [1, 1, 1, 0, 0], [1] * 5])}
    x = {k: np.pad(v, ((0, 0), (0, 11))) for k, v in x.items()}  # 16: the batch cut to a multiple
    np.testing.assert_allclose(one_batch, to_numpy(embedder(x)), atol=1e-5)
