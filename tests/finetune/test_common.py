import json

import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.finetune.common import (FinetuneSettings, add_common_arguments, batches,
                                            finetune, prepare_output, settings_from_args)
from tests.tasks.test_pretraining import pretraining_batch

CONFIG = BertConfig.from_size("tiny", vocab_size=500, max_positions=64)


def _features(n=10, length=40, seed=0):
    rng = np.random.default_rng(seed)
    real = rng.integers(3, 30, size=n)
    mask = (np.arange(length)[None, :] < real[:, None]).astype("int32")
    x = {"token_ids": rng.integers(5, 100, size=(n, length)).astype("int32") * mask,
         "segment_ids": np.zeros((n, length), "int32"), "padding_mask": mask}
    return x, real


def test_batches_cut_each_batch_to_its_longest_row():
    x, real = _features()
    tags = np.arange(10 * 40).reshape(10, 40)  # token labels: cut like the features
    data = batches(x, {"tags": tags, "label": np.arange(10)}, batch_size=4, length_multiple=8)
    assert int(data.cardinality()) == 3
    seen = []
    for bx, by in data.as_numpy_iterator():
        rows = by["label"]
        longest = real[rows].max()
        assert bx["token_ids"].shape[1] == min(40, -(-longest // 8) * 8)
        length = bx["token_ids"].shape[1]
        np.testing.assert_array_equal(bx["token_ids"], x["token_ids"][rows, :length])
        np.testing.assert_array_equal(by["tags"], tags[rows, :length])
        assert bx["padding_mask"].sum() == x["padding_mask"][rows].sum()  # nothing real cut
        seen.extend(rows.tolist())
    assert seen == list(range(10))


def test_batches_shuffle_every_epoch_reproducibly():
    x, _ = _features()

    def orders(seed):
        data = batches(x, np.arange(10), batch_size=10, shuffle=True, seed=seed)
        return [next(iter(data))[1].numpy().tolist() for _ in range(2)]

    first, second = orders(3)
    assert sorted(first) == list(range(10)) and first != second  # a new order each epoch
    assert orders(3) == [first, second]  # the same run, the same orders


def test_batches_handle_choices_and_check_rows():
    x, _ = _features(n=6)
    choices = {k: v.reshape(3, 2, 40) for k, v in x.items()}  # (N, C, L)
    bx, by = next(iter(batches(choices, np.zeros(3, "int32"), batch_size=3)))
    assert bx["token_ids"].shape[:2] == (3, 2) and bx["token_ids"].shape[2] <= 32
    with pytest.raises(ValueError, match="rows"):
        batches(x, np.arange(5))


def _pretraining_set(n=16):
    x, y, sw = pretraining_batch(batch_size=n, length=16, seed=1, vocab_size=500)
    return batches(x, y, sw, batch_size=8)


def test_finetune_restores_the_best_epoch_and_stops_early(tmp_path):
    settings = FinetuneSettings(output=str(tmp_path / "run"), epochs=6, patience=2,
                                learning_rate=1e-3)
    model = BertPretrainer(BertBackbone(CONFIG))
    scores = iter([0.2, 0.7, 0.5, 0.6, 0.9, 0.9])
    snapshots = []

    def evaluate(m):
        snapshots.append([keras.ops.convert_to_numpy(v) for v in m.weights])
        return {"score": next(scores)}

    report = finetune(model, _pretraining_set(), settings, evaluate, "score", verbose=0)
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


def test_settings_flags_and_output_dir(tmp_path):
    import argparse

    parser = argparse.ArgumentParser()
    add_common_arguments(parser, learning_rate=1e-4)
    args = parser.parse_args(["--output", str(tmp_path / "a"), "--layer-decay", "0.9",
                              "--limit", "100"])
    settings = settings_from_args(args)
    assert (settings.learning_rate, settings.layer_decay, settings.limit) == (1e-4, 0.9, 100)
    out = prepare_output(settings)
    assert json.loads((out / "settings.json").read_text())["layer_decay"] == 0.9
    with pytest.raises(ConfigError, match="--overwrite"):
        prepare_output(settings)
    with pytest.raises(ConfigError, match="--warmup-ratio"):
        FinetuneSettings(warmup_ratio=1.5)
