"""Optimizers with BERT's weight-decay rule.

One rule instead of name lists (as nanoGPT does): decay every weight with two or more dimensions
(kernels and embedding tables), never a bias or a LayerNorm scale/offset (1-D weights). This is
google-research/bert's ``exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]`` stated
by shape, so it holds for layers added later without editing a list.

Both builders pass other keyword arguments to Keras, e.g. ``gradient_accumulation_steps=4``
(update every 4 batches with their mean gradient) or ``global_clipnorm``.

The update itself is Keras' AdamW arithmetic, run in place on PyTorch (:class:`FusedAdamW`);
TensorFlow and JAX run Keras' own (XLA already fuses it on JAX).

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
class FusedAdamW(keras.optimizers.AdamW):
    """``keras.optimizers.AdamW`` with the same arithmetic in fewer passes over memory.

    Adam's update reads and writes each weight, its gradient and two slots; done as separate ops
    (Keras' way) every intermediate is one more full-size tensor written and read back, which on
    a CPU costs as much as the arithmetic. On PyTorch this class runs the same formula
    (``m += (g − m)(1 − β₁)``, ``v += (g² − v)(1 − β₂)``,
    ``w −= lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ) · m / (√v + ε)``) with in-place tensor methods (``lerp_``,
    ``addcmul_``, ``addcdiv_``): one temporary (the denominator) instead of Keras' five, and no
    torch import. Elsewhere, and with AMSGrad, it is Keras' own update. The decoupled weight decay
    is Keras' (applied before the update). Tests hold the weights after a few steps equal to
    ``keras.optimizers.AdamW``'s on every backend.

    Example:
    >>> import keras, numpy as np
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> model.compile(optimizer=FusedAdamW(learning_rate=1e-2), loss="mse")
    >>> round(model.train_on_batch(np.ones((4, 3)), np.zeros((4, 2))), 6) >= 0
    True
    """

    def _factor(self, variable):
        """This variable's learning-rate factor (1; see :class:`LayerwiseAdamW`)."""
        return 1.0

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if keras.backend.backend() != "torch" or self.amsgrad or any(
                g.dtype != v.value.dtype for g, v in zip(grads, trainable_variables)):
            return super()._backend_update_step(grads, trainable_variables, learning_rate)
        # Tensor methods on ``.data`` (outside autograd): no torch import, nothing recorded.
        step = float(keras.ops.convert_to_numpy(self.iterations)) + 1
        rate = float(keras.ops.convert_to_numpy(learning_rate))
        alpha = rate * (1 - self.beta_2 ** step) ** 0.5 / (1 - self.beta_1 ** step)
        for gradient, variable in zip(grads, trainable_variables):
            index = self._get_variable_index(variable)
            m, v = self._momentums[index].value.data, self._velocities[index].value.data
            m.lerp_(gradient, 1 - self.beta_1)
            v.mul_(self.beta_2).addcmul_(gradient, gradient, value=1 - self.beta_2)
            variable.value.data.addcdiv_(m, v.sqrt().add_(self.epsilon),
                                         value=-alpha * self._factor(variable))


@keras.saving.register_keras_serializable("keras_bert_lab")
class LayerwiseAdamW(FusedAdamW):
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
    >>> from keras_bert_lab.models.bert.backbone import BertBackbone
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
        optimizer = FusedAdamW(**options)
    return _exclude_one_dimensional(optimizer, model)


def lamb(model, learning_rate=1e-3, weight_decay=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
         global_clipnorm=1.0, **kwargs):
    """LAMB (You et al. 2020), the large-batch optimizer that pretrains BERT in 76 minutes, with
    the same decay rule as :func:`adamw`."""
    return _exclude_one_dimensional(keras.optimizers.Lamb(
        learning_rate=learning_rate, weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2,
        epsilon=epsilon, global_clipnorm=global_clipnorm, **kwargs), model)
