"""``EncoderMultipleChoice``: pick the right continuation among C candidates (SWAG, RACE, ARC), on
any BERT-style encoder (``BertMultipleChoice``, ``ElectraMultipleChoice`` derive it).

BERT's SWAG recipe (Devlin et al. 2019, §4.4): pack the context with each of the C choices as a
pair ``[CLS] context [SEP] choice [SEP]``, run all C sequences through the encoder, score each
pooled ``[CLS]`` state with one shared vector (``Dense(1)``) and normalise the C scores with a
softmax — "the only task-specific parameters introduced is a vector whose dot product with the
[CLS] token representation C denotes a score for each choice". The loss is cross-entropy over
the choices, as in Hugging Face's ``BertForMultipleChoice``. ``pooling="mean"`` scores the mean of
the last layer over each pair's real tokens instead, as :class:`EncoderClassifier` can, for models
whose pooler was never trained (pretrained without next-sentence prediction) or that were trained
for mean pooling.

Shapes: ``B`` batch, ``C`` choices, ``T`` tokens, ``H`` hidden.
"""

import keras
from keras import ops

from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.tasks.classifier import check_pooling, pool
from keras_bert_lab.tasks.base import Task
from keras_bert_lab.tasks.heads import FoldChoices, UnfoldChoices, decode_logits
from keras_bert_lab.training.optimizers import adamw


class EncoderMultipleChoice(Task):
    """A shared ``Dense(1)`` score on each (context, choice) pair's pooled output; softmax over C.

    Inputs: ``token_ids``, ``segment_ids``, ``padding_mask``, each ``(B, C, T)`` int (pack them
    with :meth:`keras_bert_lab.preprocessing.encoder_text.EncoderTextPreprocessor.pack_choices`). Output:
    ``(B, C)`` float32
    logits; the label is the index of the right choice. Any number of choices works (the same C
    within a batch).

    Args:
        backbone: a backbone of the subclass' family (``BertBackbone``, ``ElectraBackbone``).
        dropout: dropout rate before the scoring layer; default the backbone config's ``dropout``.
        pooling: ``"cls"`` (the pooled ``[CLS]`` output, BERT's and HF's head) or ``"mean"`` (the
            mean of the last layer over each pair's real tokens; the pooler is then frozen).
    """

    description = "a multiple-choice model"  # what messages call it

    def __init__(self, backbone, dropout=None, pooling="cls", **kwargs):
        self.check_backbone(backbone)
        check_pooling(pooling)
        rate = backbone.config.dropout if dropout is None else float(dropout)
        fold = FoldChoices(name="fold_choices")
        unfold = UnfoldChoices(name="unfold_choices")
        head_dropout = keras.layers.Dropout(rate, dtype=backbone.dtype_policy,
                                            name="classifier_dropout")
        head = keras.layers.Dense(
            1, kernel_initializer=truncated_normal(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="classifier")
        inputs = {name: keras.Input(shape=(None, None), dtype="int32", name=name)
                  for name in backbone.input_names}                             # (B, C, T)
        folded = {name: fold(inputs[name]) for name in inputs}                  # (B·C, T)
        pooled = pool(backbone, backbone(folded), folded["padding_mask"], pooling)  # (B·C, H)
        scores = head(head_dropout(pooled))                                     # (B·C, 1)
        logits = ops.cast(unfold(scores, inputs["token_ids"]), "float32")       # (B, C)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        self.fold_choices, self.unfold_choices = fold, unfold
        self.classifier_dropout, self.classifier = head_dropout, head
        self.dropout, self.pooling = dropout, pooling

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Defaults: AdamW (lr 2e-5, decay on ≥2-D weights, clip 1.0), softmax cross-entropy over
        the choices, accuracy."""
        if optimizer == "auto":
            optimizer = adamw(self, learning_rate=2e-5)
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if metrics == "auto":
            metrics = [keras.metrics.SparseCategoricalAccuracy("accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def predict_choices(self, features, batch_size=8):
        """``{"logits" (N, C), "probabilities" (N, C), "ids" (N,)}`` for packed ``(N, C, L)``
        features (NumPy); ``ids`` is the chosen index."""
        logits = self.predict_packed(features, batch_size)
        decoded = decode_logits(logits, "single_label")
        return {"logits": logits, "probabilities": decoded["probabilities"], "ids": decoded["ids"]}

    def get_config(self):
        return {**super().get_config(), "dropout": self.dropout, "pooling": self.pooling}
