import keras
import numpy as np
import pytest

from keras_bert_lab.layers.attention import MultiHeadSelfAttention
from keras_bert_lab.layers.embeddings import BertEmbedding
from keras_bert_lab.layers.encoder import TransformerEncoderBlock
from tests.conftest import to_numpy


def reference_attention(x, mask, qkv_kernel, qkv_bias, out_kernel, out_bias):
    """Multi-head attention in NumPy, from the paper's equations."""
    q, k, v = [np.einsum("bth,hnd->btnd", x, qkv_kernel[:, j]) + qkv_bias[j] for j in range(3)]
    scores = np.einsum("btnd,bsnd->bnts", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(mask[:, None, None, :] > 0, scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = np.einsum("bnts,bsnd->btnd", probs, v)
    return np.einsum("btnd,ndh->bth", context, out_kernel) + out_bias


@pytest.fixture
def attention_inputs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 6, 16)).astype("float32")
    mask = np.array([[1] * 6, [1, 1, 1, 1, 0, 0]], "int32")
    return x, mask


def test_attention_matches_numpy_reference(attention_inputs):
    x, mask = attention_inputs
    layer = MultiHeadSelfAttention(num_heads=4)
    out = to_numpy(layer(x, padding_mask=mask))
    weights = [to_numpy(w) for w in (layer.qkv.kernel, layer.qkv.bias, layer.output_dense.kernel,
                                     layer.output_dense.bias)]
    np.testing.assert_allclose(out, reference_attention(x, mask, *weights), atol=2e-5)


def test_explicit_path_equals_fused_path(attention_inputs):
    x, mask = attention_inputs
    layer = MultiHeadSelfAttention(num_heads=4, dropout=0.5)
    fused = to_numpy(layer(x, padding_mask=mask, training=False))
    q, k, v = keras.ops.unstack(layer.qkv(x), 3, axis=2)
    explicit = layer.output_dense(layer._explicit_attention(
        q, k, v,
        keras.ops.cast(mask, "bool")[:, None, None, :], training=False))
    np.testing.assert_allclose(to_numpy(explicit), fused, atol=1e-5)
    a = to_numpy(layer(x, padding_mask=mask, training=True))
    b = to_numpy(layer(x, padding_mask=mask, training=True))
    assert not np.allclose(a, b), "attention dropout inactive in training"


def test_padding_keys_are_ignored(attention_inputs):
    x, mask = attention_inputs
    layer = MultiHeadSelfAttention(num_heads=4)
    changed = x.copy()
    changed[1, 4:] = 100.0  # padded positions of row 1
    np.testing.assert_allclose(to_numpy(layer(changed, padding_mask=mask))[1, :4],
                               to_numpy(layer(x, padding_mask=mask))[1, :4], atol=1e-5)


@pytest.mark.parametrize("layer", [
    BertEmbedding(vocabulary_size=50, hidden_size=8, max_positions=16, dropout=0.1),
    MultiHeadSelfAttention(num_heads=2, dropout=0.1),
    TransformerEncoderBlock(num_heads=2, intermediate_size=32, dropout=0.1, attention_dropout=0.2),
])
def test_get_config_round_trip(layer):
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config


def test_encoder_block_is_post_ln():
    block = TransformerEncoderBlock(num_heads=2, intermediate_size=32)
    x = np.random.default_rng(0).normal(3.0, 5.0, size=(2, 5, 8)).astype("float32")
    y = to_numpy(block(x, padding_mask=np.ones((2, 5))))
    # The output is a LayerNorm output (unit gamma, zero beta at init): zero mean, unit variance.
    np.testing.assert_allclose(y.mean(-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(y.var(-1), 1.0, atol=1e-3)


def test_embedding_sums_three_tables():
    layer = BertEmbedding(vocabulary_size=50, hidden_size=8, max_positions=16)
    ids, segments = np.array([[2, 5, 3]]), np.array([[0, 1, 1]])
    out = to_numpy(layer(ids, segments))
    summed = (to_numpy(layer.token_embedding.embeddings)[ids[0]]
              + to_numpy(layer.segment_embedding.embeddings)[segments[0]]
              + to_numpy(layer.position_embedding)[:3])
    normed = (summed - summed.mean(-1, keepdims=True)) / np.sqrt(summed.var(-1, keepdims=True) + 1e-12)
    np.testing.assert_allclose(out[0], normed, atol=1e-5)


def test_masked_lm_head_gathers_each_sequence_own_positions():
    from keras_bert_lab.layers.heads import MaskedLMHead

    embedding = keras.layers.Embedding(11, 4)
    embedding.build((None,))
    head = MaskedLMHead(embedding)
    sequence = np.random.default_rng(0).normal(size=(3, 5, 4)).astype("float32")
    positions = np.array([[0, 4], [2, 2], [4, 1]])
    logits = to_numpy(head(sequence, positions))
    # The same head on each picked vector alone, as a one-token sequence.
    for b in range(3):
        for p in range(2):
            alone = to_numpy(head(sequence[b:b + 1, positions[b, p]][:, None], np.zeros((1, 1))))
            np.testing.assert_allclose(logits[b, p], alone[0, 0], rtol=1e-5, atol=1e-6)
    # A position past the end stays within its own sequence (its last token), not the next one.
    past_end = to_numpy(head(sequence, np.array([[5, 0], [0, 0], [0, 0]])))
    np.testing.assert_allclose(past_end[0, 0], logits[0, 1], rtol=1e-5, atol=1e-6)
