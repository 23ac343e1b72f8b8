"""The pretraining loop's fit segments (the whole loop runs in tests/models/bert/test_pretrain.py)."""

import pytest

from keras_bert_lab.training.pretrain import segments


@pytest.mark.parametrize("start, end, every", [(0, 2, 4), (2, 2, 4), (0, 8, 4), (5, 13, 4),
                                               (0, 10, 4), (7, 8, 4)])
def test_fit_segments_cover_the_steps_exactly(start, end, every):
    step = start
    for first, epochs, per_epoch in segments(start, end, every):
        assert first == step and epochs >= 1 and per_epoch >= 1  # 0 steps would mean "endless"
        step += epochs * per_epoch
        assert step % every == 0 or step == end  # evaluation falls on multiples of `every`
    assert step == end or start >= end


def test_step_log_rows_are_means_since_the_previous_row(tmp_path):
    """Keras' logs are means since the epoch began; each train row is the mean of its own
    window of batches (a model that cannot learn, so each batch's loss is known in advance)."""
    import keras
    import numpy as np

    from keras_bert_lab.training.callbacks import StepLog
    from keras_bert_lab.training.run import read_rows

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, kernel_initializer="zeros",
                                                                     use_bias=False)])
    class Perplexity(keras.metrics.MeanSquaredError):    # exp of a mean, like a perplexity
        def result(self):
            return keras.ops.exp(super().result())

    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse",
                  metrics=[Perplexity(name="perplexity")])
    y = np.array([1.0, 3.0, 2.0, 0.0, 5.0, 1.0, 4.0, 2.0], "float32")   # one sample a batch
    log = StepLog(tmp_path / "log.csv", tokens_per_step=1, log_every=2,
                  columns=("step", "split", "loss", "perplexity", "learning_rate", "tokens_per_s",
                           "elapsed_s"))
    model.fit(np.zeros((8, 1), "float32"), y, batch_size=1, epochs=2, shuffle=False, verbose=0,
              callbacks=[log])
    rows = [r for r in read_rows(tmp_path / "log.csv") if r["split"] == "train"]
    assert [int(r["step"]) for r in rows] == list(range(2, 17, 2))
    windows = (y ** 2).reshape(4, 2).mean(axis=1)                     # 5, 2, 13, 10
    np.testing.assert_allclose([float(r["loss"]) for r in rows], np.tile(windows, 2), rtol=1e-5)
    np.testing.assert_allclose([float(r["perplexity"]) for r in rows], np.exp(np.tile(windows, 2)),
                               rtol=1e-4)


def test_step_log_exists_for_a_run_shorter_than_one_row(tmp_path):
    """The recipes plot log.csv at the end: a run of fewer steps than ``log_every`` must still
    leave one (a header, no rows) instead of failing after training."""
    import keras
    import numpy as np

    from keras_bert_lab.training.callbacks import StepLog
    from keras_bert_lab.training.run import read_rows

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    log = StepLog(tmp_path / "log.csv", tokens_per_step=1, log_every=100,
                  columns=("step", "split", "loss"))
    model.fit(np.zeros((2, 1), "float32"), np.zeros(2, "float32"), batch_size=1, verbose=0,
              callbacks=[log])
    assert read_rows(tmp_path / "log.csv") == []
    assert (tmp_path / "log.csv").read_text().strip() == "step,split,loss"
