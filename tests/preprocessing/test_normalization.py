"""Basic tokenization against HF ``BertTokenizerFast`` on every Unicode code point.

Each code point ``c`` appears between two letters (``"a" + c + "a"``) in strings of 4,096 code
points, so every rule (drop, whitespace, accent stripping, lower-casing, punctuation, CJK) shows in
the ids, offsets and word ids. Surrogates are left out: they cannot be encoded, on either side.
"""

import pytest
import tensorflow as tf

from keras_bert_lab.preprocessing import normalization
from keras_bert_lab.preprocessing.wordpiece import BasicTokenizer, WordPieceTokenizer
from tests.conftest import hf_encode
from tests.markers import backend_independent

pytestmark = backend_independent

BLOCK = 4096


def code_point_blocks(limit=normalization.NUM_CODE_POINTS):
    blocks = []
    for lo in range(0, limit, BLOCK):
        cps = [cp for cp in range(lo, min(lo + BLOCK, limit)) if not 0xD800 <= cp <= 0xDFFF]
        if cps:
            blocks.append((lo, "a" + "".join(chr(cp) + "a" for cp in cps)))
    return blocks


def first_difference(text, ours, theirs):
    """A readable description of where two encodings of ``text`` part."""
    for key in theirs:
        for i, (a, b) in enumerate(zip(ours[key], theirs[key])):
            if a != b:
                start = theirs["start_offsets"][i]
                return (f"{key}[{i}]: ours {a}, HF {b}, near code points "
                        f"{[hex(ord(c)) for c in text[max(0, start - 3):start + 4]]}")
        if len(ours[key]) != len(theirs[key]):
            return f"{key}: ours has {len(ours[key])} entries, HF {len(theirs[key])}"
    return None


@pytest.mark.parametrize("lowercase, strip_accents, limit", [
    (True, None, normalization.NUM_CODE_POINTS),     # uncased BERT
    (False, None, normalization.NUM_CODE_POINTS),    # cased BERT
    (True, False, 0x10000),                          # lower-case only (BMP)
    (False, True, 0x10000),                          # accent stripping only (BMP)
])
def test_every_code_point_matches_hf(vocab_path, lowercase, strip_accents, limit):
    transformers = pytest.importorskip("transformers")
    hf = transformers.BertTokenizerFast(vocab=vocab_path, do_lower_case=lowercase,
                                        strip_accents=strip_accents)
    assert len(hf) == 30522
    ours = WordPieceTokenizer(vocab_path, lowercase=lowercase, strip_accents=strip_accents)
    blocks = code_point_blocks(limit)
    texts = [text for _, text in blocks]
    theirs = hf_encode(hf, texts)
    mine = ours.tokenize_with_offsets(texts)
    mine = [{key: mine[key][i] for key in mine} for i in range(len(texts))]
    problems = []
    for (lo, text), a, b in zip(blocks, mine, theirs):
        diff = first_difference(text, a, b)
        if diff:
            problems.append(f"block U+{lo:04X}: {diff}")
    assert not problems, "\n".join(problems[:10])


def test_table_agrees_with_python_rules():
    """The NumPy table says what ``normalize_char`` says, for a spread of code points."""
    table, expansions = normalization.build_table(lowercase=True)
    for cp in [0, 9, 32, 65, 0x85, 0xC5, 0x130, 0x3A3, 0x1FEF, 0x2028, 0x4E2D, 0xAC01, 0xFFFD,
               0x1F970, 0x11938, 0x1734, 0x166D, 0x2E44, 0x10D50, 0xE0001, 0xF0000]:
        entry = int(table[cp])
        count, payload = entry >> normalization.COUNT_SHIFT, entry & normalization.PAYLOAD_MASK
        kind = (entry >> normalization.KIND_SHIFT) & 3
        items = [payload | kind << normalization.KIND_SHIFT] if count == 1 else \
            [int(x) for x in expansions[payload:payload + count]]
        got = [(x & normalization.PAYLOAD_MASK, (x >> normalization.KIND_SHIFT) & 3)
               for x in items]
        assert got == normalization.normalize_char(cp, lowercase=True), hex(cp)


def test_python_reference_words():
    assert normalization.normalize_text("Ångström, 中文!  x\u0301y") == [
        "angstrom", ",", "中", "文", "!", "xy"]
    assert normalization.normalize_text("ΣΑΣ İ", lowercase=True) == ["σασ", "i"]
    assert normalization.normalize_text("Café", lowercase=False) == ["Café"]


def test_basic_tokenizer_matches_hf_pre_tokenizer(hf_uncased, wikitext_valid_test):
    """Words (and their offsets) equal HF's normaliser + pre-tokeniser on real text."""
    texts = wikitext_valid_test[:300] + ["Ångström’s café — naïve 中文 🙂 \x00\ufffd x\u200dy"]
    backend = hf_uncased.backend_tokenizer
    basic = BasicTokenizer(lowercase=True)
    got = basic.split_with_offsets(texts)
    for i, text in enumerate(texts):
        expected = [w for w, _ in backend.pre_tokenizer.pre_tokenize_str(
            backend.normalizer.normalize_str(text))]
        assert got["words"][i] == expected
        for word, start, end in zip(got["words"][i], got["start_offsets"][i],
                                    got["end_offsets"][i]):
            assert normalization.normalize_text(text[start:end]) == [word]


def test_basic_tokenizer_shapes():
    basic = BasicTokenizer()
    assert basic.split("") == []
    words = basic.split(tf.constant(["a b", "", "c"]))
    assert isinstance(words, tf.RaggedTensor) and words.to_list() == [[b"a", b"b"], [], [b"c"]]
    assert basic.split(tf.constant("x, y")).numpy().tolist() == [b"x", b",", b"y"]
