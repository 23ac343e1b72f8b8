"""FeatureTagger: combinations, learning, serialisation."""

import keras
import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.tasks.feature_tagger import COMBINATIONS, FeatureTagger, combination
from tests.conftest import to_numpy


def test_combinations_resolve_against_the_layer_count():
    assert combination("embeddings", 13) == ([0], "single")
    assert combination("second_to_last", 13) == ([11], "single")
    assert combination("sum_last_four", 13) == ([9, 10, 11, 12], "sum")
    assert combination("mix_all", 13) == (list(range(13)), "mix")
    assert combination("layer_3", 13) == ([3], "single")
    with pytest.raises(ConfigError, match="only 2 layer"):
        combination("concat_last_four", 2)
    with pytest.raises(ConfigError, match="choose one of"):
        combination("average", 13)
    assert set(COMBINATIONS) >= {"embeddings", "last", "concat_last_four", "mix_all"}


def toy_data(n=64, words=6, layers=3, dim=4, seed=0):
    """The tag of a word is the sign of feature 0 of layer 1: only that layer carries it."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, words, layers, dim)).astype("float32")
    y = (x[:, :, 1, 0] > 0).astype("int32")
    mask = np.ones((n, words), "float32")
    mask[: n // 2, words - 2:] = 0
    return {"features": x, "word_mask": mask}, y, mask


@pytest.mark.parametrize("mode", ["sum", "concat", "mix"])
def test_each_mode_learns_a_signal_in_one_layer(mode):
    x, y, mask = toy_data()
    tagger = FeatureTagger(3, 4, 2, mode=mode, lstm_units=8, lstm_layers=1, dropout=0.0)
    tagger.compile(optimizer=keras.optimizers.Adam(0.03))
    history = tagger.fit(x, y, sample_weight=mask, epochs=25, batch_size=16, verbose=0)
    assert history.history["accuracy"][-1] > 0.9
    if mode == "mix":
        weights = to_numpy(tagger.scalar_mix.layer_weights())
        assert weights.argmax() == 1


def test_padding_changes_no_real_word_and_saves(tmp_path):
    x, y, mask = toy_data(n=4)
    tagger = FeatureTagger(3, 4, 5, mode="mix", lstm_units=4)
    before = to_numpy(tagger.predict(x, verbose=0))
    x2 = {"features": x["features"].copy(), "word_mask": mask}
    x2["features"][mask == 0] = 99.0
    after = to_numpy(tagger.predict(x2, verbose=0))
    np.testing.assert_allclose(after[mask > 0], before[mask > 0], atol=1e-5)
    path = str(tmp_path / "tagger.keras")
    tagger.save(path)
    np.testing.assert_allclose(to_numpy(keras.models.load_model(path).predict(x, verbose=0)),
                               before, atol=1e-6)


def test_single_mode_takes_one_layer():
    with pytest.raises(ConfigError, match="one layer"):
        FeatureTagger(2, 4, 3, mode="single")
