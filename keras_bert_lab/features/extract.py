"""Per-word layer stacks from any backbone: the inputs of the feature-based taggers.

A *feature source* turns word-split sentences into one array per sentence of shape
``(W, K, H)``: for each of its ``W`` words, ``K`` layers of width ``H``. Every source has
``num_layers`` (``K``), ``dim`` (``H``), ``describe()`` (recorded in caches) and
``__call__(sentences)``. What a "layer" is depends on the model:

- a family's own source, which the family registry names (``family_of(...).feature_extractor()``):
  :class:`~keras_bert_lab.models.bert.word_features.BertWordFeatures` (the embedding output and
  each block's output, a word's first piece or the mean of its pieces) and
  :class:`~keras_bert_lab.models.elmo.word_features.ElmoWordFeatures` (the biLM's token layer
  and each LSTM layer, forward and backward);
- :class:`StaticWordFeatures`: one layer, the word's static vector (GloVe, word2vec) — the same
  vector in every sentence, which is the point of comparing it with the others.

Shapes: ``N`` sentences, ``W`` words, ``L`` pieces, ``K`` layers, ``H`` width.
"""

import numpy as np


class StaticWordFeatures:
    """One layer: each word's static vector (zeros for a word the vectors do not know).

    Args:
        vectors: a :class:`~keras_bert_lab.vectors.WordVectors`.
        lowercase: look a word up lower-cased when its own form is unknown (GloVe is uncased).

    Example:
    >>> from keras_bert_lab.vectors import WordVectors
    >>> source = StaticWordFeatures(WordVectors(["stick", "plan"], [[1.0, 0.0], [0.0, 1.0]]))
    >>> source([["Stick", "to", "plan"]])[0][:, 0].tolist()
    [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]
    >>> source.missing_words
    1
    """

    def __init__(self, vectors, lowercase=True, name=None):
        self.vectors, self.lowercase, self.name = vectors, lowercase, name
        self.num_layers, self.dim = 1, vectors.dim
        self.missing_words = 0

    def describe(self):
        return {"source": "static", "vectors": self.name, "words": len(self.vectors),
                "lowercase": self.lowercase, "num_layers": 1, "dim": self.dim}

    def _row(self, word):
        for form in (word, word.lower()) if self.lowercase else (word,):
            if form in self.vectors:
                return self.vectors.vectors[self.vectors.index(form)]
        self.missing_words += 1
        return np.zeros(self.dim, "float32")

    def __call__(self, sentences):
        return [np.stack([self._row(w) for w in words]).astype("float32")[:, None, :]
                if len(words) else np.zeros((0, 1, self.dim), "float32") for words in sentences]
