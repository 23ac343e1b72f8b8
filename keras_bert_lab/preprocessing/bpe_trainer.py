"""Learning GPT-1's byte-pair merges from a corpus.

BPE training (Sennrich et al. 2016; GPT-1, Radford et al. 2018, §4.1, learned 40,000 merges) starts
from words spelled as characters, the last marked ``</w>``, and repeatedly merges the adjacent pair
of symbols that occurs most often in the corpus into one new symbol; the merges, in the order
learned, are the model. Words are counted after the same basic tokenization the tokenizer uses
(:func:`~keras_bert_lab.preprocessing.wordpiece_trainer.count_words`), so each distinct word is
processed once, weighted by its count.

**Ties** between equally frequent pairs go to the pair whose symbols come first in the vocabulary
(smallest ``(id of left, id of right)``): base symbols are numbered by code point, all ``c`` before
all ``c</w>``, and merged symbols in the order they were made. This is Hugging Face ``tokenizers``'
``BpeTrainer`` rule too, so given the same base order the two learn the same merges
(``tests/preprocessing/test_bpe_trainer.py``).

**Speed**: pair counts and, for each pair, the words it occurs in are kept up to date as merges
happen; a merge touches only the words that contain its pair, and a heap with lazily refreshed
counts finds the next pair. On WikiText-2 train (2.1 M words, 66 k distinct) 10,000 merges take
≈ 8 s and 40,000 ≈ 11-14 s of Python on this machine (``tokenizers``' Rust trainer: 3-5 s).

Example:

>>> tokenizer = train_bpe(["low lower lowest", "newer newest wider"] * 5, num_merges=6)
>>> tokenizer.merges[:3]
[('w', 'e'), ('l', 'o'), ('e', 'we')]
>>> tokenizer.tokenize("lowest wider")
['lowe', 'st</w>', 'w', 'i', 'd', 'e', 'r</w>']
"""

import collections
import heapq

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.preprocessing.bpe import (END_OF_WORD, GPT_SPECIAL_TOKENS, UNK_TOKEN,
                                              BytePairTokenizer)
from keras_bert_lab.preprocessing.wordpiece_trainer import count_words


def train_bpe(corpus, *, vocabulary_size=None, num_merges=None, min_frequency=2, lowercase=True,
              special_tokens=GPT_SPECIAL_TOKENS, unk_token=UNK_TOKEN, progress=False,
              batch_size=1024):
    """Learn a GPT-1 style BPE tokenizer from ``corpus``; what ``kbl vocab --bpe`` calls.

    Args:
        corpus: texts: an iterable of ``str``/``bytes`` (e.g. ``wordpiece_trainer.read_lines`` of
            files, ``registry.wikitext2_paragraphs("train")``) or a ``tf.data.Dataset`` of strings.
        vocabulary_size: stop when the vocabulary (characters, merged symbols, special tokens and
            the unknown token) has this many tokens.
        num_merges: stop after this many merges (GPT-1: 40,000). Give either or both.
        min_frequency: stop when the most frequent pair occurs fewer times than this.
        lowercase: lower-case and strip accents first (as the tokenizer will).
        special_tokens, unk_token: appended after the learned vocabulary (see
            :class:`~keras_bert_lab.preprocessing.bpe.BytePairTokenizer`).
        progress: show progress bars (counting words, then merges).
        batch_size: texts per TensorFlow call of the basic tokenizer.

    Returns:
        A :class:`~keras_bert_lab.preprocessing.bpe.BytePairTokenizer`; ``save(directory)`` writes
        ``vocab.txt`` and ``merges.txt``.
    """
    if vocabulary_size is None and num_merges is None:
        raise ConfigError("train_bpe needs vocabulary_size=N or num_merges=N (GPT-1: 40000 "
                          "merges) to know when to stop.")
    counts = count_words(corpus, lowercase=lowercase, max_chars_per_word=2**31 - 1,
                         batch_size=batch_size, progress=progress)
    if not counts:
        raise DataError("The corpus has no words; pass non-empty texts.")
    extra = len(set(special_tokens) | {unk_token})
    limit = None if vocabulary_size is None else int(vocabulary_size) - extra
    vocabulary, merges = learn_merges(counts, num_merges=num_merges, vocabulary_size=limit,
                                      min_frequency=min_frequency, progress=progress)
    if not merges:
        raise DataError(f"No pair of symbols occurs {min_frequency} times or more (or the size "
                        f"leaves no room for merges after {len(vocabulary)} base symbols); pass "
                        "a larger corpus, a lower min_frequency or a larger vocabulary_size.")
    return BytePairTokenizer(vocabulary, merges, lowercase=lowercase,
                             special_tokens=special_tokens, unk_token=unk_token)


def learn_merges(word_counts, *, num_merges=None, vocabulary_size=None, min_frequency=2,
                 progress=False):
    """Merges from ``{word: count}``: returns ``(vocabulary, merges)``.

    ``vocabulary`` is every character of the words (code-point order), then each with ``</w>``,
    then the merged symbols in the order made; ``merges`` the ``(a, b)`` pairs by rank. Stops after
    ``num_merges`` merges, at ``vocabulary_size`` tokens, or when the best pair is rarer than
    ``min_frequency``, whichever comes first.
    """
    alphabet = sorted({ch for word in word_counts for ch in word})
    vocabulary = alphabet + [ch + END_OF_WORD for ch in alphabet]
    index = {token: i for i, token in enumerate(vocabulary)}
    words, counts = [], []
    for word, count in word_counts.items():
        words.append([index[ch] for ch in word[:-1]] + [index[word[-1] + END_OF_WORD]])
        counts.append(count)
    pair_counts = collections.Counter()
    where = collections.defaultdict(set)  # pair -> words it occurs in (maybe stale: a superset)
    for i, (word, count) in enumerate(zip(words, counts)):
        for pair in zip(word, word[1:]):
            pair_counts[pair] += count
            where[pair].add(i)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    limits = [n for n in (num_merges, vocabulary_size and vocabulary_size - len(vocabulary))
              if n is not None]
    bar = _progress_bar(max(min(limits), 0) if limits else None) if progress else None
    merges = []
    while heap:
        if num_merges is not None and len(merges) >= num_merges:
            break
        if vocabulary_size is not None and len(vocabulary) >= vocabulary_size:
            break
        count, pair = heapq.heappop(heap)
        if -count != pair_counts[pair]:  # a stale entry: requeue with today's count
            if pair_counts[pair] > 0:
                heapq.heappush(heap, (-pair_counts[pair], pair))
            continue
        if -count < max(min_frequency, 1):
            break
        a, b = pair
        token = vocabulary[a] + vocabulary[b]
        if token not in index:
            index[token] = len(vocabulary)
            vocabulary.append(token)
        merges.append((vocabulary[a], vocabulary[b]))
        grown = set()
        for i in where.pop(pair):
            change = _merge_word(words, i, a, b, index[token])
            for changed, delta in change.items():
                pair_counts[changed] += delta * counts[i]
                if delta > 0:
                    where[changed].add(i)
                    grown.add(changed)
        for changed in grown:
            heapq.heappush(heap, (-pair_counts[changed], changed))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return vocabulary, merges


def _merge_word(words, i, a, b, merged):
    """Merge every ``a b`` of word ``i`` (left to right); return the change of its pair counts."""
    word = words[i]
    if len(word) < 2:
        return {}
    new, j = [], 0
    while j < len(word):
        if j + 1 < len(word) and word[j] == a and word[j + 1] == b:
            new.append(merged)
            j += 2
        else:
            new.append(word[j])
            j += 1
    if len(new) == len(word):
        return {}  # the pair is no longer there (a stale entry of `where`)
    change = collections.Counter(zip(new, new[1:]))
    change.subtract(collections.Counter(zip(word, word[1:])))
    words[i] = new
    return {pair: delta for pair, delta in change.items() if delta}


def _progress_bar(total):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit=" merges", desc="learning merges", mininterval=0.5)
