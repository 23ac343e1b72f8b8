"""Words for word-level language models (the AWD-LSTM of ULMFiT): split, count, encode, extend.

Merity et al. (2017) and Howard & Ruder (2018) model words, not sub-words: WikiText-103/2 come
tokenized, with rare words already ``<unk>``. :class:`WordTokenizer` splits any text the same
way — WikiText's ``@-@``/``@,@``/``@.@`` markers back to the character they stand for, then runs
of letters and digits as words and every other visible character as a token of its own
(``century's`` → ``century ' s``, as WikiText's ``century 's`` becomes), lower-cased by default
so that the general corpus and a lower-cased target task (Rotten Tomatoes) share one vocabulary.
Ids: ``<pad>`` 0, ``<unk>`` 1, ``<eos>`` 2 (the end of each line or sentence, as in
Merity's data), then the words by falling count.

Target-task language-model fine-tuning (ULMFiT §3.2) meets words the general corpus never had;
:meth:`WordTokenizer.extend` appends them and says which old row each new id copies, so the
embedding matrix grows with the vocabulary (new rows start at the mean embedding, as fastai does).

Example:
>>> tokenizer = WordTokenizer.build(["The cat 's hat .", "the cat sat ."], min_count=2)
>>> tokenizer.vocabulary
['<pad>', '<unk>', '<eos>', 'the', 'cat', '.']
>>> tokenizer.encode("The cat's mat")
[3, 4, 1, 1, 1]
>>> bigger, rows = tokenizer.extend(["a mat , a mat"], min_count=2)
>>> bigger.vocabulary[6:], rows.tolist()[-2:]          # new words copy no old row (-1)
(['a', 'mat'], [-1, -1])
"""

import collections
import os
import re

import numpy as np

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.preprocessing.tokenizer import Tokenizer

SPECIALS = ("<pad>", "<unk>", "<eos>")
PAD, UNK, EOS = 0, 1, 2
_MARKER = re.compile(r" @(.)@ ")
_TOKEN = re.compile(r"<unk>|[^\W_]+|\S")


def split_text(text, lowercase=True):
    """The tokens of ``text`` (see the module docstring).

    >>> split_text("It cost 1 @,@ 000 <unk> -- the century's best!")
    ['it', 'cost', '1', ',', '000', '<unk>', '-', '-', 'the', 'century', "'", 's', 'best', '!']
    """
    text = _MARKER.sub(r"\1", text)
    return _TOKEN.findall(text.lower() if lowercase else text)


class WordTokenizer(Tokenizer):
    """A word vocabulary (``words``, specials first) and the splitting rule of the module.

    Args:
        words: the vocabulary; its first three entries must be ``<pad> <unk> <eos>``.
        lowercase: lower-case text before splitting.
    """

    def __init__(self, words, lowercase=True):
        words = list(words)
        if tuple(words[:3]) != SPECIALS:
            raise ConfigError(f"A word vocabulary starts with {SPECIALS}, got {words[:3]}; "
                              "build it with WordTokenizer.build().")
        if len(set(words)) != len(words):
            raise ConfigError("The word vocabulary lists a word twice.")
        self.vocabulary, self.lowercase = words, bool(lowercase)
        self._index = {word: i for i, word in enumerate(words)}

    @classmethod
    def build(cls, texts, max_size=None, min_count=1, lowercase=True):
        """The words of ``texts`` (strings) seen at least ``min_count`` times, most frequent first
        (ties by first appearance), at most ``max_size`` including the specials."""
        counts = collections.Counter()
        for text in texts:
            counts.update(split_text(text, lowercase))
        words = [w for w, c in counts.most_common() if c >= min_count and w not in SPECIALS]
        if max_size is not None:
            words = words[:max(0, max_size - len(SPECIALS))]
        if not words:
            raise DataError(f"No word occurs {min_count} times or more in the text; give more "
                            "text or a lower --min-count.")
        return cls(list(SPECIALS) + words, lowercase)

    def encode(self, text):
        """Ids of ``text``'s tokens (unknown words: ``<unk>``)."""
        return [self._index.get(t, UNK) for t in split_text(text, self.lowercase)]

    def encode_lines(self, lines):
        """One int32 stream: each non-empty line's ids followed by ``<eos>``."""
        ids = []
        for line in lines:
            tokens = self.encode(line)
            if tokens:
                ids.extend(tokens)
                ids.append(EOS)
        return np.asarray(ids, np.int32)

    def decode(self, ids):
        """Space-joined words of ``ids`` (padding dropped)."""
        return " ".join(self.vocabulary[i] for i in ids if i != PAD)

    def extend(self, texts, min_count=2, max_new=None):
        """A tokenizer whose vocabulary adds the words of ``texts`` it lacks (seen at least
        ``min_count`` times, at most ``max_new``), and ``rows``: for each new id, the old id
        it continues (−1 for an added word) — for resizing an embedding matrix."""
        counts = collections.Counter()
        for text in texts:
            counts.update(w for w in split_text(text, self.lowercase) if w not in self._index)
        new = [w for w, c in counts.most_common() if c >= min_count]
        new = new[:max_new] if max_new is not None else new
        rows = np.concatenate([np.arange(len(self.vocabulary)), np.full(len(new), -1)])
        return WordTokenizer(self.vocabulary + new, self.lowercase), rows.astype(np.int64)

    def save(self, directory):
        """Write ``vocab.txt`` (one word per line) into ``directory``."""
        os.makedirs(directory, exist_ok=True)
        self.save_vocabulary(os.path.join(directory, "vocab.txt"))

    @classmethod
    def from_directory(cls, directory, lowercase=True):
        path = os.path.join(directory, "vocab.txt")
        if not os.path.isfile(path):
            raise DataError(f"No word vocabulary at {path}; pass the folder a word-level run or "
                            "preset wrote (it holds vocab.txt).")
        with open(path, encoding="utf-8") as f:
            return cls(f.read().splitlines(), lowercase)

    @classmethod
    def from_read_preset(cls, preset, **kwargs):
        """The word tokenizer of an AWD-LSTM preset: its ``vocab.txt`` and casing."""
        return cls(preset.vocabulary(), **{"lowercase": preset.tokenizer.get("lowercase", True),
                                           **kwargs})


def resize_rows(matrix, rows):
    """``matrix`` (V, …) re-indexed by ``rows`` (from :meth:`WordTokenizer.extend`); a row of −1
    becomes the mean of the old rows (fastai's choice for words new to the model).

    >>> resize_rows(np.array([[0.0, 2.0], [2.0, 4.0]]), np.array([1, 0, -1])).tolist()
    [[2.0, 4.0], [0.0, 2.0], [1.0, 3.0]]
    """
    matrix = np.asarray(matrix)
    mean = matrix.mean(axis=0, keepdims=True)
    return np.where((rows >= 0).reshape((-1,) + (1,) * (matrix.ndim - 1)),
                    matrix[np.maximum(rows, 0)], mean)
