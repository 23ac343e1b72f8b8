"""GPT-1's layers: token + position embedding, the post-LN decoder block, the tied LM head.

Shapes: ``B`` batch, ``T`` tokens, ``S`` cached positions, ``H`` hidden, ``I`` feed-forward
width, ``N`` heads, ``D`` head size, ``V`` vocabulary, ``P`` positions.
"""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError, renamed
from keras_bert_lab.layers.attention import MultiHeadSelfAttention
from keras_bert_lab.layers.common import dropout as make_dropout
from keras_bert_lab.layers.common import tied_logits, truncated_normal


def activation_function(name):
    """The feed-forward activation named as in ``GPTConfig.activation``.

    ``"gelu"`` is the tanh approximation ``0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`` that
    GPT-1's code used (``transformers``' ``gelu_new``); ``"gelu_exact"`` is the erf form of BERT.
    """
    functions = {
        "gelu": lambda x: keras.activations.gelu(x, approximate=True),
        "gelu_exact": lambda x: keras.activations.gelu(x, approximate=False),
        "relu": keras.activations.relu, "silu": keras.activations.silu,
        "swish": keras.activations.silu,
    }
    if name not in functions:
        raise ConfigError(f"Unknown activation {name!r}; choose one of {sorted(functions)}.")
    return functions[name]


@keras.saving.register_keras_serializable("keras_bert_lab")
class TokenAndPositionEmbedding(keras.layers.Layer):
    """Sum of a token and a learned position embedding, then dropout (GPT-1, Radford et al. 2018).

    ``h₀ = U·W_e + W_p`` in the paper's notation (§3.1): no segment table and no LayerNorm, unlike
    BERT. ``start_index`` shifts the positions, so a decoder fed one token at a time (with a
    key/value cache) still gives token ``t`` position ``t``.

    Args:
        vocabulary_size: ``V``. hidden_size: ``H``. max_positions: ``P``.
        dropout: rate on the sum. initializer_range: truncated-normal stddev.

    Example:
    >>> import numpy as np
    >>> layer = TokenAndPositionEmbedding(vocabulary_size=100, hidden_size=8, max_positions=16)
    >>> tuple(layer(np.array([[2, 5, 3]])).shape)
    (1, 3, 8)
    """

    def __init__(self, vocabulary_size, hidden_size, max_positions, dropout=0.0,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_size = hidden_size
        self.max_positions = max_positions
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_size, embeddings_initializer=truncated_normal(initializer_range),
            dtype=self.dtype_policy, name="token_embedding")
        self.dropout_layer = make_dropout(dropout, self.dtype_policy, "dropout")

    def build(self, token_ids_shape):
        self.token_embedding.build(token_ids_shape)
        self.position_embedding = self.add_weight(
            name="position_embedding", shape=(self.max_positions, self.hidden_size),
            initializer=truncated_normal(self.initializer_range))

    def call(self, token_ids, start_index=0, training=None):
        length = ops.shape(token_ids)[1]
        table = ops.convert_to_tensor(self.position_embedding)  # (P, H)
        start = ops.cast(start_index, "int32")
        positions = ops.slice(table, (start, 0), (length, self.hidden_size))  # (T, H)
        x = self.token_embedding(token_ids) + ops.cast(positions, self.compute_dtype)[None]
        return self.dropout_layer(x, training=training)  # (B, T, H)

    def compute_output_shape(self, token_ids_shape):
        return (*token_ids_shape, self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_size=self.vocabulary_size, hidden_size=self.hidden_size,
                      max_positions=self.max_positions, dropout=self.dropout,
                      initializer_range=self.initializer_range)
        return config

    @classmethod
    def from_config(cls, config):
        return super().from_config(renamed(config, warn=False))   # a model saved with vocab_size


@keras.saving.register_keras_serializable("keras_bert_lab")
class TransformerDecoderBlock(keras.layers.Layer):
    """GPT-1's block: causal self-attention then feed-forward, each ``LayerNorm(x + f(x))``.

    GPT-1 kept the original Transformer's post-LN order (``n = ln_1(x + attn(x))``, ``h = ln_2(n
    + mlp(n))``); GPT-2 moved the norms before each sub-layer. The attention is masked so that
    token ``t`` sees tokens ``≤ t`` only — what makes the stack a left-to-right language model.
    With ``cache`` (B, 2, S, N, D) and ``cache_index`` the block runs one generation step and
    returns ``(output, updated cache)`` (see ``MultiHeadSelfAttention``).

    Args:
        num_heads: attention heads. intermediate_size: feed-forward width ``I``.
        dropout: rate on both sub-layer outputs. attention_dropout: rate on attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon. initializer_range: truncated-normal stddev.
        activation: the feed-forward activation's name (see :func:`activation_function`).

    Example:
    >>> import numpy as np
    >>> block = TransformerDecoderBlock(num_heads=2, intermediate_size=32)
    >>> tuple(block(np.zeros((1, 3, 8), "float32")).shape)
    (1, 3, 8)
    """

    def __init__(self, num_heads, intermediate_size, dropout=0.0, attention_dropout=0.0,
                 layer_norm_epsilon=1e-5, initializer_range=0.02, activation="gelu", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.activation = activation
        policy = self.dtype_policy
        self.attention = MultiHeadSelfAttention(
            num_heads, dropout=attention_dropout, initializer_range=initializer_range,
            causal=True, dtype=policy, name="attention")
        self.attention_dropout_layer = make_dropout(dropout, policy, "attention_output_dropout")
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="attention_norm")
        self.ffn_in = keras.layers.Dense(
            intermediate_size, activation=activation_function(activation),
            kernel_initializer=truncated_normal(initializer_range), dtype=policy, name="ffn_in")
        self.ffn_out = None  # needs H: made in build()
        self.ffn_dropout = make_dropout(dropout, policy, "ffn_dropout")
        self.ffn_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=policy, name="ffn_norm")

    def build(self, x_shape, padding_mask_shape=None):
        hidden = x_shape[-1]
        self.attention.build(x_shape)
        self.attention_norm.build(x_shape)
        self.ffn_in.build(x_shape)
        self.ffn_out = keras.layers.Dense(
            hidden, kernel_initializer=truncated_normal(self.initializer_range),
            dtype=self.dtype_policy, name="ffn_out")
        self.ffn_out.build((*x_shape[:-1], self.intermediate_size))
        self.ffn_norm.build(x_shape)

    def call(self, x, padding_mask=None, training=None, cache=None, cache_index=None):
        attended = self.attention(x, padding_mask=padding_mask, training=training, cache=cache,
                                  cache_index=cache_index)  # (B, T, H) [, (B, 2, S, N, D)]
        if cache is not None:
            attended, cache = attended
        x = self.attention_norm(x + self.attention_dropout_layer(attended, training=training))
        transformed = self.ffn_out(self.ffn_in(x))  # (B, T, I) -> (B, T, H)
        x = self.ffn_norm(x + self.ffn_dropout(transformed, training=training))
        return x if cache is None else (x, cache)

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update(num_heads=self.num_heads, intermediate_size=self.intermediate_size,
                      dropout=self.dropout, attention_dropout=self.attention_dropout,
                      layer_norm_epsilon=self.layer_norm_epsilon,
                      initializer_range=self.initializer_range, activation=self.activation)
        return config


@keras.saving.register_keras_serializable("keras_bert_lab")
class TiedLMHead(keras.layers.Layer):
    """Next-token logits ``h·W_eᵀ (+ b)``: the token embedding read backwards (GPT-1, eq. 2).

    GPT-1 ties the output projection to the input embedding and adds no bias; with the default
    ``use_bias=False`` the head owns no weights and is GPT-1 exactly. ``use_bias=True`` adds a
    learned ``(V,)`` bias (zeros until set), which small post-LN models trained from scratch
    need: without it the stack must build the unigram log-probabilities as one shared direction
    of every final state, and that direction drowns the token signal within ~10 steps (a
    GPT-mini on WikiText-2 collapsed to the unigram model, perplexity 914; with the bias started
    at the log unigram it reached 312 in the same 220 steps — issue 15). Logits leave in float32
    so the softmax cross-entropy is stable under mixed precision.

    Args:
        token_embedding: the backbone's ``keras.layers.Embedding`` (V, H).
        use_bias: add a learned output bias ``b`` (V,).

    Example:
    >>> import numpy as np, keras
    >>> embedding = keras.layers.Embedding(50, 8); embedding.build((None,))
    >>> tuple(TiedLMHead(embedding)(np.zeros((2, 6, 8), "float32")).shape)
    (2, 6, 50)
    >>> head = TiedLMHead(embedding, use_bias=True)
    >>> tuple(head(np.zeros((2, 6, 8), "float32")).shape), tuple(head.bias.shape)
    ((2, 6, 50), (50,))
    """

    def __init__(self, token_embedding, use_bias=False, **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.use_bias = bool(use_bias)
        self.vocabulary_size = token_embedding.input_dim
        self.bias = None

    def build(self, hidden_shape):
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=(self.vocabulary_size,),
                                        initializer="zeros")

    def call(self, hidden):  # (B, T, H) -> (B, T, V)
        table = ops.cast(ops.convert_to_tensor(self.token_embedding.embeddings),
                         self.compute_dtype)  # (V, H)
        logits = ops.cast(tied_logits(hidden, table), "float32")
        return logits if self.bias is None else logits + ops.cast(self.bias, "float32")

    def compute_output_shape(self, hidden_shape):
        return (*hidden_shape[:-1], self.vocabulary_size)

    def get_config(self):
        # The tied embedding is not serialised: the task rebuilds the head from its backbone.
        config = super().get_config()
        config.update(use_bias=self.use_bias)
        return config
