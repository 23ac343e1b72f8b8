"""Optimizers with BERT's weight-decay rule.

One rule instead of name lists (as nanoGPT does): decay every weight with two or more dimensions
(kernels and embedding tables), never a bias or a LayerNorm scale/offset (1-D weights). This is
google-research/bert's ``exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]`` stated
by shape, so it holds for layers added later without editing a list.

Both builders pass other keyword arguments to Keras, e.g. ``gradient_accumulation_steps=4``
(update every 4 batches with their mean gradient) or ``global_clipnorm``.
"""

import keras


def decayed_variables(model):
    """The trainable variables that take weight decay (ndim ≥ 2)."""
    return [v for v in model.trainable_variables if len(v.shape) >= 2]


def _exclude_one_dimensional(optimizer, model):
    optimizer.exclude_from_weight_decay(
        var_list=[v for v in model.trainable_variables if len(v.shape) < 2])
    return optimizer


def adamw(model, learning_rate=1e-4, weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
          global_clipnorm=1.0, **kwargs):
    """AdamW as BERT uses it (β₂ 0.999, ε 1e-6, decay 0.01, gradients clipped to global norm 1).

    Example:
    >>> from keras_bert_lab.models.bert import BertBackbone
    >>> optimizer = adamw(BertBackbone("tiny"), learning_rate=1e-4)
    >>> optimizer.weight_decay, optimizer.global_clipnorm
    (0.01, 1.0)
    """
    return _exclude_one_dimensional(keras.optimizers.AdamW(
        learning_rate=learning_rate, weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2,
        epsilon=epsilon, global_clipnorm=global_clipnorm, **kwargs), model)


def lamb(model, learning_rate=1e-3, weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
         global_clipnorm=1.0, **kwargs):
    """LAMB (You et al. 2020), the large-batch optimizer that pretrains BERT in 76 minutes, with
    the same decay rule as :func:`adamw`."""
    return _exclude_one_dimensional(keras.optimizers.Lamb(
        learning_rate=learning_rate, weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2,
        epsilon=epsilon, global_clipnorm=global_clipnorm, **kwargs), model)
