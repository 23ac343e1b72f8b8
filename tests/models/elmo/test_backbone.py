"""ElmoBackbone, its config and the ElmoLanguageModel task: outputs, masking, training, serialisation.

Parity with the original's activations is in tests/models/elmo/test_convert.py.
"""

import json

import keras
import numpy as np
import pytest

from keras_bert_lab.data import registry
from keras_bert_lab.errors import ConfigError, InputError
from keras_bert_lab.models.elmo.backbone import ElmoBackbone
from keras_bert_lab.models.elmo.config import ElmoConfig
from keras_bert_lab.models.elmo.language_model import ElmoLanguageModel, language_model_targets
from tests.conftest import locate_or_skip, to_numpy

TINY = ElmoConfig.from_size("tiny")


def fixture_ids(lengths=(6, 3, 1), length=8, seed=0):
    """Random character ids of tokens (begin-of-word, bytes, end-of-word, padding), 0 past each
    row's length."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((len(lengths), length, 50), "int32")
    for b, n in enumerate(lengths):
        for t in range(n):
            size = rng.integers(1, 10)
            ids[b, t] = 261
            ids[b, t, 0], ids[b, t, size + 1] = 259, 260
            ids[b, t, 1:size + 1] = rng.integers(98, 123, size=size)
    return ids


# ---- config -----------------------------------------------------------------------------------
def test_tiny_is_the_fixture_architecture_and_counts_its_weights():
    options = json.loads(locate_or_skip("elmo_fixture", "options").read_text())
    assert ElmoConfig.from_options(options) == TINY
    import h5py

    with h5py.File(registry.locate("elmo_fixture", "weights"), "r") as f:
        sizes = []
        f.visititems(lambda _, item: sizes.append(item.size) if isinstance(item, h5py.Dataset)
                     else None)
    # the file's tensors + the padding row the +1-shifted character ids need
    assert TINY.num_parameters() == sum(sizes) + TINY.character_dim
    assert ElmoBackbone(TINY).count_params() == TINY.num_parameters()


@pytest.mark.parametrize("size, millions", [("small", 13.6), ("medium", 28.0), ("original", 93.6)])
def test_named_sizes_have_the_published_parameter_counts(size, millions):
    """allennlp's ELMo page: small 13.6M, medium 28.0M, original (and 5.5B) 93.6M."""
    assert round(ElmoConfig.from_size(size).num_parameters() / 1e6, 1) == millions


def test_mini_size_counts_its_weights():
    """mini: filters (1,32) (2,32) (3,64) (4,128) (5,256) = 512, 16-dim characters, 1 highway,
    512 cells projected to 128, 2 layers per direction — counted by hand."""
    characters = 262 * 16                                                  # 4,192
    convolutions = 16 * (1 * 32 + 2 * 32 + 3 * 64 + 4 * 128 + 5 * 256) + 512  # 33,792
    highway = 2 * (512 * 512 + 512)                                       # 525,312
    projection = 512 * 128 + 128                                          # 65,664
    lstm = (128 + 128) * 4 * 512 + 4 * 512 + 512 * 128                    # 591,872 each
    assert characters + convolutions + highway + projection + 4 * lstm == 2_996_448
    assert ElmoConfig.from_size("mini").num_parameters() == 2_996_448
    assert ElmoBackbone("mini").count_params() == 2_996_448


def test_num_parameters_matches_the_model_with_softmax_and_dropout():
    config = ElmoConfig.from_size("tiny", vocabulary_size=30, dropout=0.1, num_layers=3)
    model = ElmoLanguageModel(ElmoBackbone(config))
    assert model.count_params() == config.num_parameters(softmax=True)


@pytest.mark.parametrize("fields, message", [
    ({"activation": "gelu"}, "activation must be one of"),
    ({"filters": [(51, 4)]}, "width 51"),
    ({"cell_clip": -1}, "cell_clip must be > 0 or None"),
    ({"num_layers": 0}, "num_layers must be a positive integer"),
    ({"hidden": 3}, "Unknown ElmoConfig field"),
])
def test_config_errors_name_the_field(fields, message):
    with pytest.raises(ConfigError, match=message):
        ElmoConfig.from_dict({**TINY.to_dict(), **fields})


def test_options_errors_name_the_option():
    options = TINY.to_options()
    with pytest.raises(ConfigError, match="lacks lstm.projection_dim"):
        ElmoConfig.from_options({**options, "lstm": {"dim": 4, "n_layers": 1}})
    with pytest.raises(ConfigError, match=r"unknown char_cnn option\(s\) \['kernel'\]"):
        ElmoConfig.from_options({**options, "char_cnn": {**options["char_cnn"], "kernel": 1}})
    with pytest.raises(ConfigError, match="no 'char_cnn' section"):
        ElmoConfig.from_options({"lstm": options["lstm"]})
    # a training run's options: settings ignored, the softmax vocabulary read
    run = {**options, "n_tokens_vocab": 793471, "batch_size": 128, "n_epochs": 10}
    assert ElmoConfig.from_options(run).vocabulary_size == 793471


# ---- backbone -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bilm():
    """One tiny biLM for the tests below: its compiled predict function is reused."""
    return ElmoBackbone(TINY)


def test_outputs_layout_and_padding_invariance(bilm):
    ids = fixture_ids()
    out = bilm.predict_on_batch({"character_ids": ids})
    assert len(out["hidden_states"]) == 3 and len(out["forward"]) == len(out["backward"]) == 2
    assert out["token_embeddings"].shape == (3, 8, 16)
    assert all(h.shape == (3, 8, 32) for h in out["hidden_states"])
    assert out["padding_mask"].tolist()[1] == [1, 1, 1, 0, 0, 0, 0, 0]
    tokens = out["token_embeddings"]
    np.testing.assert_array_equal(out["hidden_states"][0], np.concatenate([tokens, tokens], -1))
    for i in (0, 1):
        np.testing.assert_array_equal(out["hidden_states"][i + 1],
                                      np.concatenate([out["forward"][i], out["backward"][i]], -1))
    assert not any(h[1, 3:].any() for h in out["hidden_states"])  # zero at padding
    # a padded row alone, unpadded, gives what it gets inside the batch (both directions)
    alone = bilm.predict_on_batch({"character_ids": ids[1:2, :3]})
    for got, ref in zip(alone["hidden_states"], out["hidden_states"]):
        np.testing.assert_allclose(got[0], ref[1, :3], atol=1e-5)


def test_backward_direction_reads_right_to_left(bilm):
    """Changing the last token moves forward states only there, backward states everywhere."""
    ids = fixture_ids()
    changed = ids.copy()
    changed[0, 5] = fixture_ids(seed=1)[0, 0]
    a, b = (bilm.predict_on_batch({"character_ids": x}) for x in (ids, changed))
    for i in range(2):
        np.testing.assert_allclose(a["forward"][i][0, :5], b["forward"][i][0, :5], atol=1e-6)
        assert np.abs(a["backward"][i][0, :5] - b["backward"][i][0, :5]).max() > 1e-4


def test_stateful_model_carries_states_between_batches(bilm):
    stateful = bilm.stateful_model()
    ids = fixture_ids()
    zeros = np.zeros((3, bilm.state_size), "float32")
    first = stateful.predict_on_batch({"character_ids": ids, "states": zeros})
    plain = bilm.predict_on_batch({"character_ids": ids})
    for got, ref in zip(first["hidden_states"], plain["hidden_states"]):
        np.testing.assert_allclose(got, ref, atol=1e-6)   # zero states = the plain backbone
    assert first["states"].shape == (3, 2 * 2 * (16 + 64))
    second = stateful.predict_on_batch({"character_ids": ids, "states": first["states"]})
    assert np.abs(second["hidden_states"][2] - first["hidden_states"][2]).max() > 1e-3


def test_input_checks(bilm):
    with pytest.raises(InputError, match="integer character ids"):
        bilm(np.zeros((1, 2, 50), "float32"))
    with pytest.raises(InputError, match=r"must be \(batch, tokens, 50\)"):
        bilm(np.zeros((1, 2, 40), "int32"))
    with pytest.raises(InputError, match="outside \\[0, 262\\)"):
        bilm(np.full((1, 2, 50), 262, "int32"))
    with pytest.raises(InputError, match="takes 'character_ids'"):
        bilm({"token_ids": np.zeros((1, 2, 50), "int32")})


def assert_same_weights(a, b):
    assert [w.path for w in a.weights] == [w.path for w in b.weights]
    for x, y in zip(a.weights, b.weights):
        np.testing.assert_array_equal(to_numpy(x), to_numpy(y), err_msg=x.path)


def test_keras_round_trip(tmp_path):
    bilm = ElmoBackbone(ElmoConfig.from_size("tiny", dropout=0.1))
    path = tmp_path / "elmo.keras"
    bilm.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, ElmoBackbone) and loaded.config == bilm.config
    assert_same_weights(loaded, bilm)  # same config, same constructor, same weights


# ---- language model task --------------------------------------------------------------------
def lm_batch(vocabulary_size=40, seed=0):
    ids = fixture_ids(lengths=(8, 5, 3, 6), seed=seed)
    mask = ids.any(-1).astype("int32")
    token_ids = np.random.default_rng(seed).integers(0, vocabulary_size, size=mask.shape) * mask
    y, weights = language_model_targets(token_ids, mask)
    return ids, y, weights


def test_targets_shift_each_direction():
    y, w = language_model_targets(np.array([[4, 5, 6, 0]]), np.array([[1, 1, 1, 0]]))
    assert y["forward"].tolist() == [[5, 6, 0, 0]] and w["forward"].tolist() == [[1, 1, 0, 0]]
    assert y["backward"].tolist() == [[0, 4, 5, 6]] and w["backward"].tolist() == [[0, 1, 1, 0]]


def test_language_model_fits():
    # one LSTM layer per direction: the training step's compilation is the slow part of this test
    config = ElmoConfig.from_size("tiny", vocabulary_size=40, dropout=0.1, num_layers=1)
    model = ElmoLanguageModel(ElmoBackbone(config))
    ids, y, weights = lm_batch()
    assert {k: (tuple(v.shape), v.dtype) for k, v in model.output.items()} == {
        d: ((None, None, 40), "float32") for d in ("forward", "backward")}
    model.compile()
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    history = model.fit(ids, y, sample_weight=weights, epochs=4, batch_size=4, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    # each direction's mean cross-entropy over its weighted positions, the two averaged: near
    # log V at initialisation
    assert abs(losses[0] - np.log(40)) < 1.0
    assert all(np.abs(to_numpy(w) - b).max() > 0 for w, b in zip(model.trainable_weights, before))


def test_language_model_saves_and_loads(tmp_path):
    model = ElmoLanguageModel(ElmoBackbone(ElmoConfig.from_size("tiny", vocabulary_size=40)))
    path = tmp_path / "lm.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, ElmoLanguageModel) and loaded.backbone.config == model.backbone.config
    assert_same_weights(loaded, model)
    # presets: the vocabulary is the softmax's
    preset = model.save_to_preset(tmp_path / "preset", vocabulary=[f"w{i}" for i in range(40)])
    assert_same_weights(ElmoLanguageModel.from_preset(preset), model)
    assert_same_weights(ElmoBackbone.from_preset(preset), model.backbone)


def test_language_model_preset_loads_under_the_other_backends(tmp_path):
    """A (sampled-softmax) biLM preset written here gives the same logits and every hidden
    state under the other two backends."""
    from tests.tasks.helpers import check_presets_in_other_backends

    model = ElmoLanguageModel(ElmoBackbone(ElmoConfig.from_size("tiny", vocabulary_size=40)),
                              num_sampled=8, seed=5)
    preset = model.save_to_preset(tmp_path / "preset", vocabulary=[f"w{i}" for i in range(40)])
    ids = {"character_ids": fixture_ids()}
    check_presets_in_other_backends([(model, preset, ids), (model.backbone, preset, ids)],
                                    tmp_path)
    assert ElmoLanguageModel.from_preset(preset).num_sampled == 8


def test_language_model_needs_a_vocabulary():
    with pytest.raises(ConfigError, match="needs a word vocabulary"):
        ElmoLanguageModel(ElmoBackbone(TINY))


# ---- sampled softmax --------------------------------------------------------------------------
def test_sampled_logits_equal_their_formula():
    """Target and sample logits minus log(S · P(k)) with P the log-uniform distribution; a
    sample equal to the target masked out; labels all 0."""
    vocab = 40
    model = ElmoLanguageModel(ElmoBackbone(ElmoConfig.from_size("tiny", vocabulary_size=vocab,
                                                            num_layers=1)), num_sampled=5)
    rng = np.random.default_rng(0)
    model.softmax.kernel.assign(rng.normal(size=(16, vocab)).astype("float32"))
    model.softmax.bias.assign(rng.normal(size=vocab).astype("float32"))
    states = {d: rng.normal(size=(2, 3, 16)).astype("float32") for d in ("forward", "backward")}
    targets = {"forward": np.array([[0, 7, 39], [3, 3, 1]]), "backward": np.array([[2, 12, 2], [2, 2, 2]])}
    sampled = np.array([3, 0, 12, 3, 39])
    labels, logits = model.sampled_logits(states, targets, sampled)
    kernel, bias = to_numpy(model.softmax.kernel), to_numpy(model.softmax.bias)

    def log_count(k):
        return np.log(5 * np.log((k + 2.0) / (k + 1.0)) / np.log(vocab + 1.0))

    for d in ("forward", "backward"):
        y = targets[d]
        true = np.einsum("btp,pbt->bt", states[d], kernel[:, y]) + bias[y] - log_count(y)
        noise = states[d] @ kernel[:, sampled] + bias[sampled] - log_count(sampled)
        got = to_numpy(logits[d])
        np.testing.assert_allclose(got[..., 0], true, rtol=1e-5, atol=1e-5)
        hits = y[..., None] == sampled
        np.testing.assert_allclose(got[..., 1:][~hits], noise[~hits], rtol=1e-5, atol=1e-5)
        assert (got[..., 1:][hits] <= -1e8).all() and hits.any()
        assert to_numpy(labels[d]).tolist() == [[0] * 3] * 2


def test_samples_follow_the_log_uniform_distribution():
    vocab = 1000
    model = ElmoLanguageModel(ElmoBackbone(ElmoConfig.from_size("tiny", vocabulary_size=vocab,
                                                            num_layers=1)), num_sampled=999,
                              seed=1)
    draws = np.concatenate([to_numpy(model.draw_samples()) for _ in range(40)])   # 39,960
    assert draws.min() >= 0 and draws.max() < vocab
    counts = np.bincount(draws, minlength=vocab)
    expected = np.log((np.arange(vocab) + 2.0) / (np.arange(vocab) + 1.0)) / np.log(vocab + 1.0)
    for lo, hi in ((0, 1), (1, 2), (2, 5), (5, 20), (20, 100), (100, 1000)):
        share, want = counts[lo:hi].sum() / len(draws), expected[lo:hi].sum()
        assert abs(share - want) < 4 * np.sqrt(want / len(draws)) + 1e-3, (lo, hi, share, want)


def test_sampled_softmax_trains_and_evaluates_the_full_softmax(tmp_path):
    config = ElmoConfig.from_size("tiny", vocabulary_size=40, num_layers=1)
    model = ElmoLanguageModel(ElmoBackbone(config), num_sampled=12, seed=3)
    ids, y, weights = lm_batch()
    states = model(ids, training=True)            # fit's call: the top states, no (B, T, V)
    assert {d: tuple(s.shape) for d, s in states.items()} == {
        d: (4, 8, 16) for d in ("forward", "backward")}
    model.compile()
    before = [to_numpy(w).copy() for w in model.trainable_weights]
    start = model.evaluate(ids, y, sample_weight=weights, verbose=0, return_dict=True)["loss"]
    losses = model.fit(ids, y, sample_weight=weights, epochs=15, batch_size=4,
                       verbose=0).history["loss"]
    assert np.isfinite(losses).all()
    assert all(np.abs(to_numpy(w) - b).max() > 0 for w, b in zip(model.trainable_weights, before))
    # evaluate is the full softmax's cross-entropy, computed here from predict's logits
    logits = model.predict(ids, verbose=0)
    full = []
    for d in ("forward", "backward"):
        z = logits[d].astype("float64")
        nll = np.log(np.exp(z).sum(-1)) - np.take_along_axis(z, y[d][..., None], -1)[..., 0]
        full.append((nll * weights[d]).sum() / weights[d].sum())
    evaluated = model.evaluate(ids, y, sample_weight=weights, verbose=0, return_dict=True)
    np.testing.assert_allclose(evaluated["loss"], np.mean(full), rtol=1e-4)
    assert evaluated["loss"] < start - 0.1, (start, evaluated)  # sampled updates, lower full loss
    # the sampler's seed and state travel with the model
    path = tmp_path / "lm.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.num_sampled == 12 and loaded.seed == 3
    assert_same_weights(loaded, model)


def test_sampled_softmax_needs_fewer_samples_than_words():
    with pytest.raises(ConfigError, match="num_sampled=40: sample between 1 and 39"):
        ElmoLanguageModel(ElmoBackbone(ElmoConfig.from_size("tiny", vocabulary_size=40)), num_sampled=40)
