"""Attention probabilities of a ``BertBackbone``, recomputed from its weights with ``keras.ops``.

The backbone returns every layer's hidden state but not its attention probabilities: inside a
block, ``keras.ops.dot_product_attention`` (the backend's fused kernel) never materialises them.
They are cheap to recompute: layer ``l``'s queries and keys are its fused ``qkv`` projection of
its input, ``hidden_states[l]``, and the probabilities are ``softmax(q·kᵀ / √D)`` over the
non-padding keys (Vaswani et al. 2017, eq. 1). :func:`replay_block` finishes the block by hand
from them — context, output projection, add & norm, feed-forward, add & norm — so that a
tutorial can check them against the backbone's next hidden state.

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden, ``N`` heads, ``D`` head size.
"""

import math

import keras
import numpy as np
from keras import ops

from keras_bert_lab.layers.rotary import rotary_embedding


def queries_keys_values(block, x):
    """``(q, k, v)``, each ``(B, T, N, D)``: ``block``'s fused projection of its input ``x``
    (queries and keys rotated by position when the block uses rotary position embeddings)."""
    qkv = block.attention.qkv(x)             # (B, T, 3, N, D)
    q, k, v = ops.unstack(qkv, 3, axis=2)
    if block.attention.rotary_base is not None:
        q, k = rotary_embedding(q, k, block.attention.rotary_base, 0)
    return q, k, v


def probabilities(block, x, padding_mask):
    """``(B, N, T, T)`` attention probabilities of ``block`` on its input ``x``: row ``t`` of head
    ``n`` is how token ``t`` weighs every key; padding keys get exactly 0."""
    q, k, _ = queries_keys_values(block, x)
    scores = ops.einsum("btnd,bsnd->bnts", q, k) / math.sqrt(ops.shape(q)[-1])  # (B, N, T, S)
    keep = ops.cast(padding_mask, "bool")[:, None, None, :]                    # (B, 1, 1, S)
    scores = ops.where(keep, scores, -1e9)
    return ops.where(keep, ops.softmax(scores, axis=-1), 0.0)


def attention_probabilities(backbone, inputs, hidden_states=None):
    """Every layer's ``(B, N, T, T)`` attention probabilities (NumPy, float32) for ``inputs``.

    ``hidden_states``: the backbone's own output for ``inputs``, when already computed.
    """
    if hidden_states is None:
        hidden_states = backbone(inputs)["hidden_states"]
    mask = inputs["padding_mask"]
    return [np.asarray(ops.convert_to_numpy(probabilities(block, x, mask)), "float32")
            for block, x in zip(backbone.encoder_layers, hidden_states)]


def replay_block(block, x, probs):
    """``block``'s output on ``x`` (B, T, H) computed by hand from attention ``probs``
    (B, N, T, T): what the block does, in four lines."""
    _, _, v = queries_keys_values(block, x)
    context = ops.einsum("bnts,bsnd->btnd", ops.convert_to_tensor(probs), v)    # (B, T, N, D)
    x = block.attention_norm(x + block.attention.output_dense(context))          # add & norm
    return block.ffn_norm(x + block.ffn_out(block.ffn_in(x)))                     # FFN, add & norm


def check_against_backbone(backbone, inputs, hidden_states, probs):
    """Largest ``|replayed − backbone|`` over the real (non-padding) tokens of every layer."""
    real = np.asarray(inputs["padding_mask"]).astype(bool)
    worst = 0.0
    for block, x, y, p in zip(backbone.encoder_layers, hidden_states, hidden_states[1:], probs):
        replayed = keras.ops.convert_to_numpy(replay_block(block, x, p))
        worst = max(worst, float(np.abs(replayed - keras.ops.convert_to_numpy(y))[real].max()))
    return worst
