r"""The files users bring: their encoding, and the rows of a CSV, TSV or JSONL table.

:func:`decode_file` reads a file's text (a UTF-8 byte-order mark dropped; bytes that are not the
declared encoding name the line and the ``--encoding`` option); :func:`read_rows` gives a table's
rows as ``{column: value}`` with their line numbers, so that each reader above it (labelled data,
SQuAD, CoNLL, ``kbl`` batch commands) names the line of every problem it finds.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "reviews.csv"
>>> _ = path.write_text("text,label\n\"good, really\",positive\n", encoding="utf-8")
>>> read_rows(path)
[(2, {'text': 'good, really', 'label': 'positive'})]
"""

import csv
import io
import json
import os
import pathlib

from keras_bert_lab.errors import DataError

FORMATS = ("csv", "tsv", "jsonl")


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


def decode_file(path, encoding="utf-8"):
    """The text of the file at ``path`` (without a UTF-8 byte-order mark); bytes that are not
    ``encoding`` raise ``DataError`` naming the line and the ``--encoding`` option."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise DataError(f"{path}, line {line}: bytes that are not {encoding} "
                        f"({data[error.start:error.start + 4]!r}); re-save the file as {encoding} "
                        "or pass its encoding (--encoding latin-1, for instance).") from None
    return text[1:] if text.startswith("\ufeff") else text  # Excel's byte-order mark


def read_rows(path, format=None, encoding="utf-8"):
    """``[(line_number, {column: value})]`` of a CSV/TSV (header row) or JSONL file.

    Raises ``DataError`` for a missing file, bytes that are not ``encoding`` (naming the line),
    a CSV row with more fields than the header, or a JSONL line that is not a JSON object.
    """
    path = os.fspath(path)
    format = detect_format(path, format)
    if not os.path.isfile(path):
        raise DataError(f"Data file {path} does not exist; check the path.")
    text = decode_file(path, encoding)
    if format == "jsonl":
        return _json_rows(path, text)
    return _table_rows(path, text, "," if format == "csv" else "\t")


def _json_rows(path, text):
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line, object_pairs_hook=_unique_keys)
        except ValueError as error:   # JSONDecodeError, or a key given twice
            raise DataError(f"{path}, line {number}: not valid JSON ({getattr(error, 'msg', error)}"
                            "); JSONL needs one JSON object per line.") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}, line {number}: a JSON {type(row).__name__}, not an object; "
                            "JSONL needs one object per line, e.g. {\"text\": ..., \"label\": ...}.")
        rows.append((number, row))
    return rows


def _unique_keys(pairs):
    keys = [key for key, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            raise ValueError(f"the key {key!r} appears more than once")
    return dict(pairs)


def _table_rows(path, text, delimiter):
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header, rows = None, []
    for fields in reader:
        number = reader.line_num
        if not any(field.strip() for field in fields):
            continue
        if header is None:
            header = [field.strip() for field in fields]
            twice = sorted({name for name in header if header.count(name) > 1})
            if twice:
                raise DataError(f"{path}, line {number}: the header names the column(s) "
                                f"{', '.join(map(repr, twice))} more than once ({header}); give "
                                "each column its own name.")
            continue
        if len(fields) > len(header):
            raise DataError(f"{path}, line {number}: {len(fields)} fields but the header has "
                            f"{len(header)} ({header}); quote fields that contain the delimiter "
                            f"{delimiter!r}.")
        fields = fields + [""] * (len(header) - len(fields))   # missing last fields are empty
        rows.append((number, dict(zip(header, fields))))
    if header is None:
        raise DataError(f"{path} is empty; a CSV/TSV needs a header row naming its columns.")
    return rows
