"""Shared pieces of the word-vector tests."""

import numpy as np
import pytest

from tests.markers import backend_independent as numpy_only  # noqa: F401  (run once)


def gensim_keyed(vectors):
    """gensim's KeyedVectors over the same words and matrix."""
    models = pytest.importorskip("gensim.models")
    kv = models.KeyedVectors(vectors.dim)
    kv.add_vectors(list(vectors.words), np.array(vectors.vectors))
    return kv


def random_vectors(count=400, dim=12, seed=0):
    """Random words (with case variants: 'Paris' before 'paris' etc.) and vectors."""
    from keras_bert_lab.vectors import WordVectors

    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(count)]
    for i in range(0, count, 7):           # a capitalised twin right after some words
        if i + 1 < count:
            words[i + 1] = words[i].upper()
    return WordVectors(words, rng.standard_normal((count, dim)).astype("float32"))
