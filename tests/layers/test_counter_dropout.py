import keras
import numpy as np
import pytest

from keras_bert_lab.layers.common import CounterDropout, counter_dropout, dropout
from tests.conftest import to_numpy


def reference_bits(shape, seed):
    """The keep test's words in NumPy uint32, from the docstring's formula (lowbias32 mix)."""
    def mix(x):
        x = np.asarray(x, np.uint64) & 0xFFFFFFFF
        x ^= x >> 16
        x = (x * 0x7FEB352D) & 0xFFFFFFFF
        x ^= x >> 15
        x = (x * 0x846CA68B) & 0xFFFFFFFF
        return x ^ (x >> 16)
    golden = 0x9E3779B9
    key = mix(np.uint64(seed[0]) ^ mix(np.uint64(seed[1]) + golden))
    index = (np.arange(np.prod(shape), dtype=np.uint64) * golden) & 0xFFFFFFFF
    return mix(index + key).reshape(shape)


@pytest.mark.parametrize("seed", [(3, 7), (2**31 + 5, 2**32 - 1)])
def test_counter_dropout_equals_a_numpy_uint32_reference(seed):
    x = np.random.default_rng(0).normal(size=(3, 5, 7)).astype("float32")
    out = to_numpy(counter_dropout(x, 0.25, np.array(seed, "uint32")))
    kept = reference_bits(x.shape, seed) >= round(0.25 * 2**32)
    np.testing.assert_allclose(out, np.where(kept, x / 0.75, 0.0), rtol=1e-6)


def test_counter_dropout_statistics():
    """Drop rate, independence of neighbours, and fresh masks per seed-generator call."""
    x = np.ones((64, 256, 64), "float32")
    layer = CounterDropout(0.1, seed=1)
    first = to_numpy(layer(x, training=True)) > 0
    second = to_numpy(layer(x, training=True)) > 0
    # 1 M draws each: the standard error of a rate near 0.9 is about 3e-4
    assert abs(first.mean() - 0.9) < 2e-3 and abs(second.mean() - 0.9) < 2e-3
    assert abs((first[..., 1:] & first[..., :-1]).mean() - 0.81) < 3e-3  # neighbours
    assert abs((first[1:] & first[:-1]).mean() - 0.81) < 3e-3
    assert abs((first & second).mean() - 0.81) < 3e-3  # successive steps


def test_counter_dropout_layer_is_keras_dropout_outside_jax_and_identity_at_inference():
    x = np.ones((4, 32), "float32")
    layer = dropout(0.5, "float32", "drop")
    assert isinstance(layer, CounterDropout) and isinstance(layer, keras.layers.Dropout)
    np.testing.assert_array_equal(to_numpy(layer(x, training=False)), x)
    state = to_numpy(layer.seed_generator.state)
    out = to_numpy(layer(x, training=True))
    assert set(np.unique(out)) <= {0.0, 2.0}
    if keras.backend.backend() == "jax":
        np.testing.assert_array_equal(out, to_numpy(counter_dropout(x, 0.5, state)))
    assert not np.array_equal(state, to_numpy(layer.seed_generator.state))  # state advanced
