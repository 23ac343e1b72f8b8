"""BertConfig's modern options: pre-LN, no biases, GEGLU, rotary positions.

Parity with Hugging Face ``transformers.ModernBertModel`` given the same weights, through
``presets.convert.modernbert``. What ModernBERT lacks or does otherwise, and how the comparison
meets it (everything else is matched, every hidden state at every position):

- no segment table: ours gets a zero one, so the pair batch's segment ids (0 and 1) add nothing;
- its first layer has no LayerNorm before attention: neither has our pre-LN first block;
- its local (sliding-window) layers: the reference config makes every layer global
  (``global_attn_every_n_layers=1``), whose rotary base is our ``rotary_base``;
- no pooler: ``pooled_output`` is not compared; dropout placement differs: all rates are 0;
- its ``"gelu"`` is torch's exact erf GELU, as ours (``layers.common.gelu``).

The rest: the default recipe keeps BERT's weights exactly; each option alone (and all four) trains
with ``model.fit``; configs round-trip through dicts, ``.keras`` files and presets (old presets
without the fields load with the defaults); bad values and mismatched presets name the field.
"""

import json

import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
from keras_bert_lab.errors import ConfigError, InputError, PresetError
from keras_bert_lab.layers.attention import MultiHeadSelfAttention
from keras_bert_lab.layers.rotary import rotary_embedding
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.models.bert import hf_weights as huggingface
from keras_bert_lab.models.bert import convert_keras_hub as keras_hub
from keras_bert_lab.models.bert import convert_modernbert as modernbert
from keras_bert_lab.presets.weights import model_weights
from tests.conftest import padded_pair_batch, to_numpy

TOLERANCE = 1e-5
VOCAB = 1000
MODERN = dict(norm_first=True, use_bias=False, feedforward="geglu", position_embedding="rotary")
OPTIONS = [dict(norm_first=True), dict(use_bias=False), dict(feedforward="geglu"),
           dict(position_embedding="rotary", rotary_base=500.0), MODERN]


def tiny(**fields):
    base = dict(vocabulary_size=64, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64,
                max_positions=16)
    return BertConfig(**{**base, **fields})


# ---- parity with transformers.ModernBertModel ------------------------------------------------
@pytest.fixture(scope="module", params=[False, True], ids=["no_bias", "bias"])
def modern_pair(request):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    bias = request.param
    torch.manual_seed(0)
    hf_config = transformers.ModernBertConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
        num_attention_heads=4, max_position_embeddings=64, global_attn_every_n_layers=1,
        global_rope_theta=2000.0, hidden_activation="gelu", attention_bias=bias, mlp_bias=bias,
        norm_bias=bias, attention_dropout=0.0, embedding_dropout=0.0, mlp_dropout=0.0,
        norm_eps=1e-5, pad_token_id=0, bos_token_id=None, eos_token_id=None, cls_token_id=None,
        sep_token_id=None)
    hf = transformers.ModernBertModel(hf_config).eval()
    with torch.no_grad():  # fresh norms are 1 and biases 0: randomise them so no swap can hide
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if "norm" in name else 0.0, std=0.1)
    config = BertConfig.from_dict(modernbert.config_from_hf(hf_config.to_dict()))
    assert (config.rotary_base, config.use_bias, config.layer_norm_epsilon) == (2000.0, bias, 1e-5)
    ours = BertBackbone(config)
    state = {k: v.numpy() for k, v in hf.state_dict().items()}
    modernbert.load_hf_weights(ours, state)
    return hf, ours, state


def hf_hidden_states(hf, batch):
    import torch

    with torch.no_grad():
        out = hf(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                 attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
                 output_hidden_states=True)
    return [h.numpy() for h in out.hidden_states], out.last_hidden_state.numpy()


def test_hidden_states_match_modernbert(modern_pair):
    hf, ours, _ = modern_pair
    batch = padded_pair_batch(vocabulary_size=VOCAB)
    expected, last = hf_hidden_states(hf, batch)
    got = ours(batch)
    assert len(got["hidden_states"]) == len(expected) == ours.config.num_layers + 1
    errors = [float(np.abs(to_numpy(a) - b).max()) for a, b in zip(got["hidden_states"], expected)]
    print(f"{keras.backend.backend()} max abs error per hidden state: {errors}")
    assert max(errors) <= TOLERANCE, errors
    # the last entry is the final-normalised sequence output, as ModernBertModel's
    np.testing.assert_allclose(to_numpy(got["sequence_output"]), last, atol=TOLERANCE, rtol=0)
    np.testing.assert_array_equal(to_numpy(got["sequence_output"]),
                                  to_numpy(got["hidden_states"][-1]))


def test_modernbert_export_round_trip(modern_pair):
    import torch
    import transformers

    hf, ours, state = modern_pair
    exported = modernbert.weights_to_hf(model_weights(ours), ours.config)
    assert sorted(exported) == sorted(state)
    for key, value in exported.items():
        np.testing.assert_array_equal(value, state[key], err_msg=key)
    hf_config = modernbert.config_to_hf(ours.config)
    assert BertConfig.from_dict(modernbert.config_from_hf(hf_config)) == ours.config
    fresh = transformers.ModernBertModel(transformers.ModernBertConfig(
        **hf_config, pad_token_id=0, bos_token_id=None, eos_token_id=None, cls_token_id=None,
        sep_token_id=None)).eval()
    fresh.load_state_dict({k: torch.from_numpy(v) for k, v in exported.items()})
    batch = padded_pair_batch(vocabulary_size=VOCAB, seed=2)
    np.testing.assert_allclose(hf_hidden_states(fresh, batch)[1], hf_hidden_states(hf, batch)[1],
                               atol=1e-6)


def test_modernbert_converter_checks(modern_pair):
    hf, ours, state = modern_pair
    # a ModernBertForMaskedLM checkpoint: "model." prefix, its head ignored
    prefixed = {f"model.{k}": v for k, v in state.items()}
    prefixed.update({"head.dense.weight": np.zeros((64, 64)), "decoder.bias": np.zeros(VOCAB)})
    weights = modernbert.weights_from_hf(prefixed, ours.config)
    assert not np.any(weights[modernbert.SEGMENT_TABLE])
    with pytest.raises(PresetError, match="missing.*final_norm.weight"):
        modernbert.weights_from_hf({k: v for k, v in state.items() if "final_norm" not in k},
                                   ours.config)
    hf_config = hf.config.to_dict()
    with pytest.raises(PresetError, match=r"layers \[1, 2\] use local"):
        modernbert.config_from_hf({**hf_config, "layer_types": None,
                                   "global_attn_every_n_layers": 3})
    with pytest.raises(PresetError, match="must agree"):
        modernbert.config_from_hf({**hf_config, "attention_bias": True, "mlp_bias": False})
    with pytest.raises(PresetError, match="needs"):
        modernbert.weight_table(BertConfig.from_size("tiny"))


# ---- the default recipe is BERT's, weight for weight ------------------------------------------
# (path, shape) of a default backbone, as main built it before the modern options existed.
BERT_WEIGHTS = [
    ("embeddings/position_embedding", (16, 128)),
    ("embeddings/token_embedding/embeddings", (100, 128)),
    ("embeddings/segment_embedding/embeddings", (2, 128)),
    ("embeddings/norm/gamma", (128,)), ("embeddings/norm/beta", (128,)),
] + [(f"encoder_layer_{i}/{name}", shape) for i in range(2) for name, shape in [
    ("attention/qkv/kernel", (128, 3, 2, 64)), ("attention/qkv/bias", (3, 2, 64)),
    ("attention/output/kernel", (2, 64, 128)), ("attention/output/bias", (128,)),
    ("attention_norm/gamma", (128,)), ("attention_norm/beta", (128,)),
    ("ffn_in/kernel", (128, 512)), ("ffn_in/bias", (512,)),
    ("ffn_norm/gamma", (128,)), ("ffn_norm/beta", (128,)),
    ("ffn_out/kernel", (512, 128)), ("ffn_out/bias", (128,))]
] + [("pooler/kernel", (128, 128)), ("pooler/bias", (128,))]


def test_default_config_builds_berts_weights():
    config = BertConfig.from_size("tiny", vocabulary_size=100, max_positions=16)
    assert (config.norm_first, config.use_bias, config.feedforward, config.position_embedding) \
        == (False, True, "gelu", "learned")
    backbone = BertBackbone(config)
    assert [(v.path, tuple(v.shape)) for v in backbone.weights] == BERT_WEIGHTS
    assert backbone.final_norm is None


@pytest.mark.parametrize("fields", OPTIONS + [{}], ids=str)
def test_parameter_count_and_weights_of_each_option(fields):
    config = tiny(**fields)
    backbone = BertBackbone(config)
    assert backbone.count_params() == config.num_parameters()
    paths = {v.path for v in backbone.weights}
    assert ("embeddings/position_embedding" in paths) == \
        (config.position_embedding == "learned")
    assert any(p.endswith("/beta") or p.endswith("/bias") for p in paths if
               not p.startswith("pooler")) == config.use_bias
    assert ("final_norm/gamma" in paths) == config.norm_first
    # pre-LN: the first block takes the normalised embedding as it is
    assert ("encoder_layer_0/attention_norm/gamma" in paths) != config.norm_first
    assert "encoder_layer_1/attention_norm/gamma" in paths
    width = 2 * 64 if config.feedforward == "geglu" else 64
    assert tuple(backbone.get_layer("encoder_layer_1").ffn_in.kernel.shape) == (32, width)


# ---- each option trains --------------------------------------------------------------------
def _mlm_data(n=128, length=12, masked=3, seed=0):
    """Sequences ``a b a b …`` of two random words (ids 5…63): a masked word is in its context,
    so the loss can fall far below ln(59), the best a model blind to the context reaches."""
    rng = np.random.default_rng(seed)
    pairs = np.stack([rng.choice(np.arange(5, 64), 2, replace=False) for _ in range(n)])
    tokens = pairs[:, np.arange(length) % 2].astype("int32")
    positions = np.stack([rng.choice(np.arange(1, length), masked, replace=False)
                          for _ in range(n)]).astype("int32")
    labels = np.take_along_axis(tokens, positions, axis=1)
    inputs = tokens.copy()
    np.put_along_axis(inputs, positions, 4, axis=1)  # [MASK]
    x = {"token_ids": inputs, "segment_ids": np.zeros_like(inputs),
         "padding_mask": np.ones_like(inputs), "mask_positions": positions}
    y = {"mlm": labels, "nsp": np.zeros(n, "int32")}
    weights = {"mlm": np.ones(labels.shape, "float32"), "nsp": np.ones(n, "float32")}
    return x, y, weights


@pytest.mark.parametrize("fields", OPTIONS, ids=str)
def test_each_option_trains_on_masked_lm(fields):
    # Dropout on: fit runs the explicit attention path, evaluate the fused one. BERT's 0.02
    # initialisation makes this tiny model (H = 32) sit ~60 steps on a plateau near the
    # context-blind loss, longest without a learned position table (whose random rows break
    # the symmetry between positions); 0.1 leaves it within a few steps, with every option.
    config = tiny(dropout=0.1, attention_dropout=0.1, initializer_range=0.1, **fields)
    model = BertPretrainer(BertBackbone(config))
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    x, y, weights = _mlm_data()
    before = model.evaluate(x, y, sample_weight=weights, return_dict=True, verbose=0)["mlm_loss"]
    model.fit(x, y, sample_weight=weights, batch_size=32, epochs=16, verbose=0)
    after = model.evaluate(x, y, sample_weight=weights, return_dict=True, verbose=0)["mlm_loss"]
    print(f"{fields}: masked-LM loss {before:.3f} -> {after:.3f}")
    assert np.isfinite(after) and after < 0.6 * before, (before, after)


# ---- rotary positions --------------------------------------------------------------------------
def test_rotary_scores_depend_on_relative_position_only():
    rng = np.random.default_rng(0)
    q, k = (rng.normal(size=(1, 5, 2, 8)).astype("float32") for _ in range(2))

    def scores(offset):
        rq, rk = rotary_embedding(q, k, base=100.0, offset=offset)
        return np.einsum("btnd,bsnd->bnts", to_numpy(rq), to_numpy(rk))

    np.testing.assert_allclose(scores(0), scores(7), atol=1e-4)
    assert not np.allclose(scores(0), np.einsum("btnd,bsnd->bnts", q, k), atol=1e-3)


def test_rotary_attention_fused_and_explicit_paths_agree():
    attention = MultiHeadSelfAttention(2, dropout=0.5, use_bias=False, rotary_base=100.0)
    x = np.random.default_rng(1).normal(size=(2, 6, 8)).astype("float32")
    mask = np.array([[1] * 6, [1] * 4 + [0] * 2])
    fused = to_numpy(attention(x, padding_mask=mask, training=False))
    attention.dropout_layer.rate = 0.0  # the explicit (training) path, with nothing dropped
    explicit = to_numpy(attention(x, padding_mask=mask, training=True))
    np.testing.assert_allclose(explicit, fused, atol=1e-5)
    assert [w.path.split("/")[-1] for w in attention.weights] == ["kernel", "kernel"]


def test_rotary_sequence_length_limit_names_max_positions():
    backbone = BertBackbone(tiny(position_embedding="rotary"))
    batch = {k: np.zeros((1, 17), "int32") for k in ("token_ids", "segment_ids", "padding_mask")}
    with pytest.raises(InputError, match=r"exceeds max_positions \(16\)"):
        backbone(batch)


# ---- round trips ---------------------------------------------------------------------------
def _batch():
    return padded_pair_batch(vocabulary_size=64, lengths=(12, 9, 5), first_lengths=(5, 3, 2),
                             cls_id=1, sep_id=2, first_word_id=5)


def test_config_round_trips():
    config = tiny(rotary_base=160000.0, **MODERN)
    assert BertConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    backbone = BertBackbone(config)
    assert BertBackbone.from_config(backbone.get_config()).config == config
    block = backbone.get_layer("encoder_layer_0")
    again = type(block).from_config(block.get_config())
    assert (again.norm_first, again.use_bias, again.feedforward, again.rotary_base,
            again.normalize_input) == (True, False, "geglu", 160000.0, False)


def test_keras_file_round_trip(tmp_path):
    backbone = BertBackbone(tiny(**MODERN))
    path = str(tmp_path / "modern.keras")
    backbone.save(path)
    restored = keras.saving.load_model(path)
    assert restored.config == backbone.config
    batch = _batch()
    np.testing.assert_array_equal(to_numpy(restored(batch)["sequence_output"]),
                                  to_numpy(backbone(batch)["sequence_output"]))


def test_preset_round_trip_and_config_changes(tmp_path):
    backbone = BertBackbone(tiny(**MODERN))
    vocabulary = [f"t{i}" for i in range(64)]
    path = backbone.save_to_preset(tmp_path / "modern", vocabulary=vocabulary)
    restored = BertBackbone.from_preset(path)
    assert restored.config == backbone.config
    batch = _batch()
    np.testing.assert_array_equal(to_numpy(restored(batch)["sequence_output"]),
                                  to_numpy(backbone(batch)["sequence_output"]))
    # free fields may change; with rotary positions (no table) the longest sequence too
    changed = BertBackbone.from_preset(path, config={"dropout": 0.0, "max_positions": 32})
    assert (changed.config.dropout, changed.config.max_positions) == (0.0, 32)
    with pytest.raises(ConfigError, match="position_embedding='learned' here but 'rotary' there"):
        BertBackbone.from_preset(path, config={"position_embedding": "learned"})


def test_learned_position_preset_into_rotary_config_names_the_field(tmp_path):
    classic = tiny()
    path = BertBackbone(classic).save_to_preset(tmp_path / "bert",
                                                vocabulary=[f"t{i}" for i in range(64)])
    rotary = tiny(position_embedding="rotary")
    with pytest.raises(ConfigError, match=r"config of preset .*/bert: position_embedding='rotary' "
                                          r"here but 'learned' there. Its weights need "
                                          r"position_embedding='learned'; only \['dropout', "
                                          r"'attention_dropout', 'initializer_range'\] may"):
        BertBackbone.from_preset(path, config=rotary)
    with pytest.raises(ConfigError, match=r"norm_first=True here .* use_bias=False here"):
        BertPretrainer.from_preset(path, config={"norm_first": True, "use_bias": False})
    with pytest.raises(ConfigError, match="max_positions=32 here but 16 there"):
        BertBackbone.from_preset(path, config={"max_positions": 32})  # a learned table: fixed


def test_old_preset_without_the_fields_loads_with_defaults(tmp_path):
    backbone = BertBackbone(tiny())
    old_config = {k: v for k, v in backbone.config.to_dict().items()
                  if k not in ("norm_first", "use_bias", "feedforward", "position_embedding",
                               "rotary_base")}
    path = preset_format.write_preset(
        tmp_path / "old", backbone_class="BertBackbone", config=old_config,
        weights=model_weights(backbone), vocabulary=[f"t{i}" for i in range(64)])
    restored = BertBackbone.from_preset(path)
    assert restored.config == backbone.config
    np.testing.assert_array_equal(to_numpy(restored(_batch())["sequence_output"]),
                                  to_numpy(backbone(_batch())["sequence_output"]))


# ---- errors --------------------------------------------------------------------------------
@pytest.mark.parametrize("fields, message", [
    (dict(feedforward="swiglu"), r"BertConfig.feedforward must be one of \['gelu', 'geglu'\]"),
    (dict(position_embedding="alibi"),
     r"BertConfig.position_embedding must be one of \['learned', 'rotary'\]"),
    (dict(norm_first="yes"), "BertConfig.norm_first must be True or False"),
    (dict(use_bias=1), "BertConfig.use_bias must be True or False"),
    (dict(rotary_base=0.5, position_embedding="rotary"), "BertConfig.rotary_base must be"),
    (dict(rotary_base=500.0), "rotary_base=500.0 has no effect with "
                              "position_embedding='learned'; set position_embedding='rotary'"),
    (dict(position_embedding="rotary", hidden_size=30, num_heads=2),
     "head size hidden_size / num_heads must be even, got 30 / 2 = 15"),
])
def test_bad_modern_options_name_the_field(fields, message):
    with pytest.raises(ConfigError, match=message):
        tiny(**fields)


@pytest.mark.parametrize("field", ["norm_first", "use_bias", "feedforward", "position_embedding"])
def test_bert_formats_refuse_modern_options(field):
    config = tiny(**{field: MODERN[field]}).to_dict()
    with pytest.raises(PresetError, match=f"no equivalent of {field}="):
        huggingface.config_to_hf(config)
    with pytest.raises(PresetError, match=f"no equivalent of {field}="):
        huggingface.weight_table(config)
    with pytest.raises(PresetError, match=f"keras-hub's BertBackbone has no equivalent of {field}"):
        keras_hub.config_to_keras_hub(config)
