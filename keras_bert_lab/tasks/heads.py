"""Pieces of task heads that tasks of more than one family share.

- :class:`FoldChoices` / :class:`UnfoldChoices`: multiple choice runs every (context, choice) row
  through the backbone as one batch, ``(B, C, T)`` → ``(B·C, T)``, and folds the scores back to
  ``(B, C)`` (BERT's SWAG head, GPT-1's multiple-choice head);
- :func:`check_label_arguments`: a token classifier's ``num_classes`` / ``labels``, checked;
- :func:`decode_logits`: a classifier's logits → probabilities, ids and label names (NumPy), what
  ``predict_labels``, ``kbl predict`` and the SavedModel export return.

Shapes: ``B`` batch, ``C`` choices, ``T`` tokens, ``N`` examples, ``K`` outputs.

Example:
>>> import numpy as np
>>> decode_logits(np.array([[0.0, 2.0]]), "single_label", ["neg", "pos"])["labels"]
['pos']
>>> check_label_arguments(None, ["O", "B-PER"])
(2, ['O', 'B-PER'])
"""

import warnings

import keras
import numpy as np
from keras import ops

from keras_bert_lab.errors import ConfigError
@keras.saving.register_keras_serializable("keras_bert_lab")
class FoldChoices(keras.layers.Layer):
    """``(B, C, T)`` → ``(B·C, T)``: every choice becomes its own row for the encoder."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_spec(self, x):
        return keras.KerasTensor((None, x.shape[-1]), dtype=x.dtype)  # ids stay int32


@keras.saving.register_keras_serializable("keras_bert_lab")
class UnfoldChoices(keras.layers.Layer):
    """Scores ``(B·C, 1)`` → ``(B, C)``, with ``C`` read from the ``(B, C, T)`` inputs."""

    def call(self, scores, reference):
        return ops.reshape(scores, (-1, ops.shape(reference)[1]))

    def compute_output_shape(self, scores_shape, reference_shape):
        return (reference_shape[0], reference_shape[1])


def check_label_arguments(num_classes, labels, kwargs=None):
    """``(K, labels)`` of a token classifier's ``num_classes`` / ``labels`` arguments, checked.

    ``num_labels`` in ``kwargs`` (popped) is the old name of ``num_classes``: it warns, and goes
    in the next release (presets saved before the rename record it; re-save them to drop the
    warning)."""
    if kwargs and "num_labels" in kwargs:
        old = kwargs.pop("num_labels")
        warnings.warn("num_labels is now num_classes (as in every classifier); the old name goes "
                      "in the next release.", FutureWarning, stacklevel=3)
        num_classes = old if num_classes is None else num_classes
    if labels is not None:
        labels = [str(label) for label in labels]
        if num_classes is not None and int(num_classes) != len(labels):
            raise ConfigError(f"num_classes={num_classes} but {len(labels)} labels were given; "
                              "pass one of them, or make them agree.")
        if len(set(labels)) != len(labels):
            raise ConfigError(f"labels has duplicates: {labels}; each tag must appear once.")
        num_classes = len(labels)
    if num_classes is None or int(num_classes) < 1:
        raise ConfigError(f"num_classes={num_classes}: a token classifier needs at least one "
                          "label; pass num_classes=K or labels=[...].")
    return int(num_classes), labels


def decode_logits(logits, problem, labels=None):
    """Probabilities/labels (or scores) from ``(N, K)`` logits, in NumPy (``predict_labels``)."""
    logits = np.asarray(logits, dtype="float64")
    if problem == "regression":
        return {"scores": logits[:, 0]}
    if problem == "single_label":
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities = shifted / shifted.sum(axis=-1, keepdims=True)
        ids = probabilities.argmax(axis=-1)
        names = [labels[i] for i in ids] if labels else ids.tolist()
        return {"probabilities": probabilities, "ids": ids, "labels": names}
    probabilities = 1.0 / (1.0 + np.exp(-logits))
    ids = [np.flatnonzero(row >= 0.5).tolist() for row in probabilities]
    names = [[labels[i] for i in row] for row in ids] if labels else ids
    return {"probabilities": probabilities, "ids": ids, "labels": names}
