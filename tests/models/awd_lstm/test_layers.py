"""The AWD-LSTM's regularisers (layers/awd.py) and ProjectedLSTM's weight drop / gradient cut.

Statistical checks use enough draws that a wrong rate fails by many standard deviations; the
weight-dropped LSTM is checked against torch.nn.LSTM run with the very matrix the layer drew.
"""

import keras
import numpy as np
import pytest
import torch

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.awd_lstm.layers import (ActivationRegularization, ConcatPooling,
                                       EmbeddingDropout, LockedDropout)
from keras_bert_lab.layers.lstm import ProjectedLSTM
from tests.conftest import to_numpy

RNG = np.random.default_rng(0)


def gradient(fn, x):
    """d sum(fn(x)) / dx as NumPy, on the current backend."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return np.asarray(jax.jit(jax.grad(lambda v: fn(v).sum()))(x))
    if backend == "tensorflow":
        import tensorflow as tf

        v = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = tf.reduce_sum(fn(v))
        return tape.gradient(y, v).numpy()
    v = torch.tensor(x, requires_grad=True)
    fn(v).sum().backward()
    return v.grad.numpy()


# ---- locked (variational) dropout -----------------------------------------------------------
def test_locked_dropout_shares_one_mask_over_time_at_rate_p():
    p, x = 0.4, np.ones((256, 6, 64), "float32")
    layer = LockedDropout(p, seed=3)
    y = to_numpy(layer(x, training=True))
    assert (y == y[:, :1]).all()                       # the same zero pattern at every step
    assert np.allclose(np.unique(y), [0.0, 1 / (1 - p)])     # dropped, or kept and scaled
    dropped = (y[:, 0] == 0).mean()                    # 16,384 draws: σ ≈ 0.004
    assert abs(dropped - p) < 0.02
    assert abs(y.mean() - 1.0) < 0.03                  # scaled by 1/(1-p): the mean is kept
    assert not np.array_equal(y, to_numpy(layer(x, training=True)))   # a new mask per call


def test_locked_dropout_is_the_identity_at_inference():
    x = RNG.normal(size=(3, 5, 8)).astype("float32")
    layer = LockedDropout(0.5)
    np.testing.assert_array_equal(to_numpy(layer(x)), x)
    np.testing.assert_array_equal(to_numpy(layer(x, training=False)), x)
    assert LockedDropout.from_config(layer.get_config()).get_config() == layer.get_config()
    with pytest.raises(ConfigError, match=r"rate must be in \[0, 1\)"):
        LockedDropout(1.0)


# ---- embedding dropout ----------------------------------------------------------------------
def test_embedding_dropout_drops_whole_word_types_at_rate_p():
    p, vocab = 0.3, 4000
    layer = EmbeddingDropout(vocab, 8, rate=p, seed=5)
    ids = np.tile(np.arange(vocab), (2, 3))                 # every word 6 times, in 2 rows
    out = to_numpy(layer(ids, training=True))               # (2, 3V, 8)
    table = to_numpy(layer.embeddings)
    scale = out[..., 0] / table[ids, 0]                     # each position's factor
    assert np.allclose(out, table[ids] * scale[..., None], atol=1e-6)   # whole rows scaled
    per_word = scale.reshape(2, 3, vocab).transpose(2, 0, 1).reshape(vocab, 6)
    assert (np.abs(per_word - per_word[:, :1]) < 1e-4).all()  # one factor per word type
    factors = per_word[:, 0]
    assert np.allclose(np.sort(np.unique(factors.round(4))), [0.0, round(1 / (1 - p), 4)])
    assert abs((factors == 0).mean() - p) < 0.03            # 4,000 draws: σ ≈ 0.007


def test_embedding_dropout_is_a_lookup_at_inference_and_zeroes_padding():
    layer = EmbeddingDropout(30, 4, rate=0.5)
    ids, mask = np.array([[3, 7, 7, 0]]), np.array([[1, 1, 1, 0]])
    table = None
    for training in (None, False):
        out = to_numpy(layer(ids, padding_mask=mask, training=training))
        table = to_numpy(layer.embeddings)
        np.testing.assert_array_equal(out[0, :3], table[[3, 7, 7]])
        assert not out[0, 3].any()
    assert np.abs(table).max() <= 0.1                        # uniform on ±0.1 as the original
    assert EmbeddingDropout.from_config(layer.get_config()).get_config() == layer.get_config()


# ---- weight drop on the recurrent matrix -----------------------------------------------------
def test_weight_drop_drops_recurrent_entries_at_rate_p_in_training_only():
    p, units = 0.5, 48
    lstm = ProjectedLSTM(units, forget_bias=0.0, weight_drop=p)
    lstm.build((None, None, 8))
    kernel = to_numpy(lstm.kernel)
    dropped = to_numpy(lstm.recurrent_kernel(training=True))          # (U, 4U) = 9,216 entries
    recurrent = kernel[8:]
    zero = dropped == 0
    assert abs(zero.mean() - p) < 0.02
    np.testing.assert_allclose(dropped[~zero], recurrent[~zero] / (1 - p), rtol=1e-6)
    np.testing.assert_array_equal(to_numpy(lstm.recurrent_kernel(training=False)), recurrent)
    np.testing.assert_array_equal(to_numpy(lstm.kernel), kernel)      # the weight is untouched


def test_weight_dropped_call_equals_torch_with_the_drawn_matrix():
    """One mask per call, used at every step: the layer's training output equals torch.nn.LSTM
    whose weight_hh is the matrix the layer draws (same seed state)."""
    d, units = 5, 6
    lstm = ProjectedLSTM(units, forget_bias=0.0, weight_drop=0.5, seed=11)
    x = RNG.normal(size=(2, 7, d)).astype("float32")
    lstm.build(x.shape)
    lstm.bias.assign(RNG.normal(size=(4 * units,)).astype("float32"))
    state = to_numpy(lstm.seed_generator.state).copy()
    recurrent = to_numpy(lstm.recurrent_kernel(training=True))
    lstm.seed_generator.state.assign(state)
    got = to_numpy(lstm(x, training=True))
    kernel = to_numpy(lstm.kernel)
    ref = torch.nn.LSTM(d, units, batch_first=True)
    swap = lambda w: np.concatenate([w[:, :units], w[:, 2 * units:3 * units],  # noqa: E731
                                     w[:, units:2 * units], w[:, 3 * units:]], axis=1)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(torch.tensor(swap(kernel[:d]).T))
        ref.weight_hh_l0.copy_(torch.tensor(swap(recurrent).T))
        ref.bias_ih_l0.copy_(torch.tensor(swap(to_numpy(lstm.bias)[None])[0]))
        ref.bias_hh_l0.zero_()
        expected = ref(torch.tensor(x))[0].numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert np.abs(got - to_numpy(lstm(x))).max() > 1e-3     # inference uses the full matrix


def test_no_weight_drop_leaves_the_layer_as_it_was():
    """ELMo's LSTMs (weight_drop=0): no seed state, training changes nothing."""
    lstm = ProjectedLSTM(8, projection_dim=3, cell_clip=3.0)
    x = RNG.normal(size=(2, 4, 5)).astype("float32")
    np.testing.assert_array_equal(to_numpy(lstm(x, training=True)), to_numpy(lstm(x)))
    assert not hasattr(lstm, "seed_generator") and len(lstm.non_trainable_variables) == 0
    config = lstm.get_config()
    assert config["weight_drop"] == 0.0 and ProjectedLSTM.from_config(config).get_config() == config
    with pytest.raises(ConfigError, match="weight_drop must be in"):
        ProjectedLSTM(8, weight_drop=1.5)


def test_gradient_cut_stops_gradients_into_earlier_steps_only():
    """Row 0 is cut at step 3, row 1 not at all; the loss reads the outputs from step 3 on, so
    earlier inputs reach it through the state only."""
    lstm = ProjectedLSTM(6, forget_bias=0.0)
    x = RNG.normal(size=(2, 6, 4)).astype("float32")
    lstm.build(x.shape)
    cut = np.zeros((2, 6), "int32")
    cut[0, 3] = 1
    np.testing.assert_array_equal(to_numpy(lstm(x, gradient_cut=cut)), to_numpy(lstm(x)))
    got = gradient(lambda v: lstm(v, gradient_cut=cut)[:, 3:], x)
    assert not got[0, :3].any() and np.abs(got[1]).min() > 0 and np.abs(got[0, 3:]).min() > 0
    # from the cut on: the gradient of a run that starts from the state as a constant
    _, h, c = (to_numpy(t) for t in lstm(x[:1, :3], return_state=True))
    constant_state = gradient(lambda v: lstm(v, initial_state=(h, c)), x[:1, 3:])
    np.testing.assert_allclose(got[0, 3:], constant_state[0], atol=1e-6)


# ---- AR / TAR and concat pooling -------------------------------------------------------------
def test_activation_regularization_equals_its_formulas_by_hand():
    dropped = np.array([[[1.0, 0.0], [2.0, 2.0], [9.0, 9.0]]], "float32")   # last step: padding
    raw = np.array([[[1.0, 1.0], [3.0, -1.0], [7.0, 7.0]]], "float32")
    mask = np.array([[1, 1, 0]])
    ar, tar = ActivationRegularization(alpha=2.0, beta=1.0).penalties(dropped, raw, mask)
    # AR: 2 · (1 + 0 + 4 + 4) / 4 = 4.5; TAR: one pair, ((3-1)² + (-1-1)²) / 2 = 4
    assert float(to_numpy(ar)) == pytest.approx(4.5) and float(to_numpy(tar)) == pytest.approx(4.0)
    layer = ActivationRegularization(alpha=2.0, beta=1.0)
    assert to_numpy(layer(dropped, raw, mask, training=True)).tolist() == dropped.tolist()
    assert len(layer.losses) == 1 and float(to_numpy(layer.losses[0])) == pytest.approx(8.5)
    layer(dropped, raw, mask, training=False)
    assert not layer.losses


def test_concat_pooling_by_hand():
    hidden = np.array([[[1.0, -5.0], [3.0, 0.0], [2.0, 4.0], [9.0, 9.0]]], "float32")
    mask = np.array([[1, 1, 1, 0]])
    got = to_numpy(ConcatPooling()(hidden, mask))
    assert np.allclose(got, [[2.0, 4.0, 3.0, 4.0, 2.0, -1.0 / 3]])   # h_T, max, mean
    pool = np.array([[0, 1, 1, 0]])                            # pool over steps 1-2 only
    assert np.allclose(to_numpy(ConcatPooling()(hidden, mask, pool)),
                       [[2.0, 4.0, 3.0, 4.0, 2.5, 2.0]])
