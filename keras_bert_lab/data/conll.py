"""CoNLL column files: word-level tagged sentences for token classification (NER).

One token per line with its tag in a column, blank lines between sentences (CoNLL-2003, WNUT-16).
Labels follow the BIO scheme: ``B-X`` begins an entity of type ``X``, ``I-X`` continues it, ``O``
is outside. :func:`label_list` makes a training set's label ids; turning words into WordPiece
model inputs is :mod:`keras_bert_lab.preprocessing.tagging`'s job and scoring entities
:mod:`keras_bert_lab.metrics.entities`'.
"""

import collections
import dataclasses
import os

from keras_bert_lab.data.tables import decode_file
from keras_bert_lab.errors import DataError

DOCSTART = "-DOCSTART-"


@dataclasses.dataclass
class TaggedSentence:
    """One sentence: its words and their tags (equal lengths)."""

    words: list
    tags: list


# ---- reading --------------------------------------------------------------------------------
def read_conll(path, token_column=0, tag_column=-1, delimiter=None, encoding="utf-8"):
    """Read a CoNLL-style column file into a list of :class:`TaggedSentence`.

    One token per line, columns separated by ``delimiter`` (``None``: any run of whitespace, as in
    CoNLL-2003; ``"\\t"`` for files whose tokens may hold spaces). Sentences are separated by
    empty or whitespace-only lines; ``-DOCSTART-`` lines (document boundaries in CoNLL-2003) are
    skipped and also end a sentence. Every token line of a file must have the same number of
    columns.

    Args:
        path: the file.
        token_column, tag_column: column indices of the word and of its tag (negative counts
            from the end). Default: first and last.
        delimiter: column separator (see above).
        encoding: text encoding of the file.

    Raises ``DataError`` naming the file and line for ragged columns, a missing column, token and
    tag in the same column (a one-column file), or bytes that are not ``encoding``.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.conll"
    >>> _ = path.write_text("-DOCSTART- O\\n\\nEU B-ORG\\nrejects O\\n \\nPeter B-PER\\n")
    >>> [(s.words, s.tags) for s in read_conll(path)]
    [(['EU', 'rejects'], ['B-ORG', 'O']), (['Peter'], ['B-PER'])]
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataError(f"CoNLL file {path!r} does not exist; pass the path of a file with one "
                        "token and its tag per line and blank lines between sentences.")
    sentences, words, tags, columns = [], [], [], None

    def close():
        if words:
            sentences.append(TaggedSentence(list(words), list(tags)))
        words.clear()
        tags.clear()

    for number, line in enumerate(decode_file(path, encoding).split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            close()
            continue
        fields = line.split(delimiter)
        if fields[0] == DOCSTART:
            close()
            continue
        if columns is None:
            columns = len(fields)
            for name, index in (("token_column", token_column), ("tag_column", tag_column)):
                if not -columns <= index < columns:
                    raise DataError(f"{path}, line {number}: {name}={index} but the line has "
                                    f"{columns} columns: {line!r}.")
            if token_column % columns == tag_column % columns:
                raise DataError(f"{path}, line {number}: token_column={token_column} and "
                                f"tag_column={tag_column} are the same column of {columns}: "
                                f"{line!r}. A CoNLL file needs each token and its tag in "
                                "separate columns (--token-column, --tag-column).")
        if len(fields) != columns:
            raise DataError(f"{path}, line {number}: {len(fields)} columns where the file's "
                            f"first token line has {columns}: {line!r}. Fix the line, or pass "
                            "delimiter='\\t' if tokens contain spaces.")
        words.append(fields[token_column])
        tags.append(fields[tag_column])
    close()
    if not sentences:
        raise DataError(f"CoNLL file {path!r} holds no tagged tokens.")
    return sentences


# ---- labels ---------------------------------------------------------------------------------
def split_tag(tag):
    """``"B-geo-loc"`` -> ``("B", "geo-loc")``; ``"O"`` -> ``("O", "")``; a bare ``"PER"`` ->
    ``("", "PER")``."""
    if tag == "O":
        return "O", ""
    if len(tag) > 1 and tag[1] == "-":
        return tag[0], tag[2:]
    return "", tag


def label_list(sentences):
    """The label set of a training set: ``O`` first, then per entity type ``B-X``, ``I-X``.

    Both prefixes of every type seen are included (an ``I-X`` that only ever follows ``B-X``
    pieces in ``label_all_pieces`` training still needs an id). Other tags (no ``B-``/``I-``
    prefix) are kept as they are, sorted.

    Example:
    >>> label_list([TaggedSentence(["Paris", "Hilton"], ["B-person", "I-person"]),
    ...             TaggedSentence(["in", "Lyon"], ["O", "B-geo-loc"])])
    ['O', 'B-geo-loc', 'I-geo-loc', 'B-person', 'I-person']
    """
    seen = {tag for s in sentences for tag in s.tags}
    types, other = set(), set()
    for tag in seen:
        prefix, kind = split_tag(tag)
        if prefix in ("B", "I"):
            types.add(kind)
        elif tag != "O":
            other.add(tag)
    labels = ["O"] + [f"{p}-{t}" for t in sorted(types) for p in "BI"] + sorted(other)
    return labels


def check_labels(sentences, labels, where="the data"):
    """Raise ``DataError`` naming the tags of ``sentences`` that are not in ``labels``."""
    known = set(labels)
    unknown = collections.Counter(t for s in sentences for t in s.tags if t not in known)
    if unknown:
        listed = ", ".join(f"{tag!r} ({n}x)" for tag, n in unknown.most_common())
        raise DataError(f"{where} has tags that the training labels do not: {listed}. The label "
                        f"set comes from the training data ({len(labels)} labels: "
                        f"{', '.join(labels)}); add examples of these tags to it or fix them.")
