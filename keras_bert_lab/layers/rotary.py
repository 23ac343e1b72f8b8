"""Rotary position embedding (RoPE): positions as rotations of the queries and keys.

Shapes: ``B`` batch, ``T`` tokens, ``N`` heads, ``D`` head size (even).
"""

import keras
from keras import ops


def rotary_embedding(query, key, base=10000.0, offset=0):
    """Rotate each head's queries and keys by angles proportional to their positions.

    RoFormer (Su et al. 2021, eq. 34) replaces the learned position table with a rotation: the
    pair of features ``(i, i + D/2)`` of the token at position ``p`` turns by ``p·θ_i`` with
    ``θ_i = base^(−2i/D)``, so that the score ``q_p·k_s`` depends on ``p − s`` alone — a relative
    position with no weights and no longest-sequence table. The halves are paired as in GPT-NeoX,
    Llama and ModernBERT (``rotate_half``), not interleaved as in the paper's figure; both are the
    same rotation up to a fixed permutation of ``D``. Angles and products are computed in float32
    and cast back, so mixed precision keeps the positions exact.

    Args:
        query, key: ``(B, T, N, D)`` tensors; ``D`` must be even.
        base: ``θ``'s base (10,000 in RoFormer; ModernBERT's global layers use 160,000).
        offset: position of the first token (a decoder step with a key/value cache).

    Returns:
        ``(query, key)`` rotated, each ``(B, T, N, D)`` in its input dtype.

    Example:
    >>> import numpy as np
    >>> q = np.ones((1, 3, 2, 4), "float32")
    >>> rotated, _ = rotary_embedding(q, q)
    >>> np.round(np.asarray(rotated)[0, :, 0, 0], 4)        # position 0 is not rotated
    array([ 1.    , -0.3012, -1.3254], dtype=float32)
    >>> bool(np.allclose(np.linalg.norm(np.asarray(rotated), axis=-1), 2.0))   # lengths kept
    True
    """
    length, depth = ops.shape(query)[1], ops.shape(query)[-1]
    # θ_i = 1 / base^(2i/D), i < D/2, computed as Hugging Face's ModernBERT does (float32)
    exponents = ops.arange(0, depth, 2, dtype="float32") / float(depth)  # (D/2,)
    inverse_frequencies = 1.0 / ops.power(ops.convert_to_tensor(float(base), "float32"), exponents)
    positions = ops.arange(length, dtype="float32") + ops.cast(offset, "float32")  # (T,)
    angles = positions[:, None] * inverse_frequencies[None, :]  # (T, D/2)
    angles = ops.concatenate([angles, angles], axis=-1)[None, :, None, :]  # (1, T, 1, D)
    cos, sin = ops.cos(angles), ops.sin(angles)
    return _rotate(query, cos, sin), _rotate(key, cos, sin)


def _rotate(x, cos, sin):  # (B, T, N, D)
    x32 = ops.cast(x, "float32")
    first, second = ops.split(x32, 2, axis=-1)  # (B, T, N, D/2) each
    turned = ops.concatenate([-second, first], axis=-1)  # rotate_half: (x1, x2) -> (-x2, x1)
    return ops.cast(x32 * cos + turned * sin, keras.backend.standardize_dtype(x.dtype))
