"""``GPTTokenClassifier``: a label for every token of a left-to-right model (tagging).
Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden, ``K`` labels."""

import keras
from keras import ops

from keras_bert_lab.models.gpt.backbone import INPUT_NAMES, GPTBackbone  # noqa: F401 (examples)
from keras_bert_lab.models.gpt.heads import GPTTask
from keras_bert_lab.tasks.heads import check_label_arguments
from keras_bert_lab.tasks.losses import TokenClassificationLoss

@keras.saving.register_keras_serializable("keras_bert_lab")
class GPTTokenClassifier(GPTTask):
    """A label for every token of a ``[start] pieces`` row: tagging (NER) with a GPT backbone.

    GPT-1 defines no tagging head; this one is ``BertTokenClassifier``'s (dropout, one
    ``Dense(K)`` on every final state, float32 logits ``(B, T, K)``) on a left-to-right model, so
    each token's label is read from a state that saw only the tokens before it. Train it on
    :class:`~keras_bert_lab.models.gpt.preprocessor.GPTTaggingPreprocessor` rows, which put a word's
    tag on its last piece (the first state to have read the whole word).

    Args:
        backbone: a ``GPTBackbone``.
        num_classes: ``K``; may be left out when ``labels`` is given.
        labels: the label names (index = id), kept in the config and presets.
        dropout: before the linear layer; default the backbone's dropout.

    Example:
    >>> import numpy as np
    >>> model = GPTTokenClassifier(GPTBackbone("tiny"), labels=["O", "B-PER", "I-PER"])
    >>> model.compile()
    >>> x = {"token_ids": np.array([[1, 5, 9, 2]] * 2), "padding_mask": np.ones((2, 4), "int32")}
    >>> history = model.fit(x, np.array([[0, 1, 2, 0]] * 2),
    ...                     sample_weight=np.array([[0, 1, 1, 1]] * 2), verbose=0)
    >>> tuple(model.predict(x, verbose=0).shape)
    (2, 4, 3)
    """

    description = "a GPT-1 token classifier"  # what messages call it

    token_output_fill = 0.0

    @classmethod
    def preset_defaults(cls, preset):
        return {}   # no auxiliary LM loss here

    def __init__(self, backbone, num_classes=None, labels=None, dropout=None, **kwargs):
        num_classes, labels = check_label_arguments(num_classes, labels, kwargs)
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        head_dropout, head = self._dense(backbone, num_classes, dropout)
        hidden = backbone(inputs)["sequence_output"]                             # (B, T, H)
        logits = ops.cast(head(head_dropout(hidden)), "float32")                 # (B, T, K)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        self.classifier_dropout, self.classifier = head_dropout, head
        self.num_classes, self.labels, self.dropout = num_classes, labels, dropout

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto",
                **kwargs):
        """Defaults: GPT-1's fine-tuning AdamW (as the other GPT heads), the masked
        cross-entropy over labelled tokens, accuracy weighted by the sample weights."""
        if loss == "auto":
            loss = TokenClassificationLoss()
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy("accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=None if metrics == "auto"
                        else metrics, weighted_metrics=weighted_metrics, **kwargs)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "labels": self.labels,
                "dropout": self.dropout}
