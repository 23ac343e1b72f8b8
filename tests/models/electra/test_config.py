"""ElectraConfig: the paper's sizes (parameter counts from ``transformers``' own models), the
generator's sizes, and bad configs named with their fix."""

import pytest

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.electra.config import ElectraConfig
from keras_bert_lab.models.electra.convert_hf import config_to_hf


@pytest.mark.parametrize("size", ["tiny", "small"])
def test_parameter_counts_equal_transformers(size):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    del torch
    config = ElectraConfig.from_size(size)
    for model_config in (config, config.generator()):
        hf = transformers.ElectraModel(transformers.ElectraConfig(**config_to_hf(model_config)))
        theirs = sum(p.numel() for p in hf.parameters())
        assert model_config.num_parameters(pooler=False) == theirs


def test_mini_has_bert_minis_encoder():
    """ELECTRA-mini's discriminator is BERT-mini's weights for weights (the lab's comparisons)."""
    from keras_bert_lab.models.bert.config import BertConfig

    assert ElectraConfig.from_size("mini").num_parameters() == \
        BertConfig.from_size("mini").num_parameters()


def test_generator_sizes_are_the_papers():
    """Table 6: the generator is 1/4 of Small and Large and 1/3 of Base (hidden, FFN, heads)."""
    got = {size: (lambda g: (g.hidden_size, g.intermediate_size, g.num_heads, g.num_layers,
                             g.embedding_size))(ElectraConfig.from_size(size).generator())
           for size in ("small", "base", "large")}
    assert got == {"small": (64, 256, 1, 12, 128), "base": (256, 1024, 4, 12, 768),
                   "large": (256, 1024, 4, 24, 1024)}


@pytest.mark.parametrize("make, words", [
    (lambda: ElectraConfig.from_size("small").generator(2.0),
     ["generator_size=2.0", "larger than the discriminator", "(0, 1]"]),
    (lambda: ElectraConfig.from_size("small").generator(0.3),
     ["generator_size=0.3", "76.8", "not a whole number", "0.25"]),
    (lambda: ElectraConfig.from_size("small").generator(0),
     ["generator_size must be a number in (0, 1]"]),
    (lambda: ElectraConfig(hidden_size=100, num_heads=3),
     ["hidden_size (100)", "divisible", "num_heads (3)"]),
    (lambda: ElectraConfig(embedding_size=0), ["embedding_size must be a positive integer"]),
    (lambda: ElectraConfig(role="teacher"), ["role must be one of"]),
    (lambda: ElectraConfig.from_size("small").generator().generator(),
     ["already a generator"]),
])
def test_bad_configs_name_the_field_and_the_fix(make, words):
    with pytest.raises(ConfigError) as error:
        make()
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
