"""Labelled data for fine-tuning: file readers, label vocabularies, registry sets and packing.

GLUE-style fine-tuning data (Wang et al. 2019; BERT §4.1) is a table: one text (SST-2) or a text
pair (MRPC, STS-B, MNLI) and a label — a class name, or a score for regression. Multiple-choice
data (SWAG, BERT §4.4) is a context with C candidate continuations and the index of the right
one. This module reads such tables from CSV, TSV or JSONL files with named columns, turns class
names into ids with a :class:`LabelVocabulary`, loads the two registry sets (Rotten Tomatoes
polarity, the STS Benchmark) and packs texts into BERT inputs with the tokenizer and
:class:`~keras_bert_lab.text.packing.BertPacker`.

Every problem in a file is a ``DataError`` naming the file, the line and the fix: a missing
column (listing the columns present), an empty text, a label outside the label set, a score
that is not a number, bytes that are not in the declared encoding.
"""

import csv
import dataclasses
import io
import json
import os
import pathlib

import numpy as np

from keras_bert_lab.errors import DataError

FORMATS = ("csv", "tsv", "jsonl")


@dataclasses.dataclass
class LabelledData:
    """Texts (and optional second texts) with their raw labels, as read from a file.

    ``labels`` hold what the file says: strings for classes, floats for regression scores, lists
    for multi-label rows (JSONL arrays); ``lines`` the file line of each example (for errors).
    """

    texts: list
    labels: list
    texts_pair: list | None = None
    lines: list | None = None
    source: str = "(in memory)"

    def __len__(self):
        return len(self.texts)

    def subset(self, indices):
        """The examples at ``indices`` (in that order)."""
        pick = lambda values: None if values is None else [values[i] for i in indices]  # noqa
        return LabelledData(pick(self.texts), pick(self.labels), pick(self.texts_pair),
                            pick(self.lines), self.source)


@dataclasses.dataclass
class MultipleChoiceData:
    """Contexts, their candidate choices (C per example) and the index of the right one."""

    contexts: list
    choices: list
    labels: list
    lines: list | None = None
    source: str = "(in memory)"

    def __len__(self):
        return len(self.contexts)

    @property
    def num_choices(self):
        return len(self.choices[0]) if self.choices else 0

    def subset(self, indices):
        pick = lambda values: None if values is None else [values[i] for i in indices]  # noqa
        return MultipleChoiceData(pick(self.contexts), pick(self.choices), pick(self.labels),
                                  pick(self.lines), self.source)


# ---- label vocabulary ------------------------------------------------------------------------
class LabelVocabulary:
    """Class names ↔ ids (id = position in ``names``).

    Args:
        names: the class names, in id order (converted to ``str``; numbers in a CSV are text).

    Example:
    >>> vocab = LabelVocabulary.fit(["pos", "neg", "pos"])
    >>> vocab.names, vocab.encode(["pos", "neg"]).tolist(), vocab.decode([1, 0])
    (['neg', 'pos'], [1, 0], ['pos', 'neg'])
    >>> vocab.encode(["neutral"], source="dev.csv", lines=[7])
    Traceback (most recent call last):
    ...
    keras_bert_lab.errors.DataError: dev.csv, line 7: label 'neutral' is not in the label set ['neg', 'pos']; fix the label or pass the full label set (--labels neg,pos,...).
    """

    def __init__(self, names):
        names = [_label_text(name) for name in names]
        if not names:
            raise DataError("A label vocabulary needs at least one class name.")
        if len(set(names)) != len(names):
            raise DataError(f"Class names must be distinct, got {names}.")
        self.names = names
        self._index = {name: i for i, name in enumerate(names)}

    @classmethod
    def fit(cls, *label_lists):
        """The sorted distinct labels of one or more label lists (lists inside are multi-label
        rows; integer-like names sort numerically, so "10" comes after "9")."""
        seen = set()
        for labels in label_lists:
            for label in labels:
                seen.update(_label_text(x) for x in (label if isinstance(label, list) else [label]))
        numeric = all(_is_int(name) for name in seen)
        return cls(sorted(seen, key=int if numeric else None))

    def __len__(self):
        return len(self.names)

    def encode(self, labels, source="(labels)", lines=None):
        """Ids (int32 NumPy) of single labels; ``DataError`` naming the first unknown one."""
        ids = np.zeros(len(labels), "int32")
        for i, label in enumerate(labels):
            name = _label_text(label)
            if name not in self._index:
                self._unknown(name, source, lines, i)
            ids[i] = self._index[name]
        return ids

    def encode_multi_hot(self, labels, source="(labels)", lines=None):
        """``(N, K)`` float32 multi-hot rows of multi-label rows (each a list of names)."""
        out = np.zeros((len(labels), len(self.names)), "float32")
        for i, row in enumerate(labels):
            for label in (row if isinstance(row, list) else [row]):
                name = _label_text(label)
                if name not in self._index:
                    self._unknown(name, source, lines, i)
                out[i, self._index[name]] = 1.0
        return out

    def decode(self, ids):
        return [self.names[int(i)] for i in ids]

    def _unknown(self, name, source, lines, i):
        where = f"{source}, line {lines[i]}" if lines else f"{source}, example {i}"
        raise DataError(f"{where}: label {name!r} is not in the label set {self.names}; fix the "
                        f"label or pass the full label set (--labels {','.join(self.names)},...).")


def _label_text(label):
    if isinstance(label, float) and label.is_integer():
        label = int(label)
    return str(label).strip()


def _is_int(text):
    try:
        int(text)
        return True
    except ValueError:
        return False


# ---- readers ---------------------------------------------------------------------------------
def detect_format(path, format=None):
    """``"csv"``, ``"tsv"`` or ``"jsonl"``: ``format`` if given, else from the file extension."""
    if format is not None:
        if format not in FORMATS:
            raise DataError(f"format={format!r}; choose one of {FORMATS}.")
        return format
    suffix = pathlib.Path(path).suffix.lower().lstrip(".")
    guess = {"csv": "csv", "tsv": "tsv", "tab": "tsv", "jsonl": "jsonl", "json": "jsonl",
             "ndjson": "jsonl"}.get(suffix)
    if guess is None:
        raise DataError(f"Cannot tell the format of {path} from its extension {suffix!r}; name it "
                        f".csv, .tsv or .jsonl, or pass format= (--format) one of {FORMATS}.")
    return guess


def read_rows(path, format=None, encoding="utf-8"):
    """``[(line_number, {column: value})]`` of a CSV/TSV (header row) or JSONL file.

    Raises ``DataError`` for a missing file, bytes that are not ``encoding`` (naming the line),
    a CSV row with more fields than the header, or a JSONL line that is not a JSON object.
    """
    path = os.fspath(path)
    format = detect_format(path, format)
    if not os.path.isfile(path):
        raise DataError(f"Data file {path} does not exist; check the path.")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise DataError(f"{path}, line {line}: bytes that are not {encoding} "
                        f"({data[error.start:error.start + 4]!r}); re-save the file as {encoding} "
                        "or pass its encoding (--encoding latin-1, for instance).") from None
    if text.startswith("\ufeff"):
        text = text[1:]  # a UTF-8 byte-order mark (Excel)
    if format == "jsonl":
        return _json_rows(path, text)
    return _table_rows(path, text, "," if format == "csv" else "\t")


def _json_rows(path, text):
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(f"{path}, line {number}: not valid JSON ({error.msg}); JSONL needs one "
                            "JSON object per line.") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}, line {number}: a JSON {type(row).__name__}, not an object; "
                            "JSONL needs one object per line, e.g. {\"text\": ..., \"label\": ...}.")
        rows.append((number, row))
    return rows


def _table_rows(path, text, delimiter):
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header, rows = None, []
    for fields in reader:
        number = reader.line_num
        if not any(field.strip() for field in fields):
            continue
        if header is None:
            header = [field.strip() for field in fields]
            continue
        if len(fields) > len(header):
            raise DataError(f"{path}, line {number}: {len(fields)} fields but the header has "
                            f"{len(header)} ({header}); quote fields that contain the delimiter "
                            f"{delimiter!r}.")
        rows.append((number, dict(zip(header, fields))))
    if header is None:
        raise DataError(f"{path} is empty; a CSV/TSV needs a header row naming its columns.")
    return rows


def _column(path, number, row, column, option):
    if column not in row:
        raise DataError(f"{path}, line {number}: no column {column!r} (columns: {sorted(row)}); "
                        f"name the right one with {option}.")
    return row[column]


def _text(path, number, row, column, option):
    value = _column(path, number, row, column, option)
    if not isinstance(value, str):
        raise DataError(f"{path}, line {number}: column {column!r} holds "
                        f"{type(value).__name__} {value!r}, not text.")
    if not value.strip():
        raise DataError(f"{path}, line {number}: column {column!r} is empty; remove the line or "
                        "fill in the text.")
    return value


def read_labelled(path, text_column="text", text_pair_column=None, label_column="label",
                  format=None, encoding="utf-8", regression=False):
    """Read a labelled text (or text-pair) file into :class:`LabelledData`.

    Args:
        path: a ``.csv``, ``.tsv`` (header row) or ``.jsonl`` file.
        text_column, text_pair_column, label_column: the column names (no pair by default).
        format: override the format guessed from the extension.
        encoding: the file's text encoding.
        regression: labels are scores (floats); otherwise class names (strings, or lists of
            names for multi-label rows in JSONL).

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp(), "train.tsv")
    >>> _ = path.write_text("sentence\\tscore\\nA fine film.\\t3.5\\nBad.\\t-2\\n")
    >>> data = read_labelled(path, text_column="sentence", label_column="score", regression=True)
    >>> data.texts, data.labels, data.lines
    (['A fine film.', 'Bad.'], [3.5, -2.0], [2, 3])
    """
    path = os.fspath(path)
    rows = read_rows(path, format, encoding)
    if not rows:
        raise DataError(f"{path} holds no examples.")
    texts, pairs, labels, lines = [], [] if text_pair_column else None, [], []
    for number, row in rows:
        texts.append(_text(path, number, row, text_column, "--text-column"))
        if text_pair_column:
            pairs.append(_text(path, number, row, text_pair_column, "--text-pair-column"))
        label = _column(path, number, row, label_column, "--label-column")
        if regression:
            try:
                label = float(label)
            except (TypeError, ValueError):
                raise DataError(f"{path}, line {number}: score {label!r} in column "
                                f"{label_column!r} is not a number (regression needs numbers)."
                                ) from None
            if not np.isfinite(label):
                raise DataError(f"{path}, line {number}: score {label!r} is not finite.")
        elif label is None or (isinstance(label, str) and not label.strip()):
            raise DataError(f"{path}, line {number}: column {label_column!r} is empty; every "
                            "example needs a label.")
        labels.append(label)
        lines.append(number)
    return LabelledData(texts, labels, pairs, lines, path)


def read_multiple_choice(path, context_column="context", choices_column="choices",
                         label_column="label", encoding="utf-8"):
    """Read a JSONL multiple-choice file: ``{"context": str, "choices": [str, ...], "label": int}``.

    Every example must have the same number of choices (at least 2) and a label that indexes one
    of them (an int, or the text of a choice).

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp(), "swag.jsonl")
    >>> _ = path.write_text('{"context": "He opens the door", "choices": ["and walks in.", '
    ...                     '"and eats it."], "label": 0}\\n')
    >>> data = read_multiple_choice(path)
    >>> data.num_choices, data.labels
    (2, [0])
    """
    path = os.fspath(path)
    rows = read_rows(path, "jsonl", encoding)
    if not rows:
        raise DataError(f"{path} holds no examples.")
    contexts, choices, labels, lines = [], [], [], []
    for number, row in rows:
        contexts.append(_text(path, number, row, context_column, "--context-column"))
        options = _column(path, number, row, choices_column, "--choices-column")
        if not isinstance(options, list) or len(options) < 2:
            raise DataError(f"{path}, line {number}: column {choices_column!r} must be a list of "
                            f"at least 2 texts, got {options!r}.")
        for j, option in enumerate(options):
            if not isinstance(option, str) or not option.strip():
                raise DataError(f"{path}, line {number}: choice {j} is empty or not text "
                                f"({option!r}).")
        if choices and len(options) != len(choices[0]):
            raise DataError(f"{path}, line {number}: {len(options)} choices but line {lines[0]} "
                            f"has {len(choices[0])}; every example needs the same number.")
        label = _column(path, number, row, label_column, "--label-column")
        if isinstance(label, str) and label in options:
            label = options.index(label)
        elif isinstance(label, str) and _is_int(label):
            label = int(label)
        if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(options):
            raise DataError(f"{path}, line {number}: label {label!r} is not a choice index in "
                            f"[0, {len(options)}) nor the text of a choice.")
        choices.append(list(options))
        labels.append(label)
        lines.append(number)
    return MultipleChoiceData(contexts, choices, labels, lines, path)


# ---- registry sets ---------------------------------------------------------------------------
def split_indices(n, seed=0, fractions=(0.8, 0.1, 0.1)):
    """A fixed shuffled split of ``range(n)`` into len(fractions) parts (train, valid, test).

    Example:
    >>> [len(part) for part in split_indices(10)]
    [8, 1, 1]
    """
    if abs(sum(fractions) - 1.0) > 1e-9 or any(f < 0 for f in fractions):
        raise DataError(f"Split fractions must be non-negative and sum to 1, got {fractions}.")
    order = np.random.default_rng(seed).permutation(n)
    bounds = np.round(np.cumsum((0.0,) + tuple(fractions)) * n).astype(int)
    return [order[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]


RT_LABELS = ("negative", "positive")


def load_rotten_tomatoes(seed=0, fractions=(0.8, 0.1, 0.1), path=None):
    """Rotten Tomatoes polarity: ``{"train", "valid", "test"}`` of :class:`LabelledData`.

    Hutto & Gilbert's (ICWSM 2014) 10,605 movie-review snippets — the sentences SST was built
    from — each with the mean of human ratings in [−4, 4]. The sign gives the polarity label
    (``"negative"``/``"positive"``); the 37 snippets rated exactly 0 are dropped. The file is
    latin-1 TSV (id, sentiment, text) and its text contains bare quotes, so lines are split on
    tabs without CSV quoting. The split is a fixed shuffle by ``seed`` (80/10/10 by default).

    Example:
    >>> parts = load_rotten_tomatoes()
    >>> [len(parts[k]) for k in ("train", "valid", "test")]
    [8454, 1057, 1057]
    >>> sorted(set(parts["train"].labels))
    ['negative', 'positive']
    """
    from keras_bert_lab.datasets import locate

    path = os.fspath(path or locate("rotten_tomatoes"))
    with open(path, "rb") as f:
        lines = f.read().decode("latin-1").splitlines()
    texts, labels, numbers = [], [], []
    for number, line in enumerate(lines, start=1):
        if number == 1 or not line.strip():
            continue  # header: id, sentiment, text
        fields = line.split("\t", 2)
        if len(fields) != 3:
            raise DataError(f"{path}, line {number}: expected 3 tab-separated fields (id, "
                            f"sentiment, text), got {len(fields)}.")
        try:
            score = float(fields[1])
        except ValueError:
            raise DataError(f"{path}, line {number}: sentiment {fields[1]!r} is not a number."
                            ) from None
        if score == 0 or not fields[2].strip():
            continue
        texts.append(fields[2].strip())
        labels.append(RT_LABELS[int(score > 0)])
        numbers.append(number)
    data = LabelledData(texts, labels, None, numbers, path)
    return dict(zip(("train", "valid", "test"),
                    (data.subset(part) for part in split_indices(len(data), seed, fractions))))


def load_stsb(part="train", path=None):
    """The STS Benchmark (Cer et al. 2017) ``part`` (train/dev/test): sentence pairs with a
    similarity score in [0, 5] (``labels``, floats).

    The files are tab-separated: genre, file, year, id, score (field 4), sentence 1 and 2 (fields
    5 and 6); some lines carry extra columns after them (their sources), which are ignored. No
    CSV quoting: sentences contain bare quotes.

    Example:
    >>> dev = load_stsb("dev")
    >>> len(dev), dev.labels[0], dev.texts[0], dev.texts_pair[0]
    (1500, 5.0, 'A man with a hard hat is dancing.', 'A man wearing a hard hat is dancing.')
    """
    from keras_bert_lab.datasets import locate

    path = os.fspath(path or locate("stsb", part))
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8").splitlines()
    texts, pairs, scores, numbers = [], [], [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 7:
            raise DataError(f"{path}, line {number}: expected at least 7 tab-separated fields "
                            f"(genre, file, year, id, score, sentence 1, sentence 2), got "
                            f"{len(fields)}.")
        try:
            score = float(fields[4])
        except ValueError:
            raise DataError(f"{path}, line {number}: score {fields[4]!r} is not a number.") \
                from None
        texts.append(fields[5].strip())
        pairs.append(fields[6].strip())
        scores.append(score)
        numbers.append(number)
    return LabelledData(texts, scores, pairs, numbers, path)


DATASETS = {"rotten_tomatoes": "single sentences, labels negative/positive (80/10/10 split)",
            "stsb": "sentence pairs, similarity scores 0-5 (train/dev/test)"}


def load_dataset(name, seed=0):
    """A named set as ``{"train", "valid", "test"}`` of :class:`LabelledData`."""
    if name == "rotten_tomatoes":
        return load_rotten_tomatoes(seed=seed)
    if name == "stsb":
        return {"train": load_stsb("train"), "valid": load_stsb("dev"), "test": load_stsb("test")}
    raise DataError(f"Unknown labelled data set {name!r}; known: {sorted(DATASETS)} (or pass your "
                    "own files with --train/--valid/--test).")


# ---- packing ---------------------------------------------------------------------------------
def pack_texts(tokenizer, texts, texts_pair=None, sequence_length=128, chunk_size=2048):
    """Packed BERT inputs ``{token_ids, segment_ids, padding_mask}``, NumPy int32 ``(N, L)``.

    Single texts pack as ``[CLS] A [SEP]``, pairs as ``[CLS] A [SEP] B [SEP]`` (longest-first
    truncation, as Hugging Face's tokenizers do). Texts go through the in-graph tokenizer in
    chunks, so tens of thousands take seconds.

    Example:
    >>> from keras_bert_lab.datasets import locate
    >>> from keras_bert_lab.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> out = pack_texts(tokenizer, ["Is it?"], ["Yes."], sequence_length=8)
    >>> out["token_ids"].tolist(), out["segment_ids"].tolist()
    ([[101, 2003, 2009, 1029, 102, 2748, 1012, 102]], [[0, 0, 0, 0, 0, 1, 1, 1]])
    """
    import tensorflow as tf

    from keras_bert_lab.text.packing import BertPacker

    texts = [texts] if isinstance(texts, str) else list(texts)
    if texts_pair is not None:
        texts_pair = [texts_pair] if isinstance(texts_pair, str) else list(texts_pair)
        if len(texts_pair) != len(texts):
            raise DataError(f"{len(texts)} texts but {len(texts_pair)} second texts; pairs need "
                            "one second text per text.")
    packer = BertPacker.from_tokenizer(tokenizer, sequence_length)
    parts = []
    for start in range(0, len(texts), chunk_size):
        first = tokenizer(tf.constant(texts[start:start + chunk_size], tf.string))
        second = None if texts_pair is None else tokenizer(
            tf.constant(texts_pair[start:start + chunk_size], tf.string))
        parts.append({k: v.numpy() for k, v in packer.pack(first, second).items()})
    if not parts:
        return {k: np.zeros((0, sequence_length), "int32")
                for k in ("token_ids", "segment_ids", "padding_mask")}
    return {k: np.concatenate([p[k] for p in parts]).astype("int32") for k in parts[0]}


def pack_choices(tokenizer, contexts, choices, sequence_length=128):
    """Multiple-choice inputs: each context paired with each of its C choices, ``(N, C, L)``.

    Example:
    >>> from keras_bert_lab.datasets import locate
    >>> from keras_bert_lab.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> out = pack_choices(tokenizer, ["He sat"], [["down.", "up.", "still."]], sequence_length=8)
    >>> out["token_ids"].shape
    (1, 3, 8)
    """
    contexts = list(contexts)
    if len(choices) != len(contexts):
        raise DataError(f"{len(contexts)} contexts but {len(choices)} choice lists.")
    counts = {len(c) for c in choices}
    if len(counts) > 1:
        raise DataError(f"Examples have different numbers of choices ({sorted(counts)}); every "
                        "example needs the same number.")
    c = counts.pop() if counts else 0
    flat = pack_texts(tokenizer, [ctx for ctx in contexts for _ in range(c)],
                      [option for options in choices for option in options], sequence_length)
    return {k: v.reshape(len(contexts), c, -1) for k, v in flat.items()}
