"""The static-vector classifier: frozen or trainable vectors, both encoders, padding ignored,
it learns, and it saves and loads."""

import keras
import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.tasks.word_vector_classifier import WordVectorClassifier
from tests.conftest import to_numpy


def toy_data(n=256, seed=0):
    """Class 1 iff word 3 occurs; words 2..9, padding 0 at the end of each row."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(4, 10, size=(n, 6)).astype("int32")
    y = rng.integers(0, 2, size=n)
    ids[y == 1, rng.integers(0, 3)] = 3
    ids[:, 4:] = 0
    return ids, y


@pytest.mark.parametrize("encoder", ["mean", "bilstm"])
def test_learns_and_respects_frozen_vectors(encoder):
    vectors = np.random.default_rng(1).normal(size=(10, 8)).astype("float32")
    model = WordVectorClassifier(vectors, 2, encoder, hidden=16)
    model.compile(keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    ids, y = toy_data()
    history = model.fit(ids, y, epochs=8, batch_size=32, verbose=0)
    assert history.history["accuracy"][-1] > 0.9
    np.testing.assert_array_equal(to_numpy(model.get_layer("word_vectors").embeddings), vectors)


def test_padding_does_not_change_the_prediction():
    model = WordVectorClassifier(None, 3, "mean", vocabulary_size=12, dim=4)
    assert model.get_layer("word_vectors").trainable
    short = np.array([[5, 6, 0, 0]], "int32")
    longer = np.array([[5, 6, 0, 0, 0, 0, 0]], "int32")
    np.testing.assert_allclose(to_numpy(model(short)), to_numpy(model(longer)), atol=1e-6)


def test_save_load_and_bad_settings(tmp_path):
    model = WordVectorClassifier(None, 2, "bilstm", vocabulary_size=12, dim=4, hidden=3)
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    ids = np.array([[3, 4, 5, 0]], "int32")
    np.testing.assert_allclose(to_numpy(loaded(ids)), to_numpy(model(ids)), atol=1e-6)
    with pytest.raises(ConfigError, match="encoder"):
        WordVectorClassifier(None, 2, "cnn", vocabulary_size=5, dim=2)
    with pytest.raises(ConfigError, match="vocabulary_size"):
        WordVectorClassifier(None, 2)
