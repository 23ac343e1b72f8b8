"""word2vec (Mikolov et al. 2013): skip-gram or CBOW with negative sampling, as a Keras model.

Two tables of ``vocabulary_size × dim`` vectors: the *input* vectors (the word vectors a user
keeps) and the *output* vectors (used only to score (word, context) pairs). A training example
is one (context → center) pair — or, for CBOW, a window of context words averaged into one
vector — scored against the true center word and ``negatives`` noise words:

    loss = −log σ(u_center · v) − Σ_k log σ(−u_noise_k · v)

where ``v`` is the input vector (CBOW: the mean of the window's input vectors) and ``u`` the
output vectors. The loss is *summed* over the batch (``reduction="sum"``), so the learning rate
means what it means in word2vec.c and gensim (0.025 for skip-gram, 0.05 for CBOW): the step
each pair contributes, not a rate divided by the batch size.

Noise words come with the data (see :mod:`keras_bert_lab.pipelines.word2vec`), in one of two
shapes: ``(batch, negatives)`` — each pair its own noise words, as in word2vec.c — or
``(batch, 1)`` rows holding one shared pool of ``pool`` noise words per batch (``shared``): every
pair is scored against the whole pool with one matrix product, its noise term scaled by
``negatives / pool`` so that the expected gradient equals the per-pair one.

Initialisation follows word2vec.c: input vectors uniform in ``±0.5 / dim``, output vectors zero.

Example:
>>> import numpy as np
>>> model = Word2Vec(vocabulary_size=50, dim=8, negatives=3)
>>> batch = {"center": np.array([1, 2]), "context": np.array([[3], [4]]),
...          "negatives": np.array([[5, 6, 7], [8, 9, 10]])}
>>> [int(n) for n in model(batch).shape]   # the pair's score, then its 3 noise scores
[2, 4]
>>> model.vectors.shape
(50, 8)
"""

import keras
import numpy as np
from keras import ops

from keras_bert_lab.errors import ConfigError

ARCHITECTURES = ("skipgram", "cbow")


@keras.saving.register_keras_serializable("keras_bert_lab")
class NegativeSamplingLoss(keras.losses.Loss):
    """−log σ(s₀) − Σ_k w_k log σ(−s_k) per example, summed over the batch: ``logits[:, 0]`` is
    the true pair's score and ``y_true`` holds the weight of each noise score (1 as in
    word2vec.c; ``k / pool`` for a shared pool)."""

    def __init__(self, reduction="sum", name="negative_sampling", **kwargs):
        super().__init__(reduction=reduction, name=name, **kwargs)

    def call(self, y_true, logits):
        positive = -ops.log_sigmoid(logits[:, 0])
        weights = ops.cast(y_true, logits.dtype)
        return positive - ops.sum(weights * ops.log_sigmoid(-logits[:, 1:]), axis=-1)


@keras.saving.register_keras_serializable("keras_bert_lab")
class Word2Vec(keras.Model):
    """Skip-gram or CBOW with negative sampling (see the module docstring).

    Args:
        vocabulary_size: rows of each table. dim: vector size. negatives: noise words per pair
        (``k``). architecture: ``"skipgram"`` or ``"cbow"``. window: CBOW's widest window (its
        context input holds ``2 * window`` ids, ``-1`` for padding); unused by skip-gram.
        shared_pool: 0 for per-pair noise words, else the size of the batch's shared noise pool.

    Inputs: ``center`` (batch,) — the word predicted; ``context`` (batch, 1) for skip-gram (the
    word it is predicted from), (batch, 2·window) for CBOW; ``negatives`` (batch, negatives), or
    (batch, 1) with the pool spread over the first rows when ``shared_pool``. Output: scores
    (batch, 1 + negatives) or (batch, 1 + pool).
    """

    def __init__(self, vocabulary_size, dim=100, negatives=5, architecture="skipgram", window=5,
                 shared_pool=0, **kwargs):
        if architecture not in ARCHITECTURES:
            raise ConfigError(f"architecture={architecture!r}; choose one of {ARCHITECTURES}.")
        for name, value in (("vocabulary_size", vocabulary_size), ("dim", dim),
                            ("negatives", negatives), ("window", window)):
            if int(value) < 1:
                raise ConfigError(f"{name} must be at least 1, got {value}.")
        if shared_pool and shared_pool < negatives:
            raise ConfigError(f"shared_pool={shared_pool} must be 0 (per-pair noise words) or at "
                              f"least negatives={negatives}.")
        width = 2 * window if architecture == "cbow" else 1
        center = keras.Input((), dtype="int32", name="center")
        context = keras.Input((width,), dtype="int32", name="context")
        noise = keras.Input((1 if shared_pool else negatives,), dtype="int32", name="negatives")
        input_table = keras.layers.Embedding(
            vocabulary_size, dim, name="input_vectors",
            embeddings_initializer=keras.initializers.RandomUniform(-0.5 / dim, 0.5 / dim))
        output_table = keras.layers.Embedding(vocabulary_size, dim, name="output_vectors",
                                              embeddings_initializer="zeros")
        scores = _Scores(shared_pool, name="scores")(
            input_table(ops.maximum(context, 0)), context, output_table(center),
            output_table(noise))
        super().__init__(inputs={"center": center, "context": context, "negatives": noise},
                         outputs=scores, **kwargs)
        self.vocabulary_size, self.dim, self.negatives = int(vocabulary_size), int(dim), negatives
        self.architecture, self.window, self.shared_pool = architecture, int(window), shared_pool

    @property
    def vectors(self):
        """The input vectors as a NumPy ``(vocabulary_size, dim)`` array: the word vectors."""
        return ops.convert_to_numpy(self.get_layer("input_vectors").embeddings)

    def noise_weights(self, batch_size):
        """The ``y`` that :class:`NegativeSamplingLoss` expects: each noise score's weight."""
        columns = self.shared_pool or self.negatives
        weight = self.negatives / columns
        return np.full((batch_size, columns), weight, "float32")

    def compile(self, optimizer="sgd", **kwargs):
        kwargs.setdefault("loss", NegativeSamplingLoss())
        super().compile(optimizer=optimizer, **kwargs)

    def get_config(self):
        return {"vocabulary_size": self.vocabulary_size, "dim": self.dim,
                "negatives": self.negatives, "architecture": self.architecture,
                "window": self.window, "shared_pool": self.shared_pool, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable("keras_bert_lab")
class _Scores(keras.layers.Layer):
    """Dot products of the (mean) context vector with the center's and the noise words' output
    vectors."""

    def __init__(self, shared_pool=0, **kwargs):
        super().__init__(**kwargs)
        self.shared_pool = shared_pool

    def call(self, context_vectors, context_ids, center_vectors, noise_vectors):
        if context_ids.shape[-1] == 1:
            hidden = context_vectors[:, 0]
        else:  # CBOW: the mean over the window's real (non-padding) words
            mask = ops.cast(context_ids >= 0, context_vectors.dtype)[..., None]
            count = ops.maximum(ops.sum(mask, axis=1), 1.0)
            hidden = ops.sum(context_vectors * mask, axis=1) / count
        positive = ops.sum(hidden * center_vectors, axis=-1, keepdims=True)
        if self.shared_pool:
            pool = noise_vectors[: self.shared_pool, 0]          # (pool, dim)
            negative = ops.matmul(hidden, ops.transpose(pool))  # (batch, pool)
        else:
            negative = ops.sum(hidden[:, None, :] * noise_vectors, axis=-1)
        return ops.concatenate([positive, negative], axis=-1)

    def get_config(self):
        return {**super().get_config(), "shared_pool": self.shared_pool}
