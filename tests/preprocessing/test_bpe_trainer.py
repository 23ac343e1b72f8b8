"""BPE training: the same merges as tokenizers' BpeTrainer; the result tokenizes like the reference."""

import json

import pytest
import tensorflow as tf

from keras_bert_lab.data import registry
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.preprocessing.bpe import GPT_SPECIAL_TOKENS
from keras_bert_lab.preprocessing.bpe_trainer import learn_merges, train_bpe
from keras_bert_lab.preprocessing.wordpiece_trainer import count_words
from tests.conftest import locate_or_skip
from tests.markers import backend_independent

pytestmark = backend_independent

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def train_lines():
    locate_or_skip("wikitext2", "train")
    return registry.wikitext2_paragraphs("train")[:1500]


def hf_merges(counts, base, vocabulary_size, min_frequency):
    """tokenizers' BpeTrainer on the same word counts. Its base symbols are given up front, in
    our order: left alone it numbers the ``c</w>`` symbols in hash-map order, and ties between
    equally frequent pairs go by those numbers (the lowest pair of ids wins, as in ours)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    model = Tokenizer(models.BPE(end_of_word_suffix="</w>"))
    model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=vocabulary_size, min_frequency=min_frequency,
                                  special_tokens=base, end_of_word_suffix="</w>",
                                  show_progress=False)
    model.train_from_iterator((" ".join([w] * n) for w, n in sorted(counts.items())), trainer)
    data = json.loads(model.to_str())["model"]
    vocab = [t for t, _ in sorted(data["vocab"].items(), key=lambda kv: kv[1])]
    return vocab, [tuple(m) for m in data["merges"]]


@pytest.mark.parametrize("extra, min_frequency", [(1500, 2), (10**6, 8)])
def test_same_merges_as_tokenizers_trainer(train_lines, extra, min_frequency):
    counts = count_words(train_lines, max_chars_per_word=10**6)
    alphabet = sorted({c for w in counts for c in w})
    base = alphabet + [c + "</w>" for c in alphabet]
    vocab, merges = learn_merges(counts, vocabulary_size=len(base) + extra,
                                 min_frequency=min_frequency)
    expected_vocab, expected_merges = hf_merges(counts, base, len(base) + extra, min_frequency)
    assert len(merges) > 1000
    assert merges == expected_merges
    assert vocab == expected_vocab


def test_trained_tokenizer_layout_and_sizes(train_lines):
    tokenizer = train_bpe(train_lines[:300], vocabulary_size=700)
    vocab = tokenizer.vocabulary
    assert len(vocab) == len(set(vocab)) == 700
    assert vocab[-4:] == [*GPT_SPECIAL_TOKENS, "<unk>"]
    n = len({c for t in vocab[:-4] for c in t.replace("</w>", "")})  # every character, twice
    assert vocab[:n] == sorted(vocab[:n]) and all(len(t) == 1 for t in vocab[:n])
    assert vocab[n:2 * n] == [t + "</w>" for t in vocab[:n]]
    assert vocab[2 * n:-4] == [a + b for a, b in tokenizer.merges]  # no repeats on this corpus
    assert len(train_bpe(train_lines[:300], num_merges=123).merges) == 123
    both = train_bpe(tf.data.Dataset.from_tensor_slices(train_lines[:300]),
                     vocabulary_size=10**6, num_merges=50)
    assert both.merges == tokenizer.merges[:50]


def test_trained_files_tokenize_like_the_reference(train_lines, tmp_path):
    tokenizer = train_bpe(train_lines, num_merges=2000, min_frequency=2)
    tokenizer.save(tmp_path)
    vocab = {t: i for i, t in enumerate(tokenizer.vocabulary)}
    reference = transformers.OpenAIGPTTokenizer(vocab=vocab, merges=tokenizer.merges)
    reference.add_special_tokens({"additional_special_tokens": list(GPT_SPECIAL_TOKENS)})
    assert len(reference) == tokenizer.vocabulary_size
    valid = [line for line in registry.load("wikitext2", "valid") if line.strip()][:300]
    texts = valid + ["Ωμέγα ∑ 🙂 naïve", "llla 00000 ooooh"]
    expected = reference(texts, add_special_tokens=False)["input_ids"]
    assert tokenizer.encode(texts) == expected
    assert tokenizer(tf.constant(texts)).to_list() == expected
    assert reference.convert_tokens_to_ids(list(GPT_SPECIAL_TOKENS)) == \
        [tokenizer.start_token_id, tokenizer.delimiter_token_id, tokenizer.classify_token_id]


def test_bad_requests_are_clear_errors():
    with pytest.raises(ConfigError, match="vocabulary_size=N or num_merges=N"):
        train_bpe(["some text"])
    with pytest.raises(DataError, match="no words"):
        train_bpe(["", "  "], num_merges=10)
    with pytest.raises(DataError, match="No pair of symbols occurs 2 times"):
        train_bpe(["a b c d"], num_merges=10)
    with pytest.raises(DataError, match="texts, not one string"):
        train_bpe("corpus.txt", num_merges=10)
