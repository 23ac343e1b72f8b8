"""Small pieces shared by the layers: BERT's activation, initializer, dropout and tied logits."""

import math
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
    ``random``, which ``keras.utils.set_random_seed`` seeds, so runs stay reproducible. On JAX the
    mask comes from ``counter_dropout`` (see ``CounterDropout``).
    """
    return CounterDropout(rate, seed=random.randint(1, 2**31 - 1), dtype=dtype, name=name)


def _word(value):
    """A uint32 constant as the int32 with the same bits (uint32 arithmetic is patchy on torch)."""
    return keras.ops.convert_to_tensor(value - 2**32 if value >= 2**31 else value, "int32")


def _mix32(x):
    """Wellons' "lowbias32" on int32 words: a bijection of 32-bit words with strong avalanche.

    Multiplication wraps the same way in int32 and uint32; the right shifts are made logical
    by masking off the sign bits that an arithmetic shift copies in.
    """
    for shift, factor in ((16, 0x7FEB352D), (15, 0x846CA68B), (16, None)):
        logical = keras.ops.bitwise_and(keras.ops.right_shift(x, shift), (1 << (32 - shift)) - 1)
        x = keras.ops.bitwise_xor(x, logical)
        if factor is not None:
            x = keras.ops.multiply(x, _word(factor))
    return x


def counter_dropout(inputs, rate, seed):
    """Inverted dropout whose keep mask is a hash of each element's index and a 2-word ``seed``.

    Element ``i`` is kept when the unsigned word ``mix32(i · φ + key) ≥ round(rate · 2³²)``,
    ``key`` being ``seed`` mixed down to one word, so the drop probability is ``rate`` to within
    2⁻³²: a counter-based generator like JAX's threefry or TensorFlow's Philox, with one 32-bit
    mix per element instead of their 20 or 10 rounds. Under ``jit`` XLA fuses it into the
    select; ``jax.random.bernoulli``'s threefry took 17 % of a BERT-small training step's op
    time on JAX (``benchmarks/profile_step.py``).
    """
    seed = keras.ops.cast(seed, "int32")
    golden = _word(0x9E3779B9)
    key = _mix32(keras.ops.bitwise_xor(seed[0], _mix32(seed[1] + golden)))
    shape = keras.ops.shape(inputs)
    index = keras.ops.arange(math.prod(shape), dtype="int32") * golden
    bits = keras.ops.reshape(_mix32(index + key), shape)
    # Flipping the top bit turns unsigned order into int32 order.
    threshold = min(round(rate * 2**32), 2**32 - 1) - 2**31
    kept = keras.ops.greater_equal(keras.ops.bitwise_xor(bits, _word(2**31)), threshold)
    return keras.ops.where(kept, inputs / (1.0 - rate), keras.ops.zeros_like(inputs))


def counter_uniform(shape, salt):
    """Uniform numbers in (0, 1), each a hash (``mix32``) of its element's index in ``shape``
    and ``salt`` (int32; the result has the broadcast shape of the two, so a salt with leading
    axes of its own — one per row — gives each row numbers that depend on the row's salt, not
    on its place in the batch): the same values on every backend and at every call, for
    randomness that must be reproducible without a generator's state (ELECTRA's held-out
    sampling, whose metrics then do not change from one evaluation to the next).

    >>> import numpy as np
    >>> u = keras.ops.convert_to_numpy(counter_uniform((4, 1000), np.arange(4)[:, None]))
    >>> bool(0 < u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.02), u.dtype.name
    (True, 'float32')
    """
    golden = _word(0x9E3779B9)
    index = keras.ops.reshape(keras.ops.arange(math.prod(shape), dtype="int32") * golden, shape)
    bits = _mix32(index + _mix32(keras.ops.cast(salt, "int32") + golden))
    unsigned = keras.ops.cast(bits, "float32") + 2.0**31          # [0, 2³²)
    return keras.ops.clip((unsigned + 0.5) / 2.0**32, 1e-7, 1.0 - 1e-7)


@keras.saving.register_keras_serializable(package="keras_bert_lab")
class CounterDropout(keras.layers.Dropout):
    """``keras.layers.Dropout`` that draws its mask with ``counter_dropout`` on JAX.

    The same seed-generator variable and config as Keras' layer; on TensorFlow and PyTorch it is
    Keras' layer unchanged (their native Philox kernels beat a chain of unfused integer ops).

    >>> import numpy as np
    >>> layer = CounterDropout(0.1, seed=1)
    >>> kept = keras.ops.convert_to_numpy(layer(np.ones((64, 128), "float32"), training=True)) > 0
    >>> bool(abs(kept.mean() - 0.9) < 0.01)
    True
    """

    def call(self, inputs, training=False):
        if training and 0 < self.rate < 1 and self.noise_shape is None \
                and keras.backend.backend() == "jax":
            return counter_dropout(inputs, self.rate, self.seed_generator.next())
        return super().call(inputs, training=training)
