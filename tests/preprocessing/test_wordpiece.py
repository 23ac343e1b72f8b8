"""WordPieceTokenizer: ids, offsets and word ids equal to HF ``BertTokenizerFast``; shapes; errors."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lab.errors import DataError, InputError, KblError
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer, read_vocabulary
from tests.conftest import hf_encode
from tests.markers import backend_independent

pytestmark = backend_independent

HARD_STRINGS = [
    "café naïve Ångström façade Ærøskøbing",             # accents (precomposed)
    "cafe\u0301 nai\u0308ve A\u030angstro\u0308m",         # accents (combining marks)
    "ΣΑΣ İstanbul Straße ǅemal ﬁne Ⅻ",                    # case mapping corner cases
    "中文字符 日本語の文章 한국어 텍스트 𠀀𪚥",                 # CJK (incl. Ext B), kana, Hangul
    "emoji 🙂👍🏽 👨‍👩‍👧 🇩🇪 ❤️ 🥰",                            # emoji, ZWJ sequences, modifiers
    "مرحبا بالعالم، كيف حالك؟ שָׁלוֹם",                         # Arabic, Hebrew with points
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom\u2060wj",  # zero-width characters
    "ctrl\x00a\x01b\x07c\x0bd\x0ce\x1bf\x7fg\x85h\u2028i\u2029j\u00a0k\u3000l",  # controls/spaces
    "replacement \ufffd char\ufffd\ufffd",                  # U+FFFD
    "x" * 300 + " " + "é" * 101 + " " + "y" * 100 + " " + "ñ" * 100,  # long words
    "",                                                    # empty
    " \t\n\r  \u3000 ",                                   # whitespace only
    "3.14, 1,000,000; $5.99 (approx.) 10^6 -42 +7 50% #1 @home a/b c\\d ~e `f` {g} [h] |i|",
    "“Quotes” ‘single’ «guillemets» — dash – ellipsis… ¿qué? ¡sí! ·•※",
    "ℌ𝔢𝔩𝔩𝔬 ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ¹²³ ½ ㎏ ™ ©",              # compatibility characters
    "\u0301leading mark, \u0301 alone \u0301\u0302",       # marks with nothing to attach to
    "tab\tseparated\ttext\nnew line\r\ncrlf",
    "Ελληνικά Русский текст Ꭰꭰ ᏸ ǈ Ǉ ǉ",                   # other scripts, title case
    "Zürich's “naïve” coöperation — 20 °C — 5 × 3 ≠ 16 — résumé",
    "\U000E0041tag \U000F0000private \U0010FFFF last \U00011938 \U0001D165\U0001D16E",
]


def assert_same(ours, theirs, texts):
    for i, text in enumerate(texts):
        for key in theirs[i]:
            assert ours[key][i] == theirs[i][key], (key, text)


@pytest.mark.parametrize("lowercase", [True, False])
def test_hard_strings_match_hf(vocab_path, hf_uncased, hf_cased, lowercase):
    hf = hf_uncased if lowercase else hf_cased
    tokenizer = WordPieceTokenizer(vocab_path, lowercase=lowercase)
    assert_same(tokenizer.tokenize_with_offsets(HARD_STRINGS), hf_encode(hf, HARD_STRINGS),
                HARD_STRINGS)
    for text in HARD_STRINGS:  # one string at a time, and the ids-only path
        assert tokenizer(text) == hf(text, add_special_tokens=False)["input_ids"]


def test_offsets_point_at_the_same_characters(tokenizer, hf_uncased):
    text = "Ångström’s café: naïve 中文, x\u0301y!"
    out = tokenizer.tokenize_with_offsets(text)
    pieces = [text[s:e] for s, e in zip(out["start_offsets"], out["end_offsets"])]
    enc = hf_uncased(text, add_special_tokens=False, return_offsets_mapping=True)
    assert pieces == [text[s:e] for s, e in enc["offset_mapping"]]
    assert pieces[:3] == ["Ång", "ström", "’"]


def test_word_boundary_at_100_characters(tokenizer, hf_uncased):
    """HF's max_input_chars_per_word=100: 100 characters are a word, 101 are [UNK]."""
    texts = ["a" * 100, "a" * 101, "é" * 100, "é" * 101, "中" + "b" * 101, "ab" * 50 + "é"]
    ours = tokenizer(texts)
    assert ours == [hf_uncased(t, add_special_tokens=False)["input_ids"] for t in texts]
    assert ours[1] == ours[3] == [tokenizer.unk_token_id]


def test_wikitext_valid_and_test_match_hf(tokenizer, hf_uncased, wikitext_valid_test):
    """Every paragraph of WikiText-2 valid + test: ids, offsets and word ids (target 0 misses)."""
    texts = wikitext_valid_test
    ours = tokenizer.tokenize_with_offsets(texts)
    theirs = hf_encode(hf_uncased, texts)
    mismatched = [i for i in range(len(texts))
                  if any(ours[key][i] != theirs[i][key] for key in theirs[i])]
    assert len(texts) == 5352
    assert not mismatched, f"{len(mismatched)} of {len(texts)} paragraphs differ, e.g. " \
                           f"{texts[mismatched[0]][:200]!r}"


def test_ascii_shortcut_equals_general_path(tokenizer, wikitext_valid_test):
    """Printable-ASCII rows take tensorflow-text's own splitting; it must agree with the table."""
    texts = [t for t in wikitext_valid_test if t.isascii()][:400]
    texts += ["a" * 100, "b" * 101, "x!y\"z#w$v%u&t'(s)r*q+p,o-n.m/l:k;j<i=h>g?f@e[d\\c]b^a_`{|}~"]
    tensors = tokenizer._constants()
    batch = tf.constant(texts)
    fast = tokenizer._tokenize_ascii(batch, tensors, with_offsets=True)
    general = tokenizer._tokenize_any(batch, tensors, with_offsets=True)
    for key in fast:
        assert fast[key].to_list() == general[key].to_list(), key


def test_batches_mixing_paths_keep_their_order(tokenizer):
    texts = ["plain ascii", "naïve", "", "more ascii, text", "中", "\x00", "end"]
    batch = tokenizer(tf.constant(texts))
    assert batch.to_list() == [tokenizer(t) for t in texts]
    assert tokenizer(tf.constant(["only", "ascii"])).to_list() == [tokenizer("only"),
                                                                    tokenizer("ascii")]
    assert tokenizer(tf.constant(["ünïcode", "ønly"])).to_list() == [tokenizer("ünïcode"),
                                                                      tokenizer("ønly")]


def test_shapes_and_types(tokenizer):
    scalar = tokenizer(tf.constant("hello world"))
    assert isinstance(scalar, tf.Tensor) and scalar.dtype == tf.int32
    assert scalar.numpy().tolist() == tokenizer("hello world")
    batch = tokenizer(tf.constant(["hello", "big world"]))
    assert isinstance(batch, tf.RaggedTensor) and batch.shape[0] == 2
    grid = tokenizer(tf.constant([["a b", "c"], ["d", ""]]))
    assert grid.to_list() == [[tokenizer("a b"), tokenizer("c")], [tokenizer("d"), []]]
    assert tokenizer([]) == []
    assert tokenizer(tf.constant([], tf.string)).shape[0] == 0
    with pytest.raises(InputError, match="strings"):
        tokenizer(tf.constant([1, 2]))


def test_runs_inside_tf_data(tokenizer):
    texts = ["Ångström is a unit.", "plain text", "中文 text", ""]
    ds = tf.data.Dataset.from_tensor_slices(texts)
    per_example = [x.numpy().tolist() for x in ds.map(tokenizer)]
    batched = [r for b in ds.batch(3).map(tokenizer, num_parallel_calls=2) for r in b.to_list()]
    assert per_example == batched == tokenizer(texts)


def test_invalid_utf8_is_replaced_and_counted(vocab_path):
    tokenizer = WordPieceTokenizer(vocab_path)
    assert tokenizer.invalid_utf8_count == 0
    texts = [b"ab\xffcd ok", b"\xe2\x82 truncated", b"caf\xc3\xa9", b"\xed\xa0\x80 surrogate"]
    ids = tokenizer(texts)
    assert ids[0] == tokenizer("abcd ok") and ids[2] == tokenizer("café")
    assert ids[1] == tokenizer("truncated") and ids[3] == tokenizer("surrogate")
    assert tokenizer.invalid_utf8_count == 5  # \xff, \xe2\x82, and three bytes of \xed\xa0\x80
    ds = tf.data.Dataset.from_tensor_slices(texts).batch(2).map(tokenizer)
    assert [r for b in ds for r in b.to_list()] == ids
    assert tokenizer.invalid_utf8_count == 10
    offsets = tokenizer.tokenize_with_offsets(b"x\xffy z")
    assert offsets["start_offsets"] == [0, 2, 4]  # the bad byte counts as one character


def test_detokenize_round_trip(tokenizer):
    text = "Hello, Ångström! Naïve café — 3.14"
    ids = tokenizer(text)
    assert tokenizer.detokenize(ids) == " ".join(tokenizer.basic.split(text))
    assert tokenizer.detokenize([tokenizer.cls_token_id, *ids, tokenizer.sep_token_id, 0, 0]) \
        == tokenizer.detokenize(ids)
    batch = tokenizer(tf.constant([text, "a b"]))
    assert tokenizer.detokenize(batch).numpy().tolist() == [
        tokenizer.detokenize(ids).encode(), b"a b"]
    assert tokenizer.detokenize([[7592], [2088]]) == ["hello", "world"]


def test_special_tokens_by_name(tokenizer, hf_uncased):
    assert tokenizer.vocabulary_size == 30522
    for name in ("pad", "unk", "cls", "sep", "mask"):
        assert getattr(tokenizer, f"{name}_token_id") == getattr(hf_uncased, f"{name}_token_id")
    assert tokenizer.token_to_id("hello") == 7592 and tokenizer.id_to_token(7592) == "hello"


def test_config_round_trip(tokenizer, tmp_path):
    config = tokenizer.get_config()
    again = WordPieceTokenizer.from_config(config)
    assert again("Ångström") == tokenizer("Ångström")
    path = tokenizer.save_vocabulary(tmp_path / "vocab.txt")
    assert read_vocabulary(path) == tokenizer.vocabulary


def test_small_vocabulary_list():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "run", "!"]
    tokenizer = WordPieceTokenizer(vocab)
    assert tokenizer("Unaffable run! runs") == [5, 6, 7, 8, 9, 1]
    out = tokenizer.tokenize_with_offsets("Unaffable run! runs")
    assert list(zip(out["start_offsets"], out["end_offsets"])) == [
        (0, 2), (2, 5), (5, 9), (10, 13), (13, 14), (15, 19)]
    assert out["word_ids"] == [0, 0, 0, 1, 2, 3]


# ---- bad vocabularies -------------------------------------------------------------------------
def write(tmp_path, text, name="vocab.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_missing_vocab_file(tmp_path):
    with pytest.raises(DataError, match="does not exist") as info:
        WordPieceTokenizer(tmp_path / "nope.txt")
    assert "nope.txt" in str(info.value) and isinstance(info.value, KblError)


def test_empty_vocab_file(tmp_path):
    with pytest.raises(DataError, match="empty") as info:
        WordPieceTokenizer(write(tmp_path, ""))
    assert "vocab.txt" in str(info.value)


def test_duplicate_token(tmp_path):
    path = write(tmp_path, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\nhello\n")
    with pytest.raises(DataError, match=r"'hello' appears twice \(lines 6 and 8\)") as info:
        WordPieceTokenizer(path)
    assert str(path) in str(info.value)


def test_missing_special_token(tmp_path):
    path = write(tmp_path, "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
    with pytest.raises(DataError, match=r"lacks the mask token '\[MASK\]'") as info:
        WordPieceTokenizer(path)
    assert str(path) in str(info.value)
    assert WordPieceTokenizer(path, mask_token=None)("hello") == [4]
    with pytest.raises(DataError, match="without a mask token"):
        WordPieceTokenizer(path, mask_token=None).mask_token_id


def test_vocab_not_utf8_and_empty_line(tmp_path):
    with pytest.raises(DataError, match="not UTF-8.*line 2"):
        WordPieceTokenizer(write(tmp_path, b"[PAD]\n\xff\xfe\n"))
    with pytest.raises(DataError, match="line 2 is empty"):
        WordPieceTokenizer(write(tmp_path, "[PAD]\n\n[UNK]\n"))


def test_crlf_vocab(tmp_path, tokenizer):
    path = write(tmp_path, "\r\n".join(tokenizer.vocabulary) + "\r\n")
    assert read_vocabulary(path) == tokenizer.vocabulary


def test_numpy_and_bytes_inputs(tokenizer):
    assert tokenizer(np.array(["hello world"]))[0].numpy().tolist() == tokenizer("hello world")
    assert tokenizer(b"hello") == tokenizer("hello")
    assert tokenizer(["x\ud800y"]) == [tokenizer("xy")]  # lone surrogate: replaced, dropped


def test_custom_max_chars_per_word_on_both_paths(vocab_path):
    tokenizer = WordPieceTokenizer(vocab_path, max_chars_per_word=5)
    unk = tokenizer.unk_token_id
    ascii_ids, other_ids = tokenizer(["hello worlds", "héllo wörlds"])
    assert ascii_ids == [7592, unk] and other_ids == [7592, unk]   # 6 characters: too long
