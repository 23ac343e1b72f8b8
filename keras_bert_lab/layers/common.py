"""Small pieces shared by the layers: BERT's activation, initializer, dropout and tied logits."""

import random

import keras


def gelu(x):
    """Exact (erf) GELU, as in the original BERT and Hugging Face's ``"gelu"``.

    On TensorFlow it is written as BERT's own ``0.5·x·(1 + erf(x/√2))``: TensorFlow's exact GELU
    is the same few ops around ``erfc``, which ONNX has no operator for (``kbl export --format
    onnx`` converts the TensorFlow graph). Elsewhere the backend's fused GELU runs.
    """
    if keras.backend.backend() == "tensorflow":
        return 0.5 * x * (1.0 + keras.ops.erf(x * 0.7071067811865476))
    return keras.activations.gelu(x, approximate=False)


def tied_logits(hidden, table):
    """``hidden · tableᵀ`` for a decoder tied to an embedding table: (..., H) × (V, H) → (..., V).

    Written as one 2-D matmul over the flattened rows. TensorFlow's graph optimiser then folds the
    transpose into the matmul forward and backward; a 3-D ``matmul(hidden, transpose(table))``
    went through ``tensordot`` and copied the (H, V) transpose every step, and an einsum became a
    batched matmul on TensorFlow and PyTorch (``benchmarks/profile_step.py``).
    """
    rows = keras.ops.reshape(hidden, (-1, keras.ops.shape(hidden)[-1]))
    logits = keras.ops.matmul(rows, keras.ops.transpose(table))
    return keras.ops.reshape(logits, (*keras.ops.shape(hidden)[:-1], -1))


def truncated_normal(stddev):
    """BERT's initializer: a normal cut at two standard deviations (a new instance per weight)."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


def dropout(rate, dtype, name):
    """A ``Dropout`` whose randomness lives in its seed-generator state on every backend.

    With no seed, Keras' PyTorch backend draws dropout masks from torch's global RNG, which a
    checkpoint cannot restore; an explicit seed routes them through the layer's seed-generator
    variable (saved with the model) as on TensorFlow and JAX. The seed comes from Python's
    ``random``, which ``keras.utils.set_random_seed`` seeds, so runs stay reproducible.
    """
    return keras.layers.Dropout(rate, seed=random.randint(1, 2**31 - 1), dtype=dtype, name=name)
