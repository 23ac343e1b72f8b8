"""``BertPretrainer``: the backbone with BERT's two pretraining heads, masked LM and next sentence.

Shapes: ``B`` batch, ``T`` tokens, ``P`` masked positions per sequence, ``V`` vocabulary.
"""

import keras

from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.layers.heads import MaskedLMHead
from keras_bert_lab.models.bert.backbone import INPUT_NAMES, BertBackbone  # noqa: F401 (examples)
from keras_bert_lab.tasks.base import Task, backbone_inputs
from keras_bert_lab.tasks.losses import VocabularyCrossEntropy
from keras_bert_lab.training.optimizers import adamw


@keras.saving.register_keras_serializable("keras_bert_lab")
class BertPretrainer(Task):
    """Masked-LM + next-sentence prediction over a ``BertBackbone`` (Devlin et al. 2019, §3.1).

    Inputs: the backbone's three plus ``mask_positions`` (B, P) int, the positions whose original
    token is predicted. Outputs: ``{"mlm": (B, P, V) logits, "nsp": (B, 2) logits}`` in float32
    (label 0 = IsNext, 1 = NotNext, as in the original release and Hugging Face).

    Training data come as ``(features, labels, sample_weight)`` with ``labels = {"mlm": mask_ids,
    "nsp": next_sentence_label}`` and ``sample_weight = {"mlm": mask_weights}``: the masked-LM
    cross-entropy is averaged over the real (weight 1) masked positions only, then the NSP
    cross-entropy is added — the sum that Hugging Face's ``BertForPreTraining`` returns.

    Args:
        backbone: a ``BertBackbone``.

    Example:
    >>> import numpy as np
    >>> model = BertPretrainer(BertBackbone("tiny"))
    >>> model.compile()
    >>> x = {"token_ids": np.full((2, 8), 5), "segment_ids": np.zeros((2, 8), "int32"),
    ...      "padding_mask": np.ones((2, 8), "int32"), "mask_positions": np.array([[1, 2]] * 2)}
    >>> y = {"mlm": np.array([[7, 8]] * 2), "nsp": np.array([0, 1])}
    >>> weights = {"mlm": np.ones((2, 2)), "nsp": np.ones(2)}
    >>> history = model.fit(x, y, sample_weight=weights, verbose=0)
    >>> sorted(history.history)
    ['loss', 'mlm_accuracy', 'mlm_loss', 'nsp_accuracy', 'nsp_loss']
    """

    description = "a pretraining model (masked LM + next sentence heads)"  # what messages call it

    def __init__(self, backbone, **kwargs):
        masked_lm_head = MaskedLMHead(
            backbone.token_embedding, layer_norm_epsilon=backbone.config.layer_norm_epsilon,
            initializer_range=backbone.config.initializer_range,
            dtype=backbone.dtype_policy, name="masked_lm_head")
        next_sentence_head = keras.layers.Dense(
            2, kernel_initializer=truncated_normal(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="next_sentence_head")
        inputs = backbone_inputs(backbone)
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        outputs = backbone({name: inputs[name] for name in INPUT_NAMES})
        mlm = masked_lm_head(outputs["sequence_output"], inputs["mask_positions"])
        nsp = keras.ops.cast(next_sentence_head(outputs["pooled_output"]), "float32")
        super().__init__(backbone, inputs=inputs, outputs={"mlm": mlm, "nsp": nsp}, **kwargs)
        self.masked_lm_head, self.next_sentence_head = masked_lm_head, next_sentence_head

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto",
                **kwargs):
        """Defaults: AdamW (lr 1e-4, decay 0.01 on ≥2-D weights, clip 1.0), MLM + NSP losses,
        MLM accuracy weighted by ``mask_weights``, NSP accuracy."""
        if optimizer == "auto":
            optimizer = adamw(self, learning_rate=1e-4)
        if loss == "auto":
            loss = {
                "mlm": VocabularyCrossEntropy(reduction="mean_with_sample_weight",
                                              name="mlm_loss"),
                "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                  name="nsp_loss"),
            }
        if weighted_metrics == "auto":
            weighted_metrics = {"mlm": [keras.metrics.SparseCategoricalAccuracy("accuracy")]}
        if metrics == "auto":
            metrics = {"nsp": [keras.metrics.SparseCategoricalAccuracy("accuracy")]}
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)
