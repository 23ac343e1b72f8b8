"""The two files of a byte-pair model, read and checked: the vocabulary and the ranked merges.

A vocabulary is ``vocab.txt`` (one token per line) or GPT-1's ``encoder_bpe.json`` (token → id,
where a second token may share an id); merges are ``merges.txt`` or GPT-1's ``vocab.bpe`` (one
``a b`` pair per line, rank = position, an optional ``#version`` header). Every problem is a
``DataError`` naming the file, the line or merge, and the fix. Used by
:class:`~keras_bert_lab.preprocessing.bpe.BytePairTokenizer`.

Example:
>>> coerce_merges(["t h", "th e</w>"])
[('t', 'h'), ('th', 'e</w>')]
>>> check_merges([("t", "h"), ("th", "e</w>")], {"th": 0, "the</w>": 1})
{('t', 'h'): 0, ('th', 'e</w>'): 1}
"""

import json
import os

from keras_bert_lab.errors import DataError
from keras_bert_lab.presets.vocabulary import check_tokens, read_vocabulary

END_OF_WORD = "</w>"


def read_merges(path):
    """A merges file (``merges.txt``, GPT-1's ``vocab.bpe``) as a list of ``(a, b)`` by rank."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataError(f"Merges file {path!r} does not exist; pass GPT-1's vocab.bpe or a "
                        "merges.txt written by BytePairTokenizer.save.")
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[0].startswith("#version"):
        lines = lines[1:]
    while lines and lines[-1].strip() == "":
        lines.pop()  # GPT-1's vocab.bpe ends with a blank line
    return coerce_merges(lines, source=path, first_line=2)


def read_encoder(path):
    """GPT-1's ``encoder_bpe.json`` (token -> id) as a dict, checked like a vocabulary."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataError(f"Encoder file {path!r} does not exist; pass GPT-1's encoder_bpe.json.")
    try:
        with open(path, encoding="utf-8") as f:
            encoder = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"Encoder file {path!r} is not UTF-8 JSON ({error}).") from None
    if not isinstance(encoder, dict):
        raise DataError(f"Encoder file {path!r} holds a {type(encoder).__name__}, not a "
                        "{token: id} object.")
    return encoder


def coerce_vocabulary(vocabulary):
    """(tokens by id, {alias: id}) from a path, a list or a dict token -> id."""
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        vocabulary = read_encoder(path) if path.endswith(".json") else read_vocabulary(path)
    if not isinstance(vocabulary, dict):
        return check_tokens(list(vocabulary), source="(list)"), {}
    tokens, aliases = {}, {}
    for token, i in vocabulary.items():
        if not isinstance(i, int) or i < 0:
            raise DataError(f"Vocabulary entry {token!r}: id {i!r} is not an integer >= 0.")
        if i in tokens:
            aliases[token] = i  # a second token for an id (the allennlp fixture's "<unk>": 0)
        else:
            tokens[i] = token
    missing = sorted(set(range(len(tokens))) - set(tokens))
    if missing or len(tokens) != max(tokens, default=-1) + 1:
        raise DataError(f"Vocabulary ids must be 0 .. n-1 without gaps; id {missing[:1] or ['?']} "
                        f"is missing (ids run to {max(tokens, default=-1)}).")
    return check_tokens([tokens[i] for i in range(len(tokens))], source="(dict)"), aliases


def coerce_merges(merges, source="(list)", first_line=1):
    if isinstance(merges, (str, os.PathLike)):
        return read_merges(merges)
    pairs = []
    for n, merge in enumerate(merges, first_line):
        parts = tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge)
        if len(parts) != 2 or not all(isinstance(p, str) and p and " " not in p for p in parts):
            raise DataError(f"Merges {source}, line {n}: {merge!r} is not two symbols separated "
                            "by one space (like 't h' or 'th e</w>').")
        pairs.append(parts)
    if not pairs:
        raise DataError(f"Merges {source} has no merges; pass GPT-1's vocab.bpe or a merges.txt "
                        "with one 'a b' pair per line (train one with bpe_trainer.train_bpe).")
    return pairs


def check_merges(merges, index):
    """{(a, b): rank}, after checking that the merges can run and fit the vocabulary."""
    ranks, made = {}, {a + b for a, b in merges}
    for rank, (a, b) in enumerate(merges):
        where = f"merge {rank + 1} ({a} {b})"
        for part in (a, b):
            if part not in made and base_char(part) is None:
                raise DataError(f"{where}: {part!r} is neither a character (optionally + "
                                f"{END_OF_WORD!r}) nor made by any merge; the merges belong to "
                                "another vocabulary or were cut short.")
        if a.endswith(END_OF_WORD):
            raise DataError(f"{where}: {a!r} ends a word, so nothing can follow it.")
        if a + b not in index:
            raise DataError(f"{where} makes {a + b!r}, which is not in the vocabulary; the "
                            "vocabulary and merges files do not belong together.")
        if (a, b) in ranks:
            raise DataError(f"{where} repeats merge {ranks[a, b] + 1}; remove one of them.")
        ranks[a, b] = rank
    return ranks


def base_char(symbol):
    """The character of a one-character symbol (``"a"`` or ``"a</w>"``), else ``None``."""
    core = symbol[:-len(END_OF_WORD)] if symbol.endswith(END_OF_WORD) else symbol
    return core if len(core) == 1 else None
