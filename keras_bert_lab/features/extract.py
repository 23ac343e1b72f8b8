"""Per-word layer stacks from any backbone: the inputs of the feature-based taggers.

A *feature source* turns word-split sentences into one array per sentence of shape
``(W, K, H)``: for each of its ``W`` words, ``K`` layers of width ``H``. Every source has
``num_layers`` (``K``), ``dim`` (``H``), ``describe()`` (recorded in caches) and
``__call__(sentences)``. What a "layer" is depends on the model:

- :class:`BertWordFeatures`: the embedding output and each block's output (``K = L + 1``). BERT
  sees WordPiece pieces, so a word's vector is its first piece's (what the BERT paper's NER
  uses) or the mean of its pieces. Each word is tokenized on its own, as in fine-tuning.
- :class:`ElmoWordFeatures`: an ELMo biLM reads words directly (characters): the token layer
  (duplicated to the biLM's width, as the original does) and each LSTM layer's forward and
  backward states concatenated (``K = L + 1``), for the words between ``<S>`` and ``</S>``.
- :class:`StaticWordFeatures`: one layer, the word's static vector (GloVe, word2vec) — the same
  vector in every sentence, which is the point of comparing it with the others.

Shapes: ``N`` sentences, ``W`` words, ``L`` pieces, ``K`` layers, ``H`` width.
"""

import numpy as np

from keras_bert_lab.data.conll import TaggedSentence
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.bert import BertBackbone
from keras_bert_lab.preprocessing.tagging import align
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

POOLINGS = ("first", "mean")


class BertWordFeatures:
    """Every hidden state of a ``BertBackbone``, one vector per word.

    Args:
        backbone: a ``BertBackbone`` (frozen: only ``predict_on_batch`` is used).
        tokenizer: its ``WordPieceTokenizer``.
        sequence_length: pieces per sentence including ``[CLS]``/``[SEP]``; words past it, and
            words made only of characters BERT drops, get zero vectors (counted in
            ``missing_words``).
        pooling: ``"first"`` piece or ``"mean"`` of a word's pieces.
        batch_size: sentences per forward pass.

    Example:
    >>> source = BertWordFeatures.from_preset("minilm_l6_en_uncased", sequence_length=16)
    >>> [f.shape for f in source([["Stick", "to", "the", "plan"], ["a", "stick"]])]
    [(4, 7, 384), (2, 7, 384)]
    """

    def __init__(self, backbone, tokenizer, sequence_length=128, pooling="first", batch_size=32):
        if pooling not in POOLINGS:
            raise ConfigError(f"pooling={pooling!r}; choose one of {POOLINGS}.")
        self.backbone, self.tokenizer = backbone, tokenizer
        self.sequence_length, self.pooling, self.batch_size = sequence_length, pooling, batch_size
        self.num_layers = backbone.config.num_layers + 1
        self.dim = backbone.config.hidden_size
        self.missing_words = 0
        self.preset = getattr(getattr(backbone, "preset_info", None), "directory", None)

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """The source of a preset's backbone and tokenizer (a name or a directory)."""
        backbone = BertBackbone.from_preset(preset)
        source = cls(backbone, WordPieceTokenizer.from_preset(preset), **kwargs)
        source.preset = str(preset)
        return source

    def describe(self):
        return {"source": "bert", "preset": None if self.preset is None else str(self.preset),
                "pooling": self.pooling, "sequence_length": self.sequence_length,
                "num_layers": self.num_layers, "dim": self.dim}

    def __call__(self, sentences):
        out = []
        for start in range(0, len(sentences), self.batch_size):
            out.extend(self._batch(sentences[start:start + self.batch_size]))
        return out

    def _batch(self, sentences):
        tagged = [TaggedSentence(list(words), ["O"] * len(words)) for words in sentences]
        data = align(tagged, self.tokenizer, ["O"], self.sequence_length)
        longest = max(1, int(data.features["padding_mask"].sum(-1).max()))
        inputs = {k: v[:, :longest] for k, v in data.features.items()}
        hidden = self.backbone.predict_on_batch(inputs)["hidden_states"]
        stack = np.stack([np.asarray(h, "float32") for h in hidden], axis=2)  # (N, L, K, H)
        out = []
        for row, words in enumerate(sentences):
            features = np.zeros((len(words), self.num_layers, self.dim), "float32")
            positions = np.nonzero(data.word_index[row, :longest] >= 0)[0]
            for position in positions:
                word = data.word_index[row, position]
                if self.pooling == "first":
                    features[word] = stack[row, position]
                else:
                    count = data.word_pieces[row, position]
                    features[word] = stack[row, position:position + count].mean(axis=0)
            self.missing_words += len(words) - len(positions)
            out.append(features)
        return out


class ElmoWordFeatures:
    """Every layer of an ``ElmoBiLM`` for each word, ``<S>``/``</S>`` added around the sentence
    (as the biLM was trained) and dropped from the output.

    Args:
        bilm: an ``ElmoBiLM`` (or a task holding one as ``backbone``).
        batch_size: sentences per forward pass. name: recorded in caches.

    Example:
    >>> from keras_bert_lab.models.elmo import ElmoBiLM
    >>> source = ElmoWordFeatures(ElmoBiLM("tiny"))
    >>> [f.shape for f in source([["Stick", "to", "the", "plan"], ["a", "stick"]])]
    [(4, 3, 32), (2, 3, 32)]
    """

    def __init__(self, bilm, batch_size=32, name=None):
        self.bilm = getattr(bilm, "backbone", None) or bilm
        self.batch_size, self.name = batch_size, name
        self.num_layers = self.bilm.config.num_layers + 1
        self.dim = 2 * self.bilm.config.projection_dim
        self.missing_words = 0

    def describe(self):
        return {"source": "elmo", "model": self.name, "num_layers": self.num_layers,
                "dim": self.dim}

    def __call__(self, sentences):
        from keras_bert_lab.preprocessing.characters import character_ids

        out = []
        for start in range(0, len(sentences), self.batch_size):
            part = [list(words) for words in sentences[start:start + self.batch_size]]
            ids = character_ids(part, add_boundaries=True)
            hidden = self.bilm.predict_on_batch({"character_ids": ids})["hidden_states"]
            stack = np.stack([np.asarray(h, "float32") for h in hidden], axis=2)  # (N, T, K, H)
            out.extend(stack[row, 1:1 + len(words)] for row, words in enumerate(part))
        return out


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
