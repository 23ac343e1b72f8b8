"""Cutting paragraphs into sentences with a small set of rules (no model, no data files).

BERT's next-sentence pairs are built from sentences (Devlin et al. 2019, §3.1); corpora that come
as paragraphs (WikiText, news, JSON records) are cut here. The rules handle ordinary prose and
WikiText's space-separated punctuation, abbreviations and initials; :func:`cut_long` bounds a
runaway "sentence" (a table flattened into one line, say).

Example:

>>> split_sentences("Dr. Smith arrived at 3 p.m. on Monday. He left! Did he return?")
['Dr. Smith arrived at 3 p.m. on Monday.', 'He left!', 'Did he return?']
"""

import re

# Words that end in a period without ending the sentence. Lower-case, without the final period.
_ABBREVIATIONS = frozenset("""
    mr mrs ms messrs dr prof sr jr st mt ft rev fr hon gen col lt capt cpt sgt maj adm gov sen rep
    pres supt vs etc al cf ca approx dept est inc ltd co corp bros assn univ jan feb mar apr jun
    jul aug sep sept oct nov dec mon tue wed thu fri sat sun e.g i.e a.m p.m u.s u.k u.n a.d b.c
    d.c ph.d m.d b.a m.a viz
""".split())
# ... and these only before a number ("No. 5", "pp. 12", "Vol. 3").
_NUMERIC_ABBREVIATIONS = frozenset("no nos vol vols pp p fig figs art ch sec op".split())
_OPENERS = "\"'“‘«([{¿¡"
# A run of terminators, optional closing quotes/brackets, then whitespace.
_CANDIDATE = re.compile(r"([.!?…]+)([\"'”’»)\]}]*)\s+")


def split_sentences(text):
    """Cut a paragraph into sentences with a small set of rules (no model, no data files).

    A sentence ends at ``.``, ``!``, ``?`` or ``…`` (and any closing quotes or brackets right after)
    followed by whitespace and then a capital letter or digit, possibly behind an opening quote or
    bracket. A period does *not* end a sentence after a known abbreviation (``Dr.``, ``e.g.``,
    ``U.S.``, month names, ``No.`` before a number …) or a single-letter initial (``J. K.
    Rowling``). Works on ordinary prose and on WikiText's space-separated punctuation
    (``"... in 2010 . While it ..."``), where ``3 @.@ 5`` decimals are never split. Surrounding
    whitespace is stripped; an empty or blank text gives ``[]``.

    Args:
        text: one paragraph (newlines are treated as spaces).

    Example:

    >>> split_sentences("The U.S. Army arrived. Gen. Lee did not. It rained.")
    ['The U.S. Army arrived.', 'Gen. Lee did not.', 'It rained.']
    >>> split_sentences("It cost 3 @.@ 5 million . Critics said \\" wow ! \\" Then it sold .")
    ['It cost 3 @.@ 5 million .', 'Critics said " wow ! "', 'Then it sold .']
    """
    sentences, start = [], 0
    for match in _CANDIDATE.finditer(text):
        end = match.end()
        if match.start() < start:
            continue
        cut = match.end(2)
        # WikiText spaces its quotes: in 'said " wow ! " Then', the quote after "!" closes the
        # open quotation (an odd number of quotes so far) and belongs to this sentence.
        if text.startswith('"', end) and text.count('"', start, cut) % 2 == 1:
            cut = end + 1
            end = cut + len(text[cut:]) - len(text[cut:].lstrip())
        if end >= len(text) or not _starts_sentence(text, end):
            continue
        if match.group(1) == "." and not _ends_sentence_with_period(text, match.start(), end):
            continue
        sentence = text[start:cut].strip()
        if sentence:
            sentences.append(sentence)
        start = end
    last = text[start:].strip()
    if last:
        sentences.append(last)
    return sentences


def _starts_sentence(text, i):
    while i < len(text) and text[i] in _OPENERS:
        i += 1
    return i < len(text) and (text[i].isupper() or text[i].isdigit())


def _ends_sentence_with_period(text, dot, after):
    """Whether the single period at ``text[dot]`` ends a sentence (abbreviations do not)."""
    word_start = max(text.rfind(" ", 0, dot), text.rfind("\n", 0, dot), text.rfind("\t", 0, dot))
    word = text[word_start + 1:dot].lstrip(_OPENERS)
    if not word:  # " ." — WikiText's tokenised punctuation, or a stray period
        return True
    lower = word.lower()
    if lower in _ABBREVIATIONS:
        return False
    if lower in _NUMERIC_ABBREVIATIONS:
        return not text[after:after + 1].isdigit()
    if len(word) == 1 and word.isalpha():  # an initial: "J. K. Rowling"
        return False
    if "." in word and all(len(part) <= 2 for part in word.split(".")):  # "e.g", "U.S", "Ph.D"
        return False
    return True


def cut_long(sentence, limit):
    """Pieces of at most ``limit`` characters, cut at the last whitespace before the limit."""
    pieces = []
    while len(sentence) > limit:
        cut = sentence.rfind(" ", limit // 2, limit + 1)
        cut = limit if cut <= 0 else cut
        pieces.append(sentence[:cut].strip())
        sentence = sentence[cut:].strip()
    if sentence:
        pieces.append(sentence)
    return [p for p in pieces if p]
