"""Shared test fixtures. Every test runs under the backend named by KERAS_BACKEND."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Each test starts from the default float32 policy and a fixed seed."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


def padded_pair_batch(vocab_size=30522, lengths=(24, 17, 9), first_lengths=(10, 6, 4), seed=0,
                      cls_id=101, sep_id=102, first_word_id=103):
    """A padded batch of sentence pairs: [CLS] A [SEP] B [SEP] [PAD]…, mixed segment ids; word ids
    are drawn from ``[first_word_id, vocab_size)``."""
    rng = np.random.default_rng(seed)
    batch, total = len(lengths), max(lengths)
    token_ids = np.zeros((batch, total), "int32")
    segment_ids = np.zeros((batch, total), "int32")
    padding_mask = np.zeros((batch, total), "int32")
    for row, (length, a) in enumerate(zip(lengths, first_lengths)):
        token_ids[row, :length] = rng.integers(first_word_id, vocab_size, size=length)
        token_ids[row, 0], token_ids[row, a + 1], token_ids[row, length - 1] = cls_id, sep_id, sep_id
        segment_ids[row, a + 2:length] = 1
        padding_mask[row, :length] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)
