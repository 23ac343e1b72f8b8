"""The wall-clock budget's arithmetic (training.budget); the recipe's use of it is tested with
``kbl pretrain`` in tests/models/bert/test_pretrain.py."""

import pytest

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.training import budget
from tests.markers import backend_independent


@backend_independent
@pytest.mark.parametrize("text, seconds", [
    ("20m", 1200.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("45s", 45.0), ("90", 90.0),
    (" 2M ", 120.0), ("1h0m30s", 3630.0)])
def test_durations(text, seconds):
    assert budget.parse_duration(text) == seconds


@backend_independent
@pytest.mark.parametrize("text", ["soon", "20 minutes", "m", "10x", "1h-5m", "0", "-3m", "inf"])
def test_bad_durations_name_the_forms(text):
    with pytest.raises(ConfigError, match=r"20m, 1h30m, 90s|positive, finite"):
        budget.parse_duration(text)


@backend_independent
def test_steps_fill_what_the_fixed_costs_leave():
    # 600 s, 40 s spent: 560 s of steps at 0.5 s plus a 4 s evaluation every 100 steps.
    assert budget.steps_for_budget(600, 0.5, 40, 4.0, 100) == int(560 / 0.54)
    assert budget.steps_for_budget(600, 0.5, 40) == 1120             # no held-out evaluation
    assert budget.steps_for_budget(10, 0.5, 40) == 1                 # over budget: one step


def test_measure_separates_the_compile_from_the_steady_step():
    """A model whose first batch takes 0.3 s longer (as a compile does): measured through fit."""
    import itertools
    import time

    import keras
    import numpy as np

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", run_eagerly=True)

    class FirstIsSlow(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            time.sleep(0.3 if batch == 0 else 0.02)

    batches = (b for b in itertools.repeat((np.zeros((8, 4), "float32"),
                                            np.zeros((8, 1), "float32"))))
    original_fit = model.fit
    model.fit = lambda *a, callbacks=(), **k: original_fit(*a, callbacks=[FirstIsSlow(),
                                                                          *callbacks], **k)
    compile_s, step_s = budget.measure(model, batches, steps=5)
    assert 0.015 < step_s < 0.2 and 0.2 < compile_s < 5   # JAX traces its first step too
