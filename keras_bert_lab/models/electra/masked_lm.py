"""``ElectraMaskedLM``: an ELECTRA generator on its own — the masked LM that corrupts the
discriminator's input in pretraining (``transformers``' ``ElectraForMaskedLM``).

Shapes: ``B`` batch, ``T`` tokens, ``P`` masked positions per sequence, ``V`` vocabulary.
"""

import keras

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.heads import MaskedLMHead
from keras_bert_lab.models.electra.backbone import INPUT_NAMES, ElectraBackbone  # noqa: F401
from keras_bert_lab.tasks.base import Task, backbone_inputs
from keras_bert_lab.tasks.losses import VocabularyCrossEntropy
from keras_bert_lab.training.optimizers import adamw


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElectraMaskedLM(Task):
    """A generator's masked-LM predictions at ``mask_positions``: ``dense (H → E) → GELU →
    LayerNorm`` and the decoder tied to the ``(V, E)`` token embedding, plus a bias.

    Inputs: the backbone's three plus ``mask_positions`` (B, P). Output: ``{"mlm": (B, P, V)}``
    float32 logits (``kbl fill-mask`` reads them). The backbone must be a generator
    (``config.role == "generator"``): a discriminator never learned to predict tokens.

    Args:
        backbone: an ``ElectraBackbone`` with ``role="generator"``.

    Example:
    >>> import numpy as np
    >>> generator = ElectraBackbone(ElectraBackbone("tiny").config.generator())
    >>> model = ElectraMaskedLM(generator)
    >>> x = {"token_ids": np.full((1, 6), 5), "segment_ids": np.zeros((1, 6), "int32"),
    ...      "padding_mask": np.ones((1, 6), "int32"), "mask_positions": np.array([[2, 4]])}
    >>> tuple(model.predict_on_batch(x)["mlm"].shape)
    (1, 2, 30522)
    """

    description = "an ELECTRA generator (masked LM)"

    def __init__(self, backbone, **kwargs):
        if backbone.config.role != "generator":
            raise ConfigError(
                "ElectraMaskedLM needs a generator, but the backbone's config has "
                "role='discriminator': a discriminator learned to tell replaced tokens, not to "
                "predict them. Load the generator preset (its config has role='generator'), or "
                "use ElectraDiscriminator for a discriminator.")
        head = MaskedLMHead(
            backbone.token_embedding, layer_norm_epsilon=backbone.config.layer_norm_epsilon,
            initializer_range=backbone.config.initializer_range, dtype=backbone.dtype_policy,
            name="masked_lm_head")
        inputs = backbone_inputs(backbone)
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        outputs = backbone({name: inputs[name] for name in INPUT_NAMES})
        mlm = head(outputs["sequence_output"], inputs["mask_positions"])
        super().__init__(backbone, inputs=inputs, outputs={"mlm": mlm}, **kwargs)
        self.masked_lm_head = head

    def compile(self, optimizer="auto", loss="auto", weighted_metrics="auto", **kwargs):
        """Defaults: AdamW (lr 2e-4); the masked-LM cross-entropy averaged over the real masked
        positions (``sample_weight={"mlm": mask_weights}``) and its weighted accuracy."""
        if optimizer == "auto":
            optimizer = adamw(self, learning_rate=2e-4)
        if loss == "auto":
            loss = {"mlm": VocabularyCrossEntropy(reduction="mean_with_sample_weight",
                                                  name="mlm_loss")}
        if weighted_metrics == "auto":
            weighted_metrics = {"mlm": [keras.metrics.SparseCategoricalAccuracy("accuracy")]}
        super().compile(optimizer=optimizer, loss=loss, weighted_metrics=weighted_metrics,
                        **kwargs)
