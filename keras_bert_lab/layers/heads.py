"""Pretraining heads: the masked-LM head (decoder tied to the token embedding).

Shapes: ``B`` batch, ``T`` tokens, ``P`` masked positions per sequence, ``H`` hidden, ``E``
embedding width, ``V`` vocab.
"""

import keras
from keras import ops

from keras_bert_lab.layers.common import gelu, tied_logits, truncated_normal


@keras.saving.register_keras_serializable("keras_bert_lab")
class MaskedLMHead(keras.layers.Layer):
    """Predict the original token at each masked position (Devlin et al. 2019, §3.1, task #1).

    The hidden state at each position in ``mask_positions`` is gathered *first* and only those
    ``P`` vectors go through ``dense → GELU → LayerNorm`` and the ``E × V`` vocabulary projection:
    scoring every token would cost ``T / P`` (≈ 6×) more in the largest matmul of pretraining. The
    projection reuses the token-embedding matrix (weight tying, Press & Wolf 2017) plus a learned
    output bias, so the head owns only ``H·E + 3E + V`` weights. ``E``, the embedding width, is
    ``H`` in BERT; ELECTRA's generator is narrower than its embedding, and ``dense`` maps
    ``H → E``.

    Args:
        token_embedding: the backbone's ``keras.layers.Embedding`` whose matrix is the decoder.
        layer_norm_epsilon: LayerNorm epsilon. initializer_range: truncated-normal stddev.

    Example:
    >>> import numpy as np, keras
    >>> embedding = keras.layers.Embedding(50, 8); embedding.build((None,))
    >>> head = MaskedLMHead(embedding)
    >>> tuple(head(np.zeros((2, 6, 8), "float32"), np.array([[1, 3], [0, 0]])).shape)
    (2, 2, 50)
    """

    def __init__(self, token_embedding, layer_norm_epsilon=1e-12, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.vocabulary_size, self.hidden_size = token_embedding.input_dim, token_embedding.output_dim
        self.transform = keras.layers.Dense(
            self.hidden_size, activation=gelu, dtype=self.dtype_policy, name="transform",
            kernel_initializer=truncated_normal(initializer_range))
        self.norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="norm")

    def build(self, sequence_output_shape, mask_positions_shape=None):
        # The input may be narrower than the embedding (ELECTRA's generator): ``transform``
        # maps its width to the embedding's.
        self.transform.build((sequence_output_shape[0], None, sequence_output_shape[-1]))
        self.norm.build((sequence_output_shape[0], None, self.hidden_size))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.vocabulary_size,),
                                           initializer="zeros")

    def call(self, sequence_output, mask_positions):
        # (B, T, H) gathered at (B, P) -> (B, P, H), as rows of the flattened (B·T, H): one gather
        # whose gradient adds rows back. ``take_along_axis`` broadcasts the indices to (B, P, H)
        # and, on TensorFlow, transposes the whole (B, T, H) output forward and back.
        shape = ops.shape(sequence_output)
        # Clipped so that a bad position cannot reach into the next sequence's rows.
        positions = ops.clip(ops.cast(mask_positions, "int32"), 0, shape[1] - 1)
        rows = positions + ops.arange(shape[0], dtype="int32")[:, None] * shape[1]
        flat = ops.reshape(sequence_output, (-1, shape[-1]))
        x = ops.reshape(ops.take(flat, ops.reshape(rows, (-1,)), axis=0), (shape[0], -1, shape[-1]))
        x = self.norm(self.transform(x))
        embeddings = ops.cast(ops.convert_to_tensor(self.token_embedding.embeddings), self.compute_dtype)  # (V, H)
        logits = tied_logits(x, embeddings)  # (B, P, V)
        # Logits leave in float32 so that the softmax cross-entropy is stable under mixed precision.
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def compute_output_shape(self, sequence_output_shape, mask_positions_shape):
        return (*mask_positions_shape, self.vocabulary_size)

    def get_config(self):
        # The tied embedding is not serialised here: the task that owns this head rebuilds it from
        # its backbone (see BertPretrainer.from_config).
        config = super().get_config()
        config.update(layer_norm_epsilon=self.layer_norm_epsilon,
                      initializer_range=self.initializer_range)
        return config
