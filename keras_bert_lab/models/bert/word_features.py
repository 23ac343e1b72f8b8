"""``BertWordFeatures``: every hidden state of a ``BertBackbone``, one vector per word — the BERT
family's feature source for the feature-based taggers (:mod:`keras_bert_lab.features`).

BERT sees WordPiece pieces, so a word's vector is its first piece's (what the BERT paper's NER
uses, Devlin et al. 2019, §5.4) or the mean of its pieces; each word is tokenized on its own,
as in fine-tuning. The layers are the embedding output and each block's output (``K = L + 1``).

Shapes: ``N`` sentences, ``W`` words, ``L`` pieces, ``K`` layers, ``H`` width.
"""

import numpy as np

from keras_bert_lab.data.conll import TaggedSentence
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.bert.backbone import BertBackbone
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
