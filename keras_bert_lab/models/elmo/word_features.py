"""``ElmoWordFeatures``: every layer of an ELMo biLM for each word — the ELMo family's feature
source for the feature-based taggers (:mod:`keras_bert_lab.features`).

The biLM reads words directly (characters): the token layer (duplicated to the biLM's width, as
the original does) and each LSTM layer's forward and backward states concatenated (``K = L + 1``),
for the words between ``<S>`` and ``</S>``.

Shapes: ``N`` sentences, ``T`` tokens, ``K`` layers, ``H`` width.
"""

import numpy as np
class ElmoWordFeatures:
    """Every layer of an ``ElmoBackbone`` for each word, ``<S>``/``</S>`` added around the sentence
    (as the biLM was trained) and dropped from the output.

    Args:
        bilm: an ``ElmoBackbone`` (or a task holding one as ``backbone``).
        batch_size: sentences per forward pass. name: recorded in caches.

    Example:
    >>> from keras_bert_lab.models.elmo.backbone import ElmoBackbone
    >>> source = ElmoWordFeatures(ElmoBackbone("tiny"))
    >>> [f.shape for f in source([["Stick", "to", "the", "plan"], ["a", "stick"]])]
    [(4, 3, 32), (2, 3, 32)]
    """

    def __init__(self, bilm, batch_size=32, name=None):
        self.bilm = getattr(bilm, "backbone", None) or bilm
        self.batch_size, self.name = batch_size, name
        self.num_layers = self.bilm.config.num_layers + 1
        self.dim = 2 * self.bilm.config.projection_dim
        self.missing_words = 0

    @classmethod
    def from_preset(cls, preset, sequence_length=None, pooling=None, batch_size=32):
        """The source of an ELMo preset's biLM, named after the preset. ``sequence_length`` and
        ``pooling`` are the piece-level sources' settings: the biLM reads whole words (its
        characters) and sentences of any length, so they do not apply and are not used."""
        from keras_bert_lab.models.elmo.backbone import ElmoBackbone

        return cls(ElmoBackbone.from_preset(preset), batch_size=batch_size, name=str(preset))

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
