"""Static word vectors — a vocabulary and its float32 matrix — with the questions one asks of them:
nearest neighbours, analogies, similarity; and the ways in and out: the word2vec/GloVe text
format, the registry's GloVe, a Keras ``Embedding`` for a model's vocabulary, a ``.keras`` file.

Scores follow gensim 4.4's ``KeyedVectors`` step for step (see
:mod:`keras_bert_lab.vectors.scoring`): :meth:`WordVectors.nearest` and :meth:`~WordVectors.analogy`
return the words and cosines that ``most_similar`` returns, and ``method="3cosmul"`` those of
``most_similar_cosmul``; :meth:`~WordVectors.similarity` is ``similarity``.

Example:

>>> import numpy as np
>>> words = ["man", "woman", "king", "queen", "apple"]
>>> vectors = WordVectors(words, [[1, 0, 0], [1, 1, 0], [1, 0, 1], [1, 1, 1], [0, 0, -1]])
>>> len(vectors), vectors.dim, "king" in vectors, vectors.index("queen")
(5, 3, True, 3)
>>> vectors.analogy("man", "king", "woman")[0][0]        # king - man + woman
'queen'
>>> [w for w, _ in vectors.nearest("man", k=2)]
['woman', 'king']
>>> round(vectors.similarity("man", "woman"), 4)
0.7071
>>> vectors["paris"]
Traceback (most recent call last):
...
keras_bert_lab.vectors.keyed.UnknownWordError: Not in the vocabulary: 'paris'. Check ...
"""

import os

import numpy as np
import pyarrow.parquet as pq

from keras_bert_lab.data import registry
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.vectors import embedding, scoring, textio

METHODS = ("3cosadd", "3cosmul")


class UnknownWordError(DataError, KeyError):
    """Words missing from the vocabulary (a ``KeyError`` and a ``DataError``); ``.words`` lists
    them."""

    def __init__(self, words, vocabulary=None):
        self.words = tuple(words)
        hints = [f"{w!r} → {w.lower()!r}" for w in self.words
                 if vocabulary is not None and w.lower() != w and w.lower() in vocabulary]
        text = f"Not in the vocabulary: {', '.join(repr(w) for w in self.words)}. "
        text += (f"These are, lower-cased: {', '.join(hints)}." if hints else
                 "Check the spelling and case, or use vectors with a larger vocabulary.")
        super().__init__(text)

    def __str__(self):
        return self.args[0]


def _check_positive(name, value, allow_none=False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name}={value!r}: give a positive integer"
                          f"{' or None' if allow_none else ''}.")


class WordVectors:
    """Words (unique, in order) and their vectors (a float32 matrix, one row per word), with
    optional per-word ``counts`` (e.g. corpus frequencies from word2vec training).

    >>> vectors = WordVectors(["a", "b"], [[3.0, 4.0], [1.0, 0.0]])
    >>> vectors["a"].tolist(), vectors.unit[0].tolist()
    ([3.0, 4.0], [0.6000000238418579, 0.800000011920929])
    """

    def __init__(self, words, vectors, counts=None):
        words = list(words)
        bad = next((i for i, w in enumerate(words) if not isinstance(w, str) or not w), None)
        if bad is not None:
            raise DataError(f"Word {bad} is {words[bad]!r}: every word must be a non-empty "
                            "string.")
        matrix = np.array(vectors, dtype="float32", order="C", copy=True)
        if matrix.ndim != 2 or matrix.shape[0] != len(words) or not words:
            raise DataError(f"{len(words)} words but vectors of shape {matrix.shape}: give a "
                            "non-empty list of words and a 2-D matrix with one row per word.")
        finite = np.isfinite(matrix).all(axis=1)
        if not finite.all():
            first = words[int(np.flatnonzero(~finite)[0])]
            raise DataError(f"The vector of {first!r} holds NaN or infinity: fix the matrix.")
        self._index = {}
        for i, word in enumerate(words):
            if self._index.setdefault(word, i) != i:
                raise DataError(f"Word {word!r} appears twice (rows {self._index[word]} and "
                                f"{i}): words must be unique; drop or rename one.")
        if counts is not None:
            counts = np.asarray(counts, "int64")
            if counts.shape != (len(words),):
                raise DataError(f"{len(counts)} counts for {len(words)} words: give one count "
                                "per word, or none.")
        matrix.flags.writeable = False
        self._words, self._matrix, self._counts = words, matrix, counts
        self._norms = self._unit = None

    # ---- the vocabulary -------------------------------------------------------------------
    @property
    def words(self):
        """The words, in row order (do not modify)."""
        return self._words

    @property
    def vectors(self):
        """The float32 matrix ``(len(self), dim)`` (read-only)."""
        return self._matrix

    @property
    def counts(self):
        """Per-word counts (int64) or None."""
        return self._counts

    @property
    def dim(self):
        return self._matrix.shape[1]

    def __len__(self):
        return len(self._words)

    def __contains__(self, word):
        return isinstance(word, str) and word in self._index

    def __getitem__(self, word):
        return self._matrix[self.index(word)]

    def __repr__(self):
        return f"WordVectors({len(self):,} words × {self.dim})"

    def index(self, word):
        """The row of ``word``; :class:`UnknownWordError` if it has none."""
        try:
            return self._index[word]
        except (KeyError, TypeError):
            raise UnknownWordError([word], self._index) from None

    def _indices(self, words):
        missing = [w for w in words if w not in self]
        if missing:
            raise UnknownWordError(missing, self._index)
        return [self._index[w] for w in words]

    @property
    def norms(self):
        """The L2 norm of every vector (float32, cached)."""
        if self._norms is None:
            self._norms = scoring.row_norms(self._matrix)
        return self._norms

    @property
    def unit(self):
        """The vectors scaled to unit length (float32, cached; zero vectors stay zero)."""
        if self._unit is None:
            self._unit = scoring.unit_rows(self._matrix, self.norms)
            self._unit.flags.writeable = False
        return self._unit

    def _stop(self, restrict_vocab):
        _check_positive("restrict_vocab", restrict_vocab, allow_none=True)
        return len(self) if restrict_vocab is None else min(int(restrict_vocab), len(self))

    # ---- questions ------------------------------------------------------------------------
    def similarity(self, a, b):
        """Cosine similarity of two words' vectors."""
        ia, ib = self._indices([a, b])
        return float(np.dot(scoring.unit_vector(self._matrix[ia]),
                            scoring.unit_vector(self._matrix[ib])))

    def nearest(self, query, k=10, restrict_vocab=None):
        """The ``k`` words most cosine-similar to ``query`` (a word, which is left out, or a
        vector), among the first ``restrict_vocab`` words: a list of ``(word, cosine)``."""
        _check_positive("k", k)
        stop = self._stop(restrict_vocab)
        if isinstance(query, str):
            (row,) = self._indices([query])
            term, excluded = scoring.unit_rows(self._matrix, self.norms, [row])[0], [row]
        else:
            term, excluded = np.asarray(query, "float32"), []
            if term.shape != (self.dim,):
                raise ConfigError(f"A query vector of shape {term.shape}; these vectors have "
                                  f"{self.dim} dimensions.")
        scores = scoring.exact_scores(self._matrix, self.norms, scoring.combine([term], [1.0]),
                                      stop)
        best = scoring.best_excluding(scores, k, excluded)
        return [(self._words[i], float(scores[i])) for i in best]

    def analogy(self, a, b, c, k=1, method="3cosadd", restrict_vocab=None):
        """``a : b :: c : ?`` — the ``k`` best answers as ``(word, score)``, leaving out a, b
        and c, among the first ``restrict_vocab`` words.

        ``"3cosadd"`` ranks by cosine with ``b - a + c`` (unit vectors; the score is that
        cosine); ``"3cosmul"`` by ``cos'(x, b) cos'(x, c) / (cos'(x, a) + 1e-6)`` with cosines
        shifted to [0, 1] (Levy & Goldberg 2014).
        """
        _check_positive("k", k)
        if method not in METHODS:
            raise ConfigError(f"method={method!r}: choose one of {METHODS}.")
        stop = self._stop(restrict_vocab)
        rows = self._indices([a, b, c])
        unit_a, unit_b, unit_c = scoring.unit_rows(self._matrix, self.norms, rows)
        if method == "3cosadd":
            query = scoring.combine([unit_b, unit_c, unit_a], [1.0, 1.0, -1.0])
            scores = scoring.exact_scores(self._matrix, self.norms, query, stop)
        else:
            cos_a, cos_b, cos_c = (scoring.exact_scores(self._matrix, self.norms, u, stop)
                                   for u in (unit_a, unit_b, unit_c))
            scores = scoring.cosmul(scoring.shifted(cos_b), scoring.shifted(cos_c),
                                    scoring.shifted(cos_a))
        # gensim leaves out a, b, c from its top k + 3 (3CosAdd) or k + distinct ones (3CosMul)
        excluded = rows if method == "3cosadd" else sorted(set(rows))
        best = scoring.best_excluding(scores, k, excluded)
        return [(self._words[i], float(scores[i])) for i in best]

    # ---- in and out -----------------------------------------------------------------------
    @classmethod
    def read_text(cls, path, limit=None):
        """Vectors from a word2vec (header ``count dim``) or GloVe (no header) text file."""
        words, matrix = textio.read_text_format(path, limit)
        try:
            return cls(words, matrix)
        except DataError as error:
            raise DataError(f"{os.fspath(path)}: {error}") from None

    def write_text(self, path):
        """Write word2vec's text format (with header; gensim's ``load_word2vec_format(path,
        binary=False)`` reads it), atomically."""
        textio.write_text_format(path, self._words, self._matrix)

    def to_embedding(self, vocabulary, trainable=False, oov="random", seed=0,
                     lowercase_fallback=True, mask_zero=False):
        """``(keras.layers.Embedding, Coverage)``: an embedding whose row ``i`` is the vector of
        ``vocabulary[i]`` (see :func:`keras_bert_lab.vectors.embedding.build_embedding`).

        >>> vectors = WordVectors(["cat", "dog"], [[1, 2], [3, 4]])
        >>> layer, coverage = vectors.to_embedding(["dog", "cow"], oov="zeros")
        >>> coverage.covered, coverage.total, coverage.missing
        (1, 2, ('cow',))
        """
        return embedding.build_embedding(self._index, self._matrix, vocabulary, trainable, oov,
                                         seed, lowercase_fallback, mask_zero)

    def save_keras(self, path):
        """Save as ``path`` (a ``.keras`` model: int ids → ``Embedding``) plus
        ``<name>.words.txt`` beside it; :func:`load_keras` reads both back."""
        return embedding.save_embedding(path, self._words, self._matrix)


def read_text(path, limit=None):
    """:meth:`WordVectors.read_text`: vectors from a word2vec or GloVe text file."""
    return WordVectors.read_text(path, limit)


def load_keras(path):
    """The :class:`WordVectors` saved by :meth:`WordVectors.save_keras`.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.keras")
    >>> _ = WordVectors(["a", "b"], [[1, 2], [3, 4]]).save_keras(path)
    >>> load_keras(path).vectors.tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    words, matrix = embedding.load_embedding(path)
    return WordVectors(words, matrix)


def load_glove(limit=None):
    """GloVe 6B 50d from the data registry (``glove_6b_50d``: 400,000 lower-cased words, most
    frequent first), or its first ``limit`` words."""
    _check_positive("limit", limit, allow_none=True)
    matrix = np.load(registry.locate("glove_6b_50d", "vectors"), mmap_mode="r")
    column = pq.read_table(registry.locate("glove_6b_50d", "words")).column("index")
    if len(column) != matrix.shape[0]:
        raise DataError(f"glove_6b_50d: {len(column)} words for {matrix.shape[0]} vectors; "
                        "reinstall the package (" + registry.source("glove_6b_50d")
                        .install_command + ").")
    stop = matrix.shape[0] if limit is None else min(limit, matrix.shape[0])
    return WordVectors(column.slice(0, stop).to_pylist(), matrix[:stop])


def load_vectors(name):
    """Vectors by name: ``"glove"`` (GloVe 6B 50d), an ``embedding.keras`` file, or a file in
    the text format."""
    if name == "glove":
        return load_glove()
    return load_keras(name) if str(name).endswith(".keras") else read_text(name)
