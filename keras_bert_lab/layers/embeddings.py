"""BERT's input embedding: token + segment + learned position, then LayerNorm and dropout.

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden, ``V`` vocabulary, ``P`` positions.
"""

import keras
from keras import ops

from keras_bert_lab.errors import renamed
from keras_bert_lab.layers.common import dropout as make_dropout
from keras_bert_lab.layers.common import truncated_normal


@keras.saving.register_keras_serializable("keras_bert_lab")
class BertEmbedding(keras.layers.Layer):
    """Sum of token, segment and position embeddings, normalised (Devlin et al. 2019, fig. 2).

    BERT learns its position table (unlike the Transformer's sinusoids), so a model cannot read
    sequences longer than ``max_positions``. The token table is exposed as ``token_embedding`` so
    the masked-LM head can tie its decoder to it.

    ``learned_positions=False`` leaves the position table out, for a model whose attention
    rotates queries and keys by position instead (rotary embeddings); ``use_bias=False`` drops the
    LayerNorm's shift (``center=False``).

    Args:
        vocabulary_size: ``V``. hidden_size: ``H``. max_positions: ``P``.
        type_vocab_size: number of segments. dropout: rate after the LayerNorm.
        layer_norm_epsilon: LayerNorm epsilon. initializer_range: truncated-normal stddev.
        learned_positions: add the learned ``(P, H)`` position table.
        use_bias: give the LayerNorm a shift ``β``.

    Example:
    >>> import numpy as np
    >>> layer = BertEmbedding(vocabulary_size=100, hidden_size=8, max_positions=16)
    >>> tuple(layer(np.array([[2, 5, 3]]), np.array([[0, 0, 1]])).shape)
    (1, 3, 8)
    >>> unordered = BertEmbedding(100, 8, 16, learned_positions=False, use_bias=False)
    >>> unordered.build((1, 3)); [w.path.split("/", 1)[1] for w in unordered.weights]
    ['token_embedding/embeddings', 'segment_embedding/embeddings', 'norm/gamma']
    """

    def __init__(self, vocabulary_size, hidden_size, max_positions, type_vocab_size=2, dropout=0.0,
                 layer_norm_epsilon=1e-12, initializer_range=0.02, learned_positions=True,
                 use_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_size = hidden_size
        self.max_positions = max_positions
        self.type_vocab_size = type_vocab_size
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.learned_positions = learned_positions
        self.use_bias = use_bias
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_size, embeddings_initializer=truncated_normal(initializer_range), dtype=self.dtype_policy,
            name="token_embedding")
        self.segment_embedding = keras.layers.Embedding(
            type_vocab_size, hidden_size, embeddings_initializer=truncated_normal(initializer_range), dtype=self.dtype_policy,
            name="segment_embedding")
        self.norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, center=use_bias, dtype=self.dtype_policy, name="norm")
        self.dropout_layer = make_dropout(dropout, self.dtype_policy, "dropout")

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        self.position_embedding = None
        if self.learned_positions:
            self.position_embedding = self.add_weight(
                name="position_embedding", shape=(self.max_positions, self.hidden_size),
                initializer=truncated_normal(self.initializer_range))
        self.norm.build((*token_ids_shape, self.hidden_size))

    def call(self, token_ids, segment_ids, training=None):
        if self.position_embedding is None:
            x = self.token_embedding(token_ids) + self.segment_embedding(segment_ids)  # (B, T, H)
            return self.dropout_layer(self.norm(x), training=training)
        length = ops.shape(token_ids)[1]
        table = ops.convert_to_tensor(self.position_embedding)  # (P, H)
        positions = ops.slice(table, (0, 0), (length, self.hidden_size))  # (T, H)
        x = (self.token_embedding(token_ids) + self.segment_embedding(segment_ids)
             + ops.cast(positions, self.compute_dtype)[None])  # (B, T, H)
        return self.dropout_layer(self.norm(x), training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return (*token_ids_shape, self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(vocabulary_size=self.vocabulary_size, hidden_size=self.hidden_size,
                      max_positions=self.max_positions, type_vocab_size=self.type_vocab_size,
                      dropout=self.dropout, layer_norm_epsilon=self.layer_norm_epsilon,
                      initializer_range=self.initializer_range,
                      learned_positions=self.learned_positions, use_bias=self.use_bias)
        return config

    @classmethod
    def from_config(cls, config):
        return super().from_config(renamed(config, warn=False))   # a model saved with vocab_size
