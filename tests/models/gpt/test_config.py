"""GPTConfig: named sizes, validation, and parameter counts against transformers' OpenAIGPT."""

import numpy as np
import pytest

from keras_bert_lab.layers.decoder import activation_function
from keras_bert_lab.models.gpt.backbone import GPTBackbone
from keras_bert_lab.models.gpt.config import SIZES, GPTConfig
from keras_bert_lab.models.gpt.convert import config_to_hf
from tests.conftest import to_numpy


@pytest.mark.parametrize("name", list(SIZES))
def test_named_sizes(name):
    config = GPTConfig.from_size(name)
    assert (config.num_layers, config.hidden_size, config.num_heads) == SIZES[name]
    assert config.intermediate_size == 4 * config.hidden_size
    assert (config.vocabulary_size, config.max_positions) == (40478, 512)
    assert (config.dropout, config.embedding_dropout, config.attention_dropout) == (0.1,) * 3
    assert config.layer_norm_epsilon == 1e-5 and config.activation == "gelu"


def test_base_is_the_paper_model():
    config = GPTConfig.from_size("base")
    assert config == GPTConfig()
    assert (config.num_layers, config.hidden_size, config.num_heads,
            config.intermediate_size) == (12, 768, 12, 3072)


@pytest.mark.parametrize("name, vocabulary_size", [("mini", 1000)])
def test_parameter_count_of_built_model(name, vocabulary_size):
    config = GPTConfig.from_size(name, vocabulary_size=vocabulary_size)
    assert GPTBackbone(config).count_params() == config.num_parameters()


@pytest.mark.parametrize("name", ["tiny", "base"])
def test_parameter_count_matches_transformers(name):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = GPTConfig.from_size(name)
    with torch.device("meta"):  # shapes only: no memory, no initialisation cost
        hf = transformers.OpenAIGPTModel(transformers.OpenAIGPTConfig(**config_to_hf(config)))
    assert sum(p.numel() for p in hf.parameters()) == config.num_parameters()
    if name == "base":
        assert config.num_parameters() == 116_534_784  # the released openai-gpt


def test_gelu_is_the_tanh_approximation_of_transformers():
    torch = pytest.importorskip("torch")
    activations = pytest.importorskip("transformers.activations")
    modeling = pytest.importorskip("transformers.models.openai.modeling_openai")
    x = np.linspace(-6, 6, 101).astype("float32")
    reference = modeling.ACT_FNS[GPTConfig().activation](torch.tensor(x)).numpy()
    np.testing.assert_allclose(to_numpy(activation_function("gelu")(x)), reference, atol=1e-6)
    np.testing.assert_allclose(reference, activations.gelu_new(torch.tensor(x)).numpy())
    exact = to_numpy(activation_function("gelu_exact")(x))
    assert np.abs(exact - reference).max() > 1e-4  # the two GELUs do differ


@pytest.mark.parametrize("fields, field", [
    (dict(hidden_size=100, num_heads=3), "hidden_size"),
    (dict(num_layers=0), "num_layers"),
    (dict(dropout=-0.1), "dropout"),
    (dict(embedding_dropout=1.0), "embedding_dropout"),
    (dict(attention_dropout=True), "attention_dropout"),
    (dict(vocabulary_size=2.5), "vocabulary_size"),
    (dict(layer_norm_epsilon=0), "layer_norm_epsilon"),
    (dict(activation="tanh"), "activation"),
])
def test_bad_config_names_the_field(fields, field):
    with pytest.raises(ValueError, match=field):
        GPTConfig(**fields)


def test_unknown_size_and_field():
    with pytest.raises(ValueError, match="tiny"):
        GPTConfig.from_size("large")
    with pytest.raises(ValueError, match="n_embd"):
        GPTConfig.from_dict({"n_embd": 10})
    with pytest.raises(ValueError, match="GPTConfig"):
        GPTConfig.coerce(3)


def test_dict_round_trip_and_coerce():
    config = GPTConfig.from_size("mini", vocabulary_size=40481, dropout=0.0)
    assert GPTConfig.from_dict(config.to_dict()) == config
    assert GPTConfig.coerce(config.to_dict()) == config and GPTConfig.coerce("mini").num_layers == 4
    assert config.head_size == 64
