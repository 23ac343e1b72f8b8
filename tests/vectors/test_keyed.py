"""WordVectors: the vocabulary, nearest neighbours and analogies (known by construction, and
equal to gensim's most_similar / most_similar_cosmul), and unknown words."""

import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.vectors import UnknownWordError, WordVectors
from tests.vectors.helpers import gensim_keyed, numpy_only, random_vectors

pytestmark = numpy_only

# Four "royal/gender" words on orthogonal axes: gender on axis 1, royalty on axis 2, plus noise
# words far away. king - man + woman lands exactly on queen's direction.
ANALOGY_WORDS = ["man", "woman", "king", "queen", "car", "tree"]
ANALOGY_VECTORS = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 0], [0, 0, 0, 1],
                   [0, -1, 0, 1]]


def test_vocabulary_lookup():
    vectors = WordVectors(["a", "b", "c"], np.eye(3, 2), counts=[5, 3, 1])
    assert len(vectors) == 3 and vectors.dim == 2
    assert "b" in vectors and "z" not in vectors and 3 not in vectors
    assert vectors.index("c") == 2
    np.testing.assert_array_equal(vectors["b"], [0, 1])
    assert vectors.vectors.dtype == np.float32 and vectors.counts.tolist() == [5, 3, 1]
    np.testing.assert_allclose(np.linalg.norm(vectors.unit[:2], axis=1), 1, rtol=1e-6)
    np.testing.assert_array_equal(vectors.unit[2], [0, 0])        # a zero vector stays zero
    with pytest.raises(ValueError):
        vectors.vectors[0, 0] = 3.0                                 # read-only


@pytest.mark.parametrize("words, matrix, message", [
    (["a", "b", "a"], np.ones((3, 2)), "'a' appears twice"),
    (["a", "b"], np.ones((3, 2)), "one row per word"),
    (["a", ""], np.ones((2, 2)), "non-empty string"),
    (["a", "b"], [[1, 2], [np.nan, 0]], "NaN"),
])
def test_bad_vocabularies_are_data_errors(words, matrix, message):
    with pytest.raises(DataError, match=message):
        WordVectors(words, matrix)


def test_unknown_words_are_named():
    vectors = WordVectors(ANALOGY_WORDS, ANALOGY_VECTORS)
    with pytest.raises(UnknownWordError, match="'Paris'") as info:
        vectors["Paris"]
    assert isinstance(info.value, KeyError) and isinstance(info.value, DataError)
    with pytest.raises(KeyError) as info:
        vectors.analogy("man", "Queen", "duke")
    assert info.value.words == ("Queen", "duke")
    assert "'Queen' → 'queen'" in str(info.value)                   # the lower-case hint
    with pytest.raises(UnknownWordError):
        vectors.nearest("nobody")


def test_nearest_by_construction():
    # unit vectors at known angles to (1, 0): cosines 1, cos 10°, cos 40°, cos 80°, cos 170°
    angles = np.radians([0, 10, 40, 80, 170])
    vectors = WordVectors(list("abcde"), np.c_[np.cos(angles), np.sin(angles)] * [[1], [2],
                                                                                  [3], [1], [5]])
    result = vectors.nearest("a", k=3)
    assert [w for w, _ in result] == ["b", "c", "d"]                 # the query word left out
    np.testing.assert_allclose([s for _, s in result], np.cos(angles[1:4]), rtol=1e-6)
    assert [w for w, _ in vectors.nearest(np.array([0.0, 1.0]), k=2)] == ["d", "c"]
    assert [w for w, _ in vectors.nearest("a", k=10, restrict_vocab=3)] == ["b", "c"]
    assert len(vectors.nearest("a", k=10)) == 4
    with pytest.raises(ConfigError):
        vectors.nearest("a", k=0)
    with pytest.raises(ConfigError):
        vectors.nearest(np.ones(3))


def test_analogy_by_construction():
    vectors = WordVectors(ANALOGY_WORDS, ANALOGY_VECTORS)
    for method in ("3cosadd", "3cosmul"):
        answers = vectors.analogy("man", "king", "woman", k=3, method=method)
        assert answers[0][0] == "queen"
        assert not {"man", "king", "woman"} & {w for w, _ in answers}
    # 3CosAdd's score is the cosine with the normalised b - a + c (unit inputs)
    unit = vectors.unit
    target = unit[2] - unit[0] + unit[1]
    expected = unit[3] @ target / np.linalg.norm(target)
    assert vectors.analogy("man", "king", "woman")[0][1] == pytest.approx(expected, rel=1e-6)
    # restricted to the first 3 words, with a, b, c left out nothing remains
    assert vectors.analogy("man", "king", "woman", restrict_vocab=3) == []
    with pytest.raises(ConfigError, match="method"):
        vectors.analogy("man", "king", "woman", method="3coswhatever")


def test_similarity():
    vectors = WordVectors(["x", "y", "z"], [[1, 0], [1, 1], [-2, 0]])
    assert vectors.similarity("x", "y") == pytest.approx(np.sqrt(0.5), rel=1e-6)
    assert vectors.similarity("x", "z") == pytest.approx(-1.0, rel=1e-6)


def test_equal_to_gensim_most_similar():
    vectors = random_vectors(count=500, dim=16, seed=3)
    kv = gensim_keyed(vectors)
    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b, c = (vectors.words[i] for i in rng.choice(300, 3, replace=False))
        assert vectors.nearest(a, k=7) == kv.most_similar(a, topn=7)
        assert (vectors.nearest(a, k=5, restrict_vocab=100)
                == kv.most_similar(a, topn=5, restrict_vocab=100))
        assert (vectors.analogy(a, b, c, k=5)
                == kv.most_similar(positive=[b, c], negative=[a], topn=5))
        assert (vectors.analogy(a, b, c, k=5, method="3cosmul")
                == kv.most_similar_cosmul(positive=[b, c], negative=[a], topn=5))
        assert vectors.similarity(a, b) == float(kv.similarity(a, b))
    query = rng.standard_normal(16)
    assert vectors.nearest(query, k=4) == kv.most_similar(positive=[query], topn=4)
