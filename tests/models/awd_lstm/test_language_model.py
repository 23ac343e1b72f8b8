"""AwdLstmLanguageModel: the tied decoder, AR/TAR against their formulas, stateful truncated
BPTT inside fit, perplexity, layer groups and serialisation."""

import keras
import numpy as np
import pytest

from keras_bert_lab.models.awd_lstm.backbone import AwdLstmBackbone
from keras_bert_lab.models.awd_lstm.config import AwdLstmConfig
from keras_bert_lab.models.awd_lstm.language_model import AwdLstmLanguageModel
from keras_bert_lab.pipelines.language_model import next_token_batch
from tests.conftest import to_numpy

V = 40
# one LSTM layer (E → E) keeps compilation short; the backbone's tests cover deeper stacks
CONFIG = AwdLstmConfig.from_size("tiny", vocabulary_size=V, num_layers=1)
NO_DROPOUT = CONFIG.with_dropouts("awd_lstm", 0.0)
RNG = np.random.default_rng(0)


def padded_batch(lengths=(9, 6, 3), width=9, seed=0):
    rows = np.random.default_rng(seed).integers(0, V, size=(len(lengths), width + 1))
    mask = (np.arange(width + 1) < np.array(lengths)[:, None] + 1).astype("int32")
    return next_token_batch((rows * mask).astype("int32"), mask)


def with_random_bias(model):
    model.decoder.bias.assign(RNG.normal(size=(V,)).astype("float32"))
    return model


def tied_logits(backbone, model, x):
    """Logits from the backbone's exposed output through the table and the decoder's bias."""
    hidden = backbone.predict_on_batch(x)["sequence_output"]
    return hidden @ to_numpy(backbone.token_embedding.embeddings).T + to_numpy(model.decoder.bias)


def test_decoder_is_tied_to_the_embedding_and_counts_one_bias():
    backbone = AwdLstmBackbone(CONFIG)
    model = with_random_bias(AwdLstmLanguageModel(backbone))
    x, _, _ = padded_batch()
    np.testing.assert_allclose(model.predict_on_batch(x), tied_logits(backbone, model, x),
                               atol=1e-5)
    assert model.count_params() == CONFIG.num_parameters(decoder_bias=True)
    assert [w.path for w in model.weights if w.path.startswith("decoder")] == ["decoder/bias"]


def test_ar_and_tar_equal_their_formulas_on_the_exposed_outputs():
    """One training-mode call with every dropout on: the added loss is α·mean(dropped²) over
    real positions + β·mean((raw_t − raw_{t−1})²) over consecutive real pairs, computed in NumPy
    from the dropped and raw last-layer outputs of that same call."""
    model = AwdLstmLanguageModel(AwdLstmBackbone(CONFIG), alpha=2.0, beta=1.0)
    layer = model.regularization
    probe = keras.Model(model.inputs, {"dropped": layer.output, "raw": layer.input[1]})
    x, _, _ = padded_batch()
    out = keras.tree.map_structure(to_numpy, probe(x, training=True))
    (added,) = [float(to_numpy(v)) for v in probe.losses]
    mask = x["padding_mask"].astype(bool)
    dropped, raw = out["dropped"], out["raw"]
    assert np.abs(dropped - raw).max() > 1e-4                      # the output dropout acted
    ar = 2.0 * np.mean(dropped[mask] ** 2)
    pairs = mask[:, 1:] & mask[:, :-1]
    tar = 1.0 * np.mean((raw[:, 1:] - raw[:, :-1])[pairs] ** 2)
    assert added == pytest.approx(ar + tar, rel=1e-5)


def test_training_loss_is_cross_entropy_plus_ar_and_tar():
    backbone = AwdLstmBackbone(NO_DROPOUT)                 # no dropout: training = inference
    model = AwdLstmLanguageModel(backbone, alpha=2.0, beta=1.0)
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    x, y, w = padded_batch()
    logits = tied_logits(backbone, model, x)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, y[..., None], -1)[..., 0]
    cross_entropy = -(picked * w).sum() / w.sum()
    h = backbone.predict_on_batch(x)["hidden_states"][-1]
    mask = w.astype(bool)
    penalty = 2.0 * np.mean(h[mask] ** 2) + np.mean(
        (h[:, 1:] - h[:, :-1])[mask[:, 1:] & mask[:, :-1]] ** 2)
    got = model.train_on_batch(x, y, sample_weight=w, return_dict=True)
    assert got["loss"] == pytest.approx(cross_entropy + penalty, rel=1e-5)
    assert got["perplexity"] == pytest.approx(np.exp(cross_entropy), rel=1e-5)
    evaluated = model.evaluate(x, y, sample_weight=w, return_dict=True, verbose=0)
    assert evaluated["loss"] == pytest.approx(cross_entropy, rel=1e-5)   # no AR/TAR outside fit
    assert evaluated["perplexity"] == pytest.approx(np.exp(evaluated["loss"]), rel=1e-5)


def test_stateful_windows_equal_one_window():
    backbone = AwdLstmBackbone(CONFIG)
    model = with_random_bias(AwdLstmLanguageModel(backbone, stateful_batch_size=2))
    ids = RNG.integers(0, V, size=(2, 10)).astype("int32")
    ones = np.ones_like(ids)
    whole = tied_logits(backbone, model, {"token_ids": ids, "padding_mask": ones})
    parts = [model.predict_on_batch({"token_ids": ids[:, a:b], "padding_mask": ones[:, a:b]})
             for a, b in ((0, 5), (5, 10))]
    np.testing.assert_allclose(np.concatenate(parts, axis=1), whole, atol=1e-5)


def test_stateful_fit_carries_the_state_and_trains():
    model = AwdLstmLanguageModel(AwdLstmBackbone(CONFIG), stateful_batch_size=2)
    model.compile()
    rows = RNG.integers(0, V, size=(4, 9)).astype("int32")   # rows 0, 1 then their continuation
    x, y, w = next_token_batch(rows, np.ones_like(rows))
    states = [v for v in model.non_trainable_variables if v.path.endswith(("_state/h",
                                                                            "_state/c"))]
    assert len(states) == 2 * CONFIG.num_layers and not any(to_numpy(s).any() for s in states)
    before = [to_numpy(v).copy() for v in model.trainable_variables]
    history = model.fit(x, y, sample_weight=w, batch_size=2, epochs=2, shuffle=False,
                        verbose=0).history
    assert np.isfinite(history["loss"]).all() and np.isfinite(history["perplexity"]).all()
    assert all(np.abs(to_numpy(s)).max() > 0 for s in states)        # states were carried
    assert all(not np.array_equal(b, to_numpy(v))
               for b, v in zip(before, model.trainable_variables))
    carried = model.predict_on_batch({k: v[:2] for k, v in x.items()})
    model.reset_states()
    assert not any(to_numpy(s).any() for s in states)
    fresh = model.predict_on_batch({k: v[:2] for k, v in x.items()})
    assert np.abs(carried - fresh).max() > 1e-4


def test_layer_groups_put_the_tied_table_on_top_and_cover_every_weight_once():
    model = AwdLstmLanguageModel(AwdLstmBackbone(CONFIG), stateful_batch_size=2)
    groups = model.layer_groups()
    assert [[layer.name for layer in g] for g in groups] == [
        ["lstm_0"], ["token_embedding", "decoder"]]
    listed = [w.path for g in groups for layer in g for w in layer.weights]
    assert sorted(listed) == sorted(w.path for w in model.weights)


def test_keras_and_preset_round_trips(tmp_path):
    model = with_random_bias(AwdLstmLanguageModel(AwdLstmBackbone(CONFIG), alpha=1.5,
                                                  stateful_batch_size=3))
    x, _, _ = padded_batch()
    expected = model.predict_on_batch(x)
    model.reset_states()
    model.save(tmp_path / "lm.keras")
    loaded = keras.saving.load_model(tmp_path / "lm.keras")
    assert (loaded.alpha, loaded.stateful_batch_size) == (1.5, 3)
    np.testing.assert_array_equal(loaded.predict_on_batch(x), expected)
    preset = model.save_to_preset(tmp_path / "preset", vocabulary=[f"w{i}" for i in range(V)])
    plain = AwdLstmLanguageModel.from_preset(preset, stateful_batch_size=None)  # states: no weights
    np.testing.assert_array_equal(plain.predict_on_batch(x), expected)
    assert AwdLstmLanguageModel.from_preset(preset).stateful_batch_size == 3
