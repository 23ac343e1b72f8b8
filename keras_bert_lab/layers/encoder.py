"""The post-LN Transformer encoder block of BERT.

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden, ``I`` feed-forward width.
"""

import keras

from keras_bert_lab.layers.attention import MultiHeadSelfAttention
from keras_bert_lab.layers.common import dropout as make_dropout
from keras_bert_lab.layers.common import gelu, truncated_normal


@keras.saving.register_keras_serializable("keras_bert_lab")
class TransformerEncoderBlock(keras.layers.Layer):
    """Self-attention then feed-forward, each wrapped as ``LayerNorm(x + Dropout(f(x)))``.

    BERT normalises *after* each residual sum (post-LN, as in Vaswani et al. 2017), unlike GPT-2 and
    most later models which normalise before. Post-LN is why BERT needs a learning-rate warm-up.

    Args:
        num_heads: attention heads. intermediate_size: feed-forward width ``I``.
        dropout: rate on both sub-layer outputs. attention_dropout: rate on attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon. initializer_range: truncated-normal stddev.

    Example:
    >>> import numpy as np
    >>> block = TransformerEncoderBlock(num_heads=2, intermediate_size=32)
    >>> tuple(block(np.zeros((1, 3, 8), "float32"), padding_mask=np.ones((1, 3))).shape)
    (1, 3, 8)
    """

    def __init__(self, num_heads, intermediate_size, dropout=0.0, attention_dropout=0.0,
                 layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        policy = self.dtype_policy
        self.attention = MultiHeadSelfAttention(
            num_heads, dropout=attention_dropout, initializer_range=initializer_range,
            dtype=policy, name="attention")
        self.attention_dropout_layer = make_dropout(dropout, policy, "attention_output_dropout")
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="attention_norm")
        self.ffn_in = keras.layers.Dense(intermediate_size, activation=gelu,
                                         kernel_initializer=truncated_normal(initializer_range),
                                         dtype=policy, name="ffn_in")
        self.ffn_out = None  # needs H: made in build()
        self.ffn_dropout = make_dropout(dropout, policy, "ffn_dropout")
        self.ffn_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="ffn_norm")

    def build(self, x_shape, padding_mask_shape=None):
        hidden = x_shape[-1]
        self.attention.build(x_shape)
        self.attention_norm.build(x_shape)
        self.ffn_in.build(x_shape)
        self.ffn_out = keras.layers.Dense(hidden, kernel_initializer=truncated_normal(self.initializer_range),
                                          dtype=self.dtype_policy, name="ffn_out")
        self.ffn_out.build((*x_shape[:-1], self.intermediate_size))
        self.ffn_norm.build(x_shape)

    def call(self, x, padding_mask=None, training=None):  # x: (B, T, H)
        attended = self.attention(x, padding_mask=padding_mask, training=training)
        x = self.attention_norm(x + self.attention_dropout_layer(attended, training=training))
        transformed = self.ffn_out(self.ffn_in(x))  # (B, T, I) -> (B, T, H)
        return self.ffn_norm(x + self.ffn_dropout(transformed, training=training))

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update(num_heads=self.num_heads, intermediate_size=self.intermediate_size,
                      dropout=self.dropout, attention_dropout=self.attention_dropout,
                      layer_norm_epsilon=self.layer_norm_epsilon,
                      initializer_range=self.initializer_range)
        return config
