"""``BertTokenClassifier``: a label for every token — BERT's named-entity recognition head.

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden size, ``K`` labels.
"""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.common import dropout as dropout_layer
from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.models.bert import BertBackbone  # noqa: F401 (examples)
from keras_bert_lab.tasks.base import Task, backbone_inputs
from keras_bert_lab.training.optimizers import adamw

IGNORE_INDEX = -100  # Hugging Face's label for "no loss here"


@keras.saving.register_keras_serializable("keras_bert_lab")
class TokenClassificationLoss(keras.losses.Loss):
    """Cross-entropy averaged over the labelled tokens only.

    A token is labelled when its label is not ``ignore_index`` (HF's ``-100``) and its sample
    weight, if given, is non-zero; the loss is ``Σ w·CE / Σ w`` over the batch — what
    ``torch.nn.CrossEntropyLoss(ignore_index=-100)`` returns in HF's
    ``BertForTokenClassification``. A batch with no labelled token has loss 0.

    Args:
        ignore_index: label value of unlabelled tokens.
        name: the loss's name.

    Example:
    >>> import numpy as np
    >>> loss = TokenClassificationLoss()
    >>> logits = np.log(np.array([[[0.5, 0.5], [0.25, 0.75], [0.9, 0.1]]], "float32"))
    >>> round(float(loss(np.array([[0, 1, -100]]), logits)), 4)   # mean of -log 0.5, -log 0.75
    0.4904
    >>> round(float(loss(np.array([[0, 1, 0]]), logits, sample_weight=np.array([[1, 1, 0]]))), 4)
    0.4904
    """

    def __init__(self, ignore_index=IGNORE_INDEX, name="token_classification_loss", **kwargs):
        kwargs.setdefault("reduction", "mean_with_sample_weight")
        super().__init__(name=name, **kwargs)
        self.ignore_index = int(ignore_index)

    def __call__(self, y_true, y_pred, sample_weight=None):
        y_true = ops.convert_to_tensor(y_true)
        keep = ops.not_equal(y_true, ops.cast(self.ignore_index, y_true.dtype))   # (B, T)
        weight = ops.cast(keep, "float32")
        if sample_weight is not None:
            weight = weight * ops.cast(sample_weight, "float32")
        labels = ops.where(keep, y_true, ops.zeros_like(y_true))
        return super().__call__(labels, y_pred, sample_weight=weight)

    def call(self, y_true, y_pred):
        return keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)

    def get_config(self):
        return {**super().get_config(), "ignore_index": self.ignore_index}


def check_label_arguments(num_labels, labels):
    """``(K, labels)`` of a token classifier's ``num_labels`` / ``labels`` arguments, checked."""
    if labels is not None:
        labels = [str(label) for label in labels]
        if num_labels is not None and int(num_labels) != len(labels):
            raise ConfigError(f"num_labels={num_labels} but {len(labels)} labels were given; "
                              "pass one of them, or make them agree.")
        if len(set(labels)) != len(labels):
            raise ConfigError(f"labels has duplicates: {labels}; each tag must appear once.")
        num_labels = len(labels)
    if num_labels is None or int(num_labels) < 1:
        raise ConfigError(f"num_labels={num_labels}: a token classifier needs at least one "
                          "label; pass num_labels=K or labels=[...].")
    return int(num_labels), labels


@keras.saving.register_keras_serializable("keras_bert_lab")
class BertTokenClassifier(Task):
    """Per-token classification over a ``BertBackbone`` (Devlin et al. 2019, §5.3, NER).

    The backbone's ``sequence_output`` goes through dropout and one ``Dense(K)``; the output is
    float32 logits (B, T, K) — the head of HF's ``BertForTokenClassification`` (same weights give
    the same logits). BERT tags a word by its first WordPiece: training data put the word's label
    there and give the other pieces, ``[CLS]``, ``[SEP]`` and padding sample weight 0 (or label
    ``-100``), so the loss is the mean cross-entropy over the labelled pieces, as HF's.
    :class:`keras_bert_lab.preprocessing.tagging.TaggingPreprocessor` builds such data from
    word-split sentences and turns predictions back into one tag per word.

    Args:
        backbone: a ``BertBackbone``.
        num_labels: ``K``; may be left out when ``labels`` is given.
        labels: optional list of the label names (index = id), kept in the config and presets so a
            saved tagger knows its tags.
        dropout: dropout before the classifier; default the backbone's hidden dropout (HF's
            ``classifier_dropout=None``).

    The backbone's pooler is unused and set non-trainable.

    Example:
    >>> import numpy as np
    >>> model = BertTokenClassifier(BertBackbone("tiny"), labels=["O", "B-PER", "I-PER"])
    >>> model.compile()
    >>> x = {"token_ids": np.array([[101, 7592, 2088, 102]] * 2), "padding_mask": np.ones((2, 4)),
    ...      "segment_ids": np.zeros((2, 4), "int32")}
    >>> y = np.array([[0, 1, 2, 0]] * 2)
    >>> weights = np.array([[0, 1, 1, 0]] * 2)   # [CLS] and [SEP] carry no label
    >>> history = model.fit(x, y, sample_weight=weights, verbose=0)
    >>> sorted(history.history), tuple(model.predict(x, verbose=0).shape)
    (['accuracy', 'loss'], (2, 4, 3))
    """

    token_output_fill = 0.0  # predict_packed pads the logits of cut-off padding with zeros

    def __init__(self, backbone, num_labels=None, labels=None, dropout=None, **kwargs):
        num_labels, labels = check_label_arguments(num_labels, labels)
        rate = backbone.config.dropout if dropout is None else float(dropout)
        if not 0.0 <= rate < 1.0:
            raise ConfigError(f"dropout={dropout} must be in [0, 1).")
        head_dropout = dropout_layer(rate, dtype=backbone.dtype_policy, name="classifier_dropout")
        classifier = keras.layers.Dense(
            num_labels, kernel_initializer=truncated_normal(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="classifier")
        inputs = backbone_inputs()
        x = backbone(inputs)["sequence_output"]                        # (B, T, H)
        logits = ops.cast(classifier(head_dropout(x)), "float32")      # (B, T, K)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        # The pooler feeds nothing here (HF's BertForTokenClassification has none): keep it out
        # of training so it neither warns of missing gradients nor takes weight decay.
        backbone.pooler.trainable = False
        self.classifier_dropout, self.classifier = head_dropout, classifier
        self.num_labels, self.labels, self.dropout = num_labels, labels, dropout

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
        return {**super().get_config(), "num_labels": self.num_labels, "labels": self.labels,
                "dropout": self.dropout}
