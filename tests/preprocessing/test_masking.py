"""Dynamic masked-LM masking: statistics over ≥ 10,000 sequences, the rules that must always hold,
whole-word masking, and stateless reproducibility.

Tolerances (stated by the issue): selected share of maskable tokens 15 % ± 0.5 pt; of the selected,
[MASK] 80 % ± 1.5 pt, random 10 % ± 1.5 pt, unchanged 10 % ± 1.5 pt. With ~190,000 selected tokens
one standard deviation of these shares is below 0.1 pt, so the bounds only fail on a real bias.
"""

import doctest

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lab.preprocessing import masking
from keras_bert_lab.preprocessing.masking import MaskedLMMasker
from tests.markers import backend_independent

pytestmark = backend_independent

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
VOCAB = 2000
CONTINUATION = np.arange(1000, VOCAB)  # ids 1000+ play "##" pieces in the synthetic batches


def synthetic_batch(num=10_240, length=128, seed=0, continuation_share=0.0):
    """[CLS] A [SEP] B [SEP] [PAD]… with random lengths; ids 10..999 start words, 1000+ continue."""
    rng = np.random.default_rng(seed)
    total = rng.integers(8, length + 1, num)
    first = np.array([rng.integers(1, t - 3 + 1) for t in total])
    ids = rng.integers(10, 1000, (num, length)).astype(np.int32)
    if continuation_share:
        cont = rng.random((num, length)) < continuation_share
        ids = np.where(cont, ids + 1000, ids).astype(np.int32)
    col = np.arange(length)[None, :]
    ids[:, 0] = CLS
    ids[np.arange(num), first + 1] = SEP
    ids[np.arange(num), total - 1] = SEP
    ids[col >= total[:, None]] = PAD
    padding = (col < total[:, None]).astype(np.int32)
    return ids, padding


def run(masker, ids, padding, seed=(0, 0), batch=2048):
    outs = [masker(ids[i:i + batch], padding[i:i + batch], seed=(seed[0], seed[1] + i))
            for i in range(0, len(ids), batch)]
    return {key: np.concatenate([o[key].numpy() for o in outs]) for key in outs[0]}


def maskable(ids, padding):
    return (padding == 1) & ~np.isin(ids, [CLS, SEP, PAD])


@pytest.fixture(scope="module")
def token_level():
    ids, padding = synthetic_batch()
    masker = MaskedLMMasker(VOCAB, MASK, [CLS, SEP, PAD], mask_selection_length=20)
    return ids, padding, run(masker, ids, padding, seed=(11, 0))


def test_selection_and_replacement_statistics(token_level):
    ids, padding, out = token_level
    assert len(ids) >= 10_000
    weights = out["mask_weights"] > 0
    selected_share = weights.sum() / maskable(ids, padding).sum()
    assert abs(selected_share - 0.15) < 0.005, selected_share
    rows = np.arange(len(ids))[:, None]
    new = out["token_ids"][rows, out["mask_positions"]][weights]
    original = out["mask_ids"][weights]
    is_mask = new == MASK
    is_kept = new == original
    is_random = ~is_mask & ~is_kept
    assert abs(is_mask.mean() - 0.80) < 0.015, is_mask.mean()
    # A random draw equal to the original (1/1995) counts as kept: negligible here.
    assert abs(is_random.mean() - 0.10) < 0.015, is_random.mean()
    assert abs(is_kept.mean() - 0.10) < 0.015, is_kept.mean()
    assert not np.isin(new[is_random], [PAD, CLS, SEP, MASK]).any()


def test_rules_that_always_hold(token_level):
    ids, padding, out = token_level
    weights = out["mask_weights"] > 0
    positions = out["mask_positions"]
    rows = np.arange(len(ids))[:, None]
    # Never a special token or padding; mask_ids are the originals there.
    chosen = ids[rows, positions]
    assert not np.isin(chosen[weights], [CLS, SEP, PAD]).any()
    assert (padding[rows, positions][weights] == 1).all()
    np.testing.assert_array_equal(out["mask_ids"][weights], chosen[weights])
    # Count per sequence = min(P, max(1, round(0.15 n))); unused slots are zeros, at the end.
    n = maskable(ids, padding).sum(axis=1)
    np.testing.assert_array_equal(weights.sum(axis=1),
                                  np.minimum(20, np.maximum(1, np.round(0.15 * n))))
    assert (out["mask_positions"][~weights] == 0).all() and (out["mask_ids"][~weights] == 0).all()
    assert (np.diff(weights.astype(int), axis=1) <= 0).all()
    # Positions ascending and distinct.
    count = weights.sum(axis=1)
    for r in range(0, len(ids), 97):
        p = positions[r, :count[r]]
        assert (np.diff(p) > 0).all()
    # Everything not selected is unchanged (including every special token and the padding).
    changed = out["token_ids"] != ids
    selected = np.zeros_like(ids, bool)
    np.put_along_axis(selected, positions, weights, axis=1)
    assert not (changed & ~selected).any()


def test_max_selections_caps_long_sequences():
    ids, padding = synthetic_batch(num=512, length=512, seed=1)
    out = run(MaskedLMMasker(VOCAB, MASK, [CLS, SEP, PAD], mask_selection_length=20), ids, padding)
    n = maskable(ids, padding).sum(axis=1)
    assert ((out["mask_weights"].sum(axis=1) == 20) == (np.round(0.15 * n) >= 20)).all()


def test_configurable_rates():
    ids, padding = synthetic_batch(num=4096, seed=2)
    masker = MaskedLMMasker(VOCAB, MASK, [CLS, SEP, PAD], mask_selection_rate=0.3, mask_selection_length=40,
                            mask_token_rate=0.5, random_token_rate=0.5)
    out = run(masker, ids, padding)
    weights = out["mask_weights"] > 0
    assert abs(weights.sum() / maskable(ids, padding).sum() - 0.30) < 0.005
    new = out["token_ids"][np.arange(len(ids))[:, None], out["mask_positions"]][weights]
    assert abs((new == MASK).mean() - 0.5) < 0.015
    assert (new != out["mask_ids"][weights]).mean() > 0.99  # nothing kept but chance draws
    with pytest.raises(ValueError, match="sum to at most 1"):
        MaskedLMMasker(VOCAB, MASK, mask_token_rate=0.8, random_token_rate=0.3)


def test_stateless_seeds_reproduce_and_vary():
    ids, padding = synthetic_batch(num=256, seed=3)
    masker = MaskedLMMasker(VOCAB, MASK, [CLS, SEP, PAD])
    a = masker(ids, padding, seed=(5, 9))
    b = masker(ids, padding, seed=(5, 9))
    c = masker(ids, padding, seed=(5, 10))
    for key in a:
        np.testing.assert_array_equal(a[key].numpy(), b[key].numpy())
    same = (a["mask_positions"].numpy() == c["mask_positions"].numpy()).all(axis=1)
    assert same.mean() < 0.05
    # Same inside a compiled function (what tf.data runs) as eagerly.
    compiled = tf.function(lambda x, p, s: masker(x, p, s))(ids, padding,
                                                            tf.constant([5, 9], tf.int64))
    np.testing.assert_array_equal(compiled["token_ids"].numpy(), a["token_ids"].numpy())


def words_of(ids, maskable_mask):
    """Word index per token (-1 where not maskable), with the masker's definition of a word."""
    cont = np.isin(ids, CONTINUATION)
    prev = np.pad(maskable_mask[:, :-1], ((0, 0), (1, 0)))
    starts = maskable_mask & ~(cont & prev)
    return np.where(maskable_mask, np.cumsum(starts, axis=1) - 1, -1)


def test_whole_word_masking_never_splits_a_word():
    ids, padding = synthetic_batch(num=10_240, seed=4, continuation_share=0.45)
    masker = MaskedLMMasker(VOCAB, MASK, [CLS, SEP, PAD], mask_selection_length=20, whole_word_masking=True,
                            continuation_token_ids=CONTINUATION)
    out = run(masker, ids, padding, seed=(3, 0))
    weights = out["mask_weights"] > 0
    selected = np.zeros_like(ids, bool)
    np.put_along_axis(selected, out["mask_positions"], weights, axis=1)
    # (unused slots point at position 0, [CLS], which is never selected)
    m = maskable(ids, padding)
    assert not (selected & ~m).any()
    word = words_of(ids, m)
    budget = np.minimum(20, np.maximum(1, np.round(0.15 * m.sum(axis=1)))).astype(int)
    multi_piece_words = 0
    for r in range(len(ids)):
        w = word[r][m[r]]
        s = selected[r][m[r]]
        lengths = np.bincount(w)
        chosen = np.bincount(w, weights=s).astype(int)
        # Every word is selected entirely or not at all.
        assert ((chosen == 0) | (chosen == lengths)).all(), r
        multi_piece_words += int(((chosen > 1)).sum())
        # google's greedy fill: within budget, and no unselected word fits in what is left.
        used = chosen.sum()
        assert used <= budget[r]
        left = budget[r] - used
        assert not ((chosen == 0) & (lengths <= left)).any(), r
    assert multi_piece_words > 10_000
    share = weights.sum() / m.sum()
    assert abs(share - 0.15) < 0.01, share  # whole words fill the budget slightly less exactly
    new = out["token_ids"][np.arange(len(ids))[:, None], out["mask_positions"]][weights]
    assert abs((new == MASK).mean() - 0.80) < 0.015


def test_from_tokenizer_and_real_whole_words(tokenizer):
    masker = MaskedLMMasker.from_tokenizer(tokenizer, whole_word_masking=True, mask_selection_length=30)
    assert set(masker.unselectable_token_ids) == {tokenizer.cls_token_id, tokenizer.sep_token_id,
                                                  tokenizer.pad_token_id}
    vocab = tokenizer.vocabulary
    assert all(vocab[i].startswith("##") for i in masker.continuation_token_ids)
    assert not any(vocab[i].startswith("[") and vocab[i].endswith("]") and len(vocab[i]) > 2
                   for i in masker.random_token_ids)
    texts = ["Unbelievably, the transformers tokenized hyperparameters everywhere.",
             "Photosynthesis occurs in chloroplasts of eukaryotic organisms."] * 64
    ids = tokenizer(tf.constant(texts)).to_tensor()
    padding = tf.cast(ids > 0, tf.int32)
    out = masker(ids, padding, seed=(1, 2))
    pieces = [[vocab[i] for i in row] for row in ids.numpy().tolist()]
    for r, row in enumerate(pieces):
        chosen = set(out["mask_positions"].numpy()[r][out["mask_weights"].numpy()[r] > 0])
        for p in chosen:  # neighbours in the same word are chosen too
            if p + 1 < len(row) and row[p + 1].startswith("##"):
                assert p + 1 in chosen
            if row[p].startswith("##"):
                assert p - 1 in chosen


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="continuation_token_ids"):
        MaskedLMMasker(VOCAB, MASK, whole_word_masking=True)
    with pytest.raises(ValueError, match="mask_selection_rate"):
        MaskedLMMasker(VOCAB, MASK, mask_selection_rate=0)
    with pytest.raises(ValueError, match=r"\[B, L\]"):
        MaskedLMMasker(VOCAB, MASK)(tf.constant([5, 6, 7]))


def test_docstring_examples():
    result = doctest.testmod(masking, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
