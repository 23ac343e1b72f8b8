"""Interpolated Kneser-Ney: a hand-computed probability, normalisation, and orders."""

import math

import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.metrics.ngram import KneserNey
from tests.markers import backend_independent

pytestmark = backend_independent

TEXT = "the cat sat on the mat . the dog sat on the log .".split()


def test_a_bigram_probability_computed_by_hand():
    # Bigram types 12, of which 10 seen once and 2 twice: d2 = 10 / 14. Continuation counts:
    # the 3, sat 2, . 2, the five others 1 (sum 12): d1 = 5 / 9; 8 words + 1 unseen slot.
    # P1(cat) = (1 - 5/9)/12 + (5/9)(8/12)(1/9) = 76/972.
    # P(cat | the) = (1 - 5/7)/4 + (5/7)(4/4) P1(cat).
    model = KneserNey(order=2).fit(TEXT)
    assert model.discounts == pytest.approx([5 / 9, 10 / 14])
    p1 = 76 / 972
    assert model.probability(("the",), "cat") == pytest.approx((2 / 7) / 4 + (5 / 7) * p1)
    # an unseen context falls back to the continuation distribution
    assert model.probability(("zebra",), "cat") == pytest.approx(p1)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_distributions_sum_to_one(order):
    rng = np.random.default_rng(order)
    tokens = list(rng.zipf(1.5, size=3000) % 50)
    model = KneserNey(order=order).fit(tokens)
    support = model.vocabulary + ["unseen"]
    for _ in range(5):
        context = tuple(rng.choice(tokens, size=order - 1)) + ()
        total = sum(model.probability(context, w) for w in support)
        assert total == pytest.approx(1.0, abs=1e-9)


def test_higher_orders_fit_text_better_and_reversal_works():
    rng = np.random.default_rng(0)
    # a Markov chain of order 2: the next token is a function of the previous two plus noise
    tokens = [0, 1]
    for _ in range(20000):
        tokens.append((tokens[-1] * 3 + tokens[-2] * 5 + int(rng.random() < 0.1)) % 17)
    train, held = tokens[:18000], tokens[18000:]
    ppl = [KneserNey(order=n).fit(train).perplexity(held) for n in (1, 2, 3)]
    assert ppl[2] < 1.6 < min(ppl[:2])   # only the trigram sees both tokens it depends on
    backward = KneserNey(order=3).fit(train[::-1]).perplexity(held[::-1])
    assert math.isfinite(backward) and backward < ppl[0] / 2


def test_bad_input():
    with pytest.raises(ConfigError, match="positive integer"):
        KneserNey(order=0)
    with pytest.raises(DataError, match="no tokens"):
        KneserNey().fit([])
    with pytest.raises(DataError, match="empty"):
        KneserNey().fit(TEXT).perplexity([])
