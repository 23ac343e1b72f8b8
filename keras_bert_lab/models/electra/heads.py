"""ELECTRA's two pretraining pieces beside the generator's masked-LM head: the discriminator's
replaced-token head, and the layer that corrupts the input with the generator's samples.

Shapes: ``B`` batch, ``T`` tokens, ``P`` masked positions per sequence, ``H`` hidden, ``V`` vocab.
"""

import keras
from keras import ops

from keras_bert_lab.layers.common import counter_uniform, gelu, truncated_normal


@keras.saving.register_keras_serializable("keras_bert_lab")
class ReplacedTokenHead(keras.layers.Layer):
    """For every token, the logit that it was replaced: ``w · GELU(W h + b) + c`` (Clark et al.
    2020, §2: "the discriminator predicts whether each token is an original or a replacement";
    ``transformers``' ``ElectraDiscriminatorPredictions``).

    Args:
        hidden_size: ``H``. initializer_range: truncated-normal stddev.

    Example:
    >>> import numpy as np
    >>> tuple(ReplacedTokenHead(8)(np.zeros((2, 5, 8), "float32")).shape)
    (2, 5)
    """

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size, self.initializer_range = hidden_size, initializer_range
        self.dense = keras.layers.Dense(hidden_size, activation=gelu, dtype=self.dtype_policy,
                                        kernel_initializer=truncated_normal(initializer_range),
                                        name="dense")
        self.prediction = keras.layers.Dense(1, dtype=self.dtype_policy, name="prediction",
                                             kernel_initializer=truncated_normal(initializer_range))

    def build(self, sequence_output_shape):
        self.dense.build(sequence_output_shape)
        self.prediction.build((*sequence_output_shape[:-1], self.hidden_size))

    def call(self, sequence_output):
        logits = self.prediction(self.dense(sequence_output))[..., 0]   # (B, T)
        return ops.cast(logits, "float32")

    def compute_output_shape(self, sequence_output_shape):
        return tuple(sequence_output_shape[:-1])

    def get_config(self):
        return {**super().get_config(), "hidden_size": self.hidden_size,
                "initializer_range": self.initializer_range}


@keras.saving.register_keras_serializable("keras_bert_lab")
class ReplaceTokens(keras.layers.Layer):
    """Put a token sampled from the generator at every masked position; say which tokens differ
    from the original text.

    The sample is drawn from ``softmax(logits / temperature)`` — in training by the Gumbel-max
    trick from the layer's seed generator, otherwise by the inverse CDF at one uniform per
    masked position, a hash of the position and its original token
    (:func:`~keras_bert_lab.layers.common.counter_uniform`: held-out metrics and ``predict`` give
    the same values at every call, and on every backend but for float rounding at a CDF
    boundary) — and carries no gradient: the generator learns from its masked-LM loss only (the
    paper trains it by maximum likelihood, not adversarially, §2). A sampled token that equals the original counts
    as *original* — ELECTRA's labels — so the discriminator is not asked to find a replacement that
    is not there. Masked positions of weight 0 (padding of ``mask_positions``) change nothing.

    Inputs: ``token_ids`` (B, T), the masked input; ``mask_positions``, ``mask_ids`` (the
    original tokens there), ``mask_weights`` (B, P); ``logits`` (B, P, V), the generator's.
    Returns ``(corrupted token_ids (B, T) int32, replaced (B, T) float32 in {0, 1})``.

    Args:
        temperature: of the sampling softmax (ELECTRA: 1). seed: of the sampling.

    Example:
    >>> import numpy as np
    >>> logits = np.full((1, 2, 6), -1e4, "float32"); logits[0, 0, 4] = logits[0, 1, 3] = 0
    >>> ids, replaced = ReplaceTokens(seed=0)(np.array([[1, 5, 5, 2]]), np.array([[1, 2]]),
    ...                                       np.array([[3, 3]]), np.ones((1, 2)), logits)
    >>> keras.ops.convert_to_numpy(ids).tolist(), keras.ops.convert_to_numpy(replaced).tolist()
    ([[1, 4, 3, 2]], [[0.0, 1.0, 0.0, 0.0]])
    """

    def __init__(self, temperature=1.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.temperature, self.seed = float(temperature), seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, token_ids, mask_positions, mask_ids, mask_weights, logits, training=None):
        logits = ops.stop_gradient(ops.cast(logits, "float32")) / self.temperature
        if training:   # Gumbel-max: one uniform per vocabulary entry
            uniform = keras.random.uniform(ops.shape(logits), minval=1e-9, maxval=1.0,
                                           seed=self.seed_generator)
            sampled = ops.argmax(logits - ops.log(-ops.log(uniform)), axis=-1)   # (B, P)
        else:   # the same sample for the same row, wherever it is in the batch, on every backend:
            # inverse CDF with one hashed uniform per (original token, position)
            salt = ops.cast(mask_ids, "int32") * 65599 + ops.cast(mask_positions, "int32")
            uniform = counter_uniform((1,), salt[..., None])                      # (B, P, 1)
            cdf = ops.cumsum(ops.softmax(logits, axis=-1), axis=-1)              # (B, P, V)
            below = ops.cast(ops.less(cdf, uniform * cdf[..., -1:]), "int32")
            sampled = ops.minimum(ops.sum(below, axis=-1), ops.shape(logits)[-1] - 1)
        sampled = ops.cast(sampled, "int32")
        length = ops.shape(token_ids)[1]
        # (B, P, T): which token each real masked position writes
        where = ops.one_hot(ops.cast(mask_positions, "int32"), length, dtype="int32") \
            * ops.cast(ops.greater(mask_weights, 0), "int32")[..., None]
        masked = ops.greater(ops.max(where, axis=1), 0)                          # (B, T)
        # max, not sum: a position listed twice still writes a token id of the vocabulary
        written = ops.max(where * sampled[..., None], axis=1)
        original = ops.max(where * ops.cast(mask_ids, "int32")[..., None], axis=1)
        token_ids = ops.cast(token_ids, "int32")
        corrupted = ops.where(masked, written, token_ids)
        replaced = ops.logical_and(masked, ops.not_equal(written, original))
        return corrupted, ops.cast(replaced, "float32")

    def compute_output_spec(self, token_ids, *inputs):
        shape = tuple(token_ids.shape)
        return (keras.KerasTensor(shape, dtype="int32"),
                keras.KerasTensor(shape, dtype="float32"))

    def get_config(self):
        return {**super().get_config(), "temperature": self.temperature, "seed": self.seed}
