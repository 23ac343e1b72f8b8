"""``ElectraDiscriminator``: an ELECTRA discriminator with its replaced-token head — for every
token, the logit that the generator replaced it (``transformers``' ``ElectraForPreTraining``).

Shapes: ``B`` batch, ``T`` tokens.
"""

import keras

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.electra.backbone import INPUT_NAMES, ElectraBackbone  # noqa: F401
from keras_bert_lab.models.electra.heads import ReplacedTokenHead
from keras_bert_lab.tasks.base import Task, backbone_inputs
from keras_bert_lab.training.optimizers import adamw


@keras.saving.register_keras_serializable("keras_bert_lab")
class ReplacedTokenLoss(keras.losses.Loss):
    """Binary cross-entropy of each token's logit against its 0/1 label, kept per token (Keras'
    ``BinaryCrossentropy`` averages the last axis, the tokens, before a per-token weight could
    mask the padding); averaged over the weighted tokens by default."""

    def __init__(self, reduction="mean_with_sample_weight", name="replaced_token_loss",
                 **kwargs):
        super().__init__(reduction=reduction, name=name, **kwargs)

    def call(self, y_true, y_pred):
        return keras.ops.binary_crossentropy(keras.ops.cast(y_true, "float32"), y_pred,
                                             from_logits=True)


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElectraDiscriminator(Task):
    """Replaced-token detection on any text: ``(B, T)`` float32 logits, positive where the
    discriminator thinks a token was put there by a generator rather than written by a person.

    Its head is the one :class:`~keras_bert_lab.models.electra.pretrainer.ElectraPretrainer`
    trains (named ``discriminator_head`` in both), so a pretraining preset loads into it whole.

    Args:
        backbone: an ``ElectraBackbone`` with ``role="discriminator"``.

    Example:
    >>> import numpy as np
    >>> model = ElectraDiscriminator(ElectraBackbone("tiny"))
    >>> x = {"token_ids": np.array([[101, 7592, 102, 0]]), "segment_ids": np.zeros((1, 4), "int32"),
    ...      "padding_mask": np.array([[1, 1, 1, 0]])}
    >>> tuple(model.predict_on_batch(x).shape)
    (1, 4)
    """

    description = "an ELECTRA discriminator (replaced-token detection)"

    def __init__(self, backbone, **kwargs):
        if backbone.config.role != "discriminator":
            raise ConfigError(
                "ElectraDiscriminator needs a discriminator, but the backbone's config has "
                "role='generator' (a generator preset); load the discriminator preset, or use "
                "ElectraMaskedLM for a generator.")
        head = ReplacedTokenHead(backbone.config.hidden_size, backbone.config.initializer_range,
                                 dtype=backbone.dtype_policy, name="discriminator_head")
        inputs = backbone_inputs(backbone)
        outputs = backbone({name: inputs[name] for name in INPUT_NAMES})
        super().__init__(backbone, inputs=inputs, outputs=head(outputs["sequence_output"]),
                         **kwargs)
        backbone.pooler.trainable = False   # the head reads every token, not the pooled [CLS]
        self.discriminator_head = head

    def compile(self, optimizer="auto", loss="auto", weighted_metrics="auto", **kwargs):
        """Defaults: AdamW (lr 2e-4, decay on ≥2-D weights, clip 1.0); binary cross-entropy on
        the logits against 0/1 labels (1: replaced) and accuracy at logit 0, both weighted by
        the sample weight (pass the padding mask, so padding counts for nothing)."""
        if optimizer == "auto":
            optimizer = adamw(self, learning_rate=2e-4)
        if loss == "auto":
            loss = ReplacedTokenLoss()
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.BinaryAccuracy("accuracy", threshold=0.0)]
        super().compile(optimizer=optimizer, loss=loss, weighted_metrics=weighted_metrics,
                        **kwargs)
