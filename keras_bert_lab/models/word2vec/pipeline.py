"""word2vec's training examples as a ``tf.data`` pipeline: subsampling, dynamic windows, noise.

The encoded corpus (one flat id array and sentence boundaries, from
:meth:`~keras_bert_lab.preprocessing.words.WordVocabulary.encode`) is cut into chunks of whole
sentences. For each chunk, every epoch, with stateless random numbers seeded by
``(seed, epoch, chunk)`` — so a run is reproducible and any epoch can be regenerated:

1. **subsampling**: each word is kept with its :func:`keep_probabilities` probability, and the
   discarded ones are removed *before* windows are drawn (so windows reach further, as in
   word2vec.c and gensim);
2. **dynamic window**: each kept word draws its window ``b`` uniformly from ``1..window``; the
   words within ``b`` positions on either side, in the same sentence, are its contexts — a
   context at distance ``d`` is used with probability ``(window − d + 1) / window``;
3. skip-gram yields one ``(center, context)`` example per pair; CBOW one example per center with
   its ``2·window`` context ids (``-1`` where the window is narrower or the sentence ends);
4. examples are shuffled within the chunk and cut into batches of ``batch_size``;
5. **noise words** are drawn from the unigram^0.75 distribution (inverse CDF on uniform numbers):
   ``negatives`` per example, or one pool of ``shared_pool`` per batch (see
   :class:`~keras_bert_lab.models.word2vec.model.Word2Vec`).

Elements are ``(inputs, noise_weights)`` ready for ``Word2Vec.fit`` (the weight of every noise
score, one column: it is the same for all). The expected number of
examples per epoch (:func:`expected_examples`) sizes ``steps_per_epoch`` and the learning-rate
decay.

Example:
>>> import numpy as np
>>> ids, starts = np.arange(20, dtype="int32") % 7, np.array([0, 12, 20])
>>> data = skipgram_dataset(ids, starts, keep=np.ones(7), noise=np.full(7, 1 / 7), window=2,
...                         negatives=3, batch_size=4)
>>> inputs, weights = next(iter(data))
>>> sorted(inputs), tuple(inputs["negatives"].shape), tuple(weights.shape)
(['center', 'context', 'negatives'], (4, 3), (4, 1))
"""

import numpy as np
import tensorflow as tf

from keras_bert_lab.errors import ConfigError


def chunk_bounds(starts, chunk_words=65536):
    """Sentence-aligned ``(begin, end)`` word offsets of chunks of about ``chunk_words`` words."""
    starts = np.asarray(starts, "int64")
    bounds, begin = [], 0
    for end in starts[1:]:
        if end - begin >= chunk_words:
            bounds.append((begin, int(end)))
            begin = int(end)
    if starts[-1] > begin:
        bounds.append((begin, int(starts[-1])))
    return np.asarray(bounds, "int64").reshape(-1, 2)


def window_pairs(sentence_ids, reduced_windows, window):
    """Positions ``(center, context)`` of every pair within each center's reduced window.

    ``sentence_ids[i]`` is the sentence of position ``i``; ``reduced_windows[i]`` its window
    ``b`` (``1..window``). Works on tensors; pairs come ordered by offset, then position.
    """
    n = tf.shape(sentence_ids)[0]
    positions = tf.range(n)
    centers, contexts = [], []
    for offset in [o for d in range(1, window + 1) for o in (-d, d)]:
        other = positions + offset
        inside = (other >= 0) & (other < n)
        safe = tf.clip_by_value(other, 0, tf.maximum(n - 1, 0))
        ok = (inside & (tf.gather(sentence_ids, safe) == sentence_ids)
              & (reduced_windows >= abs(offset)))
        centers.append(tf.boolean_mask(positions, ok))
        contexts.append(tf.boolean_mask(other, ok))
    return tf.concat(centers, 0), tf.concat(contexts, 0)


def window_contexts(sentence_ids, reduced_windows, window):
    """CBOW: for each position, the ``2·window`` context positions (``-1`` where none)."""
    n = tf.shape(sentence_ids)[0]
    positions = tf.range(n)
    columns = []
    for offset in [o for d in range(window, 0, -1) for o in (-d,)] + list(range(1, window + 1)):
        other = positions + offset
        inside = (other >= 0) & (other < n)
        safe = tf.clip_by_value(other, 0, tf.maximum(n - 1, 0))
        ok = (inside & (tf.gather(sentence_ids, safe) == sentence_ids)
              & (reduced_windows >= abs(offset)))
        columns.append(tf.where(ok, other, -1))
    return tf.stack(columns, axis=1)


def expected_examples(ids, starts, keep, window, architecture="skipgram"):
    """The expected number of training examples per epoch (for ``steps_per_epoch``).

    Counts each sentence's expected kept words ``m`` and, for skip-gram, approximates the pairs
    by the kept words' expected number of neighbours within a uniform window (exact when no word
    is discarded).
    """
    kept = np.asarray(keep, "float64")[np.asarray(ids)]
    per_sentence = np.add.reduceat(kept, np.asarray(starts[:-1])) if len(ids) else np.zeros(0)
    if architecture == "cbow":
        return float(per_sentence.sum())
    total = 0.0
    for d in range(1, window + 1):   # pairs at distance d: 2·(m − d)⁺ · P(b ≥ d)
        total += 2 * np.maximum(per_sentence - d, 0).sum() * (window - d + 1) / window
    return total


def skipgram_dataset(ids, starts, *, keep, noise, window=5, negatives=5, batch_size=1024,
                     architecture="skipgram", shared_pool=0, seed=0, chunk_words=65536,
                     repeat=True, first_epoch=0, batches_per_element=1):
    """The ``tf.data.Dataset`` of word2vec batches (see the module docstring).

    Args:
        ids, starts: the encoded corpus. keep: per-word keep probabilities (all ones: no
        subsampling). noise: per-word noise probabilities. window: the widest window.
        negatives: noise words per example. batch_size: examples per batch (repeated epochs run on
        without a break; with ``repeat=False`` the last, partial batch is dropped). architecture: ``"skipgram"`` or ``"cbow"``.
        shared_pool: 0 for per-example noise words, else one pool of that many per batch.
        seed: the run's seed. repeat: one epoch after another (``first_epoch`` onwards), for
        ``fit(steps_per_epoch=…)``; ``False`` for exactly one epoch. batches_per_element: that
        many successive batches laid end to end in each element (each with its own noise), for
        ``Word2Vec.compile(updates_per_batch=…)``: the same batches as with 1, fewer elements.
    """
    if architecture not in ("skipgram", "cbow"):
        raise ConfigError(f"architecture={architecture!r}; choose 'skipgram' or 'cbow'.")
    if shared_pool and shared_pool > batch_size:
        raise ConfigError(f"shared_pool={shared_pool} cannot exceed batch_size={batch_size}.")
    if min(window, negatives, batch_size, batches_per_element) < 1:
        raise ConfigError("window, negatives, batch_size and batches_per_element must each be "
                          "at least 1.")
    bounds = chunk_bounds(starts, chunk_words)
    starts = np.asarray(starts, "int64")
    sentence_of = np.repeat(np.arange(len(starts) - 1, dtype="int32"), np.diff(starts))
    all_ids = tf.constant(np.asarray(ids, "int32"))
    all_sentences = tf.constant(sentence_of)
    keep_table = tf.constant(np.asarray(keep, "float32"))
    cdf = np.cumsum(np.asarray(noise, "float64"))
    cdf_table = tf.constant((cdf / cdf[-1]).astype("float32"))
    vocabulary_size = len(cdf)
    bounds_table = tf.constant(bounds)
    cbow = architecture == "cbow"

    def examples(epoch, chunk):
        begin, end = bounds_table[chunk, 0], bounds_table[chunk, 1]
        words, sentences = all_ids[begin:end], all_sentences[begin:end]
        seeds = tf.stack([tf.cast(seed, tf.int64) * 1_000_003 + epoch, chunk])
        uniform = tf.random.stateless_uniform(tf.shape(words), seed=seeds)
        kept = uniform < tf.gather(keep_table, words)
        words, sentences = tf.boolean_mask(words, kept), tf.boolean_mask(sentences, kept)
        reduced = tf.random.stateless_uniform(tf.shape(words), seed=seeds + [0, 7919],
                                              minval=1, maxval=window + 1, dtype=tf.int32)
        if cbow:
            context = window_contexts(sentences, reduced, window)
            context = tf.where(context >= 0, tf.gather(words, tf.maximum(context, 0)), -1)
            has_context = tf.reduce_any(context >= 0, axis=1)
            center, context = tf.boolean_mask(words, has_context), tf.boolean_mask(context,
                                                                                   has_context)
        else:
            centers, contexts = window_pairs(sentences, reduced, window)
            center, context = tf.gather(words, centers), tf.gather(words, contexts)[:, None]
        order = tf.random.experimental.stateless_shuffle(tf.range(tf.shape(center)[0]),
                                                         seed=seeds + [0, 104729])
        return tf.gather(center, order), tf.gather(context, order)

    def noise_of(step):
        seeds = tf.stack([tf.cast(seed, tf.int64) * 1_000_003 + 1, step])
        columns = 1 if shared_pool else negatives
        rows = shared_pool if shared_pool else batch_size
        uniform = tf.random.stateless_uniform((rows, columns), seed=seeds)
        noise_ids = tf.cast(tf.searchsorted(cdf_table, tf.reshape(uniform, [-1]),
                                            side="right"), tf.int32)
        noise_ids = tf.reshape(tf.minimum(noise_ids, vocabulary_size - 1), (rows, columns))
        if shared_pool:
            noise_ids = tf.pad(noise_ids, [[0, batch_size - shared_pool], [0, 0]])
        return noise_ids

    def add_noise(element, batch):
        center, context = batch
        first = element * batches_per_element
        noise_ids = tf.concat([noise_of(first + i) for i in range(batches_per_element)], 0)
        weights = tf.fill((batch_size * batches_per_element, 1),
                          negatives / (shared_pool or negatives))
        return {"center": center, "context": context, "negatives": noise_ids}, weights

    def epoch_of(epoch):
        order = tf.random.experimental.stateless_shuffle(
            tf.range(len(bounds), dtype=tf.int64), seed=tf.stack([tf.cast(seed, tf.int64),
                                                                   epoch]))
        return tf.data.Dataset.from_tensor_slices(order).map(
            lambda chunk: examples(epoch, chunk), num_parallel_calls=2,
            deterministic=True)

    epochs = tf.data.Dataset.range(first_epoch, first_epoch + (2 ** 62 if repeat else 1))
    data = epochs.flat_map(epoch_of).rebatch(batch_size * batches_per_element,
                                             drop_remainder=True)
    data = data.enumerate().map(add_noise, num_parallel_calls=tf.data.AUTOTUNE)
    # Without tf.data's autotuning: with it, deleting the iterator at the end of `fit`
    # sometimes stalled for ~9 s (1 run in 3 or 4 on WikiText-2), longer than the training.
    options = tf.data.Options()
    options.autotune.enabled = False
    return data.prefetch(tf.data.AUTOTUNE).with_options(options)
