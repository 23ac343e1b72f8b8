"""The losses of task heads: over a vocabulary, over token labels, over span boundaries.

:class:`TokenClassificationLoss` (tagging) and :class:`SpanCrossEntropy` (extractive QA, with
:func:`span_compile_defaults`) serve the heads of every family that has them (BERT's, GPT's).
The rest of this docstring is about :class:`VocabularyCrossEntropy`, the cross-entropy over a
vocabulary computed the fastest way each backend offers.

A language model's loss is a softmax over tens of thousands of words at every scored position:
the ``(B, P, V)`` logits are the largest tensor of a BERT-mini step. Keras'
``SparseCategoricalCrossentropy`` gives the right numbers everywhere but not the fastest path
everywhere: on PyTorch a 3-D input goes through ``nll_loss2d`` on a transposed, non-contiguous
view, and on JAX it multiplies a one-hot tensor as large as the logits. Here the same quantity,
``logsumexp(z) − z[y]`` per position, is computed as

- JAX: ``logsumexp`` minus a gather (``take_along_axis``) — half the time of the one-hot form;
- TensorFlow and PyTorch: Keras' own op on the logits flattened to ``(B·P, V)`` — TensorFlow's
  fused ``SparseSoftmaxCrossEntropyWithLogits`` kernel, PyTorch's contiguous ``cross_entropy``
  (half the time of the 3-D form at BERT's shapes).

Tests hold the values and gradients equal to Keras' loss on every backend.
"""

import keras
from keras import ops

IGNORE_INDEX = -100  # Hugging Face's label for "no loss here"


def vocabulary_cross_entropy(labels, logits):
    """``−log softmax(logits)[labels]`` per position: labels ``(...)``, logits ``(..., V)``.

    Example:
    >>> import numpy as np
    >>> logits = np.log(np.array([[[0.5, 0.25, 0.25]]], "float32"))
    >>> [round(float(v), 4) for v in keras.ops.convert_to_numpy(
    ...     vocabulary_cross_entropy(np.array([[0]]), logits)).ravel()]
    [0.6931]
    """
    labels = keras.ops.cast(labels, "int32")
    logits = keras.ops.convert_to_tensor(logits)
    if keras.backend.backend() == "jax":
        picked = keras.ops.take_along_axis(logits, keras.ops.expand_dims(labels, -1), axis=-1)
        return keras.ops.logsumexp(logits, axis=-1) - picked[..., 0]
    flat = keras.ops.sparse_categorical_crossentropy(
        keras.ops.reshape(labels, (-1,)),
        keras.ops.reshape(logits, (-1, keras.ops.shape(logits)[-1])), from_logits=True)
    return keras.ops.reshape(flat, keras.ops.shape(labels))


@keras.saving.register_keras_serializable("keras_bert_lab")
class VocabularyCrossEntropy(keras.losses.Loss):
    """``keras.losses.SparseCategoricalCrossentropy(from_logits=True)``'s values through
    :func:`vocabulary_cross_entropy`; ``reduction`` and ``name`` as in any Keras loss."""

    def call(self, y_true, y_pred):
        return vocabulary_cross_entropy(y_true, y_pred)


@keras.saving.register_keras_serializable("keras_bert_lab")
class SpanCrossEntropy(keras.losses.Loss):
    """Cross-entropy of one span boundary over the tokens, with out-of-range positions ignored.

    Hugging Face's ``BertForQuestionAnswering`` clamps gold positions to ``[0, T]`` and ignores
    ``T`` (``CrossEntropyLoss(ignore_index=T)``): a position cut off by truncation, or ``≥ T``
    after a batch was trimmed to its longest row, does not count, and a negative one becomes
    ``0`` ([CLS], "no answer here"). The mean is over the positions that count, so the value
    equals HF's; with none counting the loss is 0 (HF returns NaN).

    Args:
        name: the loss name.

    Example:
    >>> import numpy as np
    >>> loss = SpanCrossEntropy()
    >>> logits = np.log(np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]], "float32"))
    >>> round(float(loss(np.array([0, 7]), logits)), 4)   # row 2 (position 7 ≥ T = 3) ignored
    0.6931
    """

    def __init__(self, name="span_cross_entropy", **kwargs):
        kwargs.setdefault("reduction", "sum")
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        length = ops.shape(y_pred)[-1]
        positions = ops.reshape(ops.cast(y_true, "int32"), (-1,))                     # (B,)
        positions = ops.clip(positions, 0, length)
        counts = ops.cast(positions < length, "float32")                              # (B,)
        positions = ops.minimum(positions, length - 1)
        log_probs = ops.log_softmax(ops.cast(y_pred, "float32"), axis=-1)            # (B, T)
        picked = ops.take_along_axis(log_probs, positions[:, None], axis=-1)[:, 0]    # (B,)
        # "sum" of these per-row values = the mean over the rows that count
        return -picked * counts / ops.maximum(ops.sum(counts), 1.0)


def span_compile_defaults(loss, metrics, loss_weights):
    """``(loss, metrics, loss_weights)`` of a span-QA head with each ``"auto"`` filled in: the
    mean of the start and end :class:`SpanCrossEntropy`, start and end accuracy."""
    if loss == "auto":
        loss = {"start_logits": SpanCrossEntropy(name="start_loss"),
                "end_logits": SpanCrossEntropy(name="end_loss")}
    if loss_weights == "auto":
        loss_weights = {"start_logits": 0.5, "end_logits": 0.5}
    if metrics == "auto":
        metrics = {name: [keras.metrics.SparseCategoricalAccuracy("accuracy")]
                   for name in ("start_logits", "end_logits")}
    return loss, metrics, loss_weights


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
