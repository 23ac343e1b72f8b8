"""Step 2 of the pretraining pipeline: one epoch of next-sentence pairs (or single segments).

Follows google-research/bert's ``create_instances_from_document`` and ``truncate_seq_pair``
(Devlin et al. 2019, §3.1 and appendix A.2); see :mod:`keras_bert_lab.pipelines.pretraining` for
the rules and the three deliberate differences. An instance is four offsets into the tokenized
corpus (A and B are contiguous runs of sentences), so the stream can pack whole batches in-graph.
"""

import random

import numpy as np

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.pipelines.pretraining.corpus import TokenizedCorpus  # noqa: F401 (examples)
from keras_bert_lab.preprocessing.packer import longest_first

INSTANCE_FIELDS = ("a_start", "a_end", "b_start", "b_end", "next_sentence_label",
                   "target_length", "document", "boundary")


def _rngs(seed, epoch):
    sequence = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(epoch)])
    python_seed = int(sequence.generate_state(2, np.uint64)[1])
    return random.Random(python_seed), np.random.default_rng(sequence)


def create_instances(corpus, *, sequence_length=128, short_seq_prob=0.1, next_sentence=True,
                     seed=0, epoch=0, short_seq_scope="instance", balance_next_sentence=True,
                     shuffle=True, pack=False):
    """One epoch of pretraining instances, as offsets into ``corpus.token_ids``.

    Follows google-research/bert's ``create_instances_from_document`` (see the module doc; the two
    deliberate differences are ``short_seq_scope`` and drawing NotNext among other documents only)
    and its ``truncate_seq_pair``. The randomness is a function of ``(seed, epoch)``.

    Args:
        corpus: a :class:`TokenizedCorpus`.
        sequence_length: the packed length; segments get ``sequence_length - 3`` tokens together
            (``- 2`` in single-segment mode).
        short_seq_prob: probability of a shorter random target length.
        next_sentence: build A/B pairs with NSP labels; ``False`` = single segments.
        seed, epoch: the random draw.
        short_seq_scope: ``"instance"`` (default) or ``"document"`` (the original's behaviour).
        balance_next_sentence: keep the NSP labels at 50/50 (see the module doc); ``False`` =
            the original's fair coin on the chunks that have a choice.
        shuffle: shuffle the instances (as the original does).
        pack: single segments only: full blocks of text regardless of sentence ends, a block
            that reaches a document's end continuing as segment B into the next document
            (:func:`packed_rows`); ``short_seq_prob`` does not apply.

    Returns:
        A dict of NumPy arrays, one entry per instance: ``a_start``, ``a_end``, ``b_start``,
        ``b_end`` (token offsets, after truncation; B empty in single-segment mode),
        ``next_sentence_label`` (0 IsNext, 1 NotNext), ``target_length``, ``document`` (of A) and
        ``boundary`` (where A's chunk ended before truncation: for IsNext, where B's began).

    Raises:
        DataError: fewer than two documents in next-sentence mode.

    Example:

    >>> corpus = TokenizedCorpus.from_token_lists([[[1, 2], [3, 4], [5]], [[6, 7], [8]]])
    >>> inst = create_instances(corpus, sequence_length=8, seed=1)
    >>> sorted(inst) == sorted(INSTANCE_FIELDS)
    True
    >>> all(1 <= a + b <= 5 for a, b in zip(inst["a_end"] - inst["a_start"],
    ...                                      inst["b_end"] - inst["b_start"]))
    True
    """
    if short_seq_scope not in ("instance", "document"):
        raise ConfigError(f"short_seq_scope={short_seq_scope!r}; use 'instance' or 'document'.")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ConfigError(f"short_seq_prob={short_seq_prob} must be in [0, 1].")
    num_documents = corpus.num_documents
    if next_sentence and num_documents < 2:
        raise DataError(
            f"Next-sentence pairs need at least two documents (NotNext segments come from another "
            f"document), but the corpus has {num_documents}. Check that documents are separated "
            "(blank lines, WikiText titles, one JSON/CSV record each), add documents, or use "
            "next_sentence=False for single-segment examples.")
    if num_documents < 1:
        raise DataError("The corpus has no document with any token.")
    max_tokens = sequence_length - (3 if next_sentence else 2)
    if max_tokens < (2 if next_sentence else 1):
        raise ConfigError(f"sequence_length={sequence_length} leaves no room for the segments.")
    rnd, gen = _rngs(seed, epoch)
    if pack:
        if next_sentence:
            raise ConfigError("pack=True builds single segments (MLM only); set "
                              "next_sentence=False.")
        order = gen.permutation(num_documents)        # a new order and a new cut each epoch
        begin, end = corpus.sentence_splits[corpus.document_splits[order[0]:order[0] + 2]]
        rows = packed_rows(corpus, sequence_length, order,
                           rnd.randrange(min(max_tokens, int(end - begin))))
    else:
        rows = _sentence_rows(corpus, next_sentence, max_tokens, short_seq_prob, short_seq_scope,
                              balance_next_sentence, num_documents, rnd)
    table = np.array(rows, np.int64).reshape(-1, len(INSTANCE_FIELDS))
    out = {name: table[:, k] for k, name in enumerate(INSTANCE_FIELDS)}
    if not pack:
        _truncate(out, max_tokens, next_sentence, gen)
    if shuffle:
        order = gen.permutation(len(table))
        out = {name: value[order] for name, value in out.items()}
    out = {name: np.ascontiguousarray(value) for name, value in out.items()}
    for name in ("next_sentence_label", "target_length", "document"):
        out[name] = out[name].astype(np.int32)
    return out


def packed_rows(corpus, sequence_length, order, offset=0):
    """Instance rows of full blocks of text (MosaicBERT's and Cramming's packing, RoBERTa's
    FULL-SENTENCES): the documents in ``order`` read as one stream from ``offset`` tokens into
    the first, cut every ``sequence_length - 2`` tokens whatever the sentence ends. A block that meets a
    document's end holds that end as segment A and goes on into the next document as segment B
    (``[CLS] A [SEP] B [SEP]``: the separator and the segment id mark the change of document, as
    in RoBERTa; attention is not cut there). A document shorter than what is left of a block
    ends the block early.

    >>> corpus = TokenizedCorpus.from_token_lists([[[1, 2, 3, 4, 5]], [[6, 7, 8]], [[9]]])
    >>> rows = packed_rows(corpus, 6, order=[0, 1, 2])       # 4 tokens alone, 3 with a B
    >>> [(a0, a1, b0, b1) for a0, a1, b0, b1, *_ in rows]   # offsets of A and B in the stream
    [(0, 4, 4, 4), (4, 5, 5, 7), (7, 8, 8, 9)]
    """
    tokens = corpus.sentence_splits[corpus.document_splits]          # document starts/ends
    full, pair = sequence_length - 2, sequence_length - 3              # A alone; A + B
    rows, d = [], 0
    position = int(tokens[order[0]]) + int(offset)
    while d < len(order):
        doc = order[d]
        end = int(tokens[doc + 1])
        left = end - position
        if left >= pair or d + 1 == len(order):   # a full block (or the stream's last) as A
            a_end = min(end, position + full)
            rows.append((position, a_end, a_end, a_end, 0, full, doc, a_end))
            position = a_end
            if position == end:
                d += 1
                position = int(tokens[order[d]]) if d < len(order) else position
            continue
        nxt = order[d + 1]
        b_start = int(tokens[nxt])
        b_end = min(int(tokens[nxt + 1]), b_start + pair - left)
        rows.append((position, end, b_start, b_end, 0, full, doc, end))
        d += 1
        position = b_end
        if position == int(tokens[nxt + 1]):     # the next document ended inside the block
            d += 1
            position = int(tokens[order[d]]) if d < len(order) else position
    return rows


def _sentence_rows(corpus, next_sentence, max_tokens, short_seq_prob, short_seq_scope,
                   balance_next_sentence, num_documents, rnd):
    """Instance rows from whole sentences: Google's pairs, or single segments (DOC-SENTENCES)."""
    lengths = np.diff(corpus.sentence_splits).tolist()
    starts = corpus.sentence_splits.tolist()
    docs = corpus.document_splits.tolist()

    def draw_target():
        if rnd.random() < short_seq_prob:
            return rnd.randint(2, max_tokens) if max_tokens >= 2 else max_tokens
        return max_tokens

    rows = []
    append = rows.append
    forced = free = 0  # chunks of one sentence (always NotNext) and chunks with a free choice
    for d in range(num_documents):
        first, end = docs[d], docs[d + 1]
        target = draw_target()
        if not next_sentence:
            # Whole sentences while they fit; the one that does not starts the next sequence.
            chunk, chunk_length = first, 0
            for i in range(first, end):
                if chunk_length and chunk_length + lengths[i] > target:
                    append((starts[chunk], starts[i], 0, 0, 0, target, d, starts[i]))
                    chunk, chunk_length = i, 0
                    if short_seq_scope == "instance":
                        target = draw_target()
                chunk_length += lengths[i]
            append((starts[chunk], starts[end], 0, 0, 0, target, d, starts[end]))
            continue
        chunk, chunk_length, i = first, 0, first
        while i < end:
            chunk_length += lengths[i]
            if i == end - 1 or chunk_length >= target:
                n = i - chunk + 1
                a_end = chunk + (rnd.randint(1, n - 1) if n >= 2 else 1)
                if n == 1:
                    forced += 1
                    random_next = True
                else:
                    free += 1
                    is_next = 0.5 * (1 + forced / free) if balance_next_sentence else 0.5
                    random_next = rnd.random() >= is_next
                if random_next:
                    # NotNext: B from another document, long enough to reach the target.
                    other = rnd.randrange(num_documents - 1)
                    other += other >= d
                    o_first, o_end = docs[other], docs[other + 1]
                    b_first = j = rnd.randint(o_first, o_end - 1)
                    wanted = target - (starts[a_end] - starts[chunk])
                    b_length = 0
                    while j < o_end:
                        b_length += lengths[j]
                        j += 1
                        if b_length >= wanted:
                            break
                    append((starts[chunk], starts[a_end], starts[b_first], starts[j], 1,
                            target, d, starts[a_end]))
                    i = a_end - 1  # the chunk's unused sentences are read again
                else:
                    append((starts[chunk], starts[a_end], starts[a_end], starts[i + 1], 0,
                            target, d, starts[a_end]))
                chunk, chunk_length = i + 1, 0
                if short_seq_scope == "instance":
                    target = draw_target()
            i += 1
    return rows


def _truncate(instances, budget, next_sentence, gen):
    """Trim in place; each dropped token comes off the front or the back with probability 1/2.

    The number taken from the front of a segment is therefore Binomial(dropped, 1/2) — the same
    distribution as the original's token-by-token coin flips, drawn at once.
    """
    la = instances["a_end"] - instances["a_start"]
    if not next_sentence:  # single segments: only a sentence longer than the budget, at its end
        instances["a_end"] = instances["a_start"] + np.minimum(la, budget)
        return
    lb = instances["b_end"] - instances["b_start"]
    ta, tb = longest_first(la, lb, budget, odd_token_to_first=True)  # Google's rule
    for name, drop in (("a", la - ta), ("b", lb - tb)):
        front = gen.binomial(drop, 0.5)
        instances[f"{name}_start"] += front
        instances[f"{name}_end"] -= drop - front
