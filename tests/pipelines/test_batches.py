"""Fine-tuning batches: each cut to its longest row, reshuffled every epoch, choices kept."""

import numpy as np
import pytest

from keras_bert_lab.pipelines.batches import batches
from tests.markers import backend_independent

pytestmark = backend_independent


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
