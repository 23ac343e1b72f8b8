"""Language-model training data: a corpus as contiguous blocks of tokens, in a seeded stream.

A left-to-right language model learns from running text, not from sentence pairs: GPT-1
(Radford et al. 2018, §4.1) trains on "contiguous sequences of 512 tokens" of BooksCorpus so that
the model sees long-range context. :func:`lm_blocks` lays a tokenized corpus end to end (documents
in order, optionally with a separator token between them) and cuts it into blocks of ``T + 1``
tokens that overlap by one, so every token but the first is a target exactly once.
:func:`lm_dataset` serves them as ``(features, labels, sample_weight)`` batches — the first ``T``
tokens in, the last ``T`` out — in an order that is a pure function of ``(seed, epoch)``, so a run
resumed at step ``s`` reads exactly the batches an unbroken run would (``skip_batches``).

Shapes: ``N`` blocks, ``T`` tokens per training row, ``B`` batch.

Example:
>>> import numpy as np
>>> blocks = lm_blocks(np.arange(10), block_length=4)        # 10 tokens -> 2 blocks of 5
>>> blocks.tolist()
[[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]]
>>> x, y, w = next(iter(lm_dataset(blocks, batch_size=2, seed=0, shuffle=False)))
>>> x["token_ids"].numpy().tolist()[0], y.numpy().tolist()[0]
([0, 1, 2, 3], [1, 2, 3, 4])
"""

import numpy as np
import tensorflow as tf

from keras_bert_lab.errors import DataError


def lm_blocks(token_ids, block_length, document_splits=None, separator_id=None):
    """Cut a token stream into ``(N, T + 1)`` int32 blocks overlapping by one token.

    Args:
        token_ids: the corpus' tokens end to end (e.g. ``TokenizedCorpus.token_ids``).
        block_length: ``T``, the tokens a row feeds the model.
        document_splits: token offsets where documents start (with the end), to put
            ``separator_id`` between documents; ignored without a separator.
        separator_id: a token between documents (GPT-2's ``<|endoftext|>`` habit), or ``None``.

    The tail that does not fill a block is dropped.
    """
    tokens = np.asarray(token_ids, np.int32)
    if separator_id is not None and document_splits is not None:
        parts = np.split(tokens, np.asarray(document_splits)[1:-1])
        tokens = np.concatenate([np.append(p, np.int32(separator_id)) for p in parts])
    count = (len(tokens) - 1) // block_length
    if count < 1:
        raise DataError(f"{len(tokens)} tokens do not fill one block of {block_length} + 1; use a "
                        "larger corpus or a shorter --sequence-length.")
    starts = np.arange(count) * block_length
    return tokens[starts[:, None] + np.arange(block_length + 1)[None, :]]


def block_order(num_blocks, seed, epochs):
    """Block indices for ``epochs`` passes: a fresh permutation per epoch from ``(seed, epoch)``."""
    return np.concatenate([np.random.default_rng([seed, epoch]).permutation(num_blocks)
                           for epoch in range(epochs)]).astype(np.int64)


def lm_dataset(blocks, batch_size, seed=0, shuffle=True, epochs=1, skip_batches=0):
    """``(features, labels, sample_weight)`` batches of ``blocks`` for next-token training.

    ``features``: ``token_ids`` and ``padding_mask`` (B, T); ``labels`` the next tokens (B, T);
    ``sample_weight`` ones. Batches are full (a last partial one is dropped); with ``shuffle``
    the order of each epoch is :func:`block_order`'s, without it the blocks' own order.
    ``skip_batches`` starts the stream that many batches in (resuming), at no cost.
    """
    blocks = np.asarray(blocks, np.int32)
    if len(blocks) < batch_size:
        raise DataError(f"{len(blocks)} blocks are fewer than one batch of {batch_size}; lower "
                        "--batch-size or --sequence-length, or use more text.")
    order = block_order(len(blocks), seed, epochs) if shuffle else \
        np.tile(np.arange(len(blocks), dtype=np.int64), epochs)
    table = tf.constant(blocks)
    dataset = tf.data.Dataset.from_tensor_slices(order).skip(skip_batches * batch_size)

    def to_batch(indices):
        rows = tf.gather(table, indices)                      # (B, T + 1)
        inputs = rows[:, :-1]
        return ({"token_ids": inputs, "padding_mask": tf.ones_like(inputs)}, rows[:, 1:],
                tf.ones(tf.shape(inputs), tf.float32))

    return dataset.batch(batch_size, drop_remainder=True).map(to_batch).prefetch(2)
