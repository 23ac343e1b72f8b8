"""Optimizers with BERT's weight-decay rule.

One rule instead of name lists (as nanoGPT does): decay every weight with two or more dimensions
(kernels and embedding tables), never a bias or a LayerNorm scale/offset (1-D weights). This is
google-research/bert's ``exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]`` stated
by shape, so it holds for layers added later without editing a list.
"""

import keras


def decayed_variables(model):
    """The trainable variables that take weight decay (ndim ≥ 2)."""
    return [v for v in model.trainable_variables if len(v.shape) >= 2]


def adamw(model, learning_rate=1e-4, weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
          clipnorm=None, **kwargs):
    """AdamW as BERT uses it (β₂ 0.999, ε 1e-6, decay 0.01), excluding 1-D weights from decay.

    Example:
    >>> from keras_bert_lab.models.bert import BertBackbone
    >>> optimizer = adamw(BertBackbone("tiny"), learning_rate=1e-4)
    >>> optimizer.weight_decay
    0.01
    """
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate, weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2,
        epsilon=epsilon, clipnorm=clipnorm, **kwargs)
    optimizer.exclude_from_weight_decay(
        var_list=[v for v in model.trainable_variables if len(v.shape) < 2])
    return optimizer
