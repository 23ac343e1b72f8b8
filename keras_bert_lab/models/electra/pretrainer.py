"""``ElectraPretrainer``: replaced-token detection (Clark et al. 2020) — a small generator trained
as a masked LM corrupts the input, and the discriminator learns, for every token, whether it
was replaced.

Why it learns faster than BERT's masked LM on little compute: MLM draws a training signal from
the 15 % of tokens it masks; the discriminator's loss covers *all* tokens of the input, and it
never sees ``[MASK]``, which fine-tuning text does not contain either (§2–3). The loss is
``L_MLM(generator) + λ · L_Disc`` with ``λ = 50`` (the discriminator's binary loss is much smaller
per token); the sampled tokens carry no gradient, so the generator is trained by maximum
likelihood, not adversarially. Only the discriminator is kept for fine-tuning.

Shapes: ``B`` batch, ``T`` tokens, ``P`` masked positions per sequence, ``V`` vocabulary.
"""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.heads import MaskedLMHead
from keras_bert_lab.models.electra.backbone import INPUT_NAMES, ElectraBackbone
from keras_bert_lab.models.electra.config import ElectraConfig
from keras_bert_lab.models.electra.heads import ReplacedTokenHead, ReplaceTokens
from keras_bert_lab.tasks.base import Task, backbone_inputs
from keras_bert_lab.tasks.losses import vocabulary_cross_entropy
from keras_bert_lab.training.optimizers import adamw

DISCRIMINATOR_WEIGHT = 50.0   # the paper's λ


def check_generator(generator, discriminator):
    """``ConfigError`` naming the field and the fix unless ``generator`` (an ``ElectraConfig``)
    can be trained beside ``discriminator``: a generator's role, the discriminator's shared
    embedding sizes, and no wider than the discriminator."""
    if discriminator.role != "discriminator":
        raise ConfigError("ElectraPretrainer's backbone is the discriminator, but its config has "
                          "role='generator' (a generator preset?); build it from a "
                          "discriminator (role='discriminator') and pass the generator as "
                          "generator=.")
    if generator.role != "generator":
        raise ConfigError("ElectraPretrainer's generator= has role='discriminator'; give a "
                          "generator config (discriminator_config.generator(1/4)) or leave it "
                          "out.")
    for name in ("vocabulary_size", "embedding_size", "max_positions", "type_vocab_size"):
        if getattr(generator, name) != getattr(discriminator, name):
            raise ConfigError(
                f"The generator's {name} ({getattr(generator, name)}) differs from the "
                f"discriminator's ({getattr(discriminator, name)}); they share one embedding "
                f"table, so {name} must be equal — build the generator with "
                "discriminator_config.generator(size).")
    if generator.hidden_size > discriminator.hidden_size:
        raise ConfigError(
            f"The generator (hidden_size {generator.hidden_size}) is larger than the "
            f"discriminator ({discriminator.hidden_size}); ELECTRA's generator is 1/4–1/2 of it "
            "(too strong a generator makes the task too hard, §3.2) — use "
            "discriminator_config.generator(1/4).")


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElectraPretrainer(Task):
    """Generator and discriminator trained jointly (Clark et al. 2020, §2).

    Inputs: the backbone's three — ``token_ids`` already masked (BERT's pipeline) — plus
    ``mask_positions`` (B, P), ``mask_ids`` (B, P), the original tokens there, and
    ``mask_weights`` (B, P), 1 for real masked positions. Outputs (float32): ``mlm`` (B, P, V),
    the generator's logits; ``rtd`` (B, T), the discriminator's replaced-token logits;
    ``replaced`` (B, T), 1 where the discriminator's input differs from the original text
    (``model.replace_tokens`` gives that input itself). Outside training the generator's sample
    is a function of the input (see ``ReplaceTokens``), so ``predict`` and held-out metrics are
    reproducible.

    ``fit`` takes the inputs alone (the targets are inside them; a ``(features, labels,
    weights)`` stream from BERT's pipeline works too — only ``features`` is read). The loss is
    the generator's masked-LM cross-entropy (mean over real masked positions) plus
    ``discriminator_weight`` × the discriminator's binary cross-entropy (mean over real tokens).
    Logged: ``mlm_loss``, ``mlm_accuracy``, ``rtd_loss``, ``rtd_accuracy`` (every real token),
    ``rtd_auc`` (replaced vs original) and ``replaced_rate``.

    Args:
        backbone: the discriminator, an ``ElectraBackbone`` (``role="discriminator"``).
        generator: the generator's ``ElectraConfig`` (or its dict); default
            ``backbone.config.generator(generator_size)``. It shares the backbone's embeddings.
        generator_size: the generator's size as a fraction of the discriminator (default: the
            paper's for the size, else 1/4); only without ``generator``.
        discriminator_weight: ``λ`` (50). temperature: of the generator's sampling softmax.
        seed: of the sampling.

    Example:
    >>> import numpy as np
    >>> model = ElectraPretrainer(ElectraBackbone("tiny"))
    >>> model.generator.config.hidden_size, model.generator.embeddings is model.backbone.embeddings
    (32, True)
    >>> model.compile()
    >>> x = {"token_ids": np.full((2, 8), 5), "segment_ids": np.zeros((2, 8), "int32"),
    ...      "padding_mask": np.ones((2, 8), "int32"), "mask_positions": np.array([[1, 2]] * 2),
    ...      "mask_ids": np.array([[7, 8]] * 2), "mask_weights": np.ones((2, 2), "float32")}
    >>> history = model.fit(x, epochs=1, verbose=0)
    >>> sorted(history.history)
    ['loss', 'mlm_accuracy', 'mlm_loss', 'replaced_rate', 'rtd_accuracy', 'rtd_auc', 'rtd_loss']
    """

    description = "an ELECTRA pretraining model (generator + discriminator)"

    def __init__(self, backbone, generator=None, generator_size=None,
                 discriminator_weight=DISCRIMINATOR_WEIGHT, temperature=1.0, seed=None,
                 **kwargs):
        config = backbone.config
        if generator is not None and generator_size is not None:
            raise ConfigError("Give the generator as generator= (a config) or as "
                              "generator_size= (a fraction of the discriminator), not both.")
        generator_config = (ElectraConfig.coerce(generator) if generator is not None
                            else config.generator(generator_size))
        check_generator(generator_config, config)
        if not discriminator_weight > 0:
            raise ConfigError(f"discriminator_weight must be > 0 (the paper's λ is 50), got "
                              f"{discriminator_weight!r}.")
        inputs = backbone_inputs(backbone)
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        inputs["mask_ids"] = keras.Input(shape=(None,), dtype="int32", name="mask_ids")
        inputs["mask_weights"] = keras.Input(shape=(None,), dtype="float32", name="mask_weights")
        text = {name: inputs[name] for name in INPUT_NAMES}
        with keras.name_scope("generator"):   # its weights: task/generator/...
            generator_model = ElectraBackbone(generator_config, dtype=backbone.dtype_policy,
                                              embeddings=backbone.embeddings, name="generator")
            generator_head = MaskedLMHead(
                backbone.token_embedding, layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range, dtype=backbone.dtype_policy,
                name="masked_lm_head")
            mlm = generator_head(generator_model(text)["sequence_output"],
                                 inputs["mask_positions"])                       # (B, P, V)
        replace = ReplaceTokens(temperature, seed, name="replace_tokens")
        corrupted, replaced = replace(inputs["token_ids"], inputs["mask_positions"],
                                      inputs["mask_ids"], inputs["mask_weights"], mlm)
        discriminator_head = ReplacedTokenHead(
            config.hidden_size, config.initializer_range, dtype=backbone.dtype_policy,
            name="discriminator_head")
        outputs = backbone({**text, "token_ids": corrupted})
        rtd = discriminator_head(outputs["sequence_output"])                     # (B, T)
        super().__init__(backbone, inputs=inputs,
                         outputs={"mlm": mlm, "rtd": rtd, "replaced": replaced}, **kwargs)
        backbone.pooler.trainable = False   # pretraining never reads [CLS]'s projection
        self.generator, self.generator_head = generator_model, generator_head
        self.replace_tokens, self.discriminator_head = replace, discriminator_head
        self.generator_size, self.discriminator_weight = generator_size, float(discriminator_weight)
        self.temperature, self.seed = float(temperature), seed
        self.trackers = {name: keras.metrics.Mean(name) for name in
                         ("mlm_loss", "mlm_accuracy", "rtd_loss", "rtd_accuracy", "replaced_rate")}
        self.auc = keras.metrics.AUC(from_logits=True, name="rtd_auc")

    def parts(self, x, y_pred):
        """``{name: (value, weight)}`` of the loss parts and per-token figures of a batch."""
        mask_weights = ops.cast(x["mask_weights"], "float32")
        real = ops.cast(x["padding_mask"], "float32")
        mlm, rtd, replaced = y_pred["mlm"], y_pred["rtd"], y_pred["replaced"]
        mlm_loss = vocabulary_cross_entropy(x["mask_ids"], mlm)                    # (B, P)
        hits = ops.cast(ops.equal(ops.argmax(mlm, axis=-1),
                                  ops.cast(x["mask_ids"], "int32")), "float32")
        rtd_loss = ops.binary_crossentropy(replaced, rtd, from_logits=True)        # (B, T)
        rtd_hits = ops.cast(ops.equal(ops.cast(ops.greater(rtd, 0), "float32"), replaced),
                            "float32")
        return {"mlm_loss": (mlm_loss, mask_weights), "mlm_accuracy": (hits, mask_weights),
                "rtd_loss": (rtd_loss, real), "rtd_accuracy": (rtd_hits, real),
                "replaced_rate": (replaced, real)}

    @staticmethod
    def _mean(value, weight):
        return ops.sum(value * weight) / ops.maximum(ops.sum(weight), 1.0)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        parts = self.parts(x, y_pred)
        loss = (self._mean(*parts["mlm_loss"])
                + self.discriminator_weight * self._mean(*parts["rtd_loss"]))
        return loss + ops.sum(self.losses) if self.losses else loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        for name, (value, weight) in self.parts(x, y_pred).items():
            self.trackers[name].update_state(self._mean(value, weight), ops.sum(weight))
        self.auc.update_state(y_pred["replaced"], y_pred["rtd"],
                              sample_weight=ops.cast(x["padding_mask"], "float32"))
        return self.get_metrics_result()

    def compile(self, optimizer="auto", **kwargs):
        """Default: AdamW (lr 2e-4, ELECTRA-Base's; decay 0.01 on ≥2-D weights, clip 1.0). The
        loss is the model's own (:meth:`compute_loss`)."""
        if optimizer == "auto":
            optimizer = adamw(self, learning_rate=2e-4)
        super().compile(optimizer=optimizer, **kwargs)

    def get_config(self):
        return {**super().get_config(), "generator": self.generator.config.to_dict(),
                "discriminator_weight": self.discriminator_weight,
                "temperature": self.temperature, "seed": self.seed}
