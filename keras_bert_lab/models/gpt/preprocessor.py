"""GPT-1's task input transformations: each task's text as token rows ending in the extract token.

Radford et al. (2018, §3.3, Figure 1) fine-tune one pretrained decoder on structured tasks by
re-arranging the input instead of changing the model: every row is ``_start_ … _classify_``
(the *extract* token, whose final state the linear head reads), with ``_delimiter_`` between two
texts. Classification is ``[start] text [extract]``; entailment ``[start] premise [delim]
hypothesis [extract]``; similarity has no natural order, so both orders are rows of one example;
multiple choice makes one row ``[start] context [delim] answer [extract]`` per answer. Rows are
right-padded with id 0 and a ``padding_mask``, which is what
:class:`~keras_bert_lab.models.gpt.classifier.GPTClassifier` and ``GPTMultipleChoice`` take.
When two texts do not fit, the longer one loses its last token until they do (the rule BERT's
packer follows too); a single text is cut at the end.

Shapes: ``N`` examples, ``S`` rows per example (2 or ``C``), ``T`` tokens.

Tagging (no transformation in the paper): ``[start] pieces``, each word's tag on its last piece
(:class:`GPTTaggingPreprocessor`).

Example:
>>> from keras_bert_lab.preprocessing.bpe import BytePairTokenizer
>>> tokenizer = BytePairTokenizer(["a</w>", "b</w>", "c</w>", "a", "ab</w>"], ["a b</w>"])
>>> packer = GPTTaskPacker(tokenizer, sequence_length=7)
>>> rows = packer.pair(["a b c"], ["c"])          # [start] a b c [delim] c [extract]
>>> [tokenizer.id_to_token(i) for i in rows["token_ids"][0]]
['_start_', 'a</w>', 'b</w>', 'c</w>', '_delimiter_', 'c</w>', '_classify_']
>>> rows = packer.pair(["a b c a b"], ["c"])      # too long: the premise is cut
>>> rows["token_ids"].shape, int(rows["padding_mask"].sum())
((1, 7), 7)
>>> packer.similarity(["a"], ["b c"])["token_ids"].shape
(1, 2, 7)
"""

import numpy as np

from keras_bert_lab.data.conll import check_labels
from keras_bert_lab.errors import DataError
from keras_bert_lab.preprocessing.span_qa import BertRows, SpanQAPreprocessor
from keras_bert_lab.preprocessing.tagging import AlignedTags, TaggingPreprocessor


def pad_rows(sequences, length):
    """Id lists (each at most ``length`` long) → right-padded ``token_ids`` (pad 0) and
    ``padding_mask``, each ``(N, length)`` int32."""
    token_ids = np.zeros((len(sequences), length), "int32")
    padding_mask = np.zeros_like(token_ids)
    for row, ids in enumerate(sequences):
        token_ids[row, :len(ids)], padding_mask[row, :len(ids)] = ids, 1
    return {"token_ids": token_ids, "padding_mask": padding_mask}


class GPTTaskPacker:
    """Pack texts into GPT-1's task rows with a ``BytePairTokenizer``'s special tokens.

    Args:
        tokenizer: a :class:`~keras_bert_lab.preprocessing.bpe.BytePairTokenizer` (its
            ``_start_``, ``_delimiter_`` and ``_classify_`` ids).
        sequence_length: ``T``, special tokens included (GPT-1: up to 512).
    """

    def __init__(self, tokenizer, sequence_length=128):
        if sequence_length < 4:
            raise DataError(f"sequence_length={sequence_length} leaves no room for text between "
                            "the start, delimiter and extract tokens; use at least 4.")
        self.tokenizer, self.sequence_length = tokenizer, int(sequence_length)
        self.start = tokenizer.start_token_id
        self.delimiter = tokenizer.delimiter_token_id
        self.extract = tokenizer.classify_token_id

    def _encode(self, texts, what):
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise DataError(f"{what} {i} is {type(text).__name__}, not text.")
        return [self.tokenizer.encode(text) for text in texts]

    def _rows(self, sequences):
        return pad_rows(sequences, self.sequence_length)

    def _pair_ids(self, first, second):
        first, second = list(first), list(second)
        room = self.sequence_length - 3
        while len(first) + len(second) > room:   # the longer text loses its last token
            (first if len(first) >= len(second) else second).pop()
        return [self.start, *first, self.delimiter, *second, self.extract]

    def single(self, texts):
        """``[start] text [extract]`` rows (N, T): classification."""
        room = self.sequence_length - 2
        return self._rows([[self.start, *ids[:room], self.extract]
                           for ids in self._encode(texts, "text")])

    def pair(self, firsts, seconds):
        """``[start] first [delim] second [extract]`` rows (N, T): entailment."""
        firsts, seconds = self._encode(firsts, "first text"), self._encode(seconds, "second text")
        if len(firsts) != len(seconds):
            raise DataError(f"{len(firsts)} first texts but {len(seconds)} second texts; pair "
                            "them one to one.")
        return self._rows([self._pair_ids(a, b) for a, b in zip(firsts, seconds)])

    def similarity(self, firsts, seconds):
        """Both orders of each pair: rows (N, 2, T) for ``GPTClassifier(num_sequences=2)``."""
        forward, backward = self.pair(firsts, seconds), self.pair(seconds, firsts)
        return {k: np.stack([forward[k], backward[k]], axis=1) for k in forward}

    def choices(self, contexts, options):
        """``[start] context [delim] option [extract]`` for every option: rows (N, C, T).

        ``options``: one list of options per context, all of the same length ``C``.
        """
        contexts = list(contexts)
        options = [list(o) for o in options]
        if len(contexts) != len(options):
            raise DataError(f"{len(contexts)} contexts but {len(options)} option lists.")
        counts = {len(o) for o in options}
        if len(counts) > 1:
            first = len(options[0])
            bad = next(i for i, o in enumerate(options) if len(o) != first)
            raise DataError(f"Example {bad} has {len(options[bad])} options but example 0 has "
                            f"{first}; every example needs the same number of choices.")
        context_ids = self._encode(contexts, "context")
        rows = [self._pair_ids(c, o) for c, opts in zip(context_ids, options)
                for o in self._encode(opts, "option")]
        packed = self._rows(rows)
        c = counts.pop() if counts else 0
        return {k: v.reshape(len(contexts), c, self.sequence_length) for k, v in packed.items()}


class GPTTaggingPreprocessor(TaggingPreprocessor):
    """Word-split sentences → ``[start] pieces`` rows for ``GPTTokenClassifier``; logits → tags.

    GPT-1 has no tagging transformation; this is the natural one for a left-to-right model. The
    row is ``_start_`` followed by every word's byte-pair pieces (each word encoded on its own,
    so a piece knows its word), right-padded. A word's tag goes on its **last** piece: under the
    causal mask only the last piece's state has read the whole word (BERT's first piece would
    have seen none of the rest of it). Other positions get sample weight 0. A word that does not
    fit, and every word after it, is cut (``truncated_words``) and predicted ``O``.

    Args:
        tokenizer: a ``BytePairTokenizer`` with GPT-1's special tokens.
        labels: the label list (index = id).
        sequence_length: ``T``, the start token included.

    Example:
    >>> from keras_bert_lab.preprocessing.bpe import BytePairTokenizer
    >>> tokenizer = BytePairTokenizer(["a</w>", "b</w>", "c</w>", "a", "ab</w>"], ["a b</w>"])
    >>> from keras_bert_lab.data.conll import TaggedSentence
    >>> tagger = GPTTaggingPreprocessor(tokenizer, ["O", "B-X", "I-X"], sequence_length=6)
    >>> data = tagger([TaggedSentence(["ab", "c", "a"], ["B-X", "O", "B-X"])])
    >>> [tokenizer.id_to_token(i) for i in data.features["token_ids"][0][:4]]
    ['_start_', 'ab</w>', 'c</w>', 'a</w>']
    >>> data.labels[0].tolist(), data.word_index[0].tolist()
    ([0, 1, 0, 1, 0, 0], [-1, 0, 1, 2, -1, -1])
    """

    def __init__(self, tokenizer, labels, sequence_length=128):
        if int(sequence_length) < 2:
            raise DataError(f"sequence_length={sequence_length} leaves no room for a word after "
                            "the start token; use at least 2.")
        super().__init__(tokenizer, labels, sequence_length)

    def align(self, sentences):
        check_labels(sentences, self.labels)
        index = {label: i for i, label in enumerate(self.labels)}
        words = [w for s in sentences for w in s.words]
        pieces = iter(self.tokenizer.encode(words) if words else [])
        n, length = len(sentences), self.sequence_length
        token_ids, padding_mask, label_ids = (np.zeros((n, length), "int32") for _ in range(3))
        weights = np.zeros((n, length), "float32")
        word_index = np.full((n, length), -1, "int32")
        truncated = empty = 0
        for r, sentence in enumerate(sentences):
            row, cut = [self.tokenizer.start_token_id], False
            for w, tag in enumerate(sentence.tags):
                ids = next(pieces)
                if not ids:
                    empty += 1
                    continue
                cut = cut or len(row) + len(ids) > length
                if cut:
                    truncated += 1
                    continue
                row += ids
                last = len(row) - 1
                label_ids[r, last], weights[r, last] = index[tag], 1.0
                word_index[r, last] = w
            token_ids[r, :len(row)] = row
            padding_mask[r, :len(row)] = 1
        features = {"token_ids": token_ids, "padding_mask": padding_mask}
        return AlignedTags(features, label_ids, weights, word_index,
                           np.array([len(s.words) for s in sentences], "int32"), truncated, empty)


class GPTSpanRows(BertRows):
    """``[start] question [delim] window [extract]``; "no answer" is the extract token."""

    def questions(self, texts):
        return self.tokenizer.encode(texts)

    def contexts(self, texts):
        return self.tokenizer.encode_with_offsets(texts)

    def null_position(self, question_length, window_length):
        return question_length + window_length + 2

    def pack(self, questions, windows):
        t = self.tokenizer
        return pad_rows([[t.start_token_id, *q, t.delimiter_token_id, *w, t.classify_token_id]
                         for q, w in zip(questions, windows)], self.sequence_length)


class GPTSpanQAPreprocessor(SpanQAPreprocessor):
    """:class:`~keras_bert_lab.preprocessing.span_qa.SpanQAPreprocessor` on GPT rows
    (:class:`GPTSpanRows`): ``[start] question [delim] window [extract]``, "no answer" the
    extract token; ``tokenizer`` is a ``BytePairTokenizer`` with GPT-1's special tokens."""

    layout = GPTSpanRows
