"""Sentence embeddings: mean pooling over the real tokens of a backbone's output, L2-normalised.

Sentence-BERT (Reimers & Gurevych 2019) found that averaging the last layer's token vectors gives
better sentence embeddings than BERT's ``[CLS]``/pooled output, and models such as
all-MiniLM-L6-v2 are trained for exactly that recipe: the mean over tokens whose ``padding_mask``
is 1 (padding must not dilute the average), then division by the L2 norm so that the dot product of
two embeddings is their cosine similarity.

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden.
"""

import keras
import numpy as np
from keras import ops

from keras_bert_lab.models.bert import BertBackbone  # noqa: F401 (examples)
from keras_bert_lab.tasks.base import Task, backbone_inputs


def mean_pool(sequence_output, padding_mask):
    """Mean of ``sequence_output`` (B, T, H) over positions where ``padding_mask`` (B, T) is 1.

    A row without any real token gives zeros (the count is clamped to 1e-9, as in
    sentence-transformers), not NaN.

    Example:
    >>> import numpy as np
    >>> x = np.array([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]], "float32")
    >>> ops.convert_to_numpy(mean_pool(x, np.array([[1, 1, 0]]))).tolist()
    [[2.0, 3.0]]
    """
    x = ops.cast(sequence_output, "float32")
    mask = ops.cast(padding_mask, "float32")[:, :, None]  # (B, T, 1)
    total = ops.sum(x * mask, axis=1)  # (B, H)
    count = ops.maximum(ops.sum(mask, axis=1), 1e-9)  # (B, 1)
    return total / count


def l2_normalize(x, epsilon=1e-12):
    """``x / max(‖x‖₂, epsilon)`` along the last axis (``torch.nn.functional.normalize``)."""
    norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
    return x / ops.maximum(norm, epsilon)


@keras.saving.register_keras_serializable("keras_bert_lab")
class SentenceEmbedder(Task):
    """One vector per text from any ``BertBackbone``: mean pooling (+ L2 normalisation).

    Inputs: the backbone's ``token_ids``, ``segment_ids``, ``padding_mask``. Output: ``(B, H)``
    float32 embeddings. :meth:`encode` goes from raw strings to a NumPy array using the preset's
    tokenizer.

    Args:
        backbone: a ``BertBackbone``.
        normalize: divide each embedding by its L2 norm (cosine similarity = dot product).
        sequence_length: the length :meth:`encode` truncates and pads to.

    Example:
    >>> import numpy as np
    >>> embedder = SentenceEmbedder(BertBackbone("tiny"))
    >>> x = {"token_ids": np.array([[101, 7592, 102, 0]]), "segment_ids": np.zeros((1, 4), "int32"),
    ...      "padding_mask": np.array([[1, 1, 1, 0]])}
    >>> vectors = ops.convert_to_numpy(embedder(x))
    >>> vectors.shape, bool(np.isclose(np.linalg.norm(vectors), 1.0))
    ((1, 128), True)

    With the real weights (``kbl preset import-hf --preset minilm_l6_en_uncased`` or on first use):

    >>> embedder = SentenceEmbedder.from_preset("minilm_l6_en_uncased")        # doctest: +SKIP
    >>> a, b = embedder.encode(["A man is eating food.", "A man eats a meal."])  # doctest: +SKIP
    >>> float(a @ b) > 0.8                                                       # doctest: +SKIP
    True
    """

    def __init__(self, backbone, normalize=True, sequence_length=128, **kwargs):
        inputs = backbone_inputs()
        outputs = backbone(inputs)
        embedding = mean_pool(outputs["sequence_output"], inputs["padding_mask"])  # (B, H)
        if normalize:
            embedding = l2_normalize(embedding)
        super().__init__(backbone, inputs=inputs, outputs=embedding, **kwargs)
        self.normalize = normalize
        self.sequence_length = sequence_length

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """An embedder on a preset's backbone, with the pooling recipe the preset records.

        ``kwargs`` (``normalize``, ``sequence_length``, ``allow_partial``, ``dtype``, ``verify``)
        override the preset's values.
        """
        from keras_bert_lab import presets

        load_options = {k: kwargs.pop(k) for k in ("allow_partial", "dtype", "verify") if k in kwargs}
        backbone = presets.load_backbone(preset, **load_options)
        recipe = dict((backbone.preset_info.sentence_embedding or {}))
        options = {"normalize": recipe.get("normalize", True),
                   "sequence_length": recipe.get("sequence_length", 128), **kwargs}
        model = cls(backbone, **options)
        model.preset_info = backbone.preset_info
        return model

    def encode(self, texts, batch_size=32, length_multiple=16):
        """Embeddings ``(N, H)`` of a string or a list of strings (one ``(H,)`` for a string).

        Texts are tokenized, truncated to ``sequence_length`` and run in batches cut to their
        longest text (:meth:`predict_packed`) — padding cannot change an embedding.
        """
        from keras_bert_lab.text.labelled_data import pack_texts

        single = isinstance(texts, str)
        features = pack_texts(self.tokenizer, [texts] if single else list(texts),
                              sequence_length=self.sequence_length)
        vectors = self.predict_packed(features, batch_size, length_multiple)
        return vectors[0] if single else vectors

    def save_to_preset(self, directory, **kwargs):
        """Save the backbone as a preset that records this pooling recipe."""
        from keras_bert_lab import presets

        kwargs.setdefault("sentence_embedding", {"pooling": "mean", "normalize": self.normalize,
                                                 "sequence_length": self.sequence_length})
        return presets.save_preset(self.backbone, directory, **kwargs)

    def get_config(self):
        return {**super().get_config(), "normalize": self.normalize,
                "sequence_length": self.sequence_length}
