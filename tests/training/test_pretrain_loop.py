"""The pretraining loop's fit segments (the whole loop runs in tests/recipes/test_pretrain.py)."""

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
