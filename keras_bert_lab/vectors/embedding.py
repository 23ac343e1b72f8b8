"""Static word vectors as a Keras ``Embedding`` layer, and as a file Keras opens.

:func:`build_embedding` lines the vectors up with a model's vocabulary (row ``i`` is the vector of
``vocabulary[i]``; a word missing from the vectors gets a random row scaled to the vectors'
standard deviation, or zeros) and reports the coverage. :func:`save_embedding` writes the vectors
as a ``.keras`` model — one integer input ``word_ids`` and one ``Embedding`` layer named
``word_vectors`` — plus the words, one per line, in ``<name>.words.txt`` beside it; so
``keras.saving.load_model("glove.keras")`` opens the model on any backend, and
:func:`load_embedding` gives back the words and the exact matrix.

Example:

>>> import numpy as np
>>> index = {"cat": 0, "dog": 1}
>>> matrix = np.array([[1, 2], [3, 4]], "float32")
>>> layer, coverage = build_embedding(index, matrix, ["[PAD]", "Dog", "cat"], oov="zeros")
>>> np.asarray(layer.embeddings).tolist()
[[0.0, 0.0], [3.0, 4.0], [1.0, 2.0]]
>>> print(coverage)
2 of 3 words covered (66.7%; 1 through lower-casing); missing: '[PAD]'
"""

import dataclasses
import os

import keras
import numpy as np

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.vectors.textio import check_writable_words, write_atomically

LAYER_NAME = "word_vectors"
MISSING_SAMPLE = 20


@dataclasses.dataclass(frozen=True)
class Coverage:
    """How much of a vocabulary the vectors cover: ``covered`` of ``total`` words (``lowercased``
    of them found only by lower-casing), and the first missing words (up to 20)."""

    covered: int
    total: int
    lowercased: int
    missing: tuple

    @property
    def fraction(self):
        return self.covered / self.total if self.total else 0.0

    def as_dict(self):
        return {"covered": self.covered, "total": self.total, "fraction": self.fraction,
                "lowercased": self.lowercased, "missing": list(self.missing)}

    def __str__(self):
        text = (f"{self.covered:,} of {self.total:,} words covered ({100 * self.fraction:.1f}%; "
                f"{self.lowercased:,} through lower-casing)")
        if self.missing:
            shown = ", ".join(repr(w) for w in self.missing[:8])
            more = " …" if self.total - self.covered > 8 else ""
            text += f"; missing: {shown}{more}"
        return text


def aligned_matrix(index, matrix, vocabulary, oov="random", seed=0, lowercase_fallback=True,
                   mask_zero=False):
    """``(rows (len(vocabulary), dim) float32, Coverage)``: row ``i`` is the vector of
    ``vocabulary[i]`` (or of its lower-cased form); see :func:`build_embedding`."""
    if oov not in ("random", "zeros"):
        raise ConfigError(f"oov={oov!r}: choose 'random' (normal rows scaled to the vectors' "
                          "standard deviation) or 'zeros'.")
    vocabulary = list(vocabulary)
    if not vocabulary:
        raise ConfigError("The vocabulary is empty: give the model's words in id order.")
    rows = np.zeros((len(vocabulary), matrix.shape[1]), "float32")
    found = np.zeros(len(vocabulary), bool)
    lowercased, first = 0, 1 if mask_zero else 0
    for i in range(first, len(vocabulary)):
        word = vocabulary[i]
        row = index.get(word)
        if row is None and lowercase_fallback and isinstance(word, str):
            row = index.get(word.lower())
            lowercased += row is not None
        if row is not None:
            rows[i], found[i] = matrix[row], True
    missing = np.flatnonzero(~found[first:]) + first
    if oov == "random" and len(missing):
        scale = float(np.std(matrix, dtype="float64"))
        noise = np.random.default_rng(seed).standard_normal((len(missing), matrix.shape[1]))
        rows[missing] = (noise * scale).astype("float32")
    coverage = Coverage(covered=int(found.sum()), total=len(vocabulary) - first,
                        lowercased=lowercased,
                        missing=tuple(vocabulary[i] for i in missing[:MISSING_SAMPLE]))
    return rows, coverage


def build_embedding(index, matrix, vocabulary, trainable=False, oov="random", seed=0,
                    lowercase_fallback=True, mask_zero=False, name=LAYER_NAME):
    """A ``keras.layers.Embedding`` whose row ``i`` is the vector of ``vocabulary[i]``, and the
    :class:`Coverage` of the vocabulary.

    ``index`` maps a word to its row of ``matrix``. A word not found as is (nor lower-cased, with
    ``lowercase_fallback``) gets ``oov="random"`` normal values times the standard deviation of
    all the vectors (seeded by ``seed``) or ``"zeros"``. With ``mask_zero=True`` id 0 is padding:
    its row is zeros and it is left out of the coverage. ``trainable=False`` freezes the
    vectors.
    """
    rows, coverage = aligned_matrix(index, matrix, vocabulary, oov, seed, lowercase_fallback,
                                    mask_zero)
    layer = keras.layers.Embedding(rows.shape[0], rows.shape[1], mask_zero=mask_zero,
                                   embeddings_initializer="zeros", weights=rows,
                                   trainable=trainable, name=name)
    return layer, coverage


def words_path(path):
    """The file beside ``path`` (``x.keras``) that holds the words: ``x.words.txt``."""
    path = os.fspath(path)
    return path[:-len(".keras")] + ".words.txt"


def _check_keras_path(path):
    path = os.fspath(path)
    if not path.endswith(".keras"):
        raise ConfigError(f"{path}: a Keras model file must end in '.keras' (e.g. "
                          "'glove.keras'); its words go beside it in '<name>.words.txt'.")
    return path


def save_embedding(path, words, matrix, trainable=False):
    """Write ``path`` (``.keras``: input ``word_ids`` → ``Embedding`` ``word_vectors``) and the
    words beside it (:func:`words_path`), each atomically. Returns the two paths."""
    path = _check_keras_path(path)
    check_writable_words(words, "words file (one word per line)")
    inputs = keras.Input(shape=(None,), dtype="int32", name="word_ids")
    layer = keras.layers.Embedding(len(words), matrix.shape[1], embeddings_initializer="zeros",
                                   weights=np.asarray(matrix, "float32"), trainable=trainable,
                                   name=LAYER_NAME)
    model = keras.Model(inputs, layer(inputs), name=LAYER_NAME)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)[:-6]}.tmp{os.getpid()}.keras")
    try:
        model.save(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    words_file = words_path(path)
    write_atomically(words_file, lambda f: f.write("".join(w + "\n" for w in words)))
    return path, words_file


def load_embedding(path):
    """``(words, float32 matrix)`` of a file written by :func:`save_embedding`."""
    path = _check_keras_path(path)
    if not os.path.exists(path):
        raise DataError(f"No Keras file at {path}: check the path.")
    words_file = words_path(path)
    if not os.path.exists(words_file):
        raise DataError(f"{path} has no words file beside it ({words_file}): save with "
                        "WordVectors.save_keras, which writes both, or put the words there, one "
                        "per line in row order.")
    model = keras.saving.load_model(path, compile=False)
    layers = [layer for layer in model.layers if isinstance(layer, keras.layers.Embedding)]
    if len(layers) != 1:
        raise DataError(f"{path} holds {len(layers)} Embedding layers; expected one (as "
                        "WordVectors.save_keras writes).")
    matrix = np.asarray(keras.ops.convert_to_numpy(layers[0].embeddings), "float32")
    with open(words_file, encoding="utf-8", newline="\n") as f:
        words = f.read().split("\n")
    if words and words[-1] == "":
        words.pop()
    if len(words) != matrix.shape[0]:
        raise DataError(f"{words_file} lists {len(words)} words but {path} holds "
                        f"{matrix.shape[0]} vectors: the two files do not belong together; "
                        "save them again.")
    return words, matrix
