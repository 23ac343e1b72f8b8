"""Fixtures of the text tests: the real bert-base-uncased vocab and HF's fast tokenizer on it."""

import pytest

from keras_bert_lab import datasets
from keras_bert_lab.errors import MissingPackageError


def locate_or_skip(name, part=None):
    try:
        return datasets.locate(name, part)
    except MissingPackageError as error:  # `make test` installs it; say how, do not hide it
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def vocab_path():
    return str(locate_or_skip("bert_uncased_vocab"))


def _hf(vocab_path, lowercase):
    transformers = pytest.importorskip("transformers")
    # transformers 5.x: vocab_file= silently builds a 5-token vocab; vocab= reads the file.
    hf = transformers.BertTokenizerFast(vocab=vocab_path, do_lower_case=lowercase)
    assert len(hf) == 30522
    return hf


@pytest.fixture(scope="session")
def hf_uncased(vocab_path):
    return _hf(vocab_path, True)


@pytest.fixture(scope="session")
def hf_cased(vocab_path):
    return _hf(vocab_path, False)


@pytest.fixture(scope="session")
def tokenizer(vocab_path):
    from keras_bert_lab.text.tokenizer import WordPieceTokenizer

    return WordPieceTokenizer(vocab_path)


@pytest.fixture(scope="session")
def cased_tokenizer(vocab_path):
    from keras_bert_lab.text.tokenizer import WordPieceTokenizer

    return WordPieceTokenizer(vocab_path, lowercase=False)


@pytest.fixture(scope="session")
def wikitext_valid_test():
    locate_or_skip("wikitext2", "valid")
    return datasets.wikitext2_paragraphs("valid") + datasets.wikitext2_paragraphs("test")


def hf_encode(hf, texts, **kwargs):
    """HF's ids, offsets and word ids (no special tokens) of each text, as plain lists."""
    enc = hf(list(texts), add_special_tokens=False, return_offsets_mapping=True, **kwargs)
    return [{"token_ids": enc["input_ids"][i],
             "start_offsets": [s for s, _ in enc["offset_mapping"][i]],
             "end_offsets": [e for _, e in enc["offset_mapping"][i]],
             "word_ids": enc.word_ids(i)} for i in range(len(texts))]
