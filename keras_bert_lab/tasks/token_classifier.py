"""``EncoderTokenClassifier``: a label for every token — BERT's named-entity recognition head, on
any BERT-style encoder (``BertTokenClassifier``, ``ElectraTokenClassifier`` derive it).

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden size, ``K`` labels.
"""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.common import dropout as dropout_layer
from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.tasks.base import Task, backbone_inputs
from keras_bert_lab.tasks.heads import check_label_arguments
from keras_bert_lab.tasks.losses import TokenClassificationLoss
from keras_bert_lab.training.optimizers import adamw

class EncoderTokenClassifier(Task):
    """Per-token classification over a BERT-style encoder (Devlin et al. 2019, §5.3, NER).

    The backbone's ``sequence_output`` goes through dropout and one ``Dense(K)``; the output is
    float32 logits (B, T, K) — the head of HF's ``BertForTokenClassification`` (same weights give
    the same logits). BERT tags a word by its first WordPiece: training data put the word's label
    there and give the other pieces, ``[CLS]``, ``[SEP]`` and padding sample weight 0 (or label
    ``-100``), so the loss is the mean cross-entropy over the labelled pieces, as HF's.
    :class:`keras_bert_lab.preprocessing.tagging.TaggingPreprocessor` builds such data from
    word-split sentences and turns predictions back into one tag per word.

    Args:
        backbone: a backbone of the subclass' family (``BertBackbone``, ``ElectraBackbone``).
        num_classes: ``K``; may be left out when ``labels`` is given.
        labels: optional list of the label names (index = id), kept in the config and presets so a
            saved tagger knows its tags.
        dropout: dropout before the classifier; default the backbone's hidden dropout (HF's
            ``classifier_dropout=None``).

    The backbone's pooler is unused and set non-trainable.
    """

    description = "a token classifier (one label per token)"  # what messages call it

    token_output_fill = 0.0  # predict_packed pads the logits of cut-off padding with zeros

    def __init__(self, backbone, num_classes=None, labels=None, dropout=None, **kwargs):
        self.check_backbone(backbone)
        num_classes, labels = check_label_arguments(num_classes, labels, kwargs)
        rate = backbone.config.dropout if dropout is None else float(dropout)
        if not 0.0 <= rate < 1.0:
            raise ConfigError(f"dropout={dropout} must be in [0, 1).")
        head_dropout = dropout_layer(rate, dtype=backbone.dtype_policy, name="classifier_dropout")
        classifier = keras.layers.Dense(
            num_classes, kernel_initializer=truncated_normal(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="classifier")
        inputs = backbone_inputs(backbone)
        x = backbone(inputs)["sequence_output"]                        # (B, T, H)
        logits = ops.cast(classifier(head_dropout(x)), "float32")      # (B, T, K)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        # The pooler feeds nothing here (HF's BertForTokenClassification has none): keep it out
        # of training so it neither warns of missing gradients nor takes weight decay.
        backbone.pooler.trainable = False
        self.classifier_dropout, self.classifier = head_dropout, classifier
        self.num_classes, self.labels, self.dropout = num_classes, labels, dropout

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto",
                **kwargs):
        """Defaults: AdamW (lr 5e-5, decay 0.01 on ≥2-D weights, clip 1.0), the masked
        cross-entropy :class:`TokenClassificationLoss`, and token accuracy weighted by the
        sample weights (i.e. over labelled pieces; pass sample weights rather than ``-100``
        labels to keep the accuracy meaningful)."""
        if optimizer == "auto":
            optimizer = adamw(self, learning_rate=5e-5)
        if loss == "auto":
            loss = TokenClassificationLoss()
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy("accuracy")]
        if metrics == "auto":
            metrics = None
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "labels": self.labels,
                "dropout": self.dropout}
