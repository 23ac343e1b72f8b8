"""Contiguous LM blocks and their seeded stream."""

import numpy as np
import pytest

from keras_bert_lab.errors import DataError
from keras_bert_lab.pipelines.language_model import block_order, lm_blocks, lm_dataset


def test_blocks_cover_every_target_once_and_separate_documents():
    blocks = lm_blocks(np.arange(1, 22), block_length=5)
    assert blocks.shape == (4, 6)
    targets = blocks[:, 1:].ravel()
    assert targets.tolist() == list(range(2, 22))   # each token but the first is a target once
    sep = lm_blocks(np.array([1, 2, 3, 4, 5]), 2, document_splits=[0, 2, 5], separator_id=0)
    assert sep.ravel().tolist()[:5] == [1, 2, 0, 0, 3]
    with pytest.raises(DataError, match="do not fill one block"):
        lm_blocks(np.arange(4), block_length=8)


def test_stream_is_a_function_of_the_seed_and_skipping_resumes_it():
    blocks = lm_blocks(np.arange(200), block_length=4)   # 49 blocks
    def batches(**kwargs):
        return [x["token_ids"].numpy() for x, _, _ in lm_dataset(blocks, 4, seed=7, epochs=3,
                                                                 **kwargs)]
    full = batches()
    assert len(full) == 3 * 49 // 4
    np.testing.assert_array_equal(np.concatenate(batches(skip_batches=5)), np.concatenate(full[5:]))
    first_epoch = block_order(49, 7, 1)
    assert sorted(first_epoch.tolist()) == list(range(49))
    assert not np.array_equal(block_order(49, 7, 2)[49:], first_epoch)   # reshuffled per epoch
    with pytest.raises(DataError, match="fewer than one batch"):
        lm_dataset(blocks[:3], 4)
