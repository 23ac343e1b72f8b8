"""GPTBackbone and its layers: causal masking, padding, the key/value cache, input checks."""

import keras
import numpy as np
import pytest

from keras_bert_lab.errors import InputError
from keras_bert_lab.layers.attention import MultiHeadSelfAttention
from keras_bert_lab.layers.decoder import TokenAndPositionEmbedding, TransformerDecoderBlock
from keras_bert_lab.models.gpt.backbone import GPTBackbone
from keras_bert_lab.models.gpt.config import GPTConfig
from tests.conftest import to_numpy

CONFIG = GPTConfig.from_size("tiny", vocabulary_size=300, num_heads=4, max_positions=32)


def causal_reference(x, qkv_kernel, qkv_bias, out_kernel, out_bias):
    """Masked (causal) multi-head attention in NumPy, from the equations."""
    q, k, v = [np.einsum("bth,hnd->btnd", x, qkv_kernel[:, j]) + qkv_bias[j] for j in range(3)]
    scores = np.einsum("btnd,bsnd->bnts", q, k) / np.sqrt(q.shape[-1])
    t = x.shape[1]
    scores = np.where(np.tril(np.ones((t, t), bool)), scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    return np.einsum("btnd,ndh->bth", np.einsum("bnts,bsnd->btnd", probs, v), out_kernel) + out_bias


def predict(model, x):
    """NumPy outputs of ``model`` on ``x``: one compiled call on JAX (eager JAX compiles every
    op for every new shape: several times slower for a first call), an eager call elsewhere."""
    if keras.backend.backend() == "jax":
        return model.predict_on_batch(x)
    return keras.tree.map_structure(to_numpy, model(x))


@pytest.fixture(scope="module")
def backbone():
    keras.utils.set_random_seed(0)
    return GPTBackbone(CONFIG)


def ids(batch=2, length=10, seed=0):
    return np.random.default_rng(seed).integers(0, CONFIG.vocabulary_size, (batch, length)).astype(
        "int32")


def run(backbone, token_ids, padding_mask=None):
    mask = np.ones_like(token_ids) if padding_mask is None else padding_mask
    return predict(backbone, {"token_ids": token_ids, "padding_mask": mask})


def test_outputs(backbone):
    out = run(backbone, ids())
    assert out["sequence_output"].shape == (2, 10, CONFIG.hidden_size)
    assert len(out["hidden_states"]) == CONFIG.num_layers + 1
    np.testing.assert_array_equal(out["hidden_states"][-1], out["sequence_output"])
    table = to_numpy(backbone.token_embedding.embeddings)
    positions = to_numpy(backbone.embeddings.position_embedding)
    x = ids()
    np.testing.assert_allclose(out["hidden_states"][0], table[x] + positions[:10], atol=1e-6)


@pytest.mark.parametrize("explicit", [False, True])
def test_causal_attention_matches_numpy(explicit):
    """The fused kernel (is_causal) and the explicit path (used with attention dropout in
    training; here a rate too small to drop anything) both mask later tokens."""
    x = np.random.default_rng(0).normal(size=(2, 6, 16)).astype("float32")
    layer = MultiHeadSelfAttention(num_heads=4, causal=True, dropout=1e-9 if explicit else 0.0)
    out = to_numpy(layer(x, training=explicit))
    weights = [to_numpy(w) for w in (layer.qkv.kernel, layer.qkv.bias, layer.output_dense.kernel,
                                     layer.output_dense.bias)]
    np.testing.assert_allclose(out, causal_reference(x, *weights), atol=2e-5)


def test_later_tokens_do_not_change_earlier_outputs(backbone):
    a, b = ids(), ids()
    b[:, 6:] = (b[:, 6:] + 1) % CONFIG.vocabulary_size
    out_a, out_b = run(backbone, a), run(backbone, b)
    np.testing.assert_allclose(out_a["sequence_output"][:, :6], out_b["sequence_output"][:, :6],
                               atol=1e-5)
    assert not np.allclose(out_a["sequence_output"][:, 6:], out_b["sequence_output"][:, 6:])


def test_right_padding_changes_no_real_position(backbone):
    x = ids(1, 7)
    padded = np.concatenate([x, np.zeros((1, 5), "int32")], axis=1)
    mask = np.array([[1] * 7 + [0] * 5])
    alone = run(backbone, x)["sequence_output"]
    np.testing.assert_allclose(run(backbone, padded, mask)["sequence_output"][:, :7], alone,
                               atol=1e-5)


def test_cache_steps_equal_the_full_pass(backbone):
    x = ids(2, 9)
    full = run(backbone, x)["sequence_output"]
    cache = backbone.empty_cache(2, 12)
    assert tuple(cache[0].shape) == (2, 2, 12, CONFIG.num_heads, CONFIG.head_size)
    hidden, cache = backbone.call_with_cache(x[:, :5], cache, 0)  # a prompt, then one by one
    steps = [to_numpy(hidden)]
    for i in range(5, 9):
        hidden, cache = backbone.call_with_cache(x[:, i:i + 1], cache, i)
        steps.append(to_numpy(hidden))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-5)


@pytest.mark.parametrize("inputs, message", [
    (lambda: ids(), "dict"),
    (lambda: {"token_ids": ids()}, "padding_mask"),
    (lambda: {"token_ids": ids().astype("float32"), "padding_mask": np.ones((2, 10))}, "int32"),
    (lambda: {"token_ids": ids(2, 40), "padding_mask": np.ones((2, 40))}, "32 positions"),
    (lambda: {"token_ids": ids() + 300, "padding_mask": np.ones((2, 10))}, "outside"),
    (lambda: {"token_ids": ids(), "padding_mask": np.ones((2, 9))}, "disagree"),
])
def test_bad_inputs_are_named(backbone, inputs, message):
    with pytest.raises(InputError, match=message):
        backbone(inputs())


@pytest.mark.parametrize("layer", [
    TokenAndPositionEmbedding(vocabulary_size=50, hidden_size=8, max_positions=16, dropout=0.1),
    MultiHeadSelfAttention(num_heads=2, dropout=0.1, causal=True),
    TransformerDecoderBlock(num_heads=2, intermediate_size=32, dropout=0.1, attention_dropout=0.2,
                            activation="relu"),
])
def test_layer_config_round_trip(layer):
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config


def test_decoder_block_is_post_ln():
    block = TransformerDecoderBlock(num_heads=2, intermediate_size=32)
    x = np.random.default_rng(0).normal(3.0, 5.0, size=(2, 5, 8)).astype("float32")
    y = to_numpy(block(x))
    np.testing.assert_allclose(y.mean(-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(y.var(-1), 1.0, atol=2e-3)


def test_backbone_config_round_trip(backbone):
    clone = GPTBackbone.from_config(backbone.get_config())
    assert clone.config == CONFIG and clone.count_params() == backbone.count_params()
