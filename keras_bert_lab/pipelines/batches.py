"""Fine-tuning batches from packed NumPy arrays, each batch cut to its longest real sequence.

:func:`batches` cuts each batch to its longest real sequence (rounded up to ``length_multiple``),
so short texts padded to 128 do not pay for 128 — on a CPU this is most of the cost of a GLUE-style
run. The padding that remains is masked, so results do not change.

Shapes: ``N`` examples, ``C`` choices, ``L`` padded length.
"""

import math

import keras
import numpy as np
import tensorflow as tf

from keras_bert_lab.errors import InputError


def batches(features, labels=None, sample_weight=None, batch_size=32, shuffle=False, seed=0,
            length_multiple=16):
    """A finite ``tf.data.Dataset`` of ``(x, y[, sample_weight])`` batches, each cut to its length.

    Args:
        features: dict of NumPy arrays with equal first dimension ``N``; it must hold
            ``padding_mask`` ``(N, L)`` (or ``(N, C, L)``).
        labels, sample_weight: an array or a dict of arrays (``N`` first), or ``None``.
        shuffle: a new order every epoch (seeded: the same run gives the same orders).
        length_multiple: each batch keeps ``max(real tokens)`` positions rounded up to this; every
            array shaped like ``padding_mask`` (features, token labels, token weights) is cut.

    Example:
    >>> x = {"token_ids": np.ones((3, 64), "int32"), "padding_mask": np.zeros((3, 64), "int32")}
    >>> x["padding_mask"][:, :5] = 1
    >>> first = next(iter(batches(x, np.arange(3), batch_size=2)))
    >>> first[0]["token_ids"].shape.as_list(), first[1].numpy().tolist()
    ([2, 16], [0, 1])
    """
    if "padding_mask" not in features:
        raise InputError("batches() needs features['padding_mask'] to find each batch's length.")
    mask = np.asarray(features["padding_mask"])
    parts = [dict(features)] + [p for p in (labels, sample_weight) if p is not None]
    n = len(mask)
    for part in parts:
        for value in keras.tree.flatten(part):
            if len(value) != n:
                raise InputError(f"All arrays need {n} rows (padding_mask has {n}); one has "
                                 f"{len(value)}.")
    lengths = mask.reshape(n, -1, mask.shape[-1]).sum(-1).max(-1)  # (N,) longest choice
    full = mask.shape[-1]
    rng = np.random.default_rng(seed)
    count = math.ceil(n / batch_size)

    def take(part, rows, length):
        def cut(value):
            value = np.asarray(value)[rows]
            return value[..., :length] if value.shape[1:] == mask.shape[1:] else value
        return keras.tree.map_structure(cut, part)

    def generate():
        order = rng.permutation(n) if shuffle else np.arange(n)
        for start in range(0, n, batch_size):
            rows = order[start:start + batch_size]
            length = min(full, -(-max(int(lengths[rows].max()), 1) // length_multiple)
                         * length_multiple)
            yield tuple(take(part, rows, length) for part in parts)

    def spec(value):
        value = np.asarray(value)
        shape = (None,) + value.shape[1:-1] + (None,) if value.shape[1:] == mask.shape[1:] \
            else (None,) + value.shape[1:]
        return tf.TensorSpec(shape, tf.as_dtype(value.dtype))

    signature = tuple(keras.tree.map_structure(spec, part) for part in parts)
    dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
    return dataset.apply(tf.data.experimental.assert_cardinality(count))
