"""Sentence embeddings: mean pooling over the real tokens of a backbone's output, L2-normalised.

Sentence-BERT (Reimers & Gurevych 2019) found that averaging the last layer's token vectors gives
better sentence embeddings than BERT's ``[CLS]``/pooled output; models such as all-MiniLM-L6-v2 are
trained for that recipe (:mod:`keras_bert_lab.layers.pooling`).

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden.
"""

import keras

from keras_bert_lab.layers.pooling import l2_normalize, mean_pool
from keras_bert_lab.models.bert.backbone import BertBackbone  # noqa: F401 (examples)
from keras_bert_lab.tasks.base import Task, backbone_inputs


@keras.saving.register_keras_serializable("keras_bert_lab")
class SentenceEmbedder(Task):
    """One vector per text from any ``BertBackbone``: mean pooling (+ L2 normalisation).

    Inputs: the backbone's ``token_ids``, ``segment_ids``, ``padding_mask``. Output: ``(B, H)``
    float32 embeddings. From raw strings: ``embedder.predict_packed(preprocessor(texts))`` with a
    :class:`~keras_bert_lab.models.bert.preprocessor.BertTextPreprocessor` (batches cut to their
    longest text: padding cannot change an embedding).

    Args:
        backbone: a ``BertBackbone``.
        normalize: divide each embedding by its L2 norm (cosine similarity = dot product).

    Example:
    >>> import numpy as np
    >>> embedder = SentenceEmbedder(BertBackbone("tiny"))
    >>> x = {"token_ids": np.array([[101, 7592, 102, 0]]), "segment_ids": np.zeros((1, 4), "int32"),
    ...      "padding_mask": np.array([[1, 1, 1, 0]])}
    >>> vectors = keras.ops.convert_to_numpy(embedder(x))
    >>> vectors.shape, bool(np.isclose(np.linalg.norm(vectors), 1.0))
    ((1, 128), True)

    With the real weights (built from the installed package on first use) and the preset's
    tokenizer and length (256):

    >>> from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor          # doctest: +SKIP
    >>> embedder = SentenceEmbedder.from_preset("minilm_l6_en_uncased")          # doctest: +SKIP
    >>> preprocessor = BertTextPreprocessor.from_preset("minilm_l6_en_uncased")  # doctest: +SKIP
    >>> a, b = embedder.predict_packed(preprocessor(["A man is eating food.",    # doctest: +SKIP
    ...                                              "A man eats a meal."]))
    >>> float(a @ b) > 0.8                                                       # doctest: +SKIP
    True
    """

    description = "a sentence embedder (vectors, not classes)"  # what messages call it

    def __init__(self, backbone, normalize=True, **kwargs):
        inputs = backbone_inputs(backbone)
        outputs = backbone(inputs)
        embedding = mean_pool(outputs["sequence_output"], inputs["padding_mask"])  # (B, H)
        if normalize:
            embedding = l2_normalize(embedding)
        super().__init__(backbone, inputs=inputs, outputs=embedding, **kwargs)
        self.normalize = normalize

    @classmethod
    def preset_defaults(cls, preset):
        """The pooling recipe a preset records (e.g. sentence-transformers' ``Normalize``)."""
        return {"normalize": (preset.sentence_embedding or {}).get("normalize", True)}

    def save_to_preset(self, directory, **kwargs):
        """Save the backbone as a preset that records this pooling recipe."""
        kwargs.setdefault("sentence_embedding", {"pooling": "mean", "normalize": self.normalize})
        return self.backbone.save_to_preset(directory, **kwargs)

    def get_config(self):
        return {**super().get_config(), "normalize": self.normalize}
