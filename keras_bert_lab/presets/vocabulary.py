"""Vocabulary files (``vocab.txt``): one token per line, id = line number.

The format of a preset's vocabulary and of the tokenizers' (WordPiece); read strictly, since a
missing or repeated line would shift every later id.
"""

import os

from keras_bert_lab.errors import DataError, PresetError


def read_vocabulary(path):
    """Read a ``vocab.txt`` (one token per line, id = line number) into a list of tokens.

    Raises ``DataError`` naming the file for a missing or empty file, text that is not UTF-8, an
    empty line, or a token listed twice.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataError(f"Vocabulary file {path!r} does not exist; pass the path of a vocab.txt "
                        "(one token per line) or a list of tokens.")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise DataError(f"Vocabulary file {path!r} is not UTF-8 (bad bytes on line {line}); "
                        "re-save it as UTF-8.") from None
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()  # the newline that ends the last line
    tokens = [t[:-1] if t.endswith("\r") else t for t in tokens]
    return check_tokens(tokens, source=path)


def check_tokens(tokens, source):
    """``tokens`` as a list, or ``DataError``: empty, a non-string, an empty or repeated token."""
    if not tokens:
        raise DataError(f"Vocabulary {source} is empty; a BERT vocab.txt lists one token per line, "
                        "special tokens ([PAD], [UNK], [CLS], [SEP], [MASK]) included.")
    seen = {}
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise DataError(f"Vocabulary {source}: entry {i} is {type(token).__name__}, not str.")
        if token == "":
            raise DataError(f"Vocabulary {source}: line {i + 1} is empty; remove it (an empty "
                            "token can never be produced and would shift every later id).")
        if token in seen:
            raise DataError(f"Vocabulary {source}: token {token!r} appears twice (lines "
                            f"{seen[token] + 1} and {i + 1}); ids must be unique, remove one.")
        seen[token] = i
    return list(tokens)


def write_vocabulary(path, tokens):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(t + "\n" for t in tokens))


def guess_lowercase(tokens):
    """``True`` when no token but the bracketed specials has an upper-case letter (uncased vocab)."""
    return not any(t != t.lower() for t in tokens if not (t.startswith("[") and t.endswith("]")))


def coerce_vocabulary(vocabulary):
    """A list of tokens from a path, a list, or a tokenizer with a ``vocabulary`` attribute."""
    if vocabulary is None:
        return None
    if isinstance(vocabulary, (str, os.PathLike)):
        return read_vocabulary(vocabulary)
    if hasattr(vocabulary, "vocabulary"):
        vocabulary = vocabulary.vocabulary
    if hasattr(vocabulary, "get_vocabulary"):
        vocabulary = vocabulary.get_vocabulary()
    return [str(t) for t in vocabulary]


def check_vocabulary_size(tokens, vocabulary_size, where):
    if len(tokens) != vocabulary_size:
        raise PresetError(f"The {where} has {len(tokens)} tokens but the token embedding has "
                          f"{vocabulary_size} rows (config vocabulary_size); use the vocabulary the model "
                          "was trained with.")
