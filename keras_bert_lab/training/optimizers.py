"""Optimizers with BERT's weight-decay rule.

One rule instead of name lists (as nanoGPT does): decay every weight with two or more dimensions
(kernels and embedding tables), never a bias or a LayerNorm scale/offset (1-D weights). This is
google-research/bert's ``exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]`` stated
by shape, so it holds for layers added later without editing a list.

Both builders pass other keyword arguments to Keras, e.g. ``gradient_accumulation_steps=4``
(update every 4 batches with their mean gradient) or ``global_clipnorm``.

Layer-wise learning-rate decay (``adamw(..., layer_decay=0.9)``; Clark et al. 2020, ELECTRA §A):
the heads learn at the full rate, each layer group below at ``layer_decay`` times the one above,
the embeddings slowest — lower layers hold general features that fine-tuning should move least.
ULMFiT's discriminative fine-tuning is the same rule with factor 1/2.6; the groups are
:func:`keras_bert_lab.training.transfer.layer_groups`.
"""

import keras

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.training.transfer import group_learning_rate_factors


def decayed_variables(model):
    """The trainable variables that take weight decay (ndim ≥ 2)."""
    return [v for v in model.trainable_variables if len(v.shape) >= 2]


def _exclude_one_dimensional(optimizer, model):
    # All weights, not only those trainable now: a frozen layer group may be unfrozen later.
    optimizer.exclude_from_weight_decay(var_list=[v for v in model.weights if len(v.shape) < 2])
    return optimizer


@keras.saving.register_keras_serializable("keras_bert_lab")
class LayerwiseAdamW(keras.optimizers.AdamW):
    """AdamW whose learning rate (and so its decoupled weight decay) is scaled per variable.

    Args:
        lr_multipliers: ``{variable path: factor}``; variables not listed use factor 1.
        kwargs: those of ``keras.optimizers.AdamW``.
    """

    def __init__(self, lr_multipliers=None, **kwargs):
        super().__init__(**kwargs)
        self.lr_multipliers = {str(k): float(v) for k, v in (lr_multipliers or {}).items()}

    def build(self, variables):
        super().build(variables)
        self._factors = [self.lr_multipliers.get(v.path, 1.0) for v in variables]

    def _factor(self, variable):
        return self._factors[self._get_variable_index(variable)]

    def update_step(self, gradient, variable, learning_rate):
        factor = self._factor(variable)
        if factor != 1.0:
            learning_rate = learning_rate * factor
        super().update_step(gradient, variable, learning_rate)

    def _apply_weight_decay(self, variables):
        # Keras decays with the global rate (torch even in one fused op); here each variable's own.
        if self.weight_decay is None:
            return
        for variable in variables:
            if self._use_weight_decay(variable):
                rate = keras.ops.cast(self.learning_rate, variable.dtype) * self._factor(variable)
                wd = keras.ops.cast(self.weight_decay, variable.dtype)
                variable.assign(variable - variable * wd * rate)

    def get_config(self):
        return {**super().get_config(), "lr_multipliers": self.lr_multipliers}


def adamw(model, learning_rate=1e-4, weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
          global_clipnorm=1.0, layer_decay=None, **kwargs):
    """AdamW as BERT uses it (β₂ 0.999, ε 1e-6, decay 0.01, gradients clipped to global norm 1).

    ``layer_decay`` < 1 gives each layer group its own rate (see the module docstring).

    Example:
    >>> from keras_bert_lab.models.bert import BertBackbone
    >>> optimizer = adamw(BertBackbone("tiny"), learning_rate=1e-4)
    >>> optimizer.weight_decay, optimizer.global_clipnorm
    (0.01, 1.0)
    """
    options = dict(learning_rate=learning_rate, weight_decay=weight_decay, beta_1=beta_1,
                   beta_2=beta_2, epsilon=epsilon, global_clipnorm=global_clipnorm, **kwargs)
    if layer_decay is not None and layer_decay != 1.0:
        if not 0.0 < layer_decay <= 1.0:
            raise ConfigError(f"layer_decay={layer_decay}; use a factor in (0, 1] (e.g. 0.9, or "
                              "ULMFiT's 1/2.6).")
        optimizer = LayerwiseAdamW(
            lr_multipliers=group_learning_rate_factors(model, layer_decay), **options)
    else:
        optimizer = keras.optimizers.AdamW(**options)
    return _exclude_one_dimensional(optimizer, model)


def lamb(model, learning_rate=1e-3, weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
         global_clipnorm=1.0, **kwargs):
    """LAMB (You et al. 2020), the large-batch optimizer that pretrains BERT in 76 minutes, with
    the same decay rule as :func:`adamw`."""
    return _exclude_one_dimensional(keras.optimizers.Lamb(
        learning_rate=learning_rate, weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2,
        epsilon=epsilon, global_clipnorm=global_clipnorm, **kwargs), model)
