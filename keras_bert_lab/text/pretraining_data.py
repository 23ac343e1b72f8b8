"""BERT pretraining data: documents → next-sentence pairs → packed, dynamically masked batches.

This follows google-research/bert's ``create_pretraining_data.py`` (Devlin et al. 2019, §3.1 and
appendix A.2) and turns it into an endless ``tf.data`` stream:

1. **Tokenize** every sentence of every document once (:class:`TokenizedCorpus`: one flat array of
   token ids, plus where each sentence and document starts).
2. **Pair** (:func:`create_instances`, once per epoch, with a new random draw each epoch like the
   original's ``dupe_factor`` copies). Walking through each document, sentences are gathered into a
   chunk until it reaches a *target length* of ``max_seq_length - 3`` tokens (room for ``[CLS]``
   and two ``[SEP]``). With probability ``short_seq_prob`` (0.1) the target is a random length in
   ``[2, max_seq_length - 3]`` instead, so the model also sees the short sequences it will meet in
   fine-tuning. Segment A is the chunk's first 1 … n-1 sentences (a random cut). With
   probability 0.5 segment B is the rest of the chunk — the true continuation (label 0,
   *IsNext*); otherwise B is a run of sentences from a random *other* document (label 1,
   *NotNext*), and the chunk's unused sentences go back to be read again, so no text is wasted.
   Segments are "sentences" in the linguistic sense only loosely: A and B are spans of contiguous
   text, which is why BERT can learn from long context rather than from sentence pairs alone.
   Pairs that are too long lose tokens from the longer segment, one at a time, each time from its
   front or its back at random (the original's ``truncate_seq_pair``: trimming only the end would
   make the model expect sentence ends to be missing). Instances are shuffled.
3. **Pack** ``[CLS] A [SEP] B [SEP]`` with :class:`~keras_bert_lab.text.packing.BertPacker`.
4. **Mask** dynamically with :class:`~keras_bert_lab.text.masking.MaskedLMMasker`: 15 % of the
   tokens, 80/10/10, optionally whole words; new masks every time a sequence is seen.
5. **Batch** as ``(features, labels, sample_weight)`` for
   :class:`~keras_bert_lab.tasks.pretraining.BertPretrainer` ``.fit`` on any Keras backend.

Because segments are contiguous runs of sentences and truncation only cuts at their ends, every
instance is four offsets into the flat token array; steps 3–5 run in-graph on whole batches.

Three choices differ on purpose from the original script; two can be switched back:

* the short target length is drawn for every instance (``short_seq_scope="instance"``); the
  original draws it once per document (``"document"``), so a document that drew a short target
  gives *all* its instances short — about 10 % of *documents*, but a much larger share of the
  instances (short ones are many);
* the NotNext document is drawn among the *other* documents; the original draws up to ten times and
  can, with probability ``(1/D)^10``, keep the same document;
* a chunk of a single sentence cannot be cut into A and B, so the original always makes it NotNext
  — which skews the labels: 52 % NotNext on WikiText-2 and 54 % on the news corpus at 128 tokens,
  56 % and 57 % at 64 (measured here). With ``balance_next_sentence=True`` (default) the chunks that
  do have a choice are IsNext with probability ``0.5 × (1 + forced / free)`` (running counts of
  forced and free chunks in the epoch), which brings the labels back to 50/50 as the paper states;
  ``False`` keeps the original's fair coin.

A single-segment mode (``next_sentence=False``) packs ``[CLS] sentences… [SEP]`` with whole
sentences while they fit, within a document (RoBERTa's DOC-SENTENCES; Liu et al. 2019, §4.2): the
sentence that would overflow starts the next sequence, and only a single sentence longer than
``max_seq_length - 2`` is cut (at its end). The NSP loss gets a weight of 0.

For corpora too large to tokenize in memory — or to train from the same fixed files many times —
:func:`write_tfrecords` writes instances to sharded TFRecord files (google-research/bert's feature
names, so its own ``run_pretraining.py`` reads them too), with or without ``dupe_factor`` static
masks, and :func:`read_tfrecords` streams them back through the same masking stage.

Example:

>>> from keras_bert_lab.datasets import locate
>>> from keras_bert_lab.text.tokenizer import WordPieceTokenizer
>>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
>>> ds = pretraining_dataset("wikitext2:valid", tokenizer, batch_size=8, max_seq_length=64)
>>> features, labels, weights = next(iter(ds))
>>> sorted(features), features["token_ids"].shape, labels["mlm"].shape
(['mask_positions', 'padding_mask', 'segment_ids', 'token_ids'], TensorShape([8, 64]),
 TensorShape([8, 20]))
"""

import dataclasses
import glob
import logging
import os
import random

import numpy as np
import tensorflow as tf

from keras_bert_lab.errors import DataError
from keras_bert_lab.text import corpora
from keras_bert_lab.text.masking import MaskedLMMasker
from keras_bert_lab.text.packing import BertPacker

logger = logging.getLogger(__name__)

INSTANCE_FIELDS = ("a_start", "a_end", "b_start", "b_end", "next_sentence_label",
                   "target_length", "document", "boundary")
_STREAM_FIELDS = ("a_start", "a_end", "b_start", "b_end", "next_sentence_label")
FEATURE_NAMES = ("token_ids", "segment_ids", "padding_mask", "mask_positions")
_LARGE_CORPUS_TOKENS = 200_000_000
_CHUNK_ROWS = 512  # rows packed and masked at once in the stream


# ---- 1. tokenized corpus --------------------------------------------------------------------
@dataclasses.dataclass
class TokenizedCorpus:
    """Every sentence of a corpus as token ids, laid end to end.

    ``token_ids`` (int32 ``[N]``) holds all tokens; sentence ``s`` is
    ``token_ids[sentence_splits[s]:sentence_splits[s + 1]]`` and document ``d`` is sentences
    ``document_splits[d]`` … ``document_splits[d + 1] - 1`` (row-splits, as in
    ``tf.RaggedTensor``). Sentences without tokens and documents without sentences are left out.

    Example:

    >>> corpus = TokenizedCorpus.from_token_lists([[[5, 6], [7]], [[8, 9, 10]]])
    >>> corpus.num_documents, corpus.num_sentences, corpus.token_ids.tolist()
    (2, 3, [5, 6, 7, 8, 9, 10])
    >>> corpus.sentence_splits.tolist(), corpus.document_splits.tolist()
    ([0, 2, 3, 6], [0, 2, 3])
    """

    token_ids: np.ndarray
    sentence_splits: np.ndarray
    document_splits: np.ndarray
    dropped_sentences: int = 0
    dropped_documents: int = 0

    @property
    def num_documents(self):
        return len(self.document_splits) - 1

    @property
    def num_sentences(self):
        return len(self.sentence_splits) - 1

    @property
    def num_tokens(self):
        return len(self.token_ids)

    def document_of(self, token_offsets):
        """The document holding each token offset (NumPy array in, array out)."""
        sentence = np.searchsorted(self.sentence_splits, token_offsets, side="right") - 1
        return np.searchsorted(self.document_splits, sentence, side="right") - 1

    @classmethod
    def from_token_lists(cls, documents):
        """From ``list`` (documents) of ``list`` (sentences) of token-id lists."""
        sentences = [s for d in documents for s in d]
        return cls._build(np.fromiter((t for s in sentences for t in s), np.int32),
                          np.fromiter((len(s) for s in sentences), np.int64, len(sentences)),
                          np.fromiter((len(d) for d in documents), np.int64, len(documents)))

    @classmethod
    def from_documents(cls, documents, tokenizer, batch_size=32768):
        """Tokenize documents (``list[list[str]]`` or a :class:`~.corpora.Corpus`) in batches."""
        documents = list(documents)
        sentences = [s for d in documents for s in d]
        per_document = np.fromiter((len(d) for d in documents), np.int64, len(documents))
        values, lengths = [], []
        for i in range(0, len(sentences), batch_size):
            batch = [s.encode("utf-8", "replace") for s in sentences[i:i + batch_size]]
            ids = tokenizer.tokenize(tf.constant(batch, tf.string))
            values.append(ids.flat_values.numpy().astype(np.int32, copy=False))
            lengths.append(ids.row_lengths().numpy())
        token_ids = np.concatenate(values) if values else np.zeros([0], np.int32)
        lengths = np.concatenate(lengths) if lengths else np.zeros([0], np.int64)
        return cls._build(token_ids, lengths, per_document)

    @classmethod
    def _build(cls, token_ids, sentence_lengths, sentences_per_document):
        keep = sentence_lengths > 0
        document = np.repeat(np.arange(len(sentences_per_document)), sentences_per_document)
        kept_per_document = np.bincount(document[keep], minlength=len(sentences_per_document))
        sentence_splits = np.concatenate([[0], np.cumsum(sentence_lengths[keep])]).astype(np.int64)
        kept_documents = kept_per_document[kept_per_document > 0]
        document_splits = np.concatenate([[0], np.cumsum(kept_documents)]).astype(np.int64)
        corpus = cls(np.ascontiguousarray(token_ids, np.int32), sentence_splits, document_splits,
                     dropped_sentences=int((~keep).sum()),
                     dropped_documents=int((kept_per_document == 0).sum()))
        if corpus.dropped_sentences or corpus.dropped_documents:
            logger.info("Tokenization left %d sentences without tokens (dropped) and %d documents "
                        "without sentences (dropped).", corpus.dropped_sentences,
                        corpus.dropped_documents)
        return corpus


def tokenize_corpus(source, tokenizer, **read_kwargs):
    """A :class:`TokenizedCorpus` from anything :func:`~.corpora.load_corpus` reads (a name such
    as ``"wikitext2"``, paths, a :class:`~.corpora.Corpus`, ``list[list[str]]``), or as is."""
    if isinstance(source, TokenizedCorpus):
        return source
    corpus = corpora.load_corpus(source, **read_kwargs)
    tokenized = TokenizedCorpus.from_documents(corpus.documents, tokenizer)
    logger.info("Tokenized %d documents: %d sentences, %d tokens.", tokenized.num_documents,
                tokenized.num_sentences, tokenized.num_tokens)
    if tokenized.num_tokens > _LARGE_CORPUS_TOKENS:
        logger.warning("%d tokens is a lot to hold in memory and in a tf.data graph; consider "
                       "write_tfrecords() + read_tfrecords().", tokenized.num_tokens)
    return tokenized


# ---- 2. instances ---------------------------------------------------------------------------
def _rngs(seed, epoch):
    sequence = np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(epoch)])
    python_seed = int(sequence.generate_state(2, np.uint64)[1])
    return random.Random(python_seed), np.random.default_rng(sequence)


def create_instances(corpus, *, max_seq_length=128, short_seq_prob=0.1, next_sentence=True,
                     seed=0, epoch=0, short_seq_scope="instance", balance_next_sentence=True,
                     shuffle=True):
    """One epoch of pretraining instances, as offsets into ``corpus.token_ids``.

    Follows google-research/bert's ``create_instances_from_document`` (see the module doc; the two
    deliberate differences are ``short_seq_scope`` and drawing NotNext among other documents only)
    and its ``truncate_seq_pair``. The randomness is a function of ``(seed, epoch)``.

    Args:
        corpus: a :class:`TokenizedCorpus`.
        max_seq_length: the packed length; segments get ``max_seq_length - 3`` tokens together
            (``- 2`` in single-segment mode).
        short_seq_prob: probability of a shorter random target length.
        next_sentence: build A/B pairs with NSP labels; ``False`` = single segments.
        seed, epoch: the random draw.
        short_seq_scope: ``"instance"`` (default) or ``"document"`` (the original's behaviour).
        balance_next_sentence: keep the NSP labels at 50/50 (see the module doc); ``False`` =
            the original's fair coin on the chunks that have a choice.
        shuffle: shuffle the instances (as the original does).

    Returns:
        A dict of NumPy arrays, one entry per instance: ``a_start``, ``a_end``, ``b_start``,
        ``b_end`` (token offsets, after truncation; B empty in single-segment mode),
        ``next_sentence_label`` (0 IsNext, 1 NotNext), ``target_length``, ``document`` (of A) and
        ``boundary`` (where A's chunk ended before truncation: for IsNext, where B's began).

    Raises:
        DataError: fewer than two documents in next-sentence mode.

    Example:

    >>> corpus = TokenizedCorpus.from_token_lists([[[1, 2], [3, 4], [5]], [[6, 7], [8]]])
    >>> inst = create_instances(corpus, max_seq_length=8, seed=1)
    >>> sorted(inst) == sorted(INSTANCE_FIELDS)
    True
    >>> all(1 <= a + b <= 5 for a, b in zip(inst["a_end"] - inst["a_start"],
    ...                                      inst["b_end"] - inst["b_start"]))
    True
    """
    if short_seq_scope not in ("instance", "document"):
        raise ValueError(f"short_seq_scope={short_seq_scope!r}; use 'instance' or 'document'.")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob={short_seq_prob} must be in [0, 1].")
    num_documents = corpus.num_documents
    if next_sentence and num_documents < 2:
        raise DataError(
            f"Next-sentence pairs need at least two documents (NotNext segments come from another "
            f"document), but the corpus has {num_documents}. Check that documents are separated "
            "(blank lines, WikiText titles, one JSON/CSV record each), add documents, or use "
            "next_sentence=False for single-segment examples.")
    if num_documents < 1:
        raise DataError("The corpus has no document with any token.")
    max_tokens = max_seq_length - (3 if next_sentence else 2)
    if max_tokens < (2 if next_sentence else 1):
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the segments.")
    rnd, gen = _rngs(seed, epoch)
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
    table = np.array(rows, np.int64).reshape(-1, len(INSTANCE_FIELDS))
    out = {name: table[:, k] for k, name in enumerate(INSTANCE_FIELDS)}
    _truncate(out, max_tokens, next_sentence, gen)
    if shuffle:
        order = gen.permutation(len(table))
        out = {name: value[order] for name, value in out.items()}
    out = {name: np.ascontiguousarray(value) for name, value in out.items()}
    for name in ("next_sentence_label", "target_length", "document"):
        out[name] = out[name].astype(np.int32)
    return out


def truncated_pair_lengths(first_length, second_length, budget):
    """Lengths kept by google's ``truncate_seq_pair`` (NumPy, element-wise).

    It drops one token at a time from the longer segment — from B when they are equally long —
    until both fit in ``budget``. In closed form: a segment no longer than ``budget // 2`` keeps
    everything and the other gets the rest; otherwise B gets ``budget // 2`` and A the rest.

    >>> truncated_pair_lengths(np.array([3, 10, 10, 2]), np.array([4, 10, 3, 9]), 7)
    (array([3, 4, 4, 2]), array([4, 3, 3, 5]))
    """
    la, lb = np.asarray(first_length), np.asarray(second_length)
    half = budget // 2
    fits = la + lb <= budget
    ta = np.where(fits, la, np.where(la <= half, la, np.where(lb <= half, budget - lb,
                                                              budget - half)))
    tb = np.where(fits, lb, np.where(la <= half, budget - la, np.where(lb <= half, lb, half)))
    return ta, tb


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
    ta, tb = truncated_pair_lengths(la, lb, budget)
    for name, drop in (("a", la - ta), ("b", lb - tb)):
        front = gen.binomial(drop, 0.5)
        instances[f"{name}_start"] += front
        instances[f"{name}_end"] -= drop - front


# ---- 3-5. the tf.data stream ----------------------------------------------------------------
def to_fit_inputs(batch, next_sentence=True):
    """A dict of packed, masked tensors → ``(features, labels, sample_weight)`` for
    ``BertPretrainer.fit``. The NSP weight is 1 (0 in single-segment mode)."""
    features = {name: batch[name] for name in FEATURE_NAMES}
    labels = {"mlm": batch["mask_ids"], "nsp": batch["next_sentence_label"]}
    nsp_weight = tf.ones_like(batch["next_sentence_label"], tf.float32)
    if not next_sentence:
        nsp_weight = tf.zeros_like(nsp_weight)
    return features, labels, {"mlm": batch["mask_weights"], "nsp": nsp_weight}


class _Assembler:
    """Instances (offset rows) → packed token ids, in-graph."""

    def __init__(self, corpus, packer, next_sentence):
        self.tokens = tf.constant(corpus.token_ids, tf.int32)
        self.packer, self.next_sentence = packer, next_sentence

    def __call__(self, rows):
        a = tf.gather(self.tokens, tf.ragged.range(rows["a_start"], rows["a_end"]))
        b = None
        if self.next_sentence:
            b = tf.gather(self.tokens, tf.ragged.range(rows["b_start"], rows["b_end"]))
        out = self.packer.pack(a, b)
        out["next_sentence_label"] = tf.cast(rows["next_sentence_label"], tf.int32)
        return out


def _instance_chunks(corpus, chunk_size, batch_size, drop_remainder, num_epochs, first_epoch=None,
                     **instance_kwargs):
    """Generator of instance rows (dicts of [chunk_size] int64), epochs joined without a gap."""
    epoch, carry = 0, np.zeros([0, len(_STREAM_FIELDS)], np.int64)
    while num_epochs is None or epoch < num_epochs:
        columns = first_epoch if epoch == 0 and first_epoch is not None else create_instances(
            corpus, epoch=epoch, **instance_kwargs)
        table = np.stack([columns[name].astype(np.int64) for name in _STREAM_FIELDS], axis=1)
        table = np.concatenate([carry, table])
        full = len(table) - len(table) % chunk_size
        for i in range(0, full, chunk_size):
            yield {name: table[i:i + chunk_size, k] for k, name in enumerate(_STREAM_FIELDS)}
        carry = table[full:]
        epoch += 1
    if drop_remainder:
        carry = carry[:len(carry) - len(carry) % batch_size]
    if len(carry):
        yield {name: carry[:, k] for k, name in enumerate(_STREAM_FIELDS)}


def make_masker(tokenizer, *, max_predictions_per_seq=20, masked_lm_prob=0.15,
                mask_token_rate=0.8, random_token_rate=0.1, whole_word_masking=False):
    """:class:`~.masking.MaskedLMMasker` for ``tokenizer`` with google-research/bert's names."""
    return MaskedLMMasker.from_tokenizer(
        tokenizer, selection_rate=masked_lm_prob, max_selections=max_predictions_per_seq,
        mask_token_rate=mask_token_rate, random_token_rate=random_token_rate,
        whole_word=whole_word_masking)


def pretraining_dataset(corpus, tokenizer, *, batch_size=32, max_seq_length=128,
                        max_predictions_per_seq=20, masked_lm_prob=0.15, mask_token_rate=0.8,
                        random_token_rate=0.1, whole_word_masking=False, next_sentence=True,
                        short_seq_prob=0.1, short_seq_scope="instance",
                        balance_next_sentence=True, seed=0, num_epochs=None, drop_remainder=True,
                        output="fit"):
    """An endless (or ``num_epochs``-long) stream of BERT pretraining batches from raw text.

    Reads and tokenizes ``corpus`` once, then each epoch draws new next-sentence pairs (shuffled)
    and every batch new masks; the stream is a pure function of ``seed``. Batches are
    ``(features, labels, sample_weight)`` as :class:`~keras_bert_lab.tasks.pretraining
    .BertPretrainer` ``.fit`` takes them: features ``token_ids``, ``segment_ids``,
    ``padding_mask``, ``mask_positions`` (int32 ``[B, L]`` / ``[B, P]``); labels ``{"mlm":
    mask_ids, "nsp": next_sentence_label}``; sample weights ``{"mlm": mask_weights, "nsp": 1}``.
    Use it with ``fit(ds, steps_per_epoch=…)`` when it is endless.

    Args:
        corpus: a :class:`TokenizedCorpus`, or anything :func:`~.corpora.load_corpus` reads (a
            named corpus such as ``"wikitext2"``/``"wikitext2:valid"``/``"news"``, files, globs,
            directories, a ``Corpus``, ``list[list[str]]``).
        tokenizer: a :class:`~keras_bert_lab.text.tokenizer.WordPieceTokenizer`.
        batch_size, max_seq_length: ``B`` and ``L``.
        max_predictions_per_seq: ``P``, the most masked positions per sequence.
        masked_lm_prob, mask_token_rate, random_token_rate, whole_word_masking: see
            :class:`~.masking.MaskedLMMasker`.
        next_sentence: A/B pairs with NSP labels (default) or single segments.
        short_seq_prob, short_seq_scope, balance_next_sentence: see :func:`create_instances`.
        seed: reproduces the whole stream.
        num_epochs: passes over the corpus (``None``: endless). Epochs join without a gap; the
            last incomplete batch is dropped unless ``drop_remainder=False``.
        output: ``"fit"`` for the tuple above, ``"dict"`` for one flat dict (also holding
            ``mask_ids``, ``mask_weights``, ``next_sentence_label``) for inspection.

    Example (then ``BertPretrainer(BertBackbone("base")).fit(ds, steps_per_epoch=10_000)``):

    >>> from keras_bert_lab.datasets import locate
    >>> from keras_bert_lab.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> ds = pretraining_dataset("wikitext2:valid", tokenizer, batch_size=4, max_seq_length=32,
    ...                          whole_word_masking=True, output="dict")
    >>> batch = next(iter(ds))
    >>> text = tokenizer.detokenize(batch["token_ids"][0].numpy().tolist(),
    ...                             skip_special_tokens=False)
    >>> text.startswith("[CLS] "), text.count("[SEP]"), int(batch["mask_weights"][0].numpy().sum())
    (True, 2, 4)
    """
    if output not in ("fit", "dict"):
        raise ValueError(f"output={output!r}; use 'fit' or 'dict'.")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size={batch_size} must be at least 1.")
    masker = make_masker(tokenizer, max_predictions_per_seq=max_predictions_per_seq,
                         masked_lm_prob=masked_lm_prob, mask_token_rate=mask_token_rate,
                         random_token_rate=random_token_rate,
                         whole_word_masking=whole_word_masking)
    tokenized = tokenize_corpus(corpus, tokenizer)
    instance_kwargs = dict(max_seq_length=max_seq_length, short_seq_prob=short_seq_prob,
                           next_sentence=next_sentence, seed=seed,
                           short_seq_scope=short_seq_scope,
                           balance_next_sentence=balance_next_sentence)
    first = create_instances(tokenized, **instance_kwargs)  # validates early, with a clear error
    per_epoch = len(first["a_start"])
    if drop_remainder and num_epochs is not None and per_epoch * num_epochs < batch_size:
        raise DataError(f"{num_epochs} epoch(s) of this corpus give {per_epoch} "
                        f"instances each, not one full batch of {batch_size}.")
    # Rows are packed and masked in chunks of several batches (fewer, larger TensorFlow ops),
    # then cut into batches; chunk i is masked with the stateless seed (seed, i).
    chunk_size = batch_size * max(1, _CHUNK_ROWS // batch_size)
    rows = tf.data.Dataset.from_generator(
        lambda: _instance_chunks(tokenized, chunk_size, batch_size, drop_remainder, num_epochs,
                                 first_epoch=first, **instance_kwargs),
        output_signature={name: tf.TensorSpec([None], tf.int64) for name in _STREAM_FIELDS})
    assemble = _Assembler(tokenized, BertPacker.from_tokenizer(tokenizer, max_seq_length,
                                                               truncation="longest_first_google"),
                          next_sentence)
    seed_tensor = tf.constant(int(seed) & 0x7FFFFFFF, tf.int64)

    def build(index, batch):
        out = assemble(batch)
        out.update(masker(out["token_ids"], out["padding_mask"], tf.stack([seed_tensor, index])))
        return out if output == "dict" else to_fit_inputs(out, next_sentence)

    ds = rows.enumerate().map(build, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.rebatch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


# ---- static mode: sharded TFRecords ---------------------------------------------------------
def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def write_tfrecords(corpus, tokenizer, output_dir, *, num_shards=4, max_seq_length=128,
                    dupe_factor=1, static_masks=False, max_predictions_per_seq=20,
                    masked_lm_prob=0.15, mask_token_rate=0.8, random_token_rate=0.1,
                    whole_word_masking=False, next_sentence=True, short_seq_prob=0.1,
                    short_seq_scope="instance", balance_next_sentence=True, seed=0,
                    prefix="pretraining", progress=True):
    """Write pre-built instances to ``num_shards`` TFRecord files; returns their paths.

    Each of the ``dupe_factor`` passes draws new pairs (and, with ``static_masks``, new masks),
    as the original's ``dupe_factor`` copies. Records use google-research/bert's feature names,
    padded to ``max_seq_length``: ``input_ids``, ``input_mask``, ``segment_ids``,
    ``next_sentence_labels`` and, with ``static_masks``, ``masked_lm_positions``,
    ``masked_lm_ids``, ``masked_lm_weights`` (``input_ids`` then hold the masked input); plus our
    ``next_sentence_weights`` (0 in single-segment mode). Instances go round-robin to the shards,
    each file ``{prefix}-{i:05d}-of-{n:05d}.tfrecord``. A ``tqdm`` progress bar counts instances.

    Example:

    >>> import tempfile
    >>> from keras_bert_lab.datasets import locate
    >>> from keras_bert_lab.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> docs = [["A first sentence.", "And a second one."], ["Another document.", "It ends."]]
    >>> paths = write_tfrecords(docs, tokenizer, tempfile.mkdtemp(), num_shards=2,
    ...                         max_seq_length=16, progress=False)
    >>> ds = read_tfrecords(paths, tokenizer, batch_size=2, max_seq_length=16, num_epochs=1)
    >>> features, labels, weights = next(iter(ds))
    >>> features["token_ids"].shape
    TensorShape([2, 16])
    """
    from tqdm.auto import tqdm

    tokenized = tokenize_corpus(corpus, tokenizer)
    os.makedirs(output_dir, exist_ok=True)
    paths = [os.path.join(output_dir, f"{prefix}-{i:05d}-of-{num_shards:05d}.tfrecord")
             for i in range(num_shards)]
    masker = make_masker(tokenizer, max_predictions_per_seq=max_predictions_per_seq,
                         masked_lm_prob=masked_lm_prob, mask_token_rate=mask_token_rate,
                         random_token_rate=random_token_rate,
                         whole_word_masking=whole_word_masking) if static_masks else None
    assemble = _Assembler(tokenized, BertPacker.from_tokenizer(tokenizer, max_seq_length,
                                                               truncation="longest_first_google"),
                          next_sentence)
    nsp_weight = [1.0 if next_sentence else 0.0]
    passes = [create_instances(tokenized, max_seq_length=max_seq_length,
                               short_seq_prob=short_seq_prob, next_sentence=next_sentence,
                               seed=seed, epoch=dupe, short_seq_scope=short_seq_scope,
                               balance_next_sentence=balance_next_sentence)
              for dupe in range(dupe_factor)]
    total = sum(len(p["a_start"]) for p in passes)
    written = 0
    writers = [tf.io.TFRecordWriter(path) for path in paths]
    try:
        with tqdm(total=total, unit="instances", desc="write_tfrecords",
                  disable=not progress) as bar:
            for dupe, instances in enumerate(passes):
                for start in range(0, len(instances["a_start"]), 512):
                    rows = {name: tf.constant(instances[name][start:start + 512], tf.int64)
                            for name in _STREAM_FIELDS}
                    out = assemble(rows)
                    if masker is not None:
                        out.update(masker(out["token_ids"], out["padding_mask"],
                                          (seed, dupe * 1_000_000 + start)))
                    out = {name: value.numpy() for name, value in out.items()}
                    for r in range(len(out["token_ids"])):
                        feature = {
                            "input_ids": _int_feature(out["token_ids"][r]),
                            "input_mask": _int_feature(out["padding_mask"][r]),
                            "segment_ids": _int_feature(out["segment_ids"][r]),
                            "next_sentence_labels": _int_feature([out["next_sentence_label"][r]]),
                            "next_sentence_weights": _float_feature(nsp_weight),
                        }
                        if masker is not None:
                            feature["masked_lm_positions"] = _int_feature(
                                out["mask_positions"][r])
                            feature["masked_lm_ids"] = _int_feature(out["mask_ids"][r])
                            feature["masked_lm_weights"] = _float_feature(out["mask_weights"][r])
                        example = tf.train.Example(features=tf.train.Features(feature=feature))
                        writers[written % num_shards].write(example.SerializeToString())
                        written += 1
                    bar.update(len(out["token_ids"]))
    finally:
        for writer in writers:
            writer.close()
    logger.info("Wrote %d instances (%d pass(es)) to %d shards in %s.", written, dupe_factor,
                num_shards, output_dir)
    return paths


def _record_files(files):
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    paths = []
    for item in files:
        item = os.fspath(item)
        if os.path.isdir(item):
            paths.extend(sorted(glob.glob(os.path.join(item, "*.tfrecord"))))
        elif glob.has_magic(item):
            paths.extend(sorted(glob.glob(item)))
        else:
            paths.append(item)
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing or not paths:
        raise DataError(f"No TFRecord files at {files!r}" + (f" (missing: {missing[:3]})"
                                                              if missing else "") + ".")
    return paths


def read_tfrecords(files, tokenizer=None, *, batch_size=32, max_seq_length=128,
                   max_predictions_per_seq=20, dynamic_masking=None, masker=None,
                   masked_lm_prob=0.15, mask_token_rate=0.8, random_token_rate=0.1,
                   whole_word_masking=False, shuffle_buffer=10_000, seed=0, num_epochs=None,
                   drop_remainder=True, output="fit"):
    """Stream records written by :func:`write_tfrecords` (or google-research/bert) as batches.

    Masks come from the files when they have them and ``dynamic_masking`` is not ``True``;
    otherwise they are drawn afresh per batch exactly as in :func:`pretraining_dataset` (which
    needs ``tokenizer`` or ``masker``). Files are read interleaved in a seeded random order and
    records shuffled in a ``shuffle_buffer``; a fixed ``seed`` reproduces the stream. Outputs as in
    :func:`pretraining_dataset` (see :func:`write_tfrecords` for an example).
    """
    paths = _record_files(files)
    first = next(iter(tf.data.TFRecordDataset(paths[:1]).take(1)), None)
    if first is None:
        raise DataError(f"{paths[0]} holds no record.")
    stored = set(tf.train.Example.FromString(first.numpy()).features.feature)
    has_masks = "masked_lm_positions" in stored
    dynamic = (not has_masks) if dynamic_masking is None else bool(dynamic_masking)
    if dynamic and masker is None:
        if tokenizer is None:
            raise ValueError("Dynamic masking needs the tokenizer (or a MaskedLMMasker).")
        masker = make_masker(tokenizer, max_predictions_per_seq=max_predictions_per_seq,
                             masked_lm_prob=masked_lm_prob, mask_token_rate=mask_token_rate,
                             random_token_rate=random_token_rate,
                             whole_word_masking=whole_word_masking)
    if not dynamic and not has_masks:
        raise DataError(f"{paths[0]} has no static masks; read it with dynamic_masking=True.")
    L = max_seq_length
    spec = {"input_ids": tf.io.FixedLenFeature([L], tf.int64),
            "input_mask": tf.io.FixedLenFeature([L], tf.int64),
            "segment_ids": tf.io.FixedLenFeature([L], tf.int64),
            "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64)}
    if "next_sentence_weights" in stored:
        spec["next_sentence_weights"] = tf.io.FixedLenFeature([1], tf.float32)
    if not dynamic:
        P = max_predictions_per_seq
        spec.update({"masked_lm_positions": tf.io.FixedLenFeature([P], tf.int64),
                     "masked_lm_ids": tf.io.FixedLenFeature([P], tf.int64),
                     "masked_lm_weights": tf.io.FixedLenFeature([P], tf.float32)})
    ds = tf.data.Dataset.from_tensor_slices(paths)
    if len(paths) > 1:
        ds = ds.shuffle(len(paths), seed=seed)
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(paths), 8),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    ds = ds.repeat(num_epochs)
    if shuffle_buffer and shuffle_buffer > 1:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    seed_tensor = tf.constant(int(seed) & 0x7FFFFFFF, tf.int64)

    def build(index, records):
        parsed = tf.io.parse_example(records, spec)
        out = {"token_ids": tf.cast(parsed["input_ids"], tf.int32),
               "segment_ids": tf.cast(parsed["segment_ids"], tf.int32),
               "padding_mask": tf.cast(parsed["input_mask"], tf.int32),
               "next_sentence_label": tf.cast(parsed["next_sentence_labels"][:, 0], tf.int32)}
        if dynamic:
            out.update(masker(out["token_ids"], out["padding_mask"],
                              tf.stack([seed_tensor, index])))
        else:
            out.update({"mask_positions": tf.cast(parsed["masked_lm_positions"], tf.int32),
                        "mask_ids": tf.cast(parsed["masked_lm_ids"], tf.int32),
                        "mask_weights": parsed["masked_lm_weights"]})
        if output == "dict":
            return out
        features, labels, weights = to_fit_inputs(out)
        if "next_sentence_weights" in parsed:
            weights["nsp"] = parsed["next_sentence_weights"][:, 0]
        return features, labels, weights

    return ds.enumerate().map(build, num_parallel_calls=tf.data.AUTOTUNE,
                              deterministic=True).prefetch(tf.data.AUTOTUNE)
