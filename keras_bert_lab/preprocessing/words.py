"""Words for word2vec: tokenization, the vocabulary with ``min_count``, and the two word
distributions of Mikolov et al. (2013) — frequent-word subsampling and the unigram^0.75 noise.

* :func:`split_words` — lower-cased runs of letters and digits (an apostrophe or hyphen inside a
  word keeps it whole); punctuation is dropped. WikiText's ``@-@`` / ``@,@`` markers become
  nothing, as the punctuation they stand for.
* :class:`WordVocabulary` — the words seen at least ``min_count`` times, most frequent first
  (ties in order of first appearance), with their counts; :meth:`WordVocabulary.encode` maps a
  corpus to one flat id array plus sentence boundaries, dropping out-of-vocabulary words as
  word2vec does (before any window is drawn).
* :func:`keep_probabilities` — a word of relative frequency ``f`` is kept with probability
  ``min(1, sqrt(t / f))`` (the paper's discard rule ``P(discard) = 1 − sqrt(t / f)``), or with
  word2vec.c's ``min(1, (sqrt(f / t) + 1) · t / f)`` (``formula="word2vec.c"``, which gensim
  uses too).
* :func:`noise_distribution` — ``count^0.75 / Σ count^0.75``.

Example:
>>> vocabulary = WordVocabulary.build([["the cat sat"], ["the dog sat down"]], min_count=2)
>>> vocabulary.words, vocabulary.counts.tolist()
(['the', 'sat'], [2, 2])
>>> ids, starts = vocabulary.encode([["the cat sat"], ["the dog sat down"]])
>>> ids.tolist(), starts.tolist()
([0, 1, 0, 1], [0, 2, 4])
"""

import collections
import dataclasses
import re

import numpy as np

from keras_bert_lab.errors import ConfigError, DataError

_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
FORMULAS = ("paper", "word2vec.c")


def split_words(text, lowercase=True):
    """The words of ``text`` (see the module docstring).

    >>> split_words("The lab's @-@ word2vec , re-built!")
    ['the', "lab's", 'word2vec', 're-built']
    """
    return _WORD.findall(text.lower() if lowercase else text)


def _sentences(corpus):
    """Sentences (strings) of a corpus given as documents (lists of strings) or strings."""
    for item in corpus:
        if isinstance(item, str):
            yield item
        else:
            yield from item


@dataclasses.dataclass
class WordVocabulary:
    """Words (most frequent first) and their corpus counts; ``len()`` is the number of words."""

    words: list
    counts: np.ndarray
    lowercase: bool = True
    total_words: int = 0   # words in the corpus, out-of-vocabulary ones included

    def __post_init__(self):
        self.counts = np.asarray(self.counts, "int64")
        self.index = {word: i for i, word in enumerate(self.words)}

    def __len__(self):
        return len(self.words)

    @classmethod
    def build(cls, corpus, min_count=5, max_size=None, lowercase=True):
        """Count the words of ``corpus`` (documents of sentences, or sentences) and keep those
        seen at least ``min_count`` times (at most ``max_size``, the most frequent).

        Raises ``DataError`` when the corpus has no word, and when no word is frequent enough,
        naming ``min_count``.
        """
        if int(min_count) < 1:
            raise ConfigError(f"min_count must be at least 1, got {min_count}.")
        counts = collections.Counter()
        for sentence in _sentences(corpus):
            counts.update(split_words(sentence, lowercase))
        total = sum(counts.values())
        if not total:
            raise DataError("The corpus has no words (it is empty, or holds only punctuation); "
                            "check the corpus path and its format.")
        # Counter keeps first-appearance order; a stable sort keeps it among equal counts.
        kept = sorted(((w, c) for w, c in counts.items() if c >= min_count),
                      key=lambda item: -item[1])[:max_size]
        if not kept:
            raise DataError(f"No word occurs min_count={min_count} times in the corpus "
                            f"({total} words, {len(counts)} distinct, the most frequent "
                            f"{counts.most_common(1)[0][1]} times); lower min_count.")
        return cls([w for w, _ in kept], [c for _, c in kept], lowercase, total)

    def encode(self, corpus):
        """``(ids, starts)``: the in-vocabulary words of every sentence as one int32 array and
        the sentence boundaries (``ids[starts[i]:starts[i + 1]]`` is sentence ``i``; empty
        sentences are dropped)."""
        ids, starts = [], [0]
        for sentence in _sentences(corpus):
            found = [self.index[w] for w in split_words(sentence, self.lowercase)
                     if w in self.index]
            if found:
                ids.extend(found)
                starts.append(len(ids))
        return np.asarray(ids, "int32"), np.asarray(starts, "int64")

    def pad_ids(self, texts, sequence_length):
        """``(len(texts), sequence_length)`` int32 ids for a classifier: word ``i`` → ``i + 2``,
        ``1`` for a word outside the vocabulary, ``0`` for padding (longer texts are cut).

        >>> WordVocabulary(["good", "film"], [5, 3]).pad_ids(["A good film"], 5).tolist()
        [[1, 2, 3, 0, 0]]
        """
        ids = np.zeros((len(texts), sequence_length), "int32")
        for row, text in enumerate(texts):
            words = split_words(text, self.lowercase)[:sequence_length]
            ids[row, :len(words)] = [self.index.get(w, -1) + 2 for w in words]
        return ids

    def save(self, path):
        """One ``word<TAB>count`` line per word, most frequent first."""
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(f"{w}\t{c}\n" for w, c in zip(self.words, self.counts.tolist()))


def keep_probabilities(counts, sample=1e-5, formula="paper"):
    """Probability of keeping each word at subsampling (see the module docstring); all ones
    when ``sample`` is 0.

    >>> keep_probabilities([1000, 10], sample=1e-3).round(3).tolist()
    [0.032, 0.318]
    """
    if formula not in FORMULAS:
        raise ConfigError(f"subsampling formula {formula!r}; choose one of {FORMULAS}.")
    if sample < 0:
        raise ConfigError(f"sample must be ≥ 0 (0 turns subsampling off), got {sample}.")
    counts = np.asarray(counts, "float64")
    if not sample:
        return np.ones_like(counts)
    frequency = counts / counts.sum()
    if formula == "paper":
        keep = np.sqrt(sample / frequency)
    else:
        keep = (np.sqrt(frequency / sample) + 1) * sample / frequency
    return np.minimum(keep, 1.0)


def noise_distribution(counts, power=0.75):
    """The noise words' distribution: ``count^power`` normalised (0.75 in the paper).

    >>> noise_distribution([16, 1]).round(3).tolist()
    [0.889, 0.111]
    """
    weights = np.asarray(counts, "float64") ** power
    return weights / weights.sum()
