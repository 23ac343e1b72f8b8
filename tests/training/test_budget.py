"""The wall-clock budget's arithmetic (training.budget); the recipe's use of it is tested with
``kbl pretrain`` in tests/recipes/test_pretrain.py."""

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


@backend_independent
def test_measure_separates_the_compile_from_the_steady_step():
    class Timed:
        """train_on_batch sleeps 0.2 s the first time (the compile), 0.01 s after."""

        calls = 0

        def train_on_batch(self, x, y, sample_weight=None):
            import time

            time.sleep(0.2 if not self.calls else 0.01)
            self.calls += 1

    batches = iter([((), (), ())] * 20)
    compile_s, step_s = budget.measure(Timed(), batches, steps=5)
    assert 0.005 < step_s < 0.1 and 0.1 < compile_s < 0.4
    with pytest.raises(ConfigError, match="ran out"):
        budget.measure(Timed(), iter([((), (), ())]), steps=5)
