"""Word vectors as a Keras Embedding (aligned to a vocabulary, with its coverage) and as a .keras
file — on every backend."""

import keras
import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.vectors import WordVectors, load_keras
from keras_bert_lab.vectors.embedding import words_path


@pytest.fixture
def vectors():
    rng = np.random.default_rng(0)
    return WordVectors(["the", "cat", "sat", "paris", "dog"],
                       rng.normal(0.0, 0.5, size=(5, 8)).astype("float32"))


def test_to_embedding_aligns_rows_and_reports_coverage(vectors):
    vocabulary = ["[PAD]", "cat", "Paris", "unseen", "the", "zzz", "dog"]
    layer, coverage = vectors.to_embedding(vocabulary, oov="zeros")
    table = keras.ops.convert_to_numpy(layer.embeddings)
    assert table.shape == (7, 8)
    for row, word in enumerate(vocabulary):
        source = word if word in vectors else word.lower()
        expected = vectors[source] if source in vectors else np.zeros(8)
        np.testing.assert_array_equal(table[row], expected)
    assert (coverage.covered, coverage.total, coverage.lowercased) == (4, 7, 1)
    assert coverage.fraction == pytest.approx(4 / 7)
    assert coverage.missing == ("[PAD]", "unseen", "zzz")
    assert coverage.as_dict()["covered"] == 4 and "4 of 7 words covered" in str(coverage)
    assert layer.trainable is False and layer.trainable_weights == []
    out = keras.ops.convert_to_numpy(layer(np.array([[1, 4, 2]])))
    np.testing.assert_array_equal(out[0], np.stack([vectors["cat"], vectors["the"],
                                                    vectors["paris"]]))


def test_to_embedding_options(vectors):
    vocabulary = ["[PAD]"] + [f"new{i}" for i in range(400)] + ["Cat"]
    layer, coverage = vectors.to_embedding(vocabulary, trainable=True, seed=3)
    table = keras.ops.convert_to_numpy(layer.embeddings)
    assert layer.trainable and len(layer.trainable_weights) == 1
    random_rows = table[:-1]
    assert random_rows.std() == pytest.approx(float(vectors.vectors.std()), rel=0.1)
    again, _ = vectors.to_embedding(vocabulary, seed=3)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(again.embeddings), table)
    strict, strict_coverage = vectors.to_embedding(vocabulary, lowercase_fallback=False)
    assert (coverage.covered, strict_coverage.covered) == (1, 0)
    masked, masked_coverage = vectors.to_embedding(vocabulary, mask_zero=True)
    assert masked.mask_zero and masked_coverage.total == len(vocabulary) - 1
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(masked.embeddings)[0], 0)
    with pytest.raises(ConfigError, match="oov"):
        vectors.to_embedding(vocabulary, oov="mean")
    with pytest.raises(ConfigError, match="empty"):
        vectors.to_embedding([])


def test_keras_file_round_trip(vectors, tmp_path):
    path = tmp_path / "small.keras"
    vectors.save_keras(path)
    assert path.exists() and (tmp_path / "small.words.txt").exists()
    back = load_keras(path)
    assert back.words == vectors.words
    np.testing.assert_array_equal(back.vectors, vectors.vectors)
    model = keras.saving.load_model(path)            # a plain Keras file
    out = keras.ops.convert_to_numpy(model(np.array([[4, 0]], "int32")))
    np.testing.assert_array_equal(out[0], np.stack([vectors["dog"], vectors["the"]]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.keras", "small.words.txt"]


def test_keras_file_errors(vectors, tmp_path):
    with pytest.raises(ConfigError, match="end in '.keras'"):
        vectors.save_keras(tmp_path / "small.h5")
    path = tmp_path / "small.keras"
    vectors.save_keras(path)
    with open(words_path(path), "a") as f:
        f.write("extra\n")
    with pytest.raises(DataError, match="6 words but .* 5 vectors"):
        load_keras(path)
    (tmp_path / "small.words.txt").unlink()
    with pytest.raises(DataError, match="no words file"):
        load_keras(path)
