import pytest

from keras_bert_lab import BertBackbone, BertConfig
from keras_bert_lab.models.bert.config import SIZES

# Published sizes of the Hugging Face BertModel (with pooler): bert-base-uncased and large.
KNOWN_COUNTS = {"base": 109_482_240, "large": 335_141_888}


@pytest.mark.parametrize("name", list(SIZES))
def test_named_sizes(name):
    config = BertConfig.from_size(name)
    layers, hidden, heads = SIZES[name]
    assert (config.num_layers, config.hidden_size, config.num_heads) == (layers, hidden, heads)
    assert config.intermediate_size == 4 * hidden
    assert (config.vocabulary_size, config.max_positions, config.type_vocab_size) == (30522, 512, 2)
    assert config.dropout == 0.1 and config.layer_norm_epsilon == 1e-12


@pytest.mark.parametrize("name", ["tiny", "mini", "base"])
def test_parameter_count_of_built_model(name):
    backbone = BertBackbone(name)
    assert backbone.count_params() == BertConfig.from_size(name).num_parameters()
    if name in KNOWN_COUNTS:
        assert backbone.count_params() == KNOWN_COUNTS[name]


def test_large_parameter_count():
    assert BertConfig.from_size("large").num_parameters() == KNOWN_COUNTS["large"]


@pytest.mark.parametrize("fields, field", [
    (dict(hidden_size=100, num_heads=3), "hidden_size"),
    (dict(num_layers=0), "num_layers"),
    (dict(dropout=-0.1), "dropout"),
    (dict(attention_dropout=1.0), "attention_dropout"),
    (dict(vocabulary_size=2.5), "vocabulary_size"),
    (dict(layer_norm_epsilon=0), "layer_norm_epsilon"),
])
def test_bad_config_names_the_field(fields, field):
    with pytest.raises(ValueError, match=field):
        BertConfig(**fields)


def test_unknown_size_and_field():
    with pytest.raises(ValueError, match="tiny"):
        BertConfig.from_size("huge")
    with pytest.raises(ValueError, match="hiden_size"):
        BertConfig.from_dict({"hiden_size": 10})


def test_dict_round_trip():
    config = BertConfig.from_size("small", dropout=0.0)
    assert BertConfig.from_dict(config.to_dict()) == config


def test_old_vocab_size_name_warns_and_works():
    # vocab_size was renamed vocabulary_size (one name per meaning); scripts that use the old
    # keyword keep working for one release, with a FutureWarning naming the new one.
    with pytest.warns(FutureWarning, match="vocabulary_size"):
        config = BertConfig(vocab_size=123)
    assert config.vocabulary_size == 123
    with pytest.warns(FutureWarning, match="vocabulary_size"):
        assert BertConfig.from_size("tiny", vocab_size=77).vocabulary_size == 77
    with pytest.raises(ValueError, match="give only vocabulary_size"):
        BertConfig(vocab_size=1, vocabulary_size=2)


def test_old_vocab_size_in_a_stored_dict_loads_silently():
    import warnings
    stored = {**BertConfig.from_size("tiny").to_dict(), "vocab_size": 55}
    del stored["vocabulary_size"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert BertConfig.from_dict(stored).vocabulary_size == 55


def test_a_layer_saved_with_the_old_name_loads():
    from keras_bert_lab.layers.embeddings import BertEmbedding
    layer = BertEmbedding(vocabulary_size=30, hidden_size=8, max_positions=16)
    config = layer.get_config()
    config["vocab_size"] = config.pop("vocabulary_size")
    assert BertEmbedding.from_config(config).vocabulary_size == 30
