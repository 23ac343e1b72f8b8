"""Cross-entropy over a vocabulary, computed the fastest way each backend offers.

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
