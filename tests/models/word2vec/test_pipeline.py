"""word2vec's example stream: exact window pairs, and the subsampling, window and noise
distributions checked against their formulas by counting (tolerances of 5 standard errors)."""

import collections

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from keras_bert_lab.models.word2vec.pipeline import (chunk_bounds, expected_examples,  # noqa: E402
                                               skipgram_dataset, window_contexts, window_pairs)
from tests.markers import backend_independent

pytestmark = backend_independent


def brute_force_pairs(sentences, reduced):
    pairs = set()
    for i in range(len(sentences)):
        for j in range(len(sentences)):
            if i != j and sentences[i] == sentences[j] and abs(i - j) <= reduced[i]:
                pairs.add((i, j))
    return pairs


def test_window_pairs_are_exactly_the_positions_within_each_reduced_window():
    rng = np.random.default_rng(0)
    sentences = np.repeat(np.arange(5), rng.integers(1, 9, size=5)).astype("int32")
    reduced = rng.integers(1, 4, size=len(sentences)).astype("int32")
    centers, contexts = window_pairs(tf.constant(sentences), tf.constant(reduced), window=3)
    found = list(zip(centers.numpy().tolist(), contexts.numpy().tolist()))
    assert len(found) == len(set(found))
    assert set(found) == brute_force_pairs(sentences, reduced)


def test_cbow_contexts_hold_the_same_pairs_padded_with_minus_one():
    sentences = np.array([0, 0, 0, 0, 1, 1], "int32")
    reduced = np.array([2, 1, 2, 1, 2, 1], "int32")
    contexts = window_contexts(tf.constant(sentences), tf.constant(reduced), 2).numpy()
    assert contexts.shape == (6, 4)
    found = {(i, j) for i, row in enumerate(contexts) for j in row if j >= 0}
    assert found == brute_force_pairs(sentences, reduced)


def test_chunks_keep_sentences_whole():
    bounds = chunk_bounds(np.array([0, 3, 5, 9, 10]), chunk_words=4)
    assert bounds.tolist() == [[0, 5], [5, 9], [9, 10]]


def collect(data, batches):
    centers, contexts, noise = [], [], []
    for inputs, _ in data.take(batches):
        centers.append(inputs["center"].numpy())
        contexts.append(inputs["context"].numpy())
        noise.append(inputs["negatives"].numpy())
    return np.concatenate(centers), np.concatenate(contexts), np.concatenate(noise)


def test_window_offsets_follow_the_papers_distribution():
    """No subsampling, one long sentence of distinct words: the pair at distance d appears with
    probability (W − d + 1) / W, on each side."""
    n, window, epochs = 400, 4, 60
    ids, starts = np.arange(n, dtype="int32"), np.array([0, n])
    data = skipgram_dataset(ids, starts, keep=np.ones(n), noise=np.full(n, 1 / n),
                            window=window, negatives=1, batch_size=100, seed=5)
    per_epoch = int(expected_examples(ids, starts, np.ones(n), window))
    centers, contexts, _ = collect(data, epochs * per_epoch // 100)
    distance = collections.Counter(np.abs(contexts[:, 0] - centers).tolist())
    expected = {d: 2 * (n - d) * (window - d + 1) / window for d in range(1, window + 1)}
    # Shares of the pairs by distance (batches run across epoch ends, so compare proportions).
    for d, mean in expected.items():
        share = mean / sum(expected.values())
        sd = np.sqrt(len(centers) * share * (1 - share))
        assert abs(distance[d] - share * len(centers)) < 5 * sd, (d, distance[d])
    assert set(distance) == set(range(1, window + 1))
    assert abs(per_epoch - sum(expected.values())) < 1


def test_subsampling_keeps_each_word_with_its_probability():
    """Sentences ``[w, 3]`` where word 3 is always kept: the pair (3 → w) is used exactly when w
    survives subsampling (distance 1 is inside every window), so its count estimates keep[w]."""
    keep = np.array([0.1, 0.5, 0.9, 1.0])
    per_word = 2000
    ids = np.array([[w, 3] for w in (0, 1, 2) for _ in range(per_word)], "int32").ravel()
    starts = np.arange(0, len(ids) + 1, 2)
    data = skipgram_dataset(ids, starts, keep=keep, noise=np.full(4, 0.25), window=2,
                            negatives=1, batch_size=1, seed=2, repeat=False)
    pairs = collections.Counter()
    for x, _ in data:
        pairs[(int(x["center"][0]), int(x["context"][0, 0]))] += 1
    for w in (0, 1, 2):
        p = keep[w]
        sd = np.sqrt(per_word * p * (1 - p))
        assert abs(pairs[(3, w)] - per_word * p) < 5 * sd + 1, (w, pairs[(3, w)])
        assert pairs[(w, 3)] == pairs[(3, w)]           # both directions of a kept pair


def test_noise_words_follow_the_noise_distribution():
    noise = np.array([0.5, 0.3, 0.15, 0.05])
    ids = np.tile(np.arange(4, dtype="int32"), 500)
    data = skipgram_dataset(ids, np.array([0, len(ids)]), keep=np.ones(4), noise=noise,
                            window=2, negatives=7, batch_size=200, seed=3)
    _, _, drawn = collect(data, 30)
    counts = np.bincount(drawn.ravel(), minlength=4)
    total = counts.sum()
    np.testing.assert_array_less(np.abs(counts - noise * total),
                                 5 * np.sqrt(total * noise * (1 - noise)))


def test_shared_pool_and_reproducibility():
    ids = np.tile(np.arange(30, dtype="int32"), 20)
    starts = np.array([0, len(ids)])
    make = lambda seed: skipgram_dataset(ids, starts, keep=np.full(30, 0.8),  # noqa: E731
                                         noise=np.full(30, 1 / 30), batch_size=64,
                                         shared_pool=16, seed=seed)
    (a, wa), (b, _), (c, _) = (next(iter(make(s))) for s in (4, 4, 5))
    assert a["negatives"].shape == (64, 1) and wa.shape == (64, 1)
    np.testing.assert_allclose(wa.numpy(), 5 / 16)
    assert (a["negatives"].numpy()[16:] == 0).all()
    np.testing.assert_array_equal(a["center"].numpy(), b["center"].numpy())
    assert not np.array_equal(a["center"].numpy(), c["center"].numpy())


@pytest.mark.parametrize("pool", [0, 8])
def test_batches_per_element_lay_the_same_batches_end_to_end(pool):
    ids = np.tile(np.arange(30, dtype="int32"), 40)
    starts = np.array([0, 500, len(ids)])
    make = lambda per: skipgram_dataset(ids, starts, keep=np.full(30, 0.8),  # noqa: E731
                                        noise=np.full(30, 1 / 30), batch_size=32,
                                        shared_pool=pool, seed=2, batches_per_element=per)
    single = [b for b, _ in make(1).take(6).as_numpy_iterator()]
    merged = [(b, w) for b, w in make(3).take(2).as_numpy_iterator()]
    for k, (batch, weights) in enumerate(merged):
        assert weights.shape == (96, 1)
        for name in ("center", "context", "negatives"):
            expected = np.concatenate([single[3 * k + i][name] for i in range(3)])
            np.testing.assert_array_equal(batch[name], expected)
