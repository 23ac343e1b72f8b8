"""Multi-head self-attention with a padding mask, optionally causal and with a key/value cache.

Shapes: ``B`` batch, ``T`` query tokens, ``S`` key tokens (= T, or the cache length), ``H``
hidden, ``N`` heads, ``D`` head size (H = N·D).
"""

import math

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.common import dropout as make_dropout
from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.layers.rotary import rotary_embedding


@keras.saving.register_keras_serializable("keras_bert_lab")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over ``N`` heads (Vaswani et al. 2017, §3.2).

    Query, key and value come from one fused projection (one large matmul instead of three) with
    a kernel of shape ``(H, 3, N, D)``; the output projection has a ``(N, D, H)`` kernel. When no
    attention dropout is active the scores go through ``keras.ops.dot_product_attention``, the
    backend's fused kernel; with dropout in training they are computed explicitly, softmax in
    float32, so that the probabilities can be dropped as in the original BERT.

    ``causal=True`` makes it the masked self-attention of a decoder (GPT): token ``t`` attends to
    tokens ``≤ t`` only. A decoder generating text passes ``cache`` (B, 2, S, N, D), the keys and
    values of earlier steps, and ``cache_index``, the position of ``x``'s first token: the new
    keys and values are written there, the queries attend to cache positions up to their own, and
    the call returns ``(output, updated cache)``.

    ``rotary_base`` turns on rotary position embeddings (:func:`~.rotary.rotary_embedding`): the
    queries and keys are rotated by their positions (offset by ``cache_index`` with a cache)
    before the scores, on both paths. ``use_bias=False`` drops the projections' biases, as
    ModernBERT and most recent encoders do.

    Args:
        num_heads: ``N``. dropout: rate on the attention probabilities in training.
        initializer_range: truncated-normal stddev of the kernels.
        causal: mask out attention to later tokens.
        use_bias: give the query/key/value and output projections biases.
        rotary_base: ``None`` (no rotary embedding: positions come from the input), or the
            base ``θ`` of the rotary angles (e.g. 10,000).

    Example:
    >>> import numpy as np
    >>> attention = MultiHeadSelfAttention(num_heads=2)
    >>> x = np.random.rand(1, 4, 8).astype("float32")
    >>> tuple(attention(x, padding_mask=np.array([[1, 1, 1, 0]])).shape)
    (1, 4, 8)
    """

    def __init__(self, num_heads, dropout=0.0, initializer_range=0.02, causal=False,
                 use_bias=True, rotary_base=None, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.causal = causal
        self.use_bias = use_bias
        self.rotary_base = rotary_base
        self.dropout_layer = make_dropout(dropout, self.dtype_policy, "dropout")

    def build(self, x_shape, padding_mask_shape=None):
        hidden = x_shape[-1]
        if hidden % self.num_heads:
            raise ConfigError(f"hidden size {hidden} is not divisible by num_heads "
                              f"{self.num_heads}.")
        self.head_size = hidden // self.num_heads
        if self.rotary_base is not None and self.head_size % 2:
            raise ConfigError(f"rotary position embeddings need an even head size, got "
                              f"{self.head_size} (hidden {hidden} / {self.num_heads} heads).")
        self.qkv = keras.layers.EinsumDense(
            "bth,hknd->btknd", output_shape=(None, 3, self.num_heads, self.head_size),
            bias_axes="knd" if self.use_bias else None,
            kernel_initializer=truncated_normal(self.initializer_range), dtype=self.dtype_policy,
            name="qkv")
        self.qkv.build(x_shape)
        self.output_dense = keras.layers.EinsumDense(
            "btnd,ndh->bth", output_shape=(None, hidden),
            bias_axes="h" if self.use_bias else None,
            kernel_initializer=truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name="output")
        self.output_dense.build((*x_shape[:-1], self.num_heads, self.head_size))

    def call(self, x, padding_mask=None, training=None, cache=None, cache_index=None):
        qkv = self.qkv(x)  # (B, T, 3, N, D)
        q, k, v = ops.unstack(qkv, 3, axis=2)  # (B, T, N, D) each
        if self.rotary_base is not None:
            q, k = rotary_embedding(q, k, self.rotary_base, 0 if cache is None else cache_index)
        mask = None
        if padding_mask is not None:
            mask = ops.cast(padding_mask, "bool")[:, None, None, :]  # (B, 1, 1, S)
        explicit = bool(training and self.dropout > 0)
        if cache is not None:  # write this step's keys and values, attend over the whole cache
            start = ops.cast(cache_index, "int32")
            cache = ops.slice_update(cache, (0, 0, start, 0, 0), ops.stack((k, v), axis=1))
            k, v = ops.unstack(cache, 2, axis=1)  # (B, S, N, D) each
            mask = _and(mask, causal_mask(ops.shape(q)[1], ops.shape(k)[1], start))
        elif self.causal and explicit:
            mask = _and(mask, causal_mask(ops.shape(q)[1], ops.shape(k)[1]))
        is_causal = self.causal and cache is None and not explicit
        if explicit:
            context = self._explicit_attention(q, k, v, mask, training)
        else:
            context = ops.dot_product_attention(q, k, v, mask=mask,
                                                is_causal=is_causal)  # (B, T, N, D)
        output = self.output_dense(context)  # (B, T, H)
        return output if cache is None else (output, cache)

    def _explicit_attention(self, q, k, v, mask, training):
        # The scale goes on q (B, T, N, D) and the mask is added as a (B, 1, T|1, S) bias: two
        # fewer passes over the (B, N, T, S) scores, forward and backward, than scaling and
        # selecting the scores themselves.
        q = q * ops.cast(1.0 / math.sqrt(self.head_size), q.dtype)
        scores = ops.cast(ops.einsum("btnd,bsnd->bnts", q, k), "float32")  # (B, N, T, S)
        if mask is not None:
            scores = scores + ops.where(mask, 0.0, -1e9)
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.dropout_layer(probs, training=training)
        return ops.einsum("bnts,bsnd->btnd", probs, v)  # (B, T, N, D)

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update(num_heads=self.num_heads, dropout=self.dropout,
                      initializer_range=self.initializer_range, causal=self.causal,
                      use_bias=self.use_bias, rotary_base=self.rotary_base)
        return config


def causal_mask(query_length, key_length, offset=0):
    """``(1, 1, T, S)`` bool: query ``t`` (at position ``offset + t``) sees keys ``s ≤ offset + t``."""
    queries = ops.arange(query_length, dtype="int32")[:, None] + ops.cast(offset, "int32")
    keys = ops.arange(key_length, dtype="int32")[None, :]
    return ops.less_equal(keys, queries)[None, None]


def _and(mask, other):
    return other if mask is None else ops.logical_and(mask, other)
