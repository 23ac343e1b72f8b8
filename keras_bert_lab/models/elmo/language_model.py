"""``ElmoLanguageModel``: the biLM with its softmax, trained as two language models at once.

Peters et al. (2018, §3.1) train the forward LM to predict token ``t + 1`` from the tokens up to
``t`` and the backward LM to predict token ``t − 1`` from the tokens from ``t`` on, jointly
maximising both log likelihoods; the two directions have their own LSTMs but share the token
encoder and the softmax. Here the top forward and backward outputs (B, T, P) go through one
``Dense(V)`` softmax layer; the loss is the mean of the two directions' cross-entropies, each
averaged over the real target positions (:func:`language_model_targets`).

The softmax is full (every word scored at every position) unless ``num_sampled`` is set. Then,
as bilm-tf trained its 793k-word model (8,192 samples per batch), training scores each position's
target against ``num_sampled`` words drawn once per batch from the log-uniform (Zipfian)
distribution over the frequency-ranked vocabulary (Jean et al. 2015; TensorFlow's
``sampled_softmax_loss`` with its default sampler): every logit is corrected by the log of its
word's expected count, and a sample equal to the target is masked out (an "accidental hit").
That is an estimate of the full softmax's gradient at a fraction of its cost — the ``(B, T, V)``
logits are never formed in training — while ``predict`` and ``evaluate`` (the perplexity)
still use the full softmax.

Shapes: ``B`` batch, ``T`` tokens, ``V`` words, ``P`` projection.

Example:
>>> import numpy as np
>>> from keras_bert_lab.models.elmo.config import ElmoConfig
>>> model = ElmoLanguageModel(ElmoBackbone(ElmoConfig.from_size("tiny", vocabulary_size=20, num_layers=1)))
>>> token_ids = np.array([[1, 5, 6, 7, 2], [1, 8, 2, 0, 0]])   # <S> … </S>, then padding
>>> padding_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
>>> y, weights = language_model_targets(token_ids, padding_mask)
>>> y["forward"][1].tolist(), weights["backward"][1].astype(int).tolist()
([8, 2, 0, 0, 0], [0, 1, 1, 0, 0])
>>> x = np.where(padding_mask[..., None] > 0, 261, 0).astype("int32") * np.ones((1, 1, 50), "int32")
>>> model.compile()
>>> history = model.fit(x, y, sample_weight=weights, verbose=0)
>>> sorted(history.history)
['backward_loss', 'forward_loss', 'loss']
"""

import keras
import numpy as np

from keras_bert_lab.errors import ConfigError, InputError
from keras_bert_lab.layers.common import dropout
from keras_bert_lab.models.elmo.backbone import INPUT_NAME, ElmoBackbone
from keras_bert_lab.tasks.base import Task

DIRECTIONS = ("forward", "backward")


def language_model_targets(token_ids, padding_mask=None):
    """``(y, sample_weight)`` for :class:`ElmoLanguageModel` from word ids (NumPy).

    ``token_ids`` (B, T): the word ids of the same tokens the character ids spell (``<S>`` and
    ``</S>`` included when added); ``padding_mask`` (B, T), 1 for real tokens (a prefix of each
    row), default all ones. Forward targets are the next token's id, backward targets the
    previous token's; a position without one (the last / first real token, padding) has weight 0.
    """
    token_ids = np.asarray(token_ids)
    mask = np.ones(token_ids.shape, "float32") if padding_mask is None \
        else np.asarray(padding_mask, "float32")
    if token_ids.ndim != 2 or mask.shape != token_ids.shape:
        raise InputError(f"token_ids must be (batch, tokens) and padding_mask the same shape, "
                         f"got {token_ids.shape} and {mask.shape}.")
    forward, backward = np.zeros_like(token_ids), np.zeros_like(token_ids)
    forward_weight, backward_weight = np.zeros_like(mask), np.zeros_like(mask)
    forward[:, :-1], forward_weight[:, :-1] = token_ids[:, 1:], mask[:, 1:]
    backward[:, 1:], backward_weight[:, 1:] = token_ids[:, :-1], mask[:, 1:]
    return ({"forward": forward, "backward": backward},
            {"forward": forward_weight, "backward": backward_weight})


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElmoLanguageModel(Task):
    """Forward and backward LM heads with a shared softmax over an ``ElmoBackbone``.

    Input: ``character_ids`` (B, T, C). Outputs: ``{"forward": (B, T, V), "backward": (B, T, V)}``
    float32 logits — position ``t`` scores token ``t + 1`` (forward) and ``t − 1`` (backward).
    Train with ``fit(x, y, sample_weight=...)`` from :func:`language_model_targets`.

    With ``num_sampled > 0`` a *training* call (``model(x, training=True)``, as ``fit`` makes)
    returns each direction's top states (B, T, P) instead, which :meth:`compute_loss` scores
    against the target and the sampled words; the loss it reports is then the sampled-softmax
    cross-entropy, and ``evaluate`` reports the full one.

    Args:
        backbone: an ``ElmoBackbone`` whose config has ``vocabulary_size > 0`` (the softmax's ``V``).
        num_sampled: 0 for the full softmax in training; else the number of words sampled per
            batch (with replacement; ``1 ≤ num_sampled < V``). The vocabulary must be ranked by
            falling frequency after any special words, as built vocabularies are.
        seed: the sampler's seed (its state is a model variable, saved in checkpoints).
    """

    description = "an ELMo biLM"  # what messages call it


    def __init__(self, backbone, num_sampled=0, seed=None, **kwargs):
        config = backbone.config
        if not config.vocabulary_size:
            raise ConfigError("ElmoLanguageModel needs a word vocabulary: build the ElmoBackbone with "
                              "ElmoConfig(vocabulary_size=<number of words>) (or a preset that has "
                              "one).")
        num_sampled = int(num_sampled)
        if not 0 <= num_sampled < config.vocabulary_size:
            raise ConfigError(f"num_sampled={num_sampled}: sample between 1 and "
                              f"{config.vocabulary_size - 1} words (fewer than the vocabulary's "
                              f"{config.vocabulary_size}), or 0 for the full softmax.")
        softmax = keras.layers.Dense(config.vocabulary_size, dtype=backbone.dtype_policy,
                                     name="softmax")
        drop = dropout(config.dropout, backbone.dtype_policy, "softmax_input_dropout") \
            if config.dropout else None
        inputs = {INPUT_NAME: keras.Input((None, config.max_characters), dtype="int32",
                                          name=INPUT_NAME)}
        outputs = backbone(inputs)
        logits = {}
        for direction in DIRECTIONS:
            top = outputs[direction][-1]                                    # (B, T, P)
            top = drop(top) if drop is not None else top
            logits[direction] = keras.ops.cast(softmax(top), "float32")     # (B, T, V)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        self.softmax, self.softmax_dropout = softmax, drop
        self.num_sampled, self.seed = num_sampled, seed
        self.sampler = keras.random.SeedGenerator(seed, name="sampler") if num_sampled else None

    def call(self, inputs, training=None, mask=None):
        if not isinstance(inputs, dict):
            inputs = {INPUT_NAME: inputs}
        if training and self.num_sampled:
            outputs = self.backbone(inputs, training=True)
            drop = self.softmax_dropout
            return {d: outputs[d][-1] if drop is None else drop(outputs[d][-1], training=True)
                    for d in DIRECTIONS}
        return super().call(inputs, training=training, mask=mask)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The compiled loss; in a sampled training step, over ``[target, samples]`` logits with
        the target at index 0 (so the same cross-entropy objects and per-direction logs serve)."""
        if training and self.num_sampled:
            y, y_pred = self.sampled_logits(y_pred, y, self.draw_samples())
        return super().compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                    training=training)

    def draw_samples(self):
        """``num_sampled`` word ids (S,) drawn with replacement from the log-uniform
        distribution ``P(k) = log((k + 2) / (k + 1)) / log(V + 1)``, ``k`` in ``[0, V)``."""
        ops = keras.ops
        vocabulary_size = self.backbone.config.vocabulary_size
        uniform = keras.random.uniform((self.num_sampled,), seed=self.sampler)
        ranks = ops.floor(ops.exp(uniform * float(np.log(vocabulary_size + 1.0))))
        return ops.clip(ops.cast(ranks, "int32") - 1, 0, vocabulary_size - 1)

    def sampled_logits(self, states, targets, sampled):
        """``(labels, logits)``: per direction, the target's and the ``sampled`` words' logits
        (B, T, 1 + S), each minus the log of its expected count among the S draws, the samples
        that equal the target masked; the labels are all 0 (the target's column)."""
        ops = keras.ops
        count = ops.shape(sampled)[0]
        log_range = float(np.log(self.backbone.config.vocabulary_size + 1.0))

        def log_expected_count(ids):
            ids = ops.cast(ids, "float32")
            return ops.log(count * ops.log((ids + 2.0) / (ids + 1.0)) / log_range)

        kernel = ops.cast(self.softmax.kernel, "float32")                   # (P, V)
        bias = ops.cast(self.softmax.bias, "float32")
        sampled_kernel = ops.take(kernel, sampled, axis=1)                  # (P, S)
        sampled_bias = ops.take(bias, sampled) - log_expected_count(sampled)
        labels, logits = {}, {}
        for direction in DIRECTIONS:
            states_d = ops.cast(states[direction], "float32")              # (B, T, P)
            target = ops.cast(targets[direction], "int32")                  # (B, T)
            target_kernel = ops.take(ops.transpose(kernel), target, axis=0)  # (B, T, P)
            true = ops.sum(states_d * target_kernel, axis=-1) + ops.take(bias, target) \
                - log_expected_count(target)
            noise = ops.matmul(states_d, sampled_kernel) + sampled_bias     # (B, T, S)
            noise = ops.where(ops.equal(target[..., None], sampled), -1e9, noise)
            logits[direction] = ops.concatenate([true[..., None], noise], axis=-1)
            labels[direction] = ops.zeros_like(target)
        return labels, logits

    def get_config(self):
        config = super().get_config()
        if self.num_sampled:
            config.update(num_sampled=self.num_sampled, seed=self.seed)
        return config

    def compile(self, optimizer="auto", loss="auto", loss_weights="auto", **kwargs):
        """Defaults as bilm-tf: Adagrad (learning rate 0.2, accumulators start at 1, gradients
        clipped to global norm 10); each direction's cross-entropy averaged over its weighted
        positions, the two averaged. On TensorFlow, no XLA (``jit_compile=False``)."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adagrad(learning_rate=0.2, initial_accumulator_value=1.0,
                                                 global_clipnorm=10.0)
        if loss == "auto":
            loss = {d: keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="mean_with_sample_weight", name=f"{d}_loss")
                for d in DIRECTIONS}
        if loss_weights == "auto":
            loss_weights = {d: 0.5 for d in DIRECTIONS}
        if keras.backend.backend() == "tensorflow":
            # XLA cannot compile the gradient of Keras' TensorFlow scan (its TensorArray
            # accumulators); "auto" would pick XLA on a GPU.
            kwargs.setdefault("jit_compile", False)
        super().compile(optimizer=optimizer, loss=loss, loss_weights=loss_weights, **kwargs)
