"""Contiguous LM blocks and their seeded stream; ELMo's words, vocabulary and batches."""

import numpy as np
import pytest

from keras_bert_lab.errors import DataError
from keras_bert_lab.pipelines.language_model import (block_order, elmo_dataset, lm_blocks,
                                                     lm_dataset, tbptt_blocks, type_characters,
                                                     word_stream, word_vocabulary)
from tests.markers import backend_independent

pytestmark = backend_independent


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


# ---- words for ELMo ----------------------------------------------------------------------------
DOCUMENTS = [["the cat sat", "the dog sat down"], ["a naïve cat", "the end"]]


def test_word_vocabulary_is_bilm_tf_layout_and_rare_words_are_unk():
    types, ids = word_stream(DOCUMENTS)
    assert types[:2] == ["<S>", "</S>"]
    assert [types[i] for i in ids[:5]] == ["<S>", "the", "cat", "sat", "</S>"]
    assert ids.tolist().count(0) == ids.tolist().count(1) == 4        # one pair per sentence
    words, word_ids = word_vocabulary(types, ids, min_count=2)
    # the 3×; cat, sat 2× (cat seen first); the others once
    assert words == ["<S>", "</S>", "<UNK>", "the", "cat", "sat"]
    assert [words[word_ids[types.index(w)]] for w in ("dog", "cat", "naïve")] == \
        ["<UNK>", "cat", "<UNK>"]
    held_types, held = word_stream([["the zebra"]], list(types))
    assert held_types[:len(types)] == types and held_types[-1] == "zebra"
    given, given_ids = word_vocabulary(held_types, ids, words=["<UNK>", "</S>", "<S>", "zebra"])
    assert given_ids[held_types.index("zebra")] == 3 and given_ids[held_types.index("the")] == 0
    with pytest.raises(DataError, match=r"lacks \['<UNK>'\]"):
        word_vocabulary(types, ids, words=["<S>", "</S>", "the"])


def test_elmo_batches_spell_the_inputs_and_target_each_word_once_per_direction():
    from keras_bert_lab.preprocessing.characters import character_ids

    types, ids = word_stream(DOCUMENTS * 3)
    words, word_ids = word_vocabulary(types, ids, min_count=4)      # 'dog', 'naïve'…: <UNK>
    blocks = lm_blocks(ids, block_length=5, context=2)
    assert blocks.shape == ((len(ids) - 2) // 5, 7)
    batches = list(elmo_dataset(blocks, type_characters(types), word_ids, batch_size=2,
                                shuffle=False).as_numpy_iterator())
    x, y, w = batches[0]
    inputs = [[types[t] for t in row[1:-1]] for row in blocks[:2]]
    assert "dog" in inputs[1] and words[word_ids[types.index("dog")]] == "<UNK>"
    # every word spelled as itself, the <UNK> ones too
    np.testing.assert_array_equal(x["character_ids"], character_ids(inputs, add_boundaries=False))
    forward = np.concatenate([b[1]["forward"].ravel() for b in batches])
    backward = np.concatenate([b[1]["backward"].ravel() for b in batches])
    covered = len(batches) * 2 * 5
    np.testing.assert_array_equal(forward, word_ids[ids[2:covered + 2]])    # the next word
    np.testing.assert_array_equal(backward, word_ids[ids[:covered]])        # the previous word
    fw = np.concatenate([b[2]["forward"].ravel() for b in batches])
    bw = np.concatenate([b[2]["backward"].ravel() for b in batches])
    np.testing.assert_array_equal(fw, ids[2:covered + 2] != 0)     # <S> is not a forward target
    np.testing.assert_array_equal(bw, ids[:covered] != 1)          # </S> not a backward one
    resumed = list(elmo_dataset(blocks, type_characters(types), word_ids, batch_size=2, seed=4,
                                epochs=2, skip_batches=3).as_numpy_iterator())
    full = list(elmo_dataset(blocks, type_characters(types), word_ids, batch_size=2, seed=4,
                             epochs=2).as_numpy_iterator())
    assert len(resumed) == len(full) - 3
    np.testing.assert_array_equal(resumed[0][0]["character_ids"], full[3][0]["character_ids"])


def test_tbptt_blocks_continue_each_row_across_batches():
    tokens = np.arange(1000) * 7 % 997
    blocks = tbptt_blocks(tokens, batch_size=4, bptt=10)
    batches = blocks.reshape(-1, 4, 11)                           # (windows, B, bptt + 1)
    part = 999 // 4
    assert len(batches) == part // 10
    for b in range(4):
        row = np.concatenate([batches[0, b]] + [w[b, 1:] for w in batches[1:]])
        np.testing.assert_array_equal(row, tokens[b * part:b * part + len(row)])
    x, y, _ = next(iter(lm_dataset(blocks, batch_size=4, shuffle=False, skip_batches=1)))
    np.testing.assert_array_equal(x["token_ids"].numpy(), batches[1, :, :-1])
    np.testing.assert_array_equal(y.numpy(), batches[1, :, 1:])
    with pytest.raises(DataError, match="--bptt 2"):
        tbptt_blocks(tokens, batch_size=4, bptt=1)
    with pytest.raises(DataError, match="lower --batch-size"):
        tbptt_blocks(tokens[:30], batch_size=4, bptt=10)
