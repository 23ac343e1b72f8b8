"""Vocabulary training: on WikiText-2 train, a vocab that round-trips text and has < 1% [UNK]."""

import gzip

import pytest
import tensorflow as tf

from keras_bert_lab.data import registry as datasets
from keras_bert_lab.errors import DataError
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from keras_bert_lab.preprocessing.wordpiece_trainer import count_words, read_lines, train_vocabulary
from tests.conftest import locate_or_skip
from tests.markers import backend_independent

pytestmark = backend_independent

pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def wikitext_vocab(tmp_path_factory):
    locate_or_skip("wikitext2", "train")
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab = train_vocabulary(datasets.wikitext2_paragraphs("train"), 30522, unused_tokens=10,
                             output=path)
    return vocab, path


def test_wikitext2_vocab_layout(wikitext_vocab):
    vocab, path = wikitext_vocab
    assert len(vocab) == len(set(vocab)) == 30522
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert vocab[5:15] == [f"[unused{i}]" for i in range(10)]
    assert path.read_text(encoding="utf-8").split("\n")[:-1] == vocab
    assert {"the", "of", "##s", "a", "##a", "!", "."} <= set(vocab)
    assert not any(t != t.lower() for t in vocab[15:])  # uncased: learned on lower-cased words


def test_wikitext2_vocab_unk_rate_and_round_trip(wikitext_vocab):
    vocab, path = wikitext_vocab
    tokenizer = WordPieceTokenizer(path)
    valid = datasets.wikitext2_paragraphs("valid")
    ids = tokenizer(tf.constant(valid))
    flat = ids.values.numpy()
    unk_rate = (flat == tokenizer.unk_token_id).mean()
    assert unk_rate < 0.01, unk_rate
    # detokenize ∘ tokenize gives back the normalised words, except where a word became [UNK].
    words = tokenizer.basic.split(tf.constant(valid)).to_list()
    texts = tokenizer.detokenize(ids).numpy().tolist()
    unk = tokenizer.unk_token_id
    checked = 0
    for row_ids, row_words, text in zip(ids.to_list(), words, texts):
        if unk in row_ids:
            continue
        assert text.decode() == " ".join(w.decode() for w in row_words)
        checked += 1
    assert checked > 0.95 * len(valid)
    # Most words are one token in a vocabulary learned on the same kind of text.
    assert len(flat) < 1.2 * sum(map(len, words))


def test_small_corpus_files_and_datasets(tmp_path):
    texts = ["Hello world, hello Ångström!", "the world is wide", "naïve hellos 中文"] * 20
    plain = tmp_path / "corpus.txt"
    plain.write_text("\n\n".join(texts) + "\n", encoding="utf-8")
    packed = tmp_path / "corpus.txt.gz"
    with gzip.open(packed, "wb") as f:
        f.write(("\n".join(texts) + "\n").encode())
    assert list(read_lines(plain)) == list(read_lines(packed)) == [t.encode() for t in texts]
    from_list = train_vocabulary(texts, 80, min_frequency=1)
    from_files = train_vocabulary(read_lines(plain), 80, min_frequency=1)
    from_dataset = train_vocabulary(tf.data.Dataset.from_tensor_slices(texts), 80,
                                    min_frequency=1)
    assert from_list == from_files == from_dataset     # deterministic, whatever the source
    assert "angstrom" in from_list or "##m" in from_list      # accents stripped, lower-cased
    assert "中" in from_list and "," in from_list
    tokenizer = WordPieceTokenizer(from_list)
    assert tokenizer.unk_token_id not in tokenizer("Hello wide world, naïve 中文!")
    cased = train_vocabulary(texts, 80, min_frequency=1, lowercase=False)
    assert "H" in cased and "##ï" in cased


def test_count_words_uses_our_basic_tokenization():
    counts = count_words(["Ångström's café, café!", "x" * 101 + " y"])
    assert counts == {"angstrom": 1, "'": 1, "s": 1, "cafe": 2, ",": 1, "!": 1, "y": 1}


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="no room"):
        train_vocabulary(["a b c"], 5)
    with pytest.raises(DataError, match="read_lines"):
        train_vocabulary("corpus.txt", 100)
    with pytest.raises(Exception, match="does not exist"):
        list(read_lines(tmp_path / "missing.txt"))


def test_kbl_vocab_command(tmp_path, capsys):
    from keras_bert_lab.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("A tiny corpus.\nWith two lines, and bytes: \xe9t\xe9\n", encoding="latin-1")
    out = tmp_path / "vocab.txt"
    with pytest.warns(UserWarning, match="replaced 2 invalid UTF-8"):  # the latin-1 bytes
        assert main(["vocab", "--corpus", str(corpus), "--vocabulary-size", "60", "--output", str(out),
                     "--unused", "2", "--min-frequency", "1", "--quiet"]) == 0
    vocab = out.read_text(encoding="utf-8").split("\n")[:-1]
    assert vocab[:7] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]"]
    assert "wrote" in capsys.readouterr().out
    assert main(["vocab", "--corpus", str(tmp_path / "nope.txt"), "--output", str(out)]) == 2
    assert "neither a file nor a known corpus" in capsys.readouterr().err
    assert main(["vocab", "--corpus", str(corpus), "--vocabulary-size", "3", "--output", str(out)]) == 2
    assert "no room" in capsys.readouterr().err
