"""Step 1 of the pretraining pipeline: a corpus read and tokenized once, laid end to end.

Documents come from :func:`keras_bert_lab.data.corpora.load_corpus` (named corpora, files, globs,
directories); every sentence is tokenized once with the WordPiece tokenizer into one flat array of
ids plus where each sentence and document starts. Everything after this — pairs, packing, masks
works on offsets into that array.
"""

import dataclasses
import logging

import numpy as np
import tensorflow as tf

from keras_bert_lab.data import corpora

logger = logging.getLogger(__name__)

_LARGE_CORPUS_TOKENS = 200_000_000


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
        """Tokenize documents (``list[list[str]]`` or a
        :class:`~keras_bert_lab.data.corpora.Corpus`) in batches."""
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
    """A :class:`TokenizedCorpus` from anything :func:`~keras_bert_lab.data.corpora.load_corpus`
    reads (a name such as ``"wikitext2"``, paths, a :class:`~keras_bert_lab.data.corpora.Corpus`,
    ``list[list[str]]``), or one as is."""
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
