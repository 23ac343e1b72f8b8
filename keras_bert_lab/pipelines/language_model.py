"""Language-model training data: a corpus as contiguous blocks of tokens, in a seeded stream.

A left-to-right language model learns from running text, not from sentence pairs: GPT-1
(Radford et al. 2018, §4.1) trains on "contiguous sequences of 512 tokens" of BooksCorpus so that
the model sees long-range context. :func:`lm_blocks` lays a tokenized corpus end to end (documents
in order, optionally with a separator token between them) and cuts it into blocks of ``T + 1``
tokens that overlap by one, so every token but the first is a target exactly once.
:func:`lm_dataset` serves them as ``(features, labels, sample_weight)`` batches — the first ``T``
tokens in, the last ``T`` out — in an order that is a pure function of ``(seed, epoch)``, so a run
resumed at step ``s`` reads exactly the batches an unbroken run would (``skip_batches``).

ELMo's biLM (Peters et al. 2018) reads words, spelled as characters, and predicts words in both
directions. :func:`word_stream` lays a corpus end to end as *word types* — whitespace-separated
tokens (WikiText is tokenized already), each sentence between ``<S>`` and ``</S>`` as bilm-tf's
training data are — and :func:`word_vocabulary` keeps the softmax words as bilm-tf's vocabulary
files do (``<S>``, ``</S>``, ``<UNK>``, then the words by falling count). Blocks have ``T + 2``
words overlapping by two (``lm_blocks(..., context=2)``): the middle ``T`` go in, the forward LM
predicts the word after each (the last one's is the word after the block), the backward LM the
word before each — so every word is a target once in each direction. :func:`elmo_dataset` turns a
batch of blocks into character ids and targets with two ``tf.gather``\\ s from per-type tables
(the rare word that is ``<UNK>`` to the softmax keeps its own spelling). A target across a
sentence boundary carries no information — ``<S>`` always follows ``</S>`` — so the forward
target ``<S>`` and the backward target ``</S>`` have weight 0.

Shapes: ``N`` blocks, ``T`` tokens per training row, ``B`` batch, ``C`` characters per word.

Example:
>>> import numpy as np
>>> blocks = lm_blocks(np.arange(10), block_length=4)        # 10 tokens -> 2 blocks of 5
>>> blocks.tolist()
[[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]]
>>> x, y, w = next(iter(lm_dataset(blocks, batch_size=2, seed=0, shuffle=False)))
>>> x["token_ids"].numpy().tolist()[0], y.numpy().tolist()[0]
([0, 1, 2, 3], [1, 2, 3, 4])

Words for ELMo:
>>> types, ids = word_stream([["a b a", "c a"]])
>>> types, ids.tolist()
(['<S>', '</S>', 'a', 'b', 'c'], [0, 2, 3, 2, 1, 0, 4, 2, 1])
>>> words, word_ids = word_vocabulary(types, ids, min_count=2)
>>> words, word_ids.tolist()                # 'b' and 'c' are rare: <UNK> to the softmax
(['<S>', '</S>', '<UNK>', 'a'], [0, 1, 3, 2, 2])
>>> blocks = lm_blocks(ids, block_length=3, context=2)     # 9 words -> 2 blocks of 3 + 2
>>> x, y, w = next(iter(elmo_dataset(blocks, type_characters(types), word_ids, batch_size=2,
...                                  shuffle=False)))
>>> x["character_ids"].shape.as_list()
[2, 3, 50]
>>> blocks[1].tolist(), y["forward"].numpy().tolist()[1], w["forward"].numpy().tolist()[1]
([2, 1, 0, 4, 2], [0, 2, 3], [0.0, 1.0, 1.0])
>>> y["backward"].numpy().tolist()[1], w["backward"].numpy().tolist()[1]
([3, 1, 0], [1.0, 0.0, 1.0])
"""

import numpy as np
import tensorflow as tf

from keras_bert_lab.errors import DataError
from keras_bert_lab.preprocessing.characters import character_ids

BOS, EOS, UNK = "<S>", "</S>", "<UNK>"   # bilm-tf's special words, in its vocabulary order


def lm_blocks(token_ids, block_length, document_splits=None, separator_id=None, context=1):
    """Cut a token stream into ``(N, T + context)`` int32 blocks overlapping by ``context``.

    Args:
        token_ids: the corpus' tokens end to end (e.g. ``TokenizedCorpus.token_ids``).
        block_length: ``T``, the tokens a row feeds the model.
        document_splits: token offsets where documents start (with the end), to put
            ``separator_id`` between documents; ignored without a separator.
        separator_id: a token between documents (GPT-2's ``<|endoftext|>`` habit), or ``None``.
        context: tokens a block has beyond its ``T`` inputs: 1 for a left-to-right LM (the
            last input's target), 2 for a biLM (one target word before and one after).

    Blocks start every ``T`` tokens; the tail that does not fill a block is dropped.
    """
    tokens = np.asarray(token_ids, np.int32)
    if separator_id is not None and document_splits is not None:
        parts = np.split(tokens, np.asarray(document_splits)[1:-1])
        tokens = np.concatenate([np.append(p, np.int32(separator_id)) for p in parts])
    count = (len(tokens) - context) // block_length
    if count < 1:
        raise DataError(f"{len(tokens)} tokens do not fill one block of {block_length} + "
                        f"{context}; use a larger corpus or a shorter --sequence-length.")
    starts = np.arange(count) * block_length
    return tokens[starts[:, None] + np.arange(block_length + context)[None, :]]


def tbptt_blocks(token_ids, batch_size, bptt):
    """Blocks for truncated back-propagation through time: row ``b`` of every batch continues row
    ``b`` of the batch before.

    The AWD-LSTM's data layout (Merity et al. 2017; ULMFiT): the stream is cut into
    ``batch_size`` contiguous parts, and batch ``k`` holds window ``k`` (``bptt + 1`` tokens,
    overlapping by one) of each part. Served by :func:`lm_dataset` with ``shuffle=False``, a model
    that carries its LSTM state from one batch to the next reads each part as one long text.

    Example:
    >>> tbptt_blocks(np.arange(9), batch_size=2, bptt=2).tolist()   # parts 0..3 and 4..7
    [[0, 1, 2], [4, 5, 6], [2, 3, 4], [6, 7, 8]]
    """
    tokens = np.asarray(token_ids, np.int32)
    if bptt < 2:
        raise DataError(f"A BPTT length of {bptt} gives the model no history to learn from; "
                        "use --bptt 2 or more (the AWD-LSTM uses 70).")
    part = (len(tokens) - 1) // batch_size
    windows = part // bptt
    if windows < 1:
        raise DataError(f"{len(tokens)} tokens do not fill {batch_size} parts of one {bptt}-token "
                        "window; lower --batch-size or --bptt, or use more text.")
    starts = (np.arange(windows)[:, None] * bptt + np.arange(batch_size)[None, :] * part)
    return tokens[starts.reshape(-1)[:, None] + np.arange(bptt + 1)[None, :]]


def block_order(num_blocks, seed, epochs):
    """Block indices for ``epochs`` passes: a fresh permutation per epoch from ``(seed, epoch)``."""
    return np.concatenate([np.random.default_rng([seed, epoch]).permutation(num_blocks)
                           for epoch in range(epochs)]).astype(np.int64)


def _batched_indices(num_blocks, batch_size, seed, shuffle, epochs, skip_batches):
    """Full batches of block indices (``block_order``'s, or in order), ``skip_batches`` in."""
    if num_blocks < batch_size:
        raise DataError(f"{num_blocks} blocks are fewer than one batch of {batch_size}; lower "
                        "--batch-size or --sequence-length, or use more text.")
    order = block_order(num_blocks, seed, epochs) if shuffle else \
        np.tile(np.arange(num_blocks, dtype=np.int64), epochs)
    return (tf.data.Dataset.from_tensor_slices(order).skip(skip_batches * batch_size)
            .batch(batch_size, drop_remainder=True))


def lm_dataset(blocks, batch_size, seed=0, shuffle=True, epochs=1, skip_batches=0):
    """``(features, labels, sample_weight)`` batches of ``blocks`` for next-token training.

    ``features``: ``token_ids`` and ``padding_mask`` (B, T); ``labels`` the next tokens (B, T);
    ``sample_weight`` ones. Batches are full (a last partial one is dropped); with ``shuffle``
    the order of each epoch is :func:`block_order`'s, without it the blocks' own order.
    ``skip_batches`` starts the stream that many batches in (resuming), at no cost.
    """
    blocks = np.asarray(blocks, np.int32)
    indices = _batched_indices(len(blocks), batch_size, seed, shuffle, epochs, skip_batches)
    table = tf.constant(blocks)

    def to_batch(indices):
        rows = tf.gather(table, indices)                      # (B, T + 1)
        inputs = rows[:, :-1]
        return ({"token_ids": inputs, "padding_mask": tf.ones_like(inputs)}, rows[:, 1:],
                tf.ones(tf.shape(inputs), tf.float32))

    return indices.map(to_batch).prefetch(2)


# ---- words for ELMo ----------------------------------------------------------------------------
def word_stream(documents, types=None):
    """A corpus as word-type ids end to end, each sentence as ``<S> words </S>``.

    Args:
        documents: ``list[list[str]]`` (sentences per document) or a ``Corpus``; a sentence's
            words are its whitespace-separated tokens (empty sentences are skipped).
        types: the type list of another stream, extended in place (held-out text shares the
            training stream's ids and adds its own new words at the end); default a new one.

    Returns ``(types, type_ids)``: ``types[i]`` is the word of type ``i`` (``<S>`` 0 and ``</S>``
    1 in a new list, then in order of first appearance) and ``type_ids`` an int32 array.
    """
    types = [BOS, EOS] if types is None else types
    index = {word: i for i, word in enumerate(types)}
    bos, eos = index[BOS], index[EOS]
    ids = []
    for document in documents:
        for sentence in document:
            words = sentence.split()
            if words:
                ids.append(bos)
                ids.extend([index.setdefault(w, len(index)) for w in words])
                ids.append(eos)
    types.extend(list(index)[len(types):])
    if not ids:
        raise DataError("The corpus has no words; check the --corpus path and format.")
    return types, np.asarray(ids, np.int32)


def word_vocabulary(types, type_ids, min_count=1, words=None):
    """The softmax words and each type's softmax id.

    Args:
        types, type_ids: a :func:`word_stream` (the training text).
        min_count: words seen fewer times are ``<UNK>`` to the softmax.
        words: a given vocabulary (it must hold ``<S>``, ``</S>`` and ``<UNK>``) instead of one
            built from the counts.

    Returns ``(words, word_ids)``: built, ``words`` is ``[<S>, </S>, <UNK>]`` then the kept words
    by falling count (ties in order of first appearance), as bilm-tf's vocabulary files;
    ``word_ids[t]`` is type ``t``'s softmax id (``<UNK>``'s for a word the vocabulary lacks).
    """
    if words is None:
        if int(min_count) < 1:
            raise DataError(f"min_count must be at least 1, got {min_count}.")
        counts = np.bincount(np.asarray(type_ids), minlength=len(types))
        order = np.argsort(-counts, kind="stable")
        special = {BOS, EOS, UNK}
        words = [BOS, EOS, UNK] + [types[t] for t in order
                                   if counts[t] >= min_count and types[t] not in special]
    missing = [w for w in (BOS, EOS, UNK) if w not in words]
    if missing:
        raise DataError(f"The word vocabulary lacks {missing}; a biLM vocabulary lists <S>, </S> "
                        "and <UNK> (bilm-tf puts them on its first three lines).")
    index = {word: i for i, word in enumerate(words)}
    unk = index[UNK]
    return list(words), np.asarray([index.get(t, unk) for t in types], np.int32)


def type_characters(types, max_characters=50):
    """``(len(types), C)`` int32 character ids of each word type (``<S>``/``</S>`` the markers)."""
    return character_ids([list(types)], add_boundaries=False, max_characters=max_characters)[0]


def elmo_dataset(blocks, characters, word_ids, batch_size, seed=0, shuffle=True, epochs=1,
                 skip_batches=0, bos_id=0, eos_id=1):
    """``(features, labels, sample_weight)`` batches of ``(N, T + 2)`` type-id ``blocks`` for
    :class:`~keras_bert_lab.models.elmo.language_model.ElmoLanguageModel`.

    ``features``: ``character_ids`` (B, T, C), gathered from ``characters`` (types, C);
    ``labels``: ``forward`` (the softmax id of the next word) and ``backward`` (the previous
    word's), each (B, T), through ``word_ids`` (types,); ``sample_weight`` per direction: 0 where
    the target is the sentence marker across a boundary (forward ``bos_id``, backward
    ``eos_id``), else 1. Order, batching and ``skip_batches`` as in :func:`lm_dataset`.
    """
    blocks = np.asarray(blocks, np.int32)
    indices = _batched_indices(len(blocks), batch_size, seed, shuffle, epochs, skip_batches)
    block_table = tf.constant(blocks)
    character_table = tf.constant(np.asarray(characters, np.int32))
    word_table = tf.constant(np.asarray(word_ids, np.int32))

    def to_batch(indices):
        rows = tf.gather(block_table, indices)                           # (B, T + 2) types
        chars = tf.gather(character_table, rows[:, 1:-1])                # (B, T, C)
        words = tf.gather(word_table, rows)                              # (B, T + 2) softmax ids
        forward, backward = words[:, 2:], words[:, :-2]                  # (B, T) each
        weights = {"forward": tf.cast(forward != bos_id, tf.float32),
                   "backward": tf.cast(backward != eos_id, tf.float32)}
        return {"character_ids": chars}, {"forward": forward, "backward": backward}, weights

    return indices.map(to_batch).prefetch(2)


def next_token_batch(token_ids, padding_mask):
    """``(features, labels, sample_weight)`` for next-token training from packed rows (B, T).

    Inputs are the first ``T - 1`` tokens, labels the last ``T - 1`` (each position predicts the
    next token), weights the labels' padding mask. Works on NumPy arrays and inside
    ``tf.data.Dataset.map``.
    """
    features = {"token_ids": token_ids[:, :-1], "padding_mask": padding_mask[:, :-1]}
    return features, token_ids[:, 1:], padding_mask[:, 1:]


def heldout_blocks(settings, blocks):
    """The first ``eval_batches`` batches of the held-out blocks, in order (fixed)."""
    count = min(len(blocks), settings.eval_batches * settings.batch_size)
    return blocks[:count - count % settings.batch_size] if count >= settings.batch_size \
        else blocks[:count]
