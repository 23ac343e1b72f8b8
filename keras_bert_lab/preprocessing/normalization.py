"""BERT's basic tokenization, written as one lookup table over Unicode code points.

Before WordPiece, BERT cleans and splits text ("basic tokenization", Devlin et al. 2019,
google-research/bert ``tokenization.py``): control characters and U+FFFD are dropped, every kind of
whitespace becomes a space, CJK ideographs are cut out as words of their own, uncased models take
accents off (NFD, then drop the nonspacing marks, category Mn) and lower-case, and every punctuation
character (Unicode ``P*`` plus the ASCII symbols ``$+<=>^`|~``) is its own word.

Each of those rules looks at a single character, so all of them together are a function from one
input code point to zero or more output code points, each tagged as part of a word (``WORD``), a
word on its own (``ISOLATE``: punctuation, CJK) or a separator (``SPACE``). This module computes that
function once, for all 1,114,112 code points, as a flat ``int32`` table that TensorFlow can
``gather`` from inside ``tf.data`` — no per-character Python, no regular expressions.

The reference we match is Hugging Face ``tokenizers`` (``BertTokenizerFast``: ``BertNormalizer`` +
``BertPreTokenizer``). Its Rust code reads Unicode properties from three sources of different ages,
and the table reproduces each of them:

* general categories (control, format, nonspacing mark, punctuation) come from the
  ``unicode_categories`` crate, whose tables predate Unicode 9. Characters assigned or re-classified
  since keep their old behaviour there: e.g. the punctuation added to the Supplemental Punctuation
  block after U+2E42 is *not* split off, U+166D CANADIAN SYLLABICS CHI SIGN *is* (it was ``Po``), and
  nonspacing marks of newer scripts are *not* stripped. Unassigned code points are kept as letters.
* lower-casing uses Rust's ``char::to_lowercase`` (a recent Unicode, 17), character by character, so
  a final capital sigma becomes ``σ``, not ``ς``, and ``İ`` becomes ``i`` + U+0307 before accent
  stripping would take the dot off (HF strips accents *before* lower-casing).
* NFD comes from ``unicode-normalization-alignments``, which does not know U+11938 DIVES AKURU VOWEL
  SIGN O (Unicode 13).

We start from Python's own ``unicodedata`` (Unicode 14.0 in Python 3.11) and list, below, every code
point where the reference disagrees with it. ``tests/text/test_normalization.py`` checks the whole
table against ``tokenizers`` for every code point, cased and uncased.

One thing a per-character table cannot express: NFD's canonical re-ordering of adjacent combining
marks. After accent stripping only non-``Mn`` combining marks survive (Mc with a non-zero combining
class: some viramas, Hangul tone marks, musical symbols), so text differs only where two of those with
different classes stand next to each other in non-canonical order.

Example:

>>> from keras_bert_lab.preprocessing import normalization
>>> normalization.normalize_text("Ångström, 中文!", lowercase=True)
['angstrom', ',', '中', '文', '!']
"""

import functools
import unicodedata

import numpy as np

# Kinds of output characters (bits 21-22 of a table entry).
WORD, ISOLATE, SPACE = 0, 1, 2
# Layout of an int32 table entry: code point or expansion offset | kind << 21 | count << 24.
PAYLOAD_BITS = 21
PAYLOAD_MASK = (1 << PAYLOAD_BITS) - 1
KIND_SHIFT = 21
COUNT_SHIFT = 24
NUM_CODE_POINTS = 0x110000
# A surrogate can never come out of valid UTF-8, so the decoder writes it for invalid bytes; the
# table drops it like U+FFFD (which is what those bytes would have decoded to).
INVALID_UTF8 = 0xD800

# CJK Unified Ideographs and compatibility blocks that BERT isolates, as HF tokenizers lists them
# (its list skips U+2B820–U+2B91F, where the Python original has U+2B820–U+2CEAF).
CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)
# Whitespace in Rust's ``char::is_whitespace`` beyond category Zs and tab/newline/return. Other
# White_Space characters (U+000B, U+000C, U+0085) are controls and dropped first.
EXTRA_WHITESPACE = (0x2028, 0x2029)
# ---- Where the reference's (pre-Unicode-9) general categories differ from Python's 14.0 ----------
# Format characters (Cf) it does not know, so it keeps them as letters instead of dropping them.
NOT_CONTROL = ((0x0890, 0x0891), (0x08E2, 0x08E2), (0x110CD, 0x110CD), (0x13430, 0x13438))
# Punctuation (P*) it does not know, so it does not split it off.
NOT_PUNCTUATION = (
    (0x061D, 0x061D), (0x09FD, 0x09FD), (0x0A76, 0x0A76), (0x0C77, 0x0C77), (0x0C84, 0x0C84),
    (0x1B7D, 0x1B7E), (0x2E43, 0x2E4F), (0x2E52, 0x2E5D), (0x10EAD, 0x10EAD), (0x10F55, 0x10F59),
    (0x10F86, 0x10F89), (0x1144B, 0x1144F), (0x1145A, 0x1145B), (0x1145D, 0x1145D),
    (0x11660, 0x1166C), (0x116B9, 0x116B9), (0x1183B, 0x1183B), (0x11944, 0x11946),
    (0x119E2, 0x119E2), (0x11A3F, 0x11A46), (0x11A9A, 0x11A9C), (0x11A9E, 0x11AA2),
    (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11EF7, 0x11EF8), (0x11FFF, 0x11FFF),
    (0x12FF1, 0x12FF2), (0x16E97, 0x16E9A), (0x16FE2, 0x16FE2), (0x1E95E, 0x1E95F),
)
# Characters it still files as punctuation (Po) that Unicode has since moved (to So and Mn).
EXTRA_PUNCTUATION = (0x166D, 0x111C9)
# Nonspacing marks (Mn) it does not know, so accent stripping keeps them.
NOT_NONSPACING_MARK = (
    (0x07FD, 0x07FD), (0x0898, 0x089F), (0x08CA, 0x08E1), (0x09FE, 0x09FE), (0x0AFA, 0x0AFF),
    (0x0B55, 0x0B55), (0x0C04, 0x0C04), (0x0C3C, 0x0C3C), (0x0D00, 0x0D00), (0x0D3B, 0x0D3C),
    (0x0D81, 0x0D81), (0x0EBA, 0x0EBA), (0x180F, 0x180F), (0x1885, 0x1886), (0x1ABF, 0x1ACE),
    (0x1DF6, 0x1DFB), (0xA82C, 0xA82C), (0xA8C5, 0xA8C5), (0xA8FF, 0xA8FF), (0xA9BD, 0xA9BD),
    (0x10D24, 0x10D27), (0x10EAB, 0x10EAC), (0x10F46, 0x10F50), (0x10F82, 0x10F85),
    (0x11070, 0x11070), (0x11073, 0x11074), (0x110C2, 0x110C2), (0x111C9, 0x111C9),
    (0x111CF, 0x111CF), (0x1123E, 0x1123E), (0x1133B, 0x1133B), (0x11438, 0x1143F),
    (0x11442, 0x11444), (0x11446, 0x11446), (0x1145E, 0x1145E), (0x1182F, 0x11837),
    (0x11839, 0x1183A), (0x1193B, 0x1193C), (0x1193E, 0x1193E), (0x11943, 0x11943),
    (0x119D4, 0x119D7), (0x119DA, 0x119DB), (0x119E0, 0x119E0), (0x11A01, 0x11A0A),
    (0x11A33, 0x11A38), (0x11A3B, 0x11A3E), (0x11A47, 0x11A47), (0x11A51, 0x11A56),
    (0x11A59, 0x11A5B), (0x11A8A, 0x11A96), (0x11A98, 0x11A99), (0x11C30, 0x11C36),
    (0x11C38, 0x11C3D), (0x11C3F, 0x11C3F), (0x11C92, 0x11CA7), (0x11CAA, 0x11CB0),
    (0x11CB2, 0x11CB3), (0x11CB5, 0x11CB6), (0x11D31, 0x11D36), (0x11D3A, 0x11D3A),
    (0x11D3C, 0x11D3D), (0x11D3F, 0x11D45), (0x11D47, 0x11D47), (0x11D90, 0x11D91),
    (0x11D95, 0x11D95), (0x11D97, 0x11D97), (0x11EF3, 0x11EF4), (0x16F4F, 0x16F4F),
    (0x16FE4, 0x16FE4), (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1E000, 0x1E006),
    (0x1E008, 0x1E018), (0x1E01B, 0x1E021), (0x1E023, 0x1E024), (0x1E026, 0x1E02A),
    (0x1E130, 0x1E136), (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF), (0x1E944, 0x1E94A),
)
# A mark it still files as nonspacing (Unicode 14 made it a spacing mark, Mc).
EXTRA_NONSPACING_MARK = (0x1734,)
# Canonical decompositions its NFD does not know.
NO_DECOMPOSITION = (0x11938,)
# Lower-case pairs of Unicode 16-17 (Rust's tables) that Python 3.11's Unicode 14 lacks.
EXTRA_LOWERCASE = {
    0x1C89: 0x1C8A, 0xA7CB: 0x0264, 0xA7CC: 0xA7CD, 0xA7CE: 0xA7CF, 0xA7D2: 0xA7D3,
    0xA7D4: 0xA7D5, 0xA7DA: 0xA7DB, 0xA7DC: 0x019B,
    **{upper: upper + 0x20 for upper in range(0x10D50, 0x10D66)},   # Garay
    **{upper: upper + 0x1B for upper in range(0x16EA0, 0x16EB9)},   # Beria Erfe
}


def _in(ranges, cp):
    return any(lo <= cp <= hi for lo, hi in ranges)


def _expand(ranges):
    return {cp for lo, hi in ranges for cp in range(lo, hi + 1)}


_NOT_CONTROL = _expand(NOT_CONTROL)
_NOT_PUNCTUATION = _expand(NOT_PUNCTUATION)
_NOT_NONSPACING_MARK = _expand(NOT_NONSPACING_MARK)


def is_control(cp):
    """Dropped by clean-up: NUL, U+FFFD and categories Cc/Cf/Co/Cs other than tab, LF and CR."""
    if cp in (0, 0xFFFD):
        return True
    if cp in (0x09, 0x0A, 0x0D) or cp in _NOT_CONTROL:
        return False
    return unicodedata.category(chr(cp)) in ("Cc", "Cf", "Co", "Cs")


def is_whitespace(cp):
    """Becomes a word separator: tab, LF, CR, category Zs, U+2028 and U+2029."""
    return (cp in (0x09, 0x0A, 0x0D) or cp in EXTRA_WHITESPACE
            or unicodedata.category(chr(cp)) == "Zs")


def is_punctuation(cp):
    """Split off as a word of its own: ASCII symbols and Unicode punctuation (P*)."""
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    if cp in EXTRA_PUNCTUATION:
        return True
    return cp not in _NOT_PUNCTUATION and unicodedata.category(chr(cp)).startswith("P")


def is_cjk(cp):
    """A CJK ideograph, which BERT isolates as a word of its own."""
    return _in(CJK_RANGES, cp)


def _is_nonspacing_mark(cp):
    if cp in EXTRA_NONSPACING_MARK:
        return True
    return cp not in _NOT_NONSPACING_MARK and unicodedata.category(chr(cp)) == "Mn"


def _lower(cp):
    if cp in EXTRA_LOWERCASE:
        return [EXTRA_LOWERCASE[cp]]
    return [ord(c) for c in chr(cp).lower()]


def normalize_char(cp, lowercase=True, strip_accents=None, chinese_chars=True):
    """What basic tokenization makes of one code point: a list of ``(code point, kind)``.

    The pure-Python definition that :func:`build_table` tabulates; ``kind`` is ``WORD``, ``ISOLATE``
    or ``SPACE``. ``strip_accents=None`` follows ``lowercase`` (as in BERT and HF).
    """
    if strip_accents is None:
        strip_accents = lowercase
    if is_control(cp):
        return []
    if is_whitespace(cp):
        return [(0x20, SPACE)]
    out = [cp]
    if strip_accents:
        if cp not in NO_DECOMPOSITION:
            out = [ord(c) for c in unicodedata.normalize("NFD", chr(cp))]
        out = [c for c in out if not _is_nonspacing_mark(c)]
    if lowercase:
        out = [low for c in out for low in _lower(c)]
    if chinese_chars and is_cjk(cp):
        return [(c, ISOLATE) for c in out]
    return [(c, ISOLATE if is_punctuation(c) else WORD) for c in out]


def normalize_text(text, lowercase=True, strip_accents=None, chinese_chars=True):
    """Basic tokenization of a Python string into words, character by character (slow; reference)."""
    words, word = [], []
    for ch in text:
        for cp, kind in normalize_char(ord(ch), lowercase, strip_accents, chinese_chars):
            if kind == WORD:
                word.append(chr(cp))
                continue
            if word:
                words.append("".join(word))
                word = []
            if kind == ISOLATE:
                words.append(chr(cp))
    if word:
        words.append("".join(word))
    return words


# Code points outside these ranges are unassigned (kept as letters) or private use (dropped), and
# the CJK ideographs inside them map to themselves unless they have a decomposition.
_LOOP_RANGES = ((0x0000, 0x2FFFF), (0xE0000, 0xE0FFF))
_PRIVATE_USE = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))
_CJK_COMPATIBILITY = ((0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_HANGUL_SYLLABLES = (0xAC00, 0xD7A3)  # NFD splits them into jamo by rule, not by UCD entry


def _default_rule(cp):
    """True where a code point surely maps to itself as a word character (skips ~90% of the loop)."""
    ch = chr(cp)
    category = unicodedata.category(ch)
    if category[0] in "CMPZS" or cp < 128:
        return category == "Cn" and cp not in EXTRA_LOWERCASE
    return (not unicodedata.decomposition(ch) and ch.lower() == ch
            and not _HANGUL_SYLLABLES[0] <= cp <= _HANGUL_SYLLABLES[1]
            and cp not in EXTRA_LOWERCASE and cp not in NO_DECOMPOSITION)


@functools.lru_cache(maxsize=None)
def build_table(lowercase=True, strip_accents=None, chinese_chars=True):
    """The whole of basic tokenization as ``(table, expansions)`` int32 arrays.

    ``table[cp]`` packs ``count << 24 | kind << 21 | payload``: ``count`` output characters (0 when
    the character is dropped); for one output the payload is its code point and ``kind`` its kind; for
    more, the payload indexes ``expansions``, which holds ``kind << 21 | code point`` for each output.
    Built once per process per setting (a fraction of a second).
    """
    table = np.arange(NUM_CODE_POINTS, dtype=np.int64) | (1 << COUNT_SHIFT)  # itself, as a letter
    for lo, hi in _PRIVATE_USE:
        table[lo:hi + 1] = 0
    cjk = np.zeros(NUM_CODE_POINTS, bool)
    if chinese_chars:
        for lo, hi in CJK_RANGES:
            cjk[lo:hi + 1] = True
            table[lo:hi + 1] |= ISOLATE << KIND_SHIFT
        for lo, hi in _CJK_COMPATIBILITY:
            cjk[lo:hi + 1] = False  # these decompose: give them the full rule below
    expansions = [0]
    for lo, hi in _LOOP_RANGES:
        for cp in range(lo, hi + 1):
            if cjk[cp] or _default_rule(cp):
                continue
            out = normalize_char(cp, lowercase, strip_accents, chinese_chars)
            if len(out) == 1:
                code, kind = out[0]
                table[cp] = (1 << COUNT_SHIFT) | (kind << KIND_SHIFT) | code
            else:
                table[cp] = (len(out) << COUNT_SHIFT) | len(expansions)
                expansions.extend((kind << KIND_SHIFT) | code for code, kind in out)
    return table.astype(np.int32), np.asarray(expansions, dtype=np.int32)
