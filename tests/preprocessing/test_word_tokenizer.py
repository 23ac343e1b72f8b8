"""The word tokenizer of the word-level language models (AWD-LSTM / ULMFiT)."""

import numpy as np
import pytest

from keras_bert_lab.data import registry
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.preprocessing.word_tokenizer import (EOS, UNK, WordTokenizer, resize_rows,
                                                          split_text)
from tests.markers import backend_independent

pytestmark = backend_independent


def test_wikitext_and_review_text_split_alike():
    wiki = " The band 's 1 @,@ 000th show @-@ a <unk> . \n"
    review = "the band's 1,000th show-a <unk>."
    assert split_text(wiki) == split_text(review)
    assert "<unk>" in split_text(wiki)


def test_vocabulary_from_wikitext_encodes_lines_with_eos_and_round_trips(tmp_path):
    lines = registry.load("wikitext2", "valid")[:200]
    tokenizer = WordTokenizer.build(lines, max_size=500)
    assert tokenizer.vocabulary_size == 500
    ids = tokenizer.encode_lines(lines)
    assert (ids == EOS).sum() == sum(1 for line in lines if split_text(line))
    assert 0 < (ids == UNK).mean() < 0.5
    tokenizer.save(tmp_path)
    again = WordTokenizer.from_directory(tmp_path)
    assert again.vocabulary == tokenizer.vocabulary
    np.testing.assert_array_equal(again.encode_lines(lines), ids)


def test_extend_keeps_old_ids_and_resizes_rows():
    tokenizer = WordTokenizer.build(["a b a b c"])
    bigger, rows = tokenizer.extend(["zebra zebra a", "yak"], min_count=1)
    assert bigger.vocabulary[:len(tokenizer.vocabulary)] == tokenizer.vocabulary
    assert bigger.vocabulary[len(tokenizer.vocabulary):] == ["zebra", "yak"]
    matrix = np.arange(len(tokenizer.vocabulary) * 2, dtype="float32").reshape(-1, 2)
    grown = resize_rows(matrix, rows)
    np.testing.assert_array_equal(grown[:len(matrix)], matrix)
    np.testing.assert_allclose(grown[-1], matrix.mean(0))


def test_bad_vocabularies_are_named(tmp_path):
    with pytest.raises(ConfigError, match="starts with"):
        WordTokenizer(["a", "b", "c"])
    with pytest.raises(DataError, match="--min-count"):
        WordTokenizer.build(["a b"], min_count=3)
    with pytest.raises(DataError, match="vocab.txt"):
        WordTokenizer.from_directory(tmp_path)
