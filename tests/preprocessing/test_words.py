"""Words for word2vec: tokenization, vocabulary with min_count, subsampling and noise formulas."""

import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.preprocessing.words import (WordVocabulary, keep_probabilities,
                                                noise_distribution, split_words)
from tests.markers import backend_independent

pytestmark = backend_independent


def test_split_words_drops_punctuation_and_wikitext_markers():
    assert split_words("A 3 @-@ year @,@ old , Dog's re-run .") == [
        "a", "3", "year", "old", "dog's", "re-run"]
    assert split_words("Paris", lowercase=False) == ["Paris"]


def test_vocabulary_counts_order_and_min_count():
    corpus = [["b a b", "c b a"], ["a d"]]
    vocabulary = WordVocabulary.build(corpus, min_count=2)
    assert vocabulary.words == ["b", "a"]         # 3 each: first appearance breaks the tie
    assert vocabulary.counts.tolist() == [3, 3]
    assert vocabulary.total_words == 8
    ids, starts = vocabulary.encode(corpus)
    assert ids.tolist() == [0, 1, 0, 0, 1, 1] and starts.tolist() == [0, 3, 5, 6]
    assert WordVocabulary.build(corpus, min_count=1, max_size=3).words == ["b", "a", "c"]


@pytest.mark.parametrize("corpus", [[], [[""]], [["  , . !"]]])
def test_empty_corpus_is_a_clear_error(corpus):
    with pytest.raises(DataError, match="no words"):
        WordVocabulary.build(corpus)


def test_min_count_that_keeps_nothing_names_the_setting():
    with pytest.raises(DataError, match="min_count=5"):
        WordVocabulary.build(["one two three two"], min_count=5)
    with pytest.raises(ConfigError, match="min_count"):
        WordVocabulary.build(["one"], min_count=0)


def test_keep_probabilities_follow_both_formulas():
    counts = np.array([900, 90, 9, 1])
    f = counts / counts.sum()
    t = 1e-2
    paper = keep_probabilities(counts, t)
    np.testing.assert_allclose(paper, np.minimum(1, np.sqrt(t / f)))
    assert paper[0] < paper[1] < 1 and paper[2] == paper[3] == 1   # f ≤ t is always kept
    c_formula = keep_probabilities(counts, t, formula="word2vec.c")
    np.testing.assert_allclose(c_formula, np.minimum(1, (np.sqrt(f / t) + 1) * t / f))
    assert (keep_probabilities(counts, 0) == 1).all()
    with pytest.raises(ConfigError):
        keep_probabilities(counts, t, formula="gensim")


def test_noise_distribution_is_unigram_to_three_quarters():
    noise = noise_distribution([81, 16, 1])
    np.testing.assert_allclose(noise, np.array([27, 8, 1]) / 36)
