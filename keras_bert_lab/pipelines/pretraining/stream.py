"""Steps 3–5 of the pretraining pipeline: pack, mask, batch — the ``tf.data`` stream of ``fit``.

:func:`pretraining_dataset` reads and tokenizes a corpus once (step 1, :mod:`.corpus`), then each
epoch draws new pairs (step 2, :mod:`.pairs`), packs ``[CLS] A [SEP] B [SEP]`` with the
:class:`~keras_bert_lab.preprocessing.packer.BertPacker` (3), masks with the
:class:`~keras_bert_lab.preprocessing.masking.MaskedLMMasker` (4), and batches as
``(features, labels, sample_weight)`` (5).
"""

import numpy as np
import tensorflow as tf

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.pipelines.pretraining.corpus import tokenize_corpus
from keras_bert_lab.pipelines.pretraining.pairs import create_instances
from keras_bert_lab.preprocessing.masking import MaskedLMMasker
from keras_bert_lab.preprocessing.packer import BertPacker

STREAM_FIELDS = ("a_start", "a_end", "b_start", "b_end", "next_sentence_label")
FEATURE_NAMES = ("token_ids", "segment_ids", "padding_mask", "mask_positions")
_CHUNK_ROWS = 512  # rows packed and masked at once in the stream


def to_fit_inputs(batch, next_sentence=True):
    """A dict of packed, masked tensors → ``(features, labels, sample_weight)`` for
    ``BertPretrainer.fit``. The NSP weight is 1 (0 in single-segment mode)."""
    features = {name: batch[name] for name in FEATURE_NAMES}
    labels = {"mlm": batch["mask_ids"], "nsp": batch["next_sentence_label"]}
    nsp_weight = tf.ones_like(batch["next_sentence_label"], tf.float32)
    if not next_sentence:
        nsp_weight = tf.zeros_like(nsp_weight)
    return features, labels, {"mlm": batch["mask_weights"], "nsp": nsp_weight}


class Assembler:
    """Instances (offset rows) → packed token ids, in-graph. With ``pack`` a row has a segment B
    only where its block crossed into another document (``[CLS] A [SEP] B [SEP]``); the others
    are ``[CLS] A [SEP]``."""

    def __init__(self, corpus, packer, next_sentence, pack=False):
        self.tokens = tf.constant(corpus.token_ids, tf.int32)
        self.packer, self.next_sentence, self.pack = packer, next_sentence, pack

    def __call__(self, rows):
        a = tf.gather(self.tokens, tf.ragged.range(rows["a_start"], rows["a_end"]))
        b = None
        if self.next_sentence or self.pack:
            b = tf.gather(self.tokens, tf.ragged.range(rows["b_start"], rows["b_end"]))
        out = self.packer.pack(a, b)
        if self.pack:
            single = self.packer.pack(a)
            has_b = (rows["b_end"] > rows["b_start"])[:, None]
            out = {key: tf.where(has_b, value, single[key]) for key, value in out.items()}
        out["next_sentence_label"] = tf.cast(rows["next_sentence_label"], tf.int32)
        return out


def _instance_chunks(corpus, chunk_size, batch_size, drop_remainder, num_epochs, first_epoch=None,
                     **instance_kwargs):
    """Generator of instance rows (dicts of [chunk_size] int64), epochs joined without a gap."""
    epoch, carry = 0, np.zeros([0, len(STREAM_FIELDS)], np.int64)
    while num_epochs is None or epoch < num_epochs:
        columns = first_epoch if epoch == 0 and first_epoch is not None else create_instances(
            corpus, epoch=epoch, **instance_kwargs)
        table = np.stack([columns[name].astype(np.int64) for name in STREAM_FIELDS], axis=1)
        table = np.concatenate([carry, table])
        full = len(table) - len(table) % chunk_size
        for i in range(0, full, chunk_size):
            yield {name: table[i:i + chunk_size, k] for k, name in enumerate(STREAM_FIELDS)}
        carry = table[full:]
        epoch += 1
    if drop_remainder:
        carry = carry[:len(carry) - len(carry) % batch_size]
    if len(carry):
        yield {name: carry[:, k] for k, name in enumerate(STREAM_FIELDS)}


def pretraining_dataset(corpus, tokenizer, *, batch_size=32, sequence_length=128,
                        mask_selection_length=20, mask_selection_rate=0.15, mask_token_rate=0.8,
                        random_token_rate=0.1, whole_word_masking=False, next_sentence=True,
                        short_seq_prob=0.1, short_seq_scope="instance",
                        balance_next_sentence=True, seed=0, num_epochs=None, drop_remainder=True,
                        output="fit", pack=False):
    """An endless (or ``num_epochs``-long) stream of BERT pretraining batches from raw text.

    Reads and tokenizes ``corpus`` once, then each epoch draws new next-sentence pairs (shuffled)
    and every batch new masks; the stream is a pure function of ``seed``. Batches are
    ``(features, labels, sample_weight)`` as :class:`~keras_bert_lab.models.bert.pretrainer
    .BertPretrainer` ``.fit`` takes them: features ``token_ids``, ``segment_ids``,
    ``padding_mask``, ``mask_positions`` (int32 ``[B, L]`` / ``[B, P]``); labels ``{"mlm":
    mask_ids, "nsp": next_sentence_label}``; sample weights ``{"mlm": mask_weights, "nsp": 1}``.
    Use it with ``fit(ds, steps_per_epoch=…)`` when it is endless.

    Args:
        corpus: a :class:`TokenizedCorpus`, or anything :func:`~.corpora.load_corpus` reads (a
            named corpus such as ``"wikitext2"``/``"wikitext2:valid"``/``"news"``, files, globs,
            directories, a ``Corpus``, ``list[list[str]]``).
        tokenizer: a :class:`~keras_bert_lab.preprocessing.wordpiece.WordPieceTokenizer`.
        batch_size, sequence_length: ``B`` and ``L``.
        mask_selection_length: ``P``, the most masked positions per sequence.
        mask_selection_rate, mask_token_rate, random_token_rate, whole_word_masking: see
            :class:`~.masking.MaskedLMMasker`.
        next_sentence: A/B pairs with NSP labels (default) or single segments.
        short_seq_prob, short_seq_scope, balance_next_sentence: see :func:`create_instances`.
        pack: with ``next_sentence=False``, full blocks of text across sentence and document
            ends, no padding but at the corpus' end (:func:`~.pairs.packed_rows`).
        seed: reproduces the whole stream.
        num_epochs: passes over the corpus (``None``: endless). Epochs join without a gap; the
            last incomplete batch is dropped unless ``drop_remainder=False``.
        output: ``"fit"`` for the tuple above, ``"dict"`` for one flat dict (also holding
            ``mask_ids``, ``mask_weights``, ``next_sentence_label``) for inspection.

    Example (then ``BertPretrainer(BertBackbone("base")).fit(ds, steps_per_epoch=10_000)``):

    >>> from keras_bert_lab.data.registry import locate
    >>> from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> ds = pretraining_dataset("wikitext2:valid", tokenizer, batch_size=4, sequence_length=32,
    ...                          whole_word_masking=True, output="dict")
    >>> batch = next(iter(ds))
    >>> text = tokenizer.detokenize(batch["token_ids"][0].numpy().tolist(),
    ...                             skip_special_tokens=False)
    >>> text.startswith("[CLS] "), text.count("[SEP]"), int(batch["mask_weights"][0].numpy().sum())
    (True, 2, 4)
    """
    if output not in ("fit", "dict"):
        raise ConfigError(f"output={output!r}; use 'fit' or 'dict'.")
    if int(batch_size) < 1:
        raise ConfigError(f"batch_size={batch_size} must be at least 1.")
    masker = MaskedLMMasker.from_tokenizer(
        tokenizer, mask_selection_length=mask_selection_length,
        mask_selection_rate=mask_selection_rate, mask_token_rate=mask_token_rate,
        random_token_rate=random_token_rate, whole_word_masking=whole_word_masking)
    tokenized = tokenize_corpus(corpus, tokenizer)
    instance_kwargs = dict(sequence_length=sequence_length, short_seq_prob=short_seq_prob,
                           next_sentence=next_sentence, seed=seed,
                           short_seq_scope=short_seq_scope,
                           balance_next_sentence=balance_next_sentence, pack=pack)
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
        output_signature={name: tf.TensorSpec([None], tf.int64) for name in STREAM_FIELDS})
    assemble = Assembler(tokenized, BertPacker.from_tokenizer(tokenizer, sequence_length,
                                                               truncation="longest_first_google"),
                          next_sentence, pack)
    seed_tensor = tf.constant(int(seed) & 0x7FFFFFFF, tf.int64)

    def build(index, batch):
        out = assemble(batch)
        out.update(masker(out["token_ids"], out["padding_mask"], tf.stack([seed_tensor, index])))
        return out if output == "dict" else to_fit_inputs(out, next_sentence)

    ds = rows.enumerate().map(build, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.rebatch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)
