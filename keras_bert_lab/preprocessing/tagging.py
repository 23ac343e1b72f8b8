"""Word-split sentences → WordPiece model inputs with one label per word, and predictions back.

BERT's NER recipe (Devlin et al. 2019, §5.3; Hugging Face ``run_ner.py``) tags *words*, but the
model sees WordPiece *pieces*. Each word is tokenized on its own (what HF's
``is_split_into_words=True`` does), so a piece always knows which input word it came from — even
when BERT's basic tokenizer cuts one input word such as ``don't`` into ``don ' t``. The word's tag
goes on its first piece; the other pieces, ``[CLS]``, ``[SEP]`` and padding get sample weight 0
(HF's label ``-100``), or — with ``label_all_pieces`` — the continuation pieces get the word's
tag (``I-X`` when the word is ``B-X``). The pieces are packed by the one
:class:`~keras_bert_lab.preprocessing.packer.BertPacker`. Predictions come back to one tag per
word from each word's first piece; words cut off by truncation (or made of characters BERT drops)
are predicted ``O`` and still count in the scores.

Shapes: ``N`` sentences, ``L`` sequence length (pieces, with ``[CLS]`` and ``[SEP]``).
"""

import dataclasses

import numpy as np

from keras_bert_lab import families
from keras_bert_lab.data.conll import TaggedSentence, check_labels, split_tag
from keras_bert_lab.errors import DataError
from keras_bert_lab.preprocessing.packer import BertPacker
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from keras_bert_lab.presets.registry import read_preset

@dataclasses.dataclass
class AlignedTags:
    """Model inputs and labels of tagged sentences (see :func:`align`).

    ``features``: dict of int32 ``token_ids``, ``segment_ids``, ``padding_mask`` (N, L).
    ``labels`` (N, L) int32 label ids (0 where unlabelled); ``sample_weight`` (N, L) float32,
    1 on labelled pieces; ``word_index`` (N, L) int32, the input word a first piece starts, -1
    elsewhere; ``num_words`` (N,) words per sentence; ``truncated_words`` how many words did not
    fit; ``empty_words`` how many words gave no piece at all; ``word_pieces`` (N, L) int32, at a
    first piece the number of the word's pieces in the sequence (0 elsewhere), so that a word's
    vector can be the mean of its pieces (feature extraction).
    """

    features: dict
    labels: np.ndarray
    sample_weight: np.ndarray
    word_index: np.ndarray
    num_words: np.ndarray
    truncated_words: int
    empty_words: int
    word_pieces: np.ndarray = None


def align(sentences, tokenizer, labels, sequence_length=128, label_all_pieces=False):
    """Tokenize word-split sentences and put each word's tag on its pieces.

    Every word is tokenized separately (``tokenizer.tokenize`` on the flat list of words), so
    piece → word is the *input* word index even when basic tokenization splits a word further
    (``"don't"`` → ``don ' t``); this is HF's ``word_ids()`` with ``is_split_into_words=True``.
    The sequence is ``[CLS] pieces [SEP]`` cut to ``sequence_length``; pieces past the room are
    dropped (counted in ``truncated_words`` by word).

    Args:
        sentences: :class:`TaggedSentence` list (``tags`` may be ``None``-free placeholders such
            as all ``"O"`` when only predicting).
        tokenizer: a ``WordPieceTokenizer``.
        labels: the label list (index = id).
        sequence_length: ``L``, including ``[CLS]`` and ``[SEP]``.
        label_all_pieces: also label continuation pieces (``B-X`` word → ``I-X`` pieces).

    Returns an :class:`AlignedTags`.

    Example:
    >>> from keras_bert_lab.data.registry import locate
    >>> from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> data = align([TaggedSentence(["Ångström", "don't"], ["B-person", "O"])], tokenizer,
    ...              ["O", "B-person", "I-person"], sequence_length=8)
    >>> [tokenizer.id_to_token(i) for i in data.features["token_ids"][0]]
    ['[CLS]', 'ang', '##strom', 'don', "'", 't', '[SEP]', '[PAD]']
    >>> data.labels[0].tolist(), data.sample_weight[0].tolist()
    ([0, 1, 0, 0, 0, 0, 0, 0], [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    >>> data.word_index[0].tolist()
    [-1, 0, -1, 1, -1, -1, -1, -1]
    """
    length = int(sequence_length)
    if length < 3:
        raise DataError(f"sequence_length={sequence_length} leaves no room for a word between "
                        "[CLS] and [SEP]; use at least 3.")
    index = {label: i for i, label in enumerate(labels)}
    check_labels(sentences, labels)
    continuation = {}
    if label_all_pieces:
        for label in labels:
            prefix, kind = split_tag(label)
            continuation[label] = f"I-{kind}" if prefix == "B" and f"I-{kind}" in index else label
    pieces = iter(_tokenize_words(tokenizer, [w for s in sentences for w in s.words]))
    rows, starts = [], []   # each sentence's pieces; (word, position of its first piece, count)
    truncated = empty = 0
    for sentence in sentences:
        row, first = [], []
        for w in range(len(sentence.words)):
            word_pieces = next(pieces)
            if not word_pieces:
                empty += 1
            elif 1 + len(row) >= length - 1:   # no room left after [CLS] … before [SEP]
                truncated += 1
            else:
                first.append((w, 1 + len(row), len(word_pieces)))
            row += word_pieces
        rows.append(row)
        starts.append(first)
    features = BertPacker.from_tokenizer(tokenizer, length)(rows)   # cuts to L - 2 pieces
    n = len(sentences)
    label_ids = np.zeros((n, length), "int32")
    weights = np.zeros((n, length), "float32")
    word_index = np.full((n, length), -1, "int32")
    piece_counts = np.zeros((n, length), "int32")
    for r, (sentence, first) in enumerate(zip(sentences, starts)):
        for w, position, count in first:
            tag = sentence.tags[w]
            label_ids[r, position], weights[r, position] = index[tag], 1.0
            word_index[r, position] = w
            end = min(position + count, length - 1)   # continuation pieces that fit
            piece_counts[r, position] = end - position
            if label_all_pieces and end > position + 1:
                label_ids[r, position + 1:end] = index[continuation[tag]]
                weights[r, position + 1:end] = 1.0
    num_words = np.array([len(s.words) for s in sentences], "int32")
    return AlignedTags(features, label_ids, weights, word_index, num_words, truncated, empty,
                       piece_counts)


def _tokenize_words(tokenizer, words, chunk=4096):
    """Piece ids of each word (a list of lists), tokenizing the words as separate strings."""
    out = []
    for start in range(0, len(words), chunk):
        part = words[start:start + chunk]
        if part:
            out.extend(tokenizer.tokenize(part))
    return out


def decode(predicted_ids, word_index, num_words, labels):
    """One tag per input word from per-piece predictions (each word's first piece).

    Args:
        predicted_ids: (N, L) predicted label ids (``argmax`` of the logits).
        word_index, num_words: from :class:`AlignedTags`.
        labels: the label list.

    Words without a piece in the sequence (truncated, or characters BERT drops) get ``"O"``.

    Example:
    >>> decode(np.array([[0, 2, 1, 1, 0]]), np.array([[-1, 0, -1, 2, -1]]), np.array([3]),
    ...        ["O", "B-X", "I-X"])
    [['I-X', 'O', 'B-X']]
    """
    predicted_ids = np.asarray(predicted_ids)
    word_index = np.asarray(word_index)
    out = []
    for row, count in enumerate(np.asarray(num_words)):
        tags = ["O"] * int(count)
        positions = np.nonzero(word_index[row] >= 0)[0]
        for position in positions:
            tags[word_index[row, position]] = labels[int(predicted_ids[row, position])]
        out.append(tags)
    return out


class TaggingPreprocessor:
    """Word-split sentences → token-classification inputs and labels; logits → tags per word.

    Wraps :func:`align` and :func:`decode` with a tokenizer, the label list and a length, as the
    other preprocessors do.

    Args:
        tokenizer: a ``WordPieceTokenizer``.
        labels: the label list (index = id), e.g. a ``BertTokenClassifier``'s ``labels``.
        sequence_length: ``L``, including ``[CLS]`` and ``[SEP]``.
        label_all_pieces: also label continuation pieces (for training).

    Example:
    >>> from keras_bert_lab.data.registry import locate
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> preprocessor = TaggingPreprocessor(tokenizer, ["O", "B-PER", "I-PER"], sequence_length=8)
    >>> data = preprocessor([["Ada", "Lovelace", "wrote"]])        # words only: predicting
    >>> data.features["token_ids"].shape
    (1, 8)
    >>> logits = np.eye(3)[[[0, 1, 2, 2, 0, 0, 0, 0]]]            # (N, L, K): pieces' scores
    >>> preprocessor.decode(logits, data)
    [['B-PER', 'I-PER', 'O']]
    """

    def __init__(self, tokenizer, labels, sequence_length=128, label_all_pieces=False):
        self.tokenizer, self.labels = tokenizer, [str(label) for label in labels]
        self.sequence_length, self.label_all_pieces = int(sequence_length), label_all_pieces

    @classmethod
    def from_preset(cls, preset, labels=None, sequence_length=None, **kwargs):
        """The preset's family's tagging preprocessor (this class for BERT) with the preset's
        tokenizer; ``labels`` default to those of a tagger saved in the preset."""
        info = read_preset(preset, verify=False)
        own = families.preprocessor_for(info, "ner", cls)   # GPT's tags pieces its own way
        labels = labels or ((info.task or {}).get("config") or {}).get("labels")
        if not labels:
            raise DataError(f"Preset {info.directory} records no tag labels; pass labels=[...].")
        length = sequence_length or (info.preprocessor or {}).get("sequence_length", 128)
        return own(info.family.tokenizer_class.from_preset(info.directory), labels, length,
                   **kwargs)

    def __call__(self, sentences):
        """:class:`AlignedTags` of :class:`TaggedSentence`\\ s, or of word lists (tagged ``O``)."""
        sentences = [s if isinstance(s, TaggedSentence)
                     else TaggedSentence(list(s), [self.labels[0]] * len(s)) for s in sentences]
        return self.align(sentences)

    def align(self, sentences):
        """:func:`align` with this preprocessor's settings (a GPT tagger aligns its own way)."""
        return align(sentences, self.tokenizer, self.labels, self.sequence_length,
                     self.label_all_pieces)

    def decode(self, logits, aligned):
        """One tag per word from ``(N, L, K)`` logits (or ``(N, L)`` label ids) of ``aligned``."""
        logits = np.asarray(logits)
        ids = logits.argmax(axis=-1) if logits.ndim == 3 else logits
        return decode(ids, aligned.word_index, aligned.num_words, self.labels)
