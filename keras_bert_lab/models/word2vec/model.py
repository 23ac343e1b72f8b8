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

Noise words come with the data (see :mod:`keras_bert_lab.models.word2vec.pipeline`), in one of two
shapes: ``(batch, negatives)`` — each pair its own noise words, as in word2vec.c — or
``(batch, 1)`` rows holding one shared pool of ``pool`` noise words per batch (``shared``): every
pair is scored against the whole pool with one matrix product, its noise term scaled by
``negatives / pool`` so that the expected gradient equals the per-pair one.

Initialisation follows word2vec.c: input vectors uniform in ``±0.5 / dim``, output vectors zero.

Training with plain SGD (the default ``compile()``) takes a **row-sparse step**: the gradient of
the loss above is written out (``g₀ = −σ(−s₀)`` for the true pair, ``g_k = w_k σ(s_k)`` for
noise word ``k``; then ``∂/∂v = g₀ u_center + Σ g_k u_k``, ``∂/∂u = g · v``) and only the rows a
batch touched are updated, with one scatter-add per table — word2vec.c's update, summed over
the batch. Autodiff through the embedding gathers would build a dense ``vocabulary × dim``
gradient for both tables at every step (and the optimizer would then update every row), which
made each step cost time in proportion to the vocabulary. Any other optimizer (or loss) falls
back to Keras' ordinary ``train_step``; both give the same update for SGD (tested).

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
    the true pair's score and ``y_true`` the noise scores' weights, one column or one per score
    (1 as in word2vec.c; ``k / pool`` for a shared pool)."""

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
        """The ``y`` that :class:`NegativeSamplingLoss` expects: the weight of the noise scores
        (``negatives / pool`` with a shared pool, else 1), one column that broadcasts over them."""
        return np.full((batch_size, 1), self.negatives / (self.shared_pool or self.negatives),
                       "float32")

    def compile(self, optimizer="sgd", row_sparse=True, updates_per_batch=1, **kwargs):
        """As ``keras.Model.compile``, with this model's loss by default. ``row_sparse``: train
        plain SGD with the row-sparse step (see the module docstring); ``False`` differentiates
        through the gathers as any Keras model does (the same update, slower).

        ``updates_per_batch``: each batch ``fit`` hands over is ``updates_per_batch`` batches laid
        end to end, applied as that many successive SGD updates inside one compiled step (each
        sub-batch with its own shared noise pool in its first rows, and the rate of its own
        update count). The same updates as feeding the sub-batches one by one, without Keras'
        per-batch cost (a dispatch and a host-to-device copy per array, which exceeds the update
        itself at word2vec's sizes). The logged loss is then the first update's of each batch:
        computing it costs about a third of an update (gensim computes none by default), so the
        other updates skip it. Needs the row-sparse step."""
        kwargs.setdefault("loss", NegativeSamplingLoss())
        super().compile(optimizer=optimizer, **kwargs)
        sgd = self.optimizer
        self.takes_sparse_steps = bool(
            row_sparse and isinstance(sgd, keras.optimizers.SGD) and not sgd.momentum
            and not sgd.weight_decay and sgd.loss_scale_factor is None and not sgd.use_ema
            and sgd.clipnorm is None and sgd.clipvalue is None and sgd.global_clipnorm is None
            and sgd.gradient_accumulation_steps is None
            and isinstance(kwargs["loss"], NegativeSamplingLoss))
        if int(updates_per_batch) < 1:
            raise ConfigError(f"updates_per_batch must be at least 1, got {updates_per_batch}.")
        if updates_per_batch > 1 and not self.takes_sparse_steps:
            raise ConfigError(
                f"updates_per_batch={updates_per_batch} needs the row-sparse step: plain SGD "
                "(no momentum, weight decay, clipping or accumulation), this model's loss and "
                "row_sparse=True. Use updates_per_batch=1 with any other optimizer.")
        self.updates_per_batch = int(updates_per_batch)

    def train_step(self, *args):
        if not getattr(self, "takes_sparse_steps", False):
            return super().train_step(*args)
        if keras.backend.backend() != "jax":
            self._first_update(args[0])
            for i in range(1, self.updates_per_batch):
                self._sub_update(args[0], i)
            return self.get_metrics_result()
        # JAX steps are pure functions of the state: run the same updates on the state's values
        # and return the values they assigned; the updates after the first are one compiled
        # loop body (unrolled, each update would add to the compile time).
        state, data = args
        owners = (self.trainable_variables, self.non_trainable_variables,
                  self.optimizer.variables, self.metrics_variables)
        variables = [v for group in owners for v in group]

        def stateless(values, function):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))) as scope:
                result = function()
            return [scope.get_current_value(v) if scope.get_current_value(v) is not None
                    else value for v, value in zip(variables, values)], result

        values, _ = stateless([value for values in state for value in values],
                              lambda: self._first_update(data))
        values = ops.fori_loop(
            1, self.updates_per_batch,
            lambda i, values: stateless(values, lambda: self._sub_update(data, i))[0], values)
        values, logs = stateless(values, self.get_metrics_result)
        sizes = [len(group) for group in owners]
        starts = np.cumsum([0] + sizes)
        return logs, tuple(values[a:b] for a, b in zip(starts[:-1], starts[1:]))

    def _first_update(self, data):
        """Sub-batch 0's update, whose loss is the step's logged loss."""
        loss = self._sub_update(data, 0, with_loss=True)
        size = ops.shape(data[0]["center"])[0] // self.updates_per_batch
        self._loss_tracker.update_state(loss, sample_weight=size)

    def _sub_update(self, data, i, with_loss=False):
        """The row-sparse update of sub-batch ``i`` of ``updates_per_batch``."""
        inputs, noise_weights = data[0], data[1]
        size = ops.shape(inputs["center"])[0] // self.updates_per_batch

        def rows(x):
            return ops.slice(x, (i * size,) + (0,) * (len(x.shape) - 1),
                             (size,) + tuple(x.shape[1:]))

        return self._sparse_update(rows(inputs["center"]), rows(inputs["context"]),
                                   rows(inputs["negatives"]), rows(noise_weights),
                                   with_loss=with_loss)

    def _sparse_update(self, center, context, noise, noise_weights, with_loss=True):
        """One SGD update that scatters ``−rate · gradient`` into the rows the batch touched;
        returns the batch's summed loss (``None`` without ``with_loss``)."""
        input_table = self.get_layer("input_vectors").embeddings
        output_table = self.get_layer("output_vectors").embeddings
        # B batch, K noise columns (negatives, or the pool), W context width, D dim.
        center = ops.cast(center, "int32")                               # (B,)
        context = ops.cast(context, "int32")                             # (B, W)
        noise = ops.cast(noise, "int32")
        if self.shared_pool:
            noise = noise[: self.shared_pool, 0]                          # (K,)
        context_ids = ops.maximum(context, 0)
        skipgram = context.shape[-1] == 1
        if skipgram:                 # the context word's own vector
            hidden = _rows(input_table, context_ids[:, 0])
        else:                        # CBOW: the mean of the window's real words
            real = ops.cast(context >= 0, input_table.dtype)             # (B, W)
            share = real / ops.maximum(ops.sum(real, axis=1, keepdims=True), 1.0)
            hidden = ops.einsum("bw,bwd->bd", share, _rows(input_table, context_ids))
        center_vectors = _rows(output_table, center)                     # (B, D)
        noise_vectors = _rows(output_table, noise)                       # (K, D) or (B, K, D)
        positive = ops.sum(hidden * center_vectors, axis=-1)             # (B,)
        weights = ops.cast(noise_weights, hidden.dtype)                  # (B, 1) or (B, K)
        if self.shared_pool:
            negative = ops.matmul(hidden, ops.transpose(noise_vectors))  # (B, K)
        else:
            negative = ops.einsum("bd,bkd->bk", hidden, noise_vectors)
        # ∂loss/∂score: σ(s₀) − 1 for the true pair, w·σ(s) for each noise score.
        positive_grad = -_sigmoid(-positive)                             # (B,)
        negative_grad = weights * _sigmoid(negative)                     # (B, K)
        if self.shared_pool:
            hidden_grad = positive_grad[:, None] * center_vectors + ops.matmul(
                negative_grad, noise_vectors)
            noise_grad = ops.matmul(ops.transpose(negative_grad), hidden)  # (K, D)
        else:
            hidden_grad = positive_grad[:, None] * center_vectors + ops.einsum(
                "bk,bkd->bd", negative_grad, noise_vectors)
            noise_grad = negative_grad[..., None] * hidden[:, None, :]     # (B, K, D)
        rate = ops.cast(self.optimizer.learning_rate, hidden.dtype)
        dim = self.dim
        output_rows = ops.concatenate([center, ops.reshape(noise, (-1,))], axis=0)
        output_steps = ops.concatenate([positive_grad[:, None] * hidden,
                                        ops.reshape(noise_grad, (-1, dim))], axis=0)
        if skipgram:
            _add_rows(input_table, context_ids[:, 0], -rate * hidden_grad)
        else:
            input_steps = share[..., None] * hidden_grad[:, None, :]      # (B, W, D)
            _add_rows(input_table, ops.reshape(context_ids, (-1,)),
                      -rate * ops.reshape(input_steps, (-1, dim)))
        _add_rows(output_table, output_rows, -rate * output_steps)
        self.optimizer.iterations.assign_add(1)
        if not with_loss:
            return None
        # −log σ(s) = softplus(−s).
        return ops.sum(_softplus(-positive)) + ops.sum(weights * _softplus(negative))

    def get_config(self):
        return {"vocabulary_size": self.vocabulary_size, "dim": self.dim,
                "negatives": self.negatives, "architecture": self.architecture,
                "window": self.window, "shared_pool": self.shared_pool, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


# Row access for the sparse step. `keras.ops` has no in-place row update: `scatter_update`
# returns a new vocabulary × dim tensor, which JAX turns into an in-place update of the step's
# donated buffer, but which TensorFlow and PyTorch would copy. On those two the backend
# variable's own row-wise methods are called (methods of the variable: no backend import), and
# TensorFlow gathers the rows from the variable itself instead of reading the whole table.


def _sigmoid(x):
    """σ(x) as ``(tanh(x/2) + 1) / 2`` (on JAX's CPU backend, 0.009 ms per 2,048 × 16 scores
    against 0.023 ms for ``ops.sigmoid``)."""
    return 0.5 * ops.tanh(0.5 * x) + 0.5


def _softplus(x):
    """``log(1 + eˣ)``, stable for any ``x`` (0.027 ms per 2,048 × 16 against 0.074 ms for
    ``ops.log_sigmoid`` on JAX's CPU backend)."""
    return ops.maximum(x, 0.0) + ops.log1p(ops.exp(-ops.abs(x)))


def _rows(table, ids):
    """``table[ids]``, without a gradient."""
    if keras.backend.backend() == "tensorflow":
        return table.value.sparse_read(ids)
    return ops.take(ops.stop_gradient(ops.convert_to_tensor(table)), ids, axis=0)


def _add_rows(table, rows, updates):
    """``table[rows] += updates`` in place (rows may repeat: their updates add up)."""
    if keras.backend.backend() == "tensorflow":
        table.value.scatter_nd_add(ops.expand_dims(rows, -1), updates)
    elif keras.backend.backend() == "torch":
        table.value.data.index_add_(0, rows, updates)
    else:
        table.assign(ops.scatter_update(table, ops.expand_dims(rows, -1), updates,
                                        reduction="add"))


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
