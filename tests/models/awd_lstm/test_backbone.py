"""AwdLstmBackbone and its config: parity with stacked torch.nn.LSTMs, the parameter count, the
stateful mode, serialisation and input checks."""

import keras
import numpy as np
import pytest
import torch

from keras_bert_lab.errors import ConfigError, InputError
from keras_bert_lab.models.awd_lstm.backbone import (AwdLstmBackbone, kernel_to_torch_lstm, reset_states,
                                            torch_lstm_to_kernel)
from keras_bert_lab.models.awd_lstm.config import AwdLstmConfig
from tests.conftest import to_numpy

# three layers (E → H → H → E) and every dropout on: all must vanish at inference
CONFIG = AwdLstmConfig.from_size("tiny", vocabulary_size=40, num_layers=3)
IDS = np.random.default_rng(0).integers(1, 40, size=(3, 9)).astype("int32")
MASK = np.array([[1] * 9, [1] * 6 + [0] * 3, [1] * 2 + [0] * 7], "int32")


@pytest.fixture(scope="module")
def torch_copy():
    """The tiny backbone and a torch embedding + stacked torch.nn.LSTMs holding its weights."""
    torch.manual_seed(0)
    backbone = AwdLstmBackbone(CONFIG)
    embedding = torch.nn.Embedding(CONFIG.vocabulary_size, CONFIG.embedding_dim)
    lstms = [torch.nn.LSTM(d, u, batch_first=True) for d, u in CONFIG.layer_dims()]
    backbone.token_embedding.embeddings.assign(embedding.weight.detach().numpy())
    for layer, ref in zip(backbone.lstm_layers, lstms):
        kernel, bias = torch_lstm_to_kernel(*(p.detach().numpy() for p in (
            ref.weight_ih_l0, ref.weight_hh_l0, ref.bias_ih_l0, ref.bias_hh_l0)))
        layer.kernel.assign(kernel)
        layer.bias.assign(bias)
    return backbone, embedding, lstms


def torch_states(embedding, lstms, ids):
    with torch.no_grad():
        x = embedding(torch.tensor(ids, dtype=torch.long))
        states = [x.numpy()]
        for lstm in lstms:
            x = lstm(x)[0]
            states.append(x.numpy())
    return states


def test_inference_equals_stacked_torch_lstms(torch_copy):
    """Gate order mapped (i, f, g, o) → (i, j, f, o), the two torch biases summed: each row,
    run alone through torch, matches the padded batch to 1e-5 at every layer."""
    backbone, embedding, lstms = torch_copy
    out = backbone.predict_on_batch({"token_ids": IDS, "padding_mask": MASK})
    assert len(out["hidden_states"]) == CONFIG.num_layers + 1
    for row, length in enumerate(MASK.sum(1)):
        expected = torch_states(embedding, lstms, IDS[row:row + 1, :length])
        for got, ref in zip(out["hidden_states"], expected):
            assert np.abs(got[row, :length] - ref[0]).max() <= 1e-5
            assert not got[row, length:].any()                 # padding: zeros
    np.testing.assert_array_equal(out["sequence_output"], out["hidden_states"][-1])


def test_torch_weight_conversion_round_trips(torch_copy):
    backbone, _, lstms = torch_copy
    layer, ref = backbone.lstm_layers[1], lstms[1]
    back = kernel_to_torch_lstm(to_numpy(layer.kernel), to_numpy(layer.bias), CONFIG.hidden_dim)
    np.testing.assert_array_equal(back["weight_ih_l0"], ref.weight_ih_l0.detach().numpy())
    np.testing.assert_array_equal(back["weight_hh_l0"], ref.weight_hh_l0.detach().numpy())
    np.testing.assert_allclose(back["bias_ih_l0"] + back["bias_hh_l0"],
                               (ref.bias_ih_l0 + ref.bias_hh_l0).detach().numpy(), atol=1e-7)
    with pytest.raises(InputError, match="weight_ih"):
        torch_lstm_to_kernel(np.zeros((8, 3)), np.zeros((8, 3)))


# ---- config ---------------------------------------------------------------------------------
def independent_count(config):
    """Parameters from torch modules of the same shapes, less the second LSTM bias we fold."""
    count = config.vocabulary_size * config.embedding_dim
    for d, u in config.layer_dims():
        count += sum(p.numel() for p in torch.nn.LSTM(d, u).parameters()) - 4 * u
    return count


def test_num_parameters_matches_an_independent_count_and_the_model():
    for size in ("tiny", "mini", "small", "medium"):
        config = AwdLstmConfig.from_size(size, vocabulary_size=100)
        assert config.num_parameters() == independent_count(config), size
    assert AwdLstmBackbone(CONFIG).count_params() == CONFIG.num_parameters()


@pytest.mark.parametrize("vocab, millions", [(10000, 24), (33278, 33)])
def test_paper_size_has_the_published_parameter_counts(vocab, millions):
    """Merity et al. Tables 1-2: 24M parameters on the PTB, 33M on WikiText-2 (24.2M and 33.5M,
    whole millions as the tables give them)."""
    config = AwdLstmConfig.from_size("paper", vocabulary_size=vocab)
    assert int(config.num_parameters() / 1e6) == millions
    assert config.num_parameters() == independent_count(config)
    assert config.layer_dims() == [(400, 1150), (1150, 1150), (1150, 400)]


def test_defaults_and_dropout_sets():
    default = AwdLstmConfig()
    assert (default.embedding_dim, default.hidden_dim, default.num_layers) == (400, 1150, 3)
    assert (default.embedding_dropout, default.input_dropout, default.hidden_dropout,
            default.output_dropout, default.weight_dropout) == (0.1, 0.65, 0.3, 0.4, 0.5)
    fastai = default.with_dropouts("fastai_lm", drop_mult=0.3)
    assert fastai.input_dropout == pytest.approx(0.075) and fastai.weight_dropout == 0.06
    assert AwdLstmConfig.from_dict(fastai.to_dict()) == fastai
    assert AwdLstmConfig.from_size("medium").num_layers == 3
    assert AwdLstmConfig.from_size("mini").layer_dims() == [(128, 384), (384, 384), (384, 128)]


@pytest.mark.parametrize("fields, message", [
    ({"num_layers": 0}, "num_layers must be a positive integer"),
    ({"weight_dropout": 1.0}, r"weight_dropout must be in \[0, 1\)"),
    ({"hidden": 3}, "Unknown AwdLstmConfig field"),
])
def test_config_errors_name_the_field(fields, message):
    with pytest.raises(ConfigError, match=message):
        AwdLstmConfig.from_dict({**CONFIG.to_dict(), **fields})
    with pytest.raises(ConfigError, match="choose one of"):
        CONFIG.with_dropouts("merity")


# ---- stateful mode, groups, serialisation ----------------------------------------------------
def test_two_stateful_windows_equal_one_window(torch_copy):
    backbone = torch_copy[0]
    ids = np.random.default_rng(1).integers(0, 40, size=(2, 12)).astype("int32")
    ones = np.ones_like(ids)
    whole = backbone.predict_on_batch({"token_ids": ids, "padding_mask": ones})
    stateful = backbone.stateful_model(batch_size=2)
    parts = [stateful.predict_on_batch({"token_ids": ids[:, a:b], "padding_mask": ones[:, a:b]})
             for a, b in ((0, 6), (6, 12))]
    for i, layer in enumerate(whole["hidden_states"]):
        joined = np.concatenate([p["hidden_states"][i] for p in parts], axis=1)
        np.testing.assert_allclose(joined, layer, atol=1e-5)
    reset_states(stateful)                                        # a fresh start: no carry
    again = stateful.predict_on_batch({"token_ids": ids[:, :6], "padding_mask": ones[:, :6]})
    np.testing.assert_allclose(again["sequence_output"], parts[0]["sequence_output"], atol=1e-6)
    assert stateful.count_params() == backbone.count_params()    # states are not weights
    with pytest.raises(InputError, match="batch_size=2"):
        stateful({"token_ids": ids[:1], "padding_mask": ones[:1]})


def test_layer_groups_are_the_embedding_then_each_lstm():
    backbone = AwdLstmBackbone(CONFIG)
    groups = backbone.layer_groups()
    assert [[layer.name for layer in g] for g in groups] == [
        ["token_embedding"], ["lstm_0"], ["lstm_1"], ["lstm_2"]]
    listed = [w.path for g in groups for layer in g for w in layer.weights]
    assert sorted(listed) == sorted(w.path for w in backbone.weights)


def test_keras_and_preset_round_trips_keep_outputs(tmp_path):
    backbone = AwdLstmBackbone(AwdLstmConfig.from_size("tiny", vocabulary_size=40, num_layers=1))
    x = {"token_ids": IDS, "padding_mask": MASK}
    expected = backbone.predict_on_batch(x)["hidden_states"]
    backbone.save(tmp_path / "awd.keras")
    loaded = keras.saving.load_model(tmp_path / "awd.keras")
    preset = backbone.save_to_preset(tmp_path / "preset",
                                     vocabulary=[f"w{i}" for i in range(CONFIG.vocabulary_size)])
    for model in (loaded, AwdLstmBackbone.from_preset(preset)):
        assert isinstance(model, AwdLstmBackbone) and model.config == backbone.config
        for got, want in zip(model.predict_on_batch(x)["hidden_states"], expected):
            np.testing.assert_array_equal(got, want)


def test_input_checks():
    backbone = AwdLstmBackbone(AwdLstmConfig.from_size("tiny", vocabulary_size=10))
    ids, mask = np.array([[1, 2]]), np.array([[1, 1]])
    with pytest.raises(InputError, match="takes a dict"):
        backbone(ids)
    with pytest.raises(InputError, match="integer ids"):
        backbone({"token_ids": ids.astype("float32"), "padding_mask": mask})
    with pytest.raises(InputError, match=r"id 10 outside \[0, 10\)"):
        backbone({"token_ids": ids * 5, "padding_mask": mask})
    with pytest.raises(InputError, match="disagree in shape"):
        backbone({"token_ids": ids, "padding_mask": np.ones((1, 3))})
