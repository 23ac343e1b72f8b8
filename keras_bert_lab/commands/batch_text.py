"""What ``kbl predict`` and ``kbl embed`` share: texts from a file, through a model, to a file.

- :func:`read_inputs` reads the texts (and optional second texts) of a plain text file (one text
  per line; blank lines skipped) or of a CSV/TSV/JSONL table with named columns (the table
  readers of :mod:`keras_bert_lab.data.tables`), with an id per text: the ``--id-column``, an
  ``id`` column when the table has one, else the line number.
- :func:`run_batches` tokenizes the texts in chunks with the preset's
  :class:`~keras_bert_lab.models.bert.preprocessor.BertTextPreprocessor`, sorts each chunk by length so
  that a batch is cut to its own longest text (``Task.predict_packed``) rather than padded to the
  longest of the file, runs the model batch by batch under a tqdm bar and returns the outputs in
  input order with the seconds spent tokenizing and in the model.
- :func:`check_output` refuses to replace a file without ``--overwrite`` and :func:`atomic_file`
  writes through a temporary sibling, so a failed run never leaves a half-written file.

Every problem is a one-line :class:`~keras_bert_lab.errors.KblError` naming the file, the line or
the column and the fix, raised before a model is built.

Example:
>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp(), "reviews.csv")
>>> _ = path.write_text("id,review\\nr1,A fine film.\\nr2,Dull.\\n")
>>> inputs = read_inputs(path, text_column="review")
>>> inputs.ids, inputs.texts
(['r1', 'r2'], ['A fine film.', 'Dull.'])
>>> read_inputs(path)
Traceback (most recent call last):
...
keras_bert_lab.errors.DataError: ...reviews.csv, line 2: no column 'text' (columns: id, review)...
"""

import contextlib
import dataclasses
import os
import pathlib
import tempfile
import time

import numpy as np

from keras_bert_lab import families
from keras_bert_lab.data import tables
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.presets import registry

FORMATS = ("text",) + tables.FORMATS
TEXT_SUFFIXES = ("", ".txt", ".text")


@dataclasses.dataclass
class Inputs:
    """Texts read from a file: ``ids`` (strings), ``texts``, ``pairs`` (second texts or ``None``),
    ``lines`` (file line of each text), ``source`` (the path) and ``columns`` (a table's column
    names; ``None`` for plain text)."""

    ids: list
    texts: list
    pairs: list | None
    lines: list
    source: str
    columns: list | None = None

    def __len__(self):
        return len(self.texts)


def input_format(path, format=None):
    """``"text"``, ``"csv"``, ``"tsv"`` or ``"jsonl"``: ``format``, else from the extension."""
    if format is not None:
        if format not in FORMATS:
            raise DataError(f"--format {format!r}; choose one of {', '.join(FORMATS)}.")
        return format
    if pathlib.Path(path).suffix.lower() in TEXT_SUFFIXES:
        return "text"
    try:
        return tables.detect_format(path)
    except DataError:
        raise DataError(f"Cannot tell the format of {path} from its extension; name it .txt (one "
                        "text per line), .csv, .tsv or .jsonl, or pass --format "
                        f"{'|'.join(FORMATS)}.") from None


def add_reading_arguments(p):
    """The input flags ``kbl predict`` and ``kbl embed`` share."""
    p.add_argument("--id-column", default=None,
                   help="table column of ids (default: id when present, else line numbers)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="input format (default: from the extension)")
    p.add_argument("--encoding", default="utf-8", help="text encoding of the input")
    p.add_argument("--batch-size", type=int, default=32, help="texts per forward pass")


def _read_text_file(path, encoding):
    if not os.path.isfile(path):
        raise DataError(f"Input file {path} does not exist (or is not a file); check the path.")
    text = tables.decode_file(path, encoding)
    return [(number, line) for number, line in enumerate(text.splitlines(), start=1)
            if line.strip()]


def _cell(path, number, row, column, flag):
    if column not in row:
        raise DataError(f"{path}, line {number}: no column {column!r} (columns: "
                        f"{', '.join(map(str, row))}); name the right one with {flag}.")
    value = row[column]
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{path}, line {number}: column {column!r} holds {value!r}, not a "
                        "text; fill it in or remove the line.")
    return value


def read_inputs(path, text_column="text", pair_column=None, id_column=None, format=None,
                encoding="utf-8"):
    """Read the texts of ``path`` into :class:`Inputs` (see the module docstring).

    Args:
        path: a plain text file (``.txt`` or no extension: one text per line) or a ``.csv``,
            ``.tsv`` (header row) or ``.jsonl`` table.
        text_column, pair_column: a table's column of the (first) text and of the second text
            (``None``: single texts). A plain text file has no second texts.
        id_column: a table's column of ids; default ``"id"`` when present, else line numbers.
        format: override the format guessed from the extension (:data:`FORMATS`).
        encoding: the file's text encoding.
    """
    path = os.fspath(path)
    kind = input_format(path, format)
    if kind == "text":
        if pair_column:
            raise DataError(f"{path} is plain text (one text per line) and has no second texts; "
                            "give sentence pairs as a CSV/TSV/JSONL table with two text columns.")
        rows = _read_text_file(path, encoding)
        if not rows:
            raise DataError(f"{path} holds no texts (it is empty or blank); write one text per "
                            "line.")
        return Inputs([str(n) for n, _ in rows], [t for _, t in rows], None,
                      [n for n, _ in rows], path)
    rows = tables.read_rows(path, kind, encoding)   # a missing file: DataError there
    if not rows:
        raise DataError(f"{path} holds no rows (only a header, or nothing); add one row per text.")
    columns = list(dict.fromkeys(c for _, row in rows for c in row))
    if id_column is not None and id_column not in columns:
        raise DataError(f"{path}: no column {id_column!r} (columns: {', '.join(columns)}); name "
                        "the right one with --id-column.")
    id_column = id_column or ("id" if "id" in columns and "id" not in (text_column, pair_column)
                              else None)
    ids, texts, pairs, lines = [], [], [] if pair_column else None, []
    for number, row in rows:
        texts.append(_cell(path, number, row, text_column, "--text-column"))
        if pair_column:
            pairs.append(_cell(path, number, row, pair_column, "--pair-column"))
        ids.append(str(row.get(id_column, number)) if id_column else str(number))
        lines.append(number)
    return Inputs(ids, texts, pairs, lines, path, columns)


def check_preset_for(preset, use, command):
    """The checked :class:`~keras_bert_lab.presets.format.Preset`; ``ConfigError`` unless its
    family serves ``use`` (``"predict"``, ``"embed"``, ``"fill-mask"``: its registry entry's
    ``exports``)."""
    checked = registry.read_preset(preset)
    if use not in checked.family.exports:
        able = [f.label for f in families.FAMILIES if use in f.exports]
        raise ConfigError(f"Preset {preset} has a {checked.backbone_class}; {command} reads "
                          f"{' and '.join(able)} presets (a {' or '.join(able)} backbone with "
                          "its vocabulary), e.g. minilm_l6_en_uncased or the preset/ folder of "
                          "`kbl finetune` or `kbl pretrain`.")
    return checked


def sequence_length(preset, requested, pair=False):
    """``requested``, else the preset's recorded length (else 128, or fewer when the position
    table is shorter), checked against the model's position table and the
    ``[CLS] A [SEP] (B [SEP])`` frame."""
    longest = int(preset.config.get("max_positions", 512))
    length = requested or int((preset.preprocessor or {}).get("sequence_length",
                                                              min(128, longest)))
    shortest = 3 if pair else 2
    if not shortest <= length <= longest:
        raise ConfigError(f"--sequence-length {length} is out of range for this preset: "
                          f"[CLS] A [SEP]{' B [SEP]' if pair else ''} needs at least {shortest} "
                          f"and its position table has {longest} rows.")
    return length


def check_output(path, overwrite, suffixes):
    """``path`` as a ``pathlib.Path`` if it may be written: ``suffixes`` names the allowed
    extensions; an existing file is replaced only with ``overwrite``, a folder never."""
    path = pathlib.Path(path).expanduser()
    if path.suffix.lower() not in suffixes:
        raise ConfigError(f"--output {path}: the extension says the format; use "
                          f"{' or '.join(suffixes)}.")
    if path.is_dir():
        raise ConfigError(f"--output {path} is a folder; give a file name ending in "
                          f"{' or '.join(suffixes)}.")
    if path.exists() and not overwrite:
        raise ConfigError(f"--output {path} already exists; pass --overwrite to replace it, or "
                          "choose another name.")
    if not path.parent.is_dir():
        raise ConfigError(f"--output {path}: the folder {path.parent} does not exist; create it "
                          "first.")
    return path


@contextlib.contextmanager
def atomic_file(path, mode="w"):
    """Yield a file object on a temporary sibling of ``path``, renamed onto ``path`` on success
    and removed on any error (a failed run leaves no partial file). A failed write (a full disk,
    no permission) is a one-line ``DataError``."""
    path = pathlib.Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8",
                                                              "newline": ""})) as f:
            yield f
        os.replace(tmp, path)
    except BaseException as error:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.remove(tmp)
        if isinstance(error, OSError):
            raise DataError(f"Could not write {path}: {error.strerror or error}; free some space "
                            "or choose another --output (nothing was left behind).") from None
        raise


def run_batches(predict, preprocessor, texts, pairs=None, batch_size=32, quiet=False,
                desc="texts", chunk_size=4096):
    """``(outputs, seconds)``: ``predict(features)`` over every text, in input order.

    Texts are tokenized ``chunk_size`` at a time (a multiple of ``batch_size``); each chunk is
    sorted by token count, longest first, so that batches of similar lengths cut their padding
    (and the first batch compiles the largest shape); a short last batch is filled up to
    ``batch_size`` with copies of its last row. ``predict`` takes a dict of packed ``(b, L)``
    int32 arrays and returns a NumPy array with ``b`` rows (e.g. ``model.predict_packed``).
    ``seconds`` holds ``tokenize``, ``model`` and ``total``.
    """
    from tqdm.auto import tqdm

    if batch_size < 1:
        raise ConfigError(f"--batch-size {batch_size}: give a positive number.")
    n = len(texts)
    chunk_size = max(batch_size, chunk_size // batch_size * batch_size)
    outputs, seconds, start = None, {"tokenize": 0.0, "model": 0.0}, time.perf_counter()
    with tqdm(total=n, unit=" texts", desc=desc, disable=quiet, mininterval=0.5,
              dynamic_ncols=True) as bar:
        for begin in range(0, n, chunk_size):
            tick = time.perf_counter()
            end = min(n, begin + chunk_size)
            features = preprocessor(texts[begin:end], None if pairs is None else pairs[begin:end])
            order = np.argsort(-features["padding_mask"].sum(-1), kind="stable")
            seconds["tokenize"] += time.perf_counter() - tick
            for first in range(0, len(order), batch_size):
                rows = order[first:first + batch_size]
                # A short last batch repeats its last row up to batch_size: a shape compiled
                # already (on JAX and TensorFlow a new one costs about a second of compiling).
                full = rows if n < batch_size else np.concatenate(
                    [rows, np.repeat(rows[-1:], batch_size - len(rows))])
                tick = time.perf_counter()
                out = np.asarray(predict({k: v[full] for k, v in features.items()}))[:len(rows)]
                seconds["model"] += time.perf_counter() - tick
                if outputs is None:
                    outputs = np.zeros((n,) + out.shape[1:], out.dtype)
                outputs[begin + rows] = out
                bar.update(len(rows))
    seconds["total"] = time.perf_counter() - start
    return outputs, seconds


def throughput(count, seconds, started):
    """One line: texts per second from ``started`` (after loading the model) to now, and where
    the time went."""
    wall = time.perf_counter() - started
    return (f"{count:,} texts in {wall:.1f} s: {count / max(wall, 1e-9):,.1f} sentences/s "
            f"(model {seconds['model']:.1f} s, tokenization {seconds['tokenize']:.1f} s, "
            f"writing {max(0.0, wall - seconds['total']):.1f} s)")
