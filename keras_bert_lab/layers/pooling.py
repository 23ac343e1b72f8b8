"""Pooling a sequence of hidden states into one vector per sequence.

Sentence-BERT (Reimers & Gurevych 2019) found that averaging the last layer's token vectors gives
better sentence embeddings than BERT's ``[CLS]``/pooled output, and models such as
all-MiniLM-L6-v2 are trained for exactly that recipe: the mean over tokens whose ``padding_mask``
is 1 (padding must not dilute the average), then division by the L2 norm so that the dot product of
two embeddings is their cosine similarity.

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden.
"""

from keras import ops


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
    """``x / max(‖x‖₂, epsilon)`` along the last axis (``torch.nn.functional.normalize``).

    Example:
    >>> import numpy as np
    >>> ops.convert_to_numpy(l2_normalize(np.array([[3.0, 4.0]], "float32"))).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
    return x / ops.maximum(norm, epsilon)
