"""BERT pretraining data: documents → next-sentence pairs → packed, dynamically masked batches.

This follows google-research/bert's ``create_pretraining_data.py`` (Devlin et al. 2019, §3.1 and
appendix A.2) and turns it into an endless ``tf.data`` stream:

1. **Tokenize** every sentence of every document once (:class:`TokenizedCorpus`: one flat array of
   token ids, plus where each sentence and document starts).
2. **Pair** (:func:`create_instances`, once per epoch, with a new random draw each epoch like the
   original's ``dupe_factor`` copies). Walking through each document, sentences are gathered into a
   chunk until it reaches a *target length* of ``sequence_length - 3`` tokens (room for ``[CLS]``
   and two ``[SEP]``). With probability ``short_seq_prob`` (0.1) the target is a random length in
   ``[2, sequence_length - 3]`` instead, so the model also sees the short sequences it will meet in
   fine-tuning. Segment A is the chunk's first 1 … n-1 sentences (a random cut). With
   probability 0.5 segment B is the rest of the chunk — the true continuation (label 0,
   *IsNext*); otherwise B is a run of sentences from a random *other* document (label 1,
   *NotNext*), and the chunk's unused sentences go back to be read again, so no text is wasted.
   Segments are "sentences" in the linguistic sense only loosely: A and B are spans of contiguous
   text, which is why BERT can learn from long context rather than from sentence pairs alone.
   Pairs that are too long lose tokens from the longer segment, one at a time, each time from its
   front or its back at random (the original's ``truncate_seq_pair``: trimming only the end would
   make the model expect sentence ends to be missing). Instances are shuffled.
3. **Pack** ``[CLS] A [SEP] B [SEP]`` with :class:`~keras_bert_lab.preprocessing.packer.BertPacker`.
4. **Mask** dynamically with :class:`~keras_bert_lab.preprocessing.masking.MaskedLMMasker`: 15 %
   of the tokens, 80/10/10, optionally whole words; new masks every time a sequence is seen.
5. **Batch** as ``(features, labels, sample_weight)`` for
   :class:`~keras_bert_lab.models.bert.pretrainer.BertPretrainer` ``.fit`` on any Keras backend.

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
``sequence_length - 2`` is cut (at its end). The NSP loss gets a weight of 0. On WikiText-2 at
128 tokens such blocks are 79 % text and 21 % padding; ``pack=True`` (MosaicBERT's and Cramming's
packing, RoBERTa's FULL-SENTENCES) cuts full blocks whatever the sentence ends, and a block that
reaches a document's end goes on into the next document after a ``[SEP]`` (as segment B), so
only the corpus' last block is padded (:func:`~.pairs.packed_rows`).

For corpora too large to tokenize in memory — or to train from the same fixed files many times —
:func:`write_tfrecords` writes instances to sharded TFRecord files (google-research/bert's feature
names, so its own ``run_pretraining.py`` reads them too), with or without ``dupe_factor`` static
masks, and :func:`read_tfrecords` streams them back through the same masking stage.

Example:

>>> from keras_bert_lab.data.registry import locate
>>> from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
>>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
>>> ds = pretraining_dataset("wikitext2:valid", tokenizer, batch_size=8, sequence_length=64)
>>> features, labels, weights = next(iter(ds))
>>> sorted(features), features["token_ids"].shape, labels["mlm"].shape
(['mask_positions', 'padding_mask', 'segment_ids', 'token_ids'], TensorShape([8, 64]),
 TensorShape([8, 20]))
"""

from keras_bert_lab.pipelines.pretraining.corpus import TokenizedCorpus, tokenize_corpus
from keras_bert_lab.pipelines.pretraining.pairs import INSTANCE_FIELDS, create_instances
from keras_bert_lab.pipelines.pretraining.stream import pretraining_dataset, to_fit_inputs
from keras_bert_lab.pipelines.pretraining.tfrecords import read_tfrecords, write_tfrecords

__all__ = ["INSTANCE_FIELDS", "TokenizedCorpus", "create_instances", "pretraining_dataset",
           "read_tfrecords", "to_fit_inputs", "tokenize_corpus", "write_tfrecords"]
