"""The fine-tuning loop: BERT's schedule, the best validation epoch kept, early stopping."""

import keras
import numpy as np

from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
from keras_bert_lab.pipelines.batches import batches
from keras_bert_lab.training.finetune import fit_best_epoch
from tests.models.bert.test_pretrainer import pretraining_batch

CONFIG = BertConfig.from_size("tiny", vocabulary_size=500, max_positions=64)


def _pretraining_set(n=16):
    x, y, sw = pretraining_batch(batch_size=n, length=16, seed=1, vocabulary_size=500)
    return batches(x, y, sw, batch_size=8)


def test_fit_best_epoch_restores_the_best_epoch_and_stops_early(tmp_path):
    model = BertPretrainer(BertBackbone(CONFIG))
    scores = iter([0.2, 0.7, 0.5, 0.6, 0.9, 0.9])
    snapshots = []

    def evaluate(m):
        snapshots.append([keras.ops.convert_to_numpy(v) for v in m.weights])
        return {"score": next(scores)}

    report = fit_best_epoch(model, _pretraining_set(), evaluate, "score", tmp_path / "run",
                            epochs=6, patience=2, learning_rate=1e-3, verbose=0)
    assert [row["epoch"] for row in report["epochs"]] == [1, 2, 3, 4]  # 2 epochs without gain
    assert report["best_epoch"] == 2 and report["stopped_early"]
    for now, best in zip(model.weights, snapshots[1]):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(now), best)
    assert not np.array_equal(keras.ops.convert_to_numpy(model.weights[1]), snapshots[3][1])
    log = (tmp_path / "run" / "log.csv").read_text().splitlines()
    assert log[0].startswith("epoch,loss,seconds,score") and len(log) == 5
    assert (tmp_path / "run" / "curves.png").stat().st_size > 0
    # Warm-up + linear decay over all 6 × 2 planned steps: the last step (8) is mid-decay.
    lr = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))
    assert 0 < lr < 1e-3
