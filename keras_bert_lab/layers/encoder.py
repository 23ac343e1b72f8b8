"""The Transformer encoder block of BERT, and its modern variants (pre-LN, GEGLU, no biases).

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden, ``I`` feed-forward width.
"""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.attention import MultiHeadSelfAttention
from keras_bert_lab.layers.common import dropout as make_dropout
from keras_bert_lab.layers.common import gelu, truncated_normal

FEEDFORWARDS = ("gelu", "geglu")


@keras.saving.register_keras_serializable("keras_bert_lab")
class TransformerEncoderBlock(keras.layers.Layer):
    """Self-attention then feed-forward, each wrapped as ``LayerNorm(x + Dropout(f(x)))``.

    BERT normalises *after* each residual sum (post-LN, as in Vaswani et al. 2017), unlike GPT-2 and
    most later models which normalise before. Post-LN is why BERT needs a learning-rate warm-up.

    ``norm_first=True`` is that pre-LN order, ``x + Dropout(f(LayerNorm(x)))`` (Xiong et al. 2020:
    the residual path stays an identity, so gradients keep their scale through depth and training
    is stable without warm-up); the block's output is then *not* normalised, so a pre-LN stack
    ends with one more LayerNorm (the backbone's ``final_norm``). ``normalize_input=False`` skips
    the LayerNorm before attention, for the first block after an embedding that is itself
    normalised (ModernBERT's first layer). ``feedforward="geglu"`` is the gated feed-forward of
    Shazeer (2020), ``W_o·(GELU(x·W_in) ⊙ x·W_gate)``: ``ffn_in`` projects to ``2·I``, its first
    half the input, its second the gate (ModernBERT's ``Wi`` layout). ``use_bias=False`` drops
    every bias: projections, feed-forward and LayerNorm shifts (``center=False``). Dropout stays
    on the branch outputs, BERT's place; ModernBERT puts its feed-forward dropout before ``W_o``.

    Args:
        num_heads: attention heads. intermediate_size: feed-forward width ``I``.
        dropout: rate on both sub-layer outputs. attention_dropout: rate on attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon. initializer_range: truncated-normal stddev.
        norm_first: pre-LN instead of BERT's post-LN.
        use_bias: biases in the projections, feed-forward and LayerNorms.
        feedforward: ``"gelu"`` (BERT: ``W_o·GELU(x·W_in)``) or ``"geglu"``.
        rotary_base: ``None``, or the base of rotary position embeddings in the attention.
        normalize_input: pre-LN only — LayerNorm the input before attention.

    Example:
    >>> import numpy as np
    >>> block = TransformerEncoderBlock(num_heads=2, intermediate_size=32)
    >>> tuple(block(np.zeros((1, 3, 8), "float32"), padding_mask=np.ones((1, 3))).shape)
    (1, 3, 8)
    >>> modern = TransformerEncoderBlock(num_heads=2, intermediate_size=32, norm_first=True,
    ...                                  use_bias=False, feedforward="geglu", rotary_base=1e4)
    >>> tuple(modern(np.ones((1, 3, 8), "float32")).shape), tuple(modern.ffn_in.kernel.shape)
    ((1, 3, 8), (8, 64))
    """

    def __init__(self, num_heads, intermediate_size, dropout=0.0, attention_dropout=0.0,
                 layer_norm_epsilon=1e-12, initializer_range=0.02, norm_first=False,
                 use_bias=True, feedforward="gelu", rotary_base=None, normalize_input=True,
                 **kwargs):
        super().__init__(**kwargs)
        if feedforward not in FEEDFORWARDS:
            raise ConfigError(f"feedforward must be one of {list(FEEDFORWARDS)}, got "
                              f"{feedforward!r}.")
        if not (normalize_input or norm_first):
            raise ConfigError("normalize_input=False needs norm_first=True: a post-LN block "
                              "always normalises after attention.")
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.norm_first = norm_first
        self.use_bias = use_bias
        self.feedforward = feedforward
        self.rotary_base = rotary_base
        self.normalize_input = normalize_input
        policy = self.dtype_policy
        self.attention = MultiHeadSelfAttention(
            num_heads, dropout=attention_dropout, initializer_range=initializer_range,
            use_bias=use_bias, rotary_base=rotary_base, dtype=policy, name="attention")
        self.attention_dropout_layer = make_dropout(dropout, policy, "attention_output_dropout")
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, center=use_bias, dtype=policy,
            name="attention_norm") if normalize_input else None
        gated = feedforward == "geglu"
        self.ffn_in = keras.layers.Dense((2 if gated else 1) * intermediate_size,
                                         activation=None if gated else gelu, use_bias=use_bias,
                                         kernel_initializer=truncated_normal(initializer_range),
                                         dtype=policy, name="ffn_in")
        self.ffn_out = None  # needs H: made in build()
        self.ffn_dropout = make_dropout(dropout, policy, "ffn_dropout")
        self.ffn_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, center=use_bias, dtype=policy, name="ffn_norm")

    def build(self, x_shape, padding_mask_shape=None):
        hidden = x_shape[-1]
        self.attention.build(x_shape)
        if self.attention_norm is not None:
            self.attention_norm.build(x_shape)
        self.ffn_in.build(x_shape)
        self.ffn_out = keras.layers.Dense(
            hidden, use_bias=self.use_bias,
            kernel_initializer=truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name="ffn_out")
        self.ffn_out.build((*x_shape[:-1], self.intermediate_size))
        self.ffn_norm.build(x_shape)

    def call(self, x, padding_mask=None, training=None):  # x: (B, T, H)
        if self.norm_first:
            normed = x if self.attention_norm is None else self.attention_norm(x)
            attended = self.attention(normed, padding_mask=padding_mask, training=training)
            x = x + self.attention_dropout_layer(attended, training=training)
            transformed = self._feedforward(self.ffn_norm(x))
            return x + self.ffn_dropout(transformed, training=training)
        attended = self.attention(x, padding_mask=padding_mask, training=training)
        x = self.attention_norm(x + self.attention_dropout_layer(attended, training=training))
        transformed = self._feedforward(x)
        return self.ffn_norm(x + self.ffn_dropout(transformed, training=training))

    def _feedforward(self, x):  # (B, T, H) -> (B, T, I) [or (B, T, 2I) -> (B, T, I)] -> (B, T, H)
        x = self.ffn_in(x)
        if self.feedforward == "geglu":
            inputs, gate = ops.split(x, 2, axis=-1)
            x = gelu(inputs) * gate
        return self.ffn_out(x)

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update(num_heads=self.num_heads, intermediate_size=self.intermediate_size,
                      dropout=self.dropout, attention_dropout=self.attention_dropout,
                      layer_norm_epsilon=self.layer_norm_epsilon,
                      initializer_range=self.initializer_range, norm_first=self.norm_first,
                      use_bias=self.use_bias, feedforward=self.feedforward,
                      rotary_base=self.rotary_base, normalize_input=self.normalize_input)
        return config
