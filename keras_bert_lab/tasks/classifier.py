"""``EncoderClassifier``: a sentence or sentence-pair classifier (or regressor) on a BERT-style
encoder (the BERT and ELECTRA families' classifiers derive it: ``BertClassifier``,
``ElectraClassifier``).

BERT fine-tunes for classification by adding one layer on top of the pooled ``[CLS]`` state
(Devlin et al. 2019, §4.1: "the only new parameters introduced during fine-tuning are
classification layer weights W ∈ R^{K×H}"): ``logits = W · dropout(pooled) + b``. Single
sentences pack as ``[CLS] A [SEP]``, pairs (entailment, paraphrase, STS-B similarity) as
``[CLS] A [SEP] B [SEP]``. Three problems share the head, as in Hugging Face's
``BertForSequenceClassification`` (``problem_type``):

- ``"single_label"``: K-way softmax, sparse categorical cross-entropy (SST-2, MNLI …);
- ``"regression"``: one output and mean squared error (STS-B similarity scores);
- ``"multi_label"``: K independent sigmoids, binary cross-entropy averaged over the K outputs.

``pooling="mean"`` reads the mean of the last layer over the real tokens instead of the pooled
``[CLS]`` state: the right start for models trained for mean pooling (Sentence-BERT, all-MiniLM),
whose pooler was never trained.

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden, ``K`` outputs.
"""

import keras
import numpy as np

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.layers.pooling import mean_pool
from keras_bert_lab.tasks.base import Task, backbone_inputs
from keras_bert_lab.tasks.heads import decode_logits
from keras_bert_lab.training.optimizers import adamw

PROBLEMS = ("single_label", "regression", "multi_label")
POOLINGS = ("cls", "mean")


def check_head_arguments(num_classes, problem, labels):
    """``num_classes`` resolved and checked against ``problem`` and ``labels`` (``ConfigError``)."""
    if problem not in PROBLEMS:
        raise ConfigError(f"problem={problem!r}; choose one of {PROBLEMS}.")
    if num_classes is None:
        num_classes = len(labels) if labels else (1 if problem == "regression" else 2)
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise ConfigError(f"num_classes must be an integer, got {num_classes!r}.")
    num_classes = int(num_classes)
    if problem == "regression" and num_classes != 1:
        raise ConfigError(f"problem='regression' predicts one score; num_classes must be 1, got "
                          f"{num_classes} (leave it out).")
    if problem == "single_label" and num_classes < 2:
        raise ConfigError(f"problem='single_label' needs num_classes >= 2, got {num_classes}; "
                          "use problem='regression' for a single score.")
    if num_classes < 1:
        raise ConfigError(f"num_classes must be positive, got {num_classes}.")
    if labels is not None:
        labels = [str(name) for name in labels]
        if problem == "regression":
            raise ConfigError("labels (class names) make no sense for problem='regression'; "
                              "leave them out.")
        if len(labels) != num_classes or len(set(labels)) != len(labels):
            raise ConfigError(f"labels must be {num_classes} distinct names (one per class), got "
                              f"{labels}.")
    return num_classes, labels


def check_pooling(pooling):
    if pooling not in POOLINGS:
        raise ConfigError(f"pooling={pooling!r}; choose one of {POOLINGS}.")


def pool(backbone, outputs, padding_mask, pooling):
    """A head's input from a backbone's ``outputs``: the pooled ``[CLS]`` state, or the mean of
    the last layer over the real tokens (the pooler then feeds nothing and is frozen: no decay,
    no missing gradients)."""
    if pooling == "cls":
        return outputs["pooled_output"]
    backbone.pooler.trainable = False
    return mean_pool(outputs["sequence_output"], padding_mask)


class EncoderClassifier(Task):
    """Pooled ``[CLS]`` output → dropout → ``Dense(K)``: BERT's classification/regression head, on
    any backbone with BERT's inputs and outputs (``pooled_output``, ``sequence_output``, a
    ``pooler``); a family's subclass fixes the backbone (``BertClassifier``).

    Inputs: the backbone's ``token_ids``, ``segment_ids``, ``padding_mask`` (B, T). Output:
    ``(B, K)`` float32 logits (Hugging Face's ``logits``; a regression score is ``(B, 1)``). The
    head layer is called ``classifier`` as in ``BertForSequenceClassification``, whose weights
    therefore map one to one (``kernel = classifier.weight.T``).

    Args:
        backbone: a backbone of the subclass' family (``BertBackbone``, ``ElectraBackbone``).
        num_classes: ``K``; default 2 (1 for regression, ``len(labels)`` when labels are given).
        problem: ``"single_label"``, ``"regression"`` or ``"multi_label"`` (see the module doc).
        dropout: dropout rate before the head; default the backbone config's ``dropout``.
        labels: optional class names (id = position); :meth:`predict_labels` returns them and a
            saved preset keeps them.
        pooling: ``"cls"`` (the pooled ``[CLS]`` output, BERT's and HF's head) or ``"mean"`` (the
            mean of ``sequence_output`` over the real tokens; the backbone's pooler then stays
            frozen, unused).
    """

    description = "a fine-tuned classifier"  # what messages call it

    def __init__(self, backbone, num_classes=None, problem="single_label", dropout=None,
                 labels=None, pooling="cls", **kwargs):
        self.check_backbone(backbone)
        num_classes, labels = check_head_arguments(num_classes, problem, labels)
        check_pooling(pooling)
        rate = backbone.config.dropout if dropout is None else float(dropout)
        head_dropout = keras.layers.Dropout(rate, dtype=backbone.dtype_policy,
                                            name="classifier_dropout")
        head = keras.layers.Dense(
            num_classes, kernel_initializer=truncated_normal(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="classifier")
        inputs = backbone_inputs(backbone)
        outputs = backbone(inputs)
        pooled = pool(backbone, outputs, inputs["padding_mask"], pooling)    # (B, H)
        logits = keras.ops.cast(head(head_dropout(pooled)), "float32")      # (B, K)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        self.classifier_dropout, self.classifier = head_dropout, head
        self.num_classes, self.problem, self.dropout = num_classes, problem, dropout
        self.labels, self.pooling = labels, pooling

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Defaults per problem: AdamW (lr 2e-5, decay on ≥2-D weights, clip 1.0) and

        - single_label: sparse categorical cross-entropy on logits, accuracy;
        - regression: mean squared error, mean absolute error;
        - multi_label: binary cross-entropy on logits, binary accuracy at logit 0 (p = 0.5).
        """
        if optimizer == "auto":
            optimizer = adamw(self, learning_rate=2e-5)
        if loss == "auto":
            loss = {"single_label": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                    "regression": keras.losses.MeanSquaredError(),
                    "multi_label": keras.losses.BinaryCrossentropy(from_logits=True)}[self.problem]
        if metrics == "auto":
            metrics = {"single_label": [keras.metrics.SparseCategoricalAccuracy("accuracy")],
                       "regression": [keras.metrics.MeanAbsoluteError("mae")],
                       "multi_label": [keras.metrics.BinaryAccuracy("accuracy", threshold=0.0)],
                       }[self.problem]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def predict_labels(self, features, batch_size=32):
        """Predictions for packed features (a preprocessor's output): a dict of NumPy arrays.

        ``logits`` (N, K) always; ``single_label``: ``probabilities`` (softmax), ``ids`` and
        ``labels`` (class names, or the ids when the model has none); ``multi_label``:
        ``probabilities`` (sigmoid), ``ids`` (a list of active class ids per text, p ≥ 0.5) and
        ``labels``; ``regression``: ``scores`` (N,). Batches are cut to their longest text.
        """
        logits = self.predict_packed(features, batch_size)
        return {"logits": logits, **decode_logits(logits, self.problem, self.labels)}

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "problem": self.problem,
                "dropout": self.dropout, "labels": self.labels, "pooling": self.pooling}

