"""Learning-rate schedules of the BERT lineage (Keras ships neither).

Both are functions of the optimizer's step counter only, so a run resumed from a checkpoint (which
restores ``optimizer.iterations``) continues the schedule exactly where it stopped.
"""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError


@keras.saving.register_keras_serializable("keras_bert_lab")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from 0 to ``peak_learning_rate``, then linear decay to ``end_learning_rate``.

    The schedule of BERT (Devlin et al. 2019, App. A.2: warm-up over the first 10,000 steps, then
    linear decay) and of GPT. As in Hugging Face's ``get_linear_schedule_with_warmup``, the rate is
    exactly the peak at the end of warm-up and exactly the end rate at ``total_steps``, and stays
    there afterwards. Post-LN Transformers need the warm-up: large early updates through the
    un-normalised residual path diverge.

    Args:
        peak_learning_rate: rate reached at ``warmup_steps``. warmup_steps: steps of warm-up (0 for
        none). total_steps: the step at which the rate reaches ``end_learning_rate``.

    Example:
    >>> schedule = WarmupLinearDecay(1e-4, warmup_steps=10, total_steps=110)
    >>> [round(float(schedule(s)), 7) for s in (0, 5, 10, 60, 110, 200)]
    [0.0, 5e-05, 0.0001, 5e-05, 0.0, 0.0]
    """

    def __init__(self, peak_learning_rate, warmup_steps, total_steps, end_learning_rate=0.0):
        if not 0 <= warmup_steps <= total_steps or total_steps <= 0:
            raise ConfigError(f"Need 0 ≤ warmup_steps ({warmup_steps}) ≤ total_steps "
                              f"({total_steps}) and total_steps > 0.")
        self.peak_learning_rate = float(peak_learning_rate)
        self.warmup_steps = int(warmup_steps)
        self.total_steps = int(total_steps)
        self.end_learning_rate = float(end_learning_rate)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak, end = self.peak_learning_rate, self.end_learning_rate
        warm = peak * step / max(self.warmup_steps, 1)
        progress = (step - self.warmup_steps) / max(self.total_steps - self.warmup_steps, 1)
        decay = peak + (end - peak) * ops.minimum(progress, 1.0)
        return ops.where(step < self.warmup_steps, warm, decay)

    def get_config(self):
        return {"peak_learning_rate": self.peak_learning_rate, "warmup_steps": self.warmup_steps,
                "total_steps": self.total_steps, "end_learning_rate": self.end_learning_rate}


@keras.saving.register_keras_serializable("keras_bert_lab")
class SlantedTriangular(keras.optimizers.schedules.LearningRateSchedule):
    """ULMFiT's slanted triangular rate (Howard & Ruder 2018, eq. 3).

    A short linear increase over the first ``cut_fraction`` of training, then a long linear
    decrease; the lowest rate is ``max_learning_rate / ratio``.

    Example:
    >>> schedule = SlantedTriangular(0.01, total_steps=100, cut_fraction=0.1, ratio=32)
    >>> [round(float(schedule(s)), 7) for s in (0, 10, 100)]   # 0.01 / 32 at both ends
    [0.0003125, 0.01, 0.0003125]
    """

    def __init__(self, max_learning_rate, total_steps, cut_fraction=0.1, ratio=32):
        self.max_learning_rate = float(max_learning_rate)
        self.total_steps = int(total_steps)
        self.cut_fraction = float(cut_fraction)
        self.ratio = float(ratio)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        cut = max(int(self.total_steps * self.cut_fraction), 1)
        p = ops.where(step < cut, step / cut,
                      1.0 - (step - cut) / (cut * (1.0 / self.cut_fraction - 1.0)))
        p = ops.maximum(p, 0.0)
        return self.max_learning_rate * (1.0 + p * (self.ratio - 1.0)) / self.ratio

    def get_config(self):
        return {"max_learning_rate": self.max_learning_rate, "total_steps": self.total_steps,
                "cut_fraction": self.cut_fraction, "ratio": self.ratio}


@keras.saving.register_keras_serializable("keras_bert_lab")
class WarmupCosineDecay(WarmupLinearDecay):
    """Linear warm-up to ``peak_learning_rate``, then a cosine anneal to ``end_learning_rate``.

    GPT-1's pretraining schedule (Radford et al. 2018, §4.1: "increased linearly from zero over
    the first 2000 updates and annealed to 0 using a cosine schedule"). Exactly the peak at the
    end of warm-up, exactly the end rate at ``total_steps`` and after; arguments as
    :class:`WarmupLinearDecay`'s.

    Example:
    >>> schedule = WarmupCosineDecay(1e-4, warmup_steps=10, total_steps=110)
    >>> [round(float(schedule(s)), 7) for s in (0, 5, 10, 60, 110, 200)]
    [0.0, 5e-05, 0.0001, 5e-05, 0.0, 0.0]
    """

    def __call__(self, step):
        step = ops.cast(step, "float32")
        peak, end = self.peak_learning_rate, self.end_learning_rate
        warm = peak * step / max(self.warmup_steps, 1)
        progress = ops.minimum(
            (step - self.warmup_steps) / max(self.total_steps - self.warmup_steps, 1), 1.0)
        anneal = end + (peak - end) * 0.5 * (1.0 + ops.cos(3.141592653589793 * progress))
        return ops.where(step < self.warmup_steps, warm, anneal)
