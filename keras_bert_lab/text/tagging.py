"""Word-level tagging data for token classification: CoNLL files, label alignment, entity scores.

BERT's NER recipe (Devlin et al. 2019, §5.3; Hugging Face ``run_ner.py``) tags *words*, but the
model sees WordPiece *pieces*. Each word is tokenized on its own (what HF's
``is_split_into_words=True`` does), so a piece always knows which input word it came from — even
when BERT's basic tokenizer cuts one input word such as ``don't`` into ``don ' t``. The word's tag
goes on its first piece; the other pieces, ``[CLS]``, ``[SEP]`` and padding get sample weight 0
(HF's label ``-100``), or — with ``label_all_pieces`` — the continuation pieces get the word's
tag (``I-X`` when the word is ``B-X``). Predictions come back to one tag per word from each word's
first piece; words cut off by truncation (or made of characters BERT drops) are predicted ``O``
and still count in the scores.

Entity-level precision/recall/F1 follow ``seqeval`` exactly: the default mode is conlleval's
chunking (an ``I-X`` after ``O`` or after another type starts an entity; types change ends one),
and ``mode="strict"`` is seqeval's strict IOB2 (an entity is ``B-X`` followed by ``I-X``\\ s; a
stray ``I-`` is no entity). Scores are micro-averaged over entities; a ratio with a zero
denominator is 0, as in seqeval.

Shapes: ``N`` sentences, ``L`` sequence length (pieces, with ``[CLS]`` and ``[SEP]``).
"""

import collections
import dataclasses
import os

import numpy as np

from keras_bert_lab.errors import DataError

DOCSTART = "-DOCSTART-"
MODES = ("conlleval", "strict")


@dataclasses.dataclass
class TaggedSentence:
    """One sentence: its words and their tags (equal lengths)."""

    words: list
    tags: list


# ---- reading --------------------------------------------------------------------------------
def read_conll(path, token_column=0, tag_column=-1, delimiter=None, encoding="utf-8"):
    """Read a CoNLL-style column file into a list of :class:`TaggedSentence`.

    One token per line, columns separated by ``delimiter`` (``None``: any run of whitespace, as in
    CoNLL-2003; ``"\\t"`` for files whose tokens may hold spaces). Sentences are separated by
    empty or whitespace-only lines; ``-DOCSTART-`` lines (document boundaries in CoNLL-2003) are
    skipped and also end a sentence. Every token line of a file must have the same number of
    columns.

    Args:
        path: the file.
        token_column, tag_column: column indices of the word and of its tag (negative counts
            from the end). Default: first and last.
        delimiter: column separator (see above).
        encoding: text encoding of the file.

    Raises ``DataError`` naming the file and line for ragged columns or a missing column.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.conll"
    >>> _ = path.write_text("-DOCSTART- O\\n\\nEU B-ORG\\nrejects O\\n \\nPeter B-PER\\n")
    >>> [(s.words, s.tags) for s in read_conll(path)]
    [(['EU', 'rejects'], ['B-ORG', 'O']), (['Peter'], ['B-PER'])]
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataError(f"CoNLL file {path!r} does not exist; pass the path of a file with one "
                        "token and its tag per line and blank lines between sentences.")
    sentences, words, tags, columns = [], [], [], None

    def close():
        if words:
            sentences.append(TaggedSentence(list(words), list(tags)))
        words.clear()
        tags.clear()

    with open(path, encoding=encoding) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                close()
                continue
            fields = line.split(delimiter)
            if fields[0] == DOCSTART:
                close()
                continue
            if columns is None:
                columns = len(fields)
                for name, index in (("token_column", token_column), ("tag_column", tag_column)):
                    if not -columns <= index < columns:
                        raise DataError(f"{path}, line {number}: {name}={index} but the line has "
                                        f"{columns} columns: {line!r}.")
            if len(fields) != columns:
                raise DataError(f"{path}, line {number}: {len(fields)} columns where the file's "
                                f"first token line has {columns}: {line!r}. Fix the line, or pass "
                                "delimiter='\\t' if tokens contain spaces.")
            words.append(fields[token_column])
            tags.append(fields[tag_column])
    close()
    if not sentences:
        raise DataError(f"CoNLL file {path!r} holds no tagged tokens.")
    return sentences


def split_sentences(sentences, fractions=(0.8, 0.2), seed=0):
    """Shuffle ``sentences`` with ``seed`` and cut them into parts of the given fractions.

    The fractions must sum to 1; the last part takes the rounding remainder.

    Example:
    >>> train, dev = split_sentences(list(range(10)), (0.8, 0.2), seed=0)
    >>> len(train), len(dev), sorted(train + dev) == list(range(10))
    (8, 2, True)
    """
    if abs(sum(fractions) - 1.0) > 1e-6 or min(fractions) < 0:
        raise DataError(f"Split fractions {fractions} must be non-negative and sum to 1.")
    order = np.random.default_rng(seed).permutation(len(sentences))
    parts, start = [], 0
    for i, fraction in enumerate(fractions):
        end = len(order) if i == len(fractions) - 1 else start + int(round(fraction * len(order)))
        parts.append([sentences[j] for j in order[start:end]])
        start = end
    return parts


# ---- labels ---------------------------------------------------------------------------------
def _split_tag(tag):
    """``"B-geo-loc"`` -> ``("B", "geo-loc")``; ``"O"`` -> ``("O", "")``; a bare ``"PER"`` ->
    ``("", "PER")``."""
    if tag == "O":
        return "O", ""
    if len(tag) > 1 and tag[1] == "-":
        return tag[0], tag[2:]
    return "", tag


def label_list(sentences):
    """The label set of a training set: ``O`` first, then per entity type ``B-X``, ``I-X``.

    Both prefixes of every type seen are included (an ``I-X`` that only ever follows ``B-X``
    pieces in ``label_all_pieces`` training still needs an id). Other tags (no ``B-``/``I-``
    prefix) are kept as they are, sorted.

    Example:
    >>> label_list([TaggedSentence(["Paris", "Hilton"], ["B-person", "I-person"]),
    ...             TaggedSentence(["in", "Lyon"], ["O", "B-geo-loc"])])
    ['O', 'B-geo-loc', 'I-geo-loc', 'B-person', 'I-person']
    """
    seen = {tag for s in sentences for tag in s.tags}
    types, other = set(), set()
    for tag in seen:
        prefix, kind = _split_tag(tag)
        if prefix in ("B", "I"):
            types.add(kind)
        elif tag != "O":
            other.add(tag)
    labels = ["O"] + [f"{p}-{t}" for t in sorted(types) for p in "BI"] + sorted(other)
    return labels


def check_labels(sentences, labels, where="the data"):
    """Raise ``DataError`` naming the tags of ``sentences`` that are not in ``labels``."""
    known = set(labels)
    unknown = collections.Counter(t for s in sentences for t in s.tags if t not in known)
    if unknown:
        listed = ", ".join(f"{tag!r} ({n}x)" for tag, n in unknown.most_common())
        raise DataError(f"{where} has tags that the training labels do not: {listed}. The label "
                        f"set comes from the training data ({len(labels)} labels: "
                        f"{', '.join(labels)}); add examples of these tags to it or fix them.")


# ---- alignment ------------------------------------------------------------------------------
@dataclasses.dataclass
class AlignedTags:
    """Model inputs and labels of tagged sentences (see :func:`align`).

    ``features``: dict of int32 ``token_ids``, ``segment_ids``, ``padding_mask`` (N, L).
    ``labels`` (N, L) int32 label ids (0 where unlabelled); ``sample_weight`` (N, L) float32,
    1 on labelled pieces; ``word_index`` (N, L) int32, the input word a first piece starts, -1
    elsewhere; ``num_words`` (N,) words per sentence; ``truncated_words`` how many words did not
    fit; ``empty_words`` how many words gave no piece at all.
    """

    features: dict
    labels: np.ndarray
    sample_weight: np.ndarray
    word_index: np.ndarray
    num_words: np.ndarray
    truncated_words: int
    empty_words: int


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
    >>> from keras_bert_lab.datasets import locate
    >>> from keras_bert_lab.text.tokenizer import WordPieceTokenizer
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
            prefix, kind = _split_tag(label)
            continuation[label] = f"I-{kind}" if prefix == "B" and f"I-{kind}" in index else label
    flat = [w for s in sentences for w in s.words]
    pieces = _tokenize_words(tokenizer, flat)
    n = len(sentences)
    token_ids = np.full((n, length), tokenizer.pad_token_id, "int32")
    label_ids = np.zeros((n, length), "int32")
    weights = np.zeros((n, length), "float32")
    word_index = np.full((n, length), -1, "int32")
    padding_mask = np.zeros((n, length), "int32")
    num_words = np.array([len(s.words) for s in sentences], "int32")
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    truncated = empty = 0
    k = 0
    for row, sentence in enumerate(sentences):
        token_ids[row, 0] = cls
        position = 1
        for w, tag in enumerate(sentence.tags):
            word_pieces = pieces[k + w]
            if not word_pieces:
                empty += 1
                continue
            if position >= length - 1:
                truncated += 1
                continue
            take = word_pieces[:length - 1 - position]
            token_ids[row, position:position + len(take)] = take
            label_ids[row, position] = index[tag]
            weights[row, position] = 1.0
            word_index[row, position] = w
            if label_all_pieces and len(take) > 1:
                label_ids[row, position + 1:position + len(take)] = index[continuation[tag]]
                weights[row, position + 1:position + len(take)] = 1.0
            position += len(take)
        token_ids[row, position] = sep
        padding_mask[row, :position + 1] = 1
        k += len(sentence.words)
    features = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                "padding_mask": padding_mask}
    return AlignedTags(features, label_ids, weights, word_index, num_words, truncated, empty)


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


# ---- entities and scores --------------------------------------------------------------------
def _conll_parts(tag):
    # seqeval's reading of a tag: the first character is the chunk tag, the type follows
    # the first "-" (or "_" when there is none).
    return tag[0], tag[1:].split("-", maxsplit=1)[-1] or "_"


def _chunk_ends(prev_tag, tag, prev_type, kind):
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != kind


def _chunk_starts(prev_tag, tag, prev_type, kind):
    if tag in ("B", "S"):
        return True
    if tag in ("E", "I") and prev_tag in ("E", "S", "O"):
        return True
    return tag not in ("O", ".") and prev_type != kind


def entities(tags, mode="conlleval"):
    """The entities of one tag sequence as ``(type, start, end)`` (``end`` inclusive).

    ``mode="conlleval"``: conlleval's chunking rules, as seqeval's default (BIO, IOBES and stray
    ``I-``\\ s all handled the conlleval way). ``mode="strict"``: seqeval's strict IOB2 — ``B-X``
    then any ``I-X``; other ``I-`` tags are no entity; a tag that is not ``B-``/``I-``/``O`` is a
    ``DataError``.

    Example:
    >>> entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC"])
    [('PER', 0, 1), ('LOC', 3, 3), ('LOC', 4, 4)]
    >>> entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC"], mode="strict")
    [('PER', 0, 1), ('LOC', 4, 4)]
    """
    if mode == "strict":
        return _strict_entities(tags)
    if mode != "conlleval":
        raise DataError(f"mode={mode!r}; choose one of {MODES}.")
    found = []
    prev_tag, prev_type, begin = "O", "", 0
    for i, chunk in enumerate(list(tags) + ["O"]):
        tag, kind = _conll_parts(chunk)
        if _chunk_ends(prev_tag, tag, prev_type, kind):
            found.append((prev_type, begin, i - 1))
        if _chunk_starts(prev_tag, tag, prev_type, kind):
            begin = i
        prev_tag, prev_type = tag, kind
    return found


def _strict_entities(tags):
    found, i, tags = [], 0, list(tags)
    parts = []
    for tag in tags:
        if tag == "O":
            parts.append(("O", ""))
        elif tag[:1] == "O":
            parts.append(("O", ""))
        elif tag[:1] in ("B", "I"):
            parts.append((tag[0], tag[1:].strip("-") or "_"))
        else:
            raise DataError(f"Tag {tag!r} is not IOB2 (B-X, I-X or O); strict mode scores IOB2 "
                            "only — use mode='conlleval' for other schemes.")
    while i < len(parts):
        prefix, kind = parts[i]
        if prefix != "B":
            i += 1
            continue
        end = i + 1
        while end < len(parts) and parts[end] == ("I", kind):
            end += 1
        found.append((kind, i, end - 1))
        i = end
    return found


def _ratio(a, b):
    return a / b if b else 0.0


def _prf(tp, predicted, true):
    precision, recall = _ratio(tp, predicted), _ratio(tp, true)
    f1 = _ratio(2 * precision * recall, precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1, "support": true}


def entity_scores(true_tags, predicted_tags, mode="conlleval"):
    """Entity-level precision, recall and F1 of predicted tag sequences (seqeval's numbers).

    An entity counts as found when its type, first and last word all match. Totals are
    micro-averaged; ``per_type`` has the same figures for each type (seqeval's
    ``classification_report``), and ``support`` is the number of true entities.

    Args:
        true_tags, predicted_tags: lists of tag lists, sentence by sentence, of equal lengths.
        mode: ``"conlleval"`` (seqeval's default) or ``"strict"`` (seqeval strict IOB2).

    Example:
    >>> true = [["B-PER", "I-PER", "O", "B-LOC"]]
    >>> scores = entity_scores(true, [["B-PER", "I-PER", "O", "O"]])
    >>> scores["precision"], scores["recall"], round(scores["f1"], 4)
    (1.0, 0.5, 0.6667)
    >>> scores["per_type"]["LOC"]
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'support': 1}
    """
    if len(true_tags) != len(predicted_tags) or any(
            len(t) != len(p) for t, p in zip(true_tags, predicted_tags)):
        raise DataError("true_tags and predicted_tags must have the same number of sentences "
                        "and the same number of tags in each.")
    if mode == "conlleval":
        # seqeval joins the sentences with an "O" between them and chunks the whole stream.
        def stream(sequences):
            return [tag for seq in sequences for tag in list(seq) + ["O"]]
        true_set = set(entities(stream(true_tags)))
        pred_set = set(entities(stream(predicted_tags)))
    else:
        true_set = {(e[0], s, e[1], e[2]) for s, seq in enumerate(true_tags)
                    for e in entities(seq, "strict")}
        pred_set = {(e[0], s, e[1], e[2]) for s, seq in enumerate(predicted_tags)
                    for e in entities(seq, "strict")}
    per_type = {}
    for kind in sorted({e[0] for e in true_set | pred_set}):
        t = {e for e in true_set if e[0] == kind}
        p = {e for e in pred_set if e[0] == kind}
        per_type[kind] = _prf(len(t & p), len(p), len(t))
    total = _prf(len(true_set & pred_set), len(pred_set), len(true_set))
    return {**total, "predicted": len(pred_set), "correct": len(true_set & pred_set),
            "per_type": per_type}
