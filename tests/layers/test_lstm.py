"""ProjectedLSTM against torch.nn.LSTM(proj_size=...) and its masking/reversal contract; the
character CNN's highway convention and conv → max → activation order.

torch's LSTM with a projection computes the same cell as TensorFlow's LSTMCell(num_proj) without
clipping; its gate order is (i, f, g, o) where TensorFlow's is (i, j, f, o), and TensorFlow adds
the forget bias 1.0 at run time. The clipped cell is checked against the original's outputs in
tests/models/elmo/test_convert.py.
"""

import keras
import numpy as np
import pytest
import torch

from keras_bert_lab.models.elmo.char_cnn import CharacterCNN, Highway
from keras_bert_lab.layers.lstm import ProjectedLSTM, bidirectional_lstm, reverse_within_length
from tests.conftest import to_numpy

D, U, P = 5, 8, 3
RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 7, D)).astype("float32")
MASK = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5])


def built(**kwargs):
    lstm = ProjectedLSTM(U, projection_dim=P, **kwargs)
    lstm.build((None, None, D))
    lstm.kernel.assign(RNG.normal(scale=0.5, size=(D + P, 4 * U)).astype("float32"))
    lstm.bias.assign(RNG.normal(scale=0.5, size=(4 * U,)).astype("float32"))
    lstm.projection.assign(RNG.normal(scale=0.5, size=(U, P)).astype("float32"))
    return lstm


def torch_reference(lstm, x, initial_state=None):
    """torch.nn.LSTM(proj_size) with the layer's weights, gates reordered (i,j,f,o)->(i,f,g,o)."""
    kernel, bias, projection = (to_numpy(v) for v in (lstm.kernel, lstm.bias, lstm.projection))
    order = lambda w: np.concatenate([w[..., :U], w[..., 2 * U:3 * U], w[..., U:2 * U],  # noqa
                                      w[..., 3 * U:]], axis=-1)
    bias = bias.copy()
    bias[2 * U:3 * U] += 1.0  # TensorFlow's forget bias, added at run time
    ref = torch.nn.LSTM(D, U, proj_size=P, batch_first=True)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(torch.tensor(order(kernel[:D]).T))
        ref.weight_hh_l0.copy_(torch.tensor(order(kernel[D:]).T))
        ref.bias_ih_l0.copy_(torch.tensor(order(bias)))
        ref.bias_hh_l0.zero_()
        ref.weight_hr_l0.copy_(torch.tensor(projection.T))
        state = None if initial_state is None else tuple(
            torch.tensor(s)[None] for s in initial_state)
        out, (h, c) = ref(torch.tensor(x), state)
    return out.numpy(), h[0].numpy(), c[0].numpy()


def test_equals_torch_lstm_with_projection_and_masks_padding():
    lstm = built()
    out, h, c = (to_numpy(t) for t in lstm(X, padding_mask=MASK, return_state=True))
    for b, length in enumerate(MASK.sum(1)):
        ref_out, ref_h, ref_c = torch_reference(lstm, X[b:b + 1, :length])
        np.testing.assert_allclose(out[b, :length], ref_out[0], atol=1e-5)
        np.testing.assert_allclose(h[b], ref_h[0], atol=1e-5)   # the state after the last real step
        np.testing.assert_allclose(c[b], ref_c[0], atol=1e-5)
        assert not out[b, length:].any()                       # padded steps output zeros


def test_initial_state_is_used():
    lstm = built()
    h0 = RNG.normal(size=(3, P)).astype("float32")
    c0 = RNG.normal(size=(3, U)).astype("float32")
    out = to_numpy(lstm(X, initial_state=(h0, c0)))
    np.testing.assert_allclose(out, torch_reference(lstm, X, (h0, c0))[0], atol=1e-5)


def test_go_backwards_reverses_within_each_length():
    lstm = built(go_backwards=True)
    out, h, _ = (to_numpy(t) for t in lstm(X, padding_mask=MASK, return_state=True))
    for b, length in enumerate(MASK.sum(1)):
        ref_out, ref_h, _ = torch_reference(lstm, X[b:b + 1, :length][:, ::-1].copy())
        np.testing.assert_allclose(out[b, :length], ref_out[0, ::-1], atol=1e-5)
        np.testing.assert_allclose(h[b], ref_h[0], atol=1e-5)   # the state after the first step
        assert not out[b, length:].any()


def test_reverse_within_length_keeps_padding_in_place():
    x = np.arange(12, dtype="float32").reshape(2, 6)[..., None]
    got = to_numpy(reverse_within_length(x, np.array([[1] * 6, [1] * 4 + [0] * 2])))[..., 0]
    assert got.tolist() == [[5, 4, 3, 2, 1, 0], [9, 8, 7, 6, 10, 11]]


def test_clipping_bounds_the_cell_and_the_output():
    lstm = built(cell_clip=0.2, projection_clip=0.05)
    out, h, c = (to_numpy(t) for t in lstm(X * 10, return_state=True))
    assert np.abs(out).max() == pytest.approx(0.05) and np.abs(c).max() <= 0.2 + 1e-7
    unclipped = to_numpy(built()(X * 10))
    assert np.abs(unclipped).max() > 0.05


def test_config_round_trip_and_gradients():
    lstm = built(cell_clip=3.0, projection_clip=3.0, go_backwards=True)
    clone = ProjectedLSTM.from_config(lstm.get_config())
    assert clone.get_config() == lstm.get_config()
    inputs = keras.Input((None, D))
    model = keras.Model(inputs, ProjectedLSTM(U, projection_dim=P)(inputs))
    model.compile("sgd", "mse")
    before = [to_numpy(w).copy() for w in model.weights]
    model.fit(X, np.ones((3, 7, P), "float32"), epochs=2, verbose=0)
    assert all(np.abs(to_numpy(w) - b).max() > 0 for w, b in zip(model.weights, before))


@pytest.mark.parametrize("return_sequences", [True, False])
def test_bidirectional_lstm_equals_keras_bidirectional(return_sequences):
    x = keras.Input((None, D))
    mask = keras.Input((None,), dtype="bool")
    ours = keras.Model([x, mask], bidirectional_lstm(x, 5, mask, "bi", return_sequences))
    wrapped = keras.layers.Bidirectional(keras.layers.LSTM(5, return_sequences=return_sequences))
    theirs = keras.Model([x, mask], wrapped(x, mask=mask))
    rng = np.random.default_rng(3)
    for layer, twin in ((ours.get_layer("bi_forward"), wrapped.forward_layer),
                        (ours.get_layer("bi_backward"), wrapped.backward_layer)):
        values = [rng.normal(size=w.shape) for w in layer.weights]
        layer.set_weights(values)
        twin.set_weights(values)
    padding = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] * 2 + [0] * 5], bool)
    got, want = (to_numpy(m.predict([X, padding], verbose=0)) for m in (ours, theirs))
    assert got.shape == want.shape == ((3, 7, 10) if return_sequences else (3, 10))
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_highway_gate_weights_the_transform():
    """bilm-tf: g = σ(x W_carry + b_carry), y = g relu(x W_transform + b_transform) + (1 − g) x."""
    layer = Highway()
    x = RNG.normal(size=(4, 6)).astype("float32")
    layer.build(x.shape)
    values = [RNG.normal(size=tuple(w.shape)).astype("float32") for w in layer.weights]
    for w, v in zip(layer.weights, values):
        w.assign(v)
    wg, bg, wt, bt = (values[i] for i in range(4))  # gate_kernel, gate_bias, transform_*
    g = 1 / (1 + np.exp(-(x @ wg + bg)))
    expected = g * np.maximum(x @ wt + bt, 0) + (1 - g) * x
    np.testing.assert_allclose(to_numpy(layer(x)), expected, atol=1e-5)
    assert [w.path.split("/")[-1] for w in layer.weights] == [
        "gate_kernel", "gate_bias", "transform_kernel", "transform_bias"]


def test_character_cnn_max_pools_then_activates():
    cnn = CharacterCNN([(2, 3)], num_highway=0, output_dim=2, character_dim=4,
                       activation="tanh")
    ids = RNG.integers(0, 262, size=(2, 3, 50))
    out = to_numpy(cnn(ids))
    table = to_numpy(cnn.character_embedding.embeddings)
    kernel, bias = (to_numpy(w) for w in cnn.convolutions[0].weights)
    emb = table[ids]                                                  # (2, 3, 50, 4)
    conv = np.einsum("btcwe,weo->btco", np.stack([emb[:, :, :-1], emb[:, :, 1:]], 3),
                     kernel) + bias                                   # (2, 3, 49, 3)
    features = np.tanh(conv.max(2))
    dense_kernel, dense_bias = (to_numpy(w) for w in cnn.projection.weights)
    np.testing.assert_allclose(out, features @ dense_kernel + dense_bias, atol=1e-5)
    assert CharacterCNN.from_config(cnn.get_config()).get_config() == cnn.get_config()
