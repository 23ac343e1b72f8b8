"""ScalarMix against ELMo's equation in NumPy, with and without per-layer normalisation."""

import keras
import numpy as np
import pytest

from keras_bert_lab.layers.scalar_mix import ScalarMix
from tests.conftest import to_numpy


def reference(layers, w, gamma, mask=None):
    s = np.exp(w - w.max()) / np.exp(w - w.max()).sum()
    if mask is not None:
        normed = []
        for h in layers:
            out = np.empty_like(h)
            for b in range(len(h)):
                real = h[b][mask[b] > 0]
                out[b] = (h[b] - real.mean()) / np.sqrt(real.var() + 1e-12)
            normed.append(out)
        layers = normed
    return gamma * sum(sk * h for sk, h in zip(s, layers))


@pytest.mark.parametrize("layer_norm", [False, True])
def test_matches_the_equation(layer_norm):
    rng = np.random.default_rng(0)
    layers = [rng.normal(loc=k, scale=k + 1, size=(2, 5, 4)).astype("float32") for k in range(3)]
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "float32")
    mix = ScalarMix(layer_norm=layer_norm)
    mix.build([x.shape for x in layers])
    w = np.array([0.3, -1.0, 2.0], "float32")
    mix.scalars.assign(w)
    mix.gamma.assign(1.7)
    got = to_numpy(mix(layers, padding_mask=mask))
    want = reference(layers, w, 1.7, mask if layer_norm else None)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # padding does not move the statistics: changing padded values changes only padded outputs
    layers[0][0, 3:] = 1e3
    again = to_numpy(mix(layers, padding_mask=mask))
    if layer_norm:
        np.testing.assert_allclose(again[0, :3], got[0, :3], rtol=1e-5, atol=1e-5)


def test_weights_learn_and_serialise(tmp_path):
    rng = np.random.default_rng(1)
    layers = [keras.Input((4, 3)) for _ in range(3)]
    model = keras.Model(layers, ScalarMix(name="mix")(layers))
    x = [rng.normal(size=(16, 4, 3)).astype("float32") for _ in range(3)]
    model.compile(keras.optimizers.SGD(0.5), "mse")
    model.fit(x, x[2], epochs=30, verbose=0)    # target: the third layer alone
    weights = to_numpy(model.get_layer("mix").layer_weights())
    assert weights.argmax() == 2 and weights[2] > 0.6
    path = str(tmp_path / "mix.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(to_numpy(restored(x)), to_numpy(model(x)), atol=1e-6)


def test_only_gamma_trains_when_asked():
    mix = ScalarMix(trainable_weights_only_gamma=True)
    mix.build([(1, 2, 3)] * 4)
    assert [v.name for v in mix.trainable_weights] == ["gamma"]
