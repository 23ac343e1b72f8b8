"""The AWD-LSTM's regularisers and parts (Merity et al. 2017), shared by its LM and ULMFiT.

Merity et al. regularise a plain LSTM language model without touching the cell, so that cuDNN-
style kernels still apply (§4):

- **embedding dropout** (:class:`EmbeddingDropout`, §4.3): whole rows of the embedding matrix —
  whole word *types* — are dropped for a batch and the rest scaled by ``1/(1-p)``, so a dropped
  word vanishes from every position it occurs in;
- **variational ("locked") dropout** (:class:`LockedDropout`, §4.2, after Gal & Ghahramani 2016):
  one mask per sequence and feature, shared by every time step, on the LSTM inputs and outputs;
- **weight drop** (DropConnect on the hidden-to-hidden matrix, §2):
  ``ProjectedLSTM(weight_drop=p)`` in :mod:`keras_bert_lab.layers.lstm`;
- **activation and temporal activation regularisation** (:class:`ActivationRegularization`,
  §4.6): ``α·mean(m ⊙ h_t)²`` on the dropped output of the last layer and
  ``β·mean(h_t − h_{t−1})²`` on its raw output, added to the loss in training.

Every dropout is the identity at inference and draws its masks from its own seed generator
(saved with the model, as :func:`keras_bert_lab.layers.common.dropout` does). The tied decoder
(:class:`TiedDecoder`) reads the same embedding table and adds its own bias (§4.5);
:class:`CarriedState` keeps an LSTM's state between batches for truncated back-propagation
through time over contiguous text (§4.4); :class:`ConcatPooling` is ULMFiT's
``[h_T, maxpool(H), meanpool(H)]`` (Howard & Ruder 2018, §3.3).

Shapes: ``B`` batch, ``T`` tokens, ``D`` features, ``V`` vocabulary, ``E`` embedding width,
``P`` LSTM output width, ``U`` LSTM cells.

Example:
>>> import numpy as np
>>> x = np.ones((2, 5, 4), "float32")
>>> dropped = keras.ops.convert_to_numpy(LockedDropout(0.5, seed=1)(x, training=True))
>>> bool((dropped == dropped[:, :1]).all())     # the same mask at every time step
True
>>> embedding = EmbeddingDropout(10, 3, rate=0.5, seed=1)
>>> rows = keras.ops.convert_to_numpy(embedding(np.array([[4, 7, 4, 4]]), training=True))
>>> bool((rows[0, 0] == rows[0, 2]).all() and (rows[0, 0] == rows[0, 3]).all())
True
"""

import random

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError, InputError
from keras_bert_lab.layers.common import tied_logits


def _rate(name, rate):
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate < 1.0:
        raise ConfigError(f"{name} rate must be in [0, 1), got {rate!r}.")
    return float(rate)


def _seed(seed):
    """An explicit seed (Python's ``random`` when ``None``): masks then live in the seed
    generator's state on every backend, PyTorch included."""
    return random.randint(1, 2**31 - 1) if seed is None else int(seed)


@keras.saving.register_keras_serializable("keras_bert_lab")
class LockedDropout(keras.layers.Layer):
    """Variational dropout on (B, T, D): one (B, 1, D) mask shared by all time steps.

    Args:
        rate: the fraction of features dropped per sequence; kept ones are scaled by ``1/(1-p)``.
        seed: integer seed of the masks (``None``: drawn from Python's ``random``).
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = _rate("LockedDropout", rate), _seed(seed)
        self.seed_generator = keras.random.SeedGenerator(self.seed, name="locked_dropout_seed")
        self.built = True

    def call(self, inputs, training=None):
        if not training or not self.rate:
            return inputs
        shape = ops.shape(inputs)
        return keras.random.dropout(inputs, self.rate, noise_shape=(shape[0], 1, shape[2]),
                                    seed=self.seed_generator)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}


@keras.saving.register_keras_serializable("keras_bert_lab")
class EmbeddingDropout(keras.layers.Layer):
    """A token embedding (V, E) whose rows — word types — are dropped together in training.

    The layer owns the table (``embeddings``), so the decoder can read the very same variable.
    In training one keep-mask over the ``V`` rows is drawn per call (kept rows scaled by
    ``1/(1-p)``); looking up ``ids`` then gives ``table[ids] · mask[ids]``, which equals
    looking them up in the masked table without masking all ``V × E`` entries.

    Call: ``embedding(token_ids, padding_mask=None)`` → (B, T, E), zero at padding.

    Args:
        input_dim, output_dim: ``V`` and ``E``.
        rate: the fraction of word types dropped per call.
        embeddings_initializer: default uniform on ±0.1, as the AWD-LSTM and fastai.
        seed: integer seed of the masks (``None``: drawn from Python's ``random``).
    """

    def __init__(self, input_dim, output_dim, rate=0.0, embeddings_initializer=None, seed=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.rate, self.seed = _rate("EmbeddingDropout", rate), _seed(seed)
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer or keras.initializers.RandomUniform(-0.1, 0.1))
        self.seed_generator = keras.random.SeedGenerator(self.seed, name="embedding_dropout_seed")

    def build(self, *shapes):
        self.embeddings = self.add_weight(name="embeddings",
                                          shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer)

    def row_scale(self, training=None):
        """(V,) factors of the rows: 0 or ``1/(1-p)`` in training, ``None`` at inference."""
        if not training or not self.rate:
            return None
        ones = ops.ones((self.input_dim,), self.compute_dtype)
        return keras.random.dropout(ones, self.rate, seed=self.seed_generator)

    def call(self, token_ids, padding_mask=None, training=None):
        ids = ops.cast(token_ids, "int32")
        out = ops.take(ops.cast(self.embeddings, self.compute_dtype), ids, axis=0)  # (B, T, E)
        scale = self.row_scale(training)
        if scale is not None:
            out = out * ops.take(scale, ids, axis=0)[..., None]
        if padding_mask is not None:
            out = out * ops.cast(padding_mask, out.dtype)[..., None]
        return out

    def compute_output_shape(self, ids_shape, *args):
        return (*ids_shape, self.output_dim)

    def get_config(self):
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim, "rate": self.rate, "seed": self.seed,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer)}


@keras.saving.register_keras_serializable("keras_bert_lab")
class TiedDecoder(keras.layers.Layer):
    """Logits ``h·W_eᵀ + b`` (B, T, V), float32: the embedding table read backwards, own bias.

    The embedding layer is referenced, not tracked: its table belongs to the backbone (a preset
    stores it once) and only ``bias`` (V,) belongs here. The task rebuilds the link on load.
    """

    def __init__(self, embedding, **kwargs):
        super().__init__(**kwargs)
        object.__setattr__(self, "_embedding", embedding)  # untracked: see the docstring
        self.vocabulary_size = embedding.input_dim

    def build(self, *shapes):
        self.bias = self.add_weight(name="bias", shape=(self.vocabulary_size,), initializer="zeros")

    def call(self, hidden):
        table = ops.cast(self._embedding.embeddings, self.compute_dtype)       # (V, E)
        logits = tied_logits(hidden, table) + ops.cast(self.bias, hidden.dtype)
        return ops.cast(logits, "float32")

    def compute_output_shape(self, hidden_shape):
        return (*hidden_shape[:-1], self.vocabulary_size)


@keras.saving.register_keras_serializable("keras_bert_lab")
class CarriedState(keras.layers.Layer):
    """Runs a ``ProjectedLSTM`` from states kept between calls (truncated BPTT).

    ``h`` (B, P) and ``c`` (B, U) are non-trainable variables of a fixed batch size: each call
    starts the LSTM from them and stores the state after each row's last real step (its value
    only — gradients stop at the batch boundary). Row ``b`` of a batch must continue row ``b``
    of the previous one, and every batch must have ``batch_size`` rows (``drop_remainder``).
    Assigning variables in ``call`` is what ``BatchNormalization`` does: ``fit``/``predict``
    thread them through ``jax.jit`` and ``tf.function``. The states are run-time state like a
    dropout seed, not weights: they are left out of ``weights`` (presets, ``count_params``, layer
    groups) but saved in a ``.keras`` file. :meth:`reset_states` zeros them.

    Args:
        lstm: the (built) ``ProjectedLSTM`` to run.
        batch_size: rows ``B`` of every batch.
    """

    def __init__(self, lstm, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.lstm, self.batch_size = lstm, int(batch_size)

    def build(self, *shapes):
        self.h = self.add_weight(name="h", shape=(self.batch_size, self.lstm.output_dim),
                                 initializer="zeros", trainable=False)
        self.c = self.add_weight(name="c", shape=(self.batch_size, self.lstm.units),
                                 initializer="zeros", trainable=False)

    @property
    def weights(self):
        states = {id(self.h), id(self.c)} if self.built else set()
        return [w for w in super().weights if id(w) not in states]

    def reset_states(self):
        for state in (self.h, self.c):
            state.assign(ops.zeros(state.shape, state.dtype))

    def call(self, inputs, padding_mask=None, training=None):
        rows = inputs.shape[0]
        if isinstance(rows, int) and rows != self.batch_size:
            raise InputError(f"This stateful model carries states for batch_size="
                             f"{self.batch_size} rows, got a batch of {rows}; feed batches of "
                             f"exactly {self.batch_size} rows (drop_remainder=True) or build it "
                             "for this batch size.")
        # Copies: the variables are overwritten below, while the backward pass (PyTorch's
        # autograd) still needs the values this call started from.
        dtype = self.lstm.compute_dtype
        start = (ops.copy(ops.cast(self.h, dtype)), ops.copy(ops.cast(self.c, dtype)))
        outputs, h, c = self.lstm(inputs, padding_mask=padding_mask, initial_state=start,
                                  return_state=True, training=training)
        self.h.assign(ops.cast(ops.stop_gradient(h), self.h.dtype))
        self.c.assign(ops.cast(ops.stop_gradient(c), self.c.dtype))
        return outputs

    def compute_output_shape(self, input_shape, *args):
        return (*input_shape[:-1], self.lstm.output_dim)

    def get_config(self):
        # The LSTM is not serialised: the model that made this layer rebuilds it from its own.
        return {**super().get_config(), "batch_size": self.batch_size}


def _masked_mean(values, weights):
    return ops.sum(values * weights) / ops.maximum(ops.sum(weights), 1.0)


@keras.saving.register_keras_serializable("keras_bert_lab")
class ActivationRegularization(keras.layers.Layer):
    """Adds AR and TAR to the model's losses in training; returns ``dropped`` unchanged.

    ``AR = α · mean(dropped²)`` over real positions and features, ``TAR = β · mean((raw_t −
    raw_{t−1})²)`` over pairs of consecutive real positions — with no padding exactly the
    original's ``dropped.pow(2).mean()`` and ``(raw[1:] - raw[:-1]).pow(2).mean()``.

    Call: ``layer(dropped (B, T, E), raw (B, T, E), padding_mask (B, T))``.

    Args:
        alpha, beta: the weights ``α`` and ``β`` (the original's 2 and 1); 0 turns one off.
    """

    def __init__(self, alpha=2.0, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.alpha, self.beta = float(alpha), float(beta)
        self.built = True

    def penalties(self, dropped, raw, padding_mask):
        """``(AR, TAR)`` as scalars (float32), whatever the mode."""
        mask = ops.cast(padding_mask, "float32")[..., None]                      # (B, T, 1)
        dropped, raw = ops.cast(dropped, "float32"), ops.cast(raw, "float32")
        width = ops.cast(ops.shape(raw)[-1], "float32")
        ar = _masked_mean(ops.square(dropped), mask * ops.ones_like(dropped))
        pairs = mask[:, 1:] * mask[:, :-1]                                       # (B, T-1, 1)
        tar = ops.sum(ops.square(raw[:, 1:] - raw[:, :-1]) * pairs) / ops.maximum(
            ops.sum(pairs) * width, 1.0)
        return self.alpha * ar, self.beta * tar

    def call(self, dropped, raw, padding_mask, training=None):
        if training and (self.alpha or self.beta):
            ar, tar = self.penalties(dropped, raw, padding_mask)
            self.add_loss(ar + tar)
        return dropped

    def compute_output_shape(self, dropped_shape, *args):
        return dropped_shape

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha, "beta": self.beta}


@keras.saving.register_keras_serializable("keras_bert_lab")
class ConcatPooling(keras.layers.Layer):
    """ULMFiT's concat pooling (B, T, H) → (B, 3H): ``[h_T, max_t h_t, mean_t h_t]``.

    ``h_T`` is the state at each row's last real step (``padding_mask`` marks a prefix); the
    max and mean run over the steps ``pool_mask`` marks (default: the real ones). A row with no
    pooled step gets zeros.

    Call: ``layer(hidden, padding_mask, pool_mask=None)``.
    """

    def call(self, hidden, padding_mask, pool_mask=None):
        real = ops.cast(padding_mask, "int32")
        pool = ops.cast(real if pool_mask is None else pool_mask, "bool")[..., None]   # (B, T, 1)
        positions = ops.arange(ops.shape(hidden)[1], dtype="int32")[None, :]
        last = ops.cast(positions == ops.sum(real, axis=1, keepdims=True) - 1, hidden.dtype)
        h_last = ops.einsum("bt,bth->bh", last, hidden)                                # (B, H)
        any_pooled = ops.any(pool, axis=1)                                             # (B, 1)
        wide = keras.backend.standardize_dtype(hidden.dtype) in ("float32", "float64")
        lowest = ops.cast(-3e38 if wide else -6e4, hidden.dtype)
        h_max = ops.where(any_pooled, ops.max(ops.where(pool, hidden, lowest), axis=1), 0.0)
        weights = ops.cast(pool, hidden.dtype)
        h_mean = ops.sum(hidden * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1.0)
        return ops.concatenate([h_last, ops.cast(h_max, hidden.dtype), h_mean], axis=-1)

    def compute_output_shape(self, hidden_shape, *args):
        return (hidden_shape[0], 3 * hidden_shape[-1])
