"""A pretraining run sized to a wall-clock budget (``kbl pretrain --time-budget 20m``).

Cramming (Geiping & Goldstein 2023) argues that a recipe run under a fixed compute budget should
spend it with a learning-rate schedule that *ends* when the budget does: warm-up, then a decay
that reaches zero at the last step, rather than a schedule written for a longer run and cut off.
Keras' compiled train steps read the schedule as a function of the step counter (under JAX a
callback cannot change it inside an epoch), so the schedule here is sized *before* training:

1. :func:`measure` times the run's own train step through ``fit`` (and the held-out
   evaluation) on a throwaway copy of the model: the first batch (the compile) and the steady
   batches after it;
2. :func:`steps_for_budget` turns the time left into a number of optimizer steps, counting the
   compile and the evaluations the run will do;
3. the run then trains exactly as ``--steps N --warmup-steps W`` would, so it is deterministic
   and resumes exactly; the sizing is kept in ``budget.json`` beside the run, and a resumed run
   reuses it instead of measuring again.

The budget covers the training itself — the measurement, the compile, the steps, the held-out
evaluations — from the moment the corpus is ready; tokenizing the corpus and writing the preset
are outside it. A machine that gets slower after the measurement (another job starting) makes the
run end later than the budget, never with a truncated schedule.

>>> parse_duration("20m"), parse_duration("1h30m"), parse_duration("45s"), parse_duration("90")
(1200.0, 5400.0, 45.0, 90.0)
>>> steps_for_budget(600, step_seconds=0.5, fixed_seconds=40, eval_seconds=4, eval_every=100)
1037
"""

import math
import re
import time

from keras_bert_lab.errors import ConfigError

BUDGET_FILE = "budget.json"
UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([hms])")


def parse_duration(text):
    """Seconds in ``text``: ``20m``, ``1h30m``, ``90s``, ``1.5h`` or a plain number of seconds.

    Raises ``ConfigError`` naming the accepted forms for anything else (and for a zero budget).
    """
    value = str(text).strip().lower().replace(" ", "")
    try:
        seconds = float(value)
    except ValueError:
        parts = _DURATION.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            raise ConfigError(f"--time-budget {text!r} is not a duration; write e.g. 20m, 1h30m, "
                              "90s or a number of seconds.") from None
        seconds = sum(float(n) * UNITS[u] for n, u in parts)
    if not seconds > 0 or math.isinf(seconds):
        raise ConfigError(f"--time-budget {text!r} must be a positive, finite duration.")
    return seconds


def steps_for_budget(budget_seconds, step_seconds, fixed_seconds, eval_seconds=0.0,
                     eval_every=None):
    """Optimizer steps that fit in ``budget_seconds``: what is left after ``fixed_seconds`` (the
    measurement, the compile), divided by the cost of a step with its share of the held-out
    evaluation that runs every ``eval_every`` steps. At least 1."""
    per_step = step_seconds + (eval_seconds / eval_every if eval_every else 0.0)
    return max(1, int((budget_seconds - fixed_seconds) / per_step))


def measure(model, dataset, steps=20, callbacks=(), verbose=0):
    """Time ``model`` (compiled) fitting ``steps + 1`` micro-batches of ``dataset`` the way the
    run will (``fit`` with the run's per-batch ``callbacks`` and ``verbose``, its input pipeline
    included): ``(compile_seconds, step_seconds)``, the first batch's time beyond a steady one
    and the median steady batch."""
    import keras

    ends = []

    class Clock(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if not ends:
                ends.append(time.perf_counter())

        def on_train_batch_end(self, batch, logs=None):
            ends.append(time.perf_counter())

    model.fit(dataset, epochs=1, steps_per_epoch=steps + 1, verbose=verbose,
              callbacks=[*callbacks, Clock()])
    times = [b - a for a, b in zip(ends, ends[1:])]
    if len(times) < 2:
        raise ConfigError("The training stream ran out before the step could be timed for "
                          "--time-budget; use a larger corpus or a smaller --batch-size.")
    steady = sorted(times[1:])[len(times[1:]) // 2]
    return max(times[0] - steady, 0.0), steady


def measure_evaluation(model, heldout):
    """``(compile_seconds, seconds)`` of a held-out evaluation of ``model``: the first's time
    beyond the second's, and the second's."""
    times = []
    for _ in range(2):
        begin = time.perf_counter()
        model.evaluate(heldout, verbose=0)
        times.append(time.perf_counter() - begin)
    return max(times[0] - times[1], 0.0), times[1]
