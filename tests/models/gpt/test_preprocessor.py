"""GPT-1's task input transformations (Radford et al. 2018, Figure 1)."""

import numpy as np
import pytest

from keras_bert_lab.errors import DataError
from keras_bert_lab.preprocessing.bpe_trainer import train_bpe
from keras_bert_lab.models.gpt.preprocessor import GPTTaskPacker
from tests.markers import backend_independent

pytestmark = backend_independent

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "yes", "no"]


@pytest.fixture(scope="module")
def tokenizer():
    # every word frequent enough to be merged into one piece
    return train_bpe([" ".join(WORDS)] * 3, num_merges=1000, min_frequency=2, progress=False)


def pieces(tokenizer, row):
    ids = row["token_ids"][row["padding_mask"] > 0]
    assert not row["token_ids"][row["padding_mask"] == 0].any()   # padding is id 0, at the end
    return [tokenizer.id_to_token(int(i)).replace("</w>", "") for i in ids]


def test_each_transformation_lays_out_the_figure(tokenizer):
    packer = GPTTaskPacker(tokenizer, sequence_length=12)
    row = {k: v[0] for k, v in packer.single(["The cat sat"]).items()}
    assert pieces(tokenizer, row) == ["_start_", "the", "cat", "sat", "_classify_"]
    row = {k: v[0] for k, v in packer.pair(["the cat sat"], ["the dog ran"]).items()}
    assert pieces(tokenizer, row) == ["_start_", "the", "cat", "sat", "_delimiter_", "the",
                                      "dog", "ran", "_classify_"]
    both = packer.similarity(["cat sat"], ["dog ran"])
    assert [pieces(tokenizer, {k: v[0, s] for k, v in both.items()}) for s in (0, 1)] == [
        ["_start_", "cat", "sat", "_delimiter_", "dog", "ran", "_classify_"],
        ["_start_", "dog", "ran", "_delimiter_", "cat", "sat", "_classify_"]]
    choice = packer.choices(["the cat sat on"], [["the mat", "the dog", "yes"]])
    assert choice["token_ids"].shape == (1, 3, 12)
    assert pieces(tokenizer, {k: v[0, 2] for k, v in choice.items()}) == [
        "_start_", "the", "cat", "sat", "on", "_delimiter_", "yes", "_classify_"]


def test_truncation_keeps_the_special_tokens(tokenizer):
    packer = GPTTaskPacker(tokenizer, sequence_length=8)
    row = {k: v[0] for k, v in packer.pair(["the cat sat on the mat"], ["dog ran"]).items()}
    assert pieces(tokenizer, row) == ["_start_", "the", "cat", "sat", "_delimiter_", "dog",
                                      "ran", "_classify_"]
    row = {k: v[0] for k, v in packer.single(["the cat sat on the mat yes no"]).items()}
    assert pieces(tokenizer, row)[-1] == "_classify_" and row["padding_mask"].sum() == 8


def test_bad_input(tokenizer):
    packer = GPTTaskPacker(tokenizer, sequence_length=8)
    with pytest.raises(DataError, match="Example 1 has 2 options but example 0 has 3"):
        packer.choices(["a", "b"], [["yes", "no", "no"], ["yes", "no"]])
    with pytest.raises(DataError, match="2 first texts but 1"):
        packer.pair(["a", "b"], ["c"])
    with pytest.raises(DataError, match="not text"):
        packer.single([None])
    with pytest.raises(DataError, match="at least 4"):
        GPTTaskPacker(tokenizer, sequence_length=3)
    assert np.array_equal(packer.single([])["token_ids"].shape, (0, 8))


def test_tagging_rows_put_each_tag_on_the_words_last_piece():
    from keras_bert_lab.data.conll import TaggedSentence
    from keras_bert_lab.models.gpt.preprocessor import GPTTaggingPreprocessor

    # "cat" and "sat" are one piece each; the rare "catsat" is several
    tokenizer = train_bpe(["cat sat"] * 3 + ["catsat"], num_merges=20, min_frequency=2,
                          progress=False)
    k = len(tokenizer.encode("catsat"))
    assert k >= 2 and len(tokenizer.encode("cat")) == len(tokenizer.encode("sat")) == 1
    labels = ["O", "B-X", "I-X"]
    tagger = GPTTaggingPreprocessor(tokenizer, labels, sequence_length=k + 4)
    data = tagger([TaggedSentence(["catsat", "cat", "  ", "sat"], ["B-X", "I-X", "O", "O"]),
                   TaggedSentence(["cat", "catsat", "sat", "cat", "cat"],
                                  ["O", "B-X", "O", "B-X", "O"])])
    first = {key: v[0] for key, v in data.features.items()}
    assert pieces(tokenizer, first) == ["_start_"] + [
        tokenizer.id_to_token(i).replace("</w>", "") for i in tokenizer.encode("catsat")] + [
        "cat", "sat"]
    # each word's tag at its last piece; "  " has no piece
    assert data.word_index[0].tolist() == [-1] * k + [0, 1, 3, -1]
    assert data.labels[0].tolist() == [0] * k + [1, 2, 0, 0]
    assert data.sample_weight[0].tolist() == [0] * k + [1, 1, 1, 0]
    # row 2 holds start, cat, catsat, sat, cat: the last "cat" does not fit
    assert data.word_index[1].tolist() == [-1, 0] + [-1] * (k - 1) + [1, 2, 3]
    assert data.truncated_words == 1 and data.empty_words == 1
    logits = np.eye(3)[data.labels]
    assert tagger.decode(logits, data) == [["B-X", "I-X", "O", "O"],
                                           ["O", "B-X", "O", "B-X", "O"]]
    with pytest.raises(DataError, match="at least 2"):
        GPTTaggingPreprocessor(tokenizer, labels, sequence_length=1)
