"""The text format of word vectors: one ``word v1 v2 … vn`` line per word, fields separated by
single spaces, in UTF-8. word2vec (and gensim's ``save_word2vec_format``) put a header line
``count dim`` first; GloVe files have none. A first line of exactly two integer fields is taken
as the header (so a one-dimensional file whose first word is a number reads wrongly — give it a
header).

Reading parses with pyarrow's multi-threaded CSV reader (400,000 × 50 GloVe takes ~2 s); when
that reader refuses a file, a line-by-line pass either reads it (tabs, several spaces, ragged
trailing spaces) or names the file and the line that is wrong. Writing goes to a temporary file
in the same folder, then replaces the target, so a crash never leaves half a file.

Example:

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "tiny.txt")
>>> write_text_format(path, ["cat", "dog"], [[1.0, 0.5], [0.25, -2.0]])
>>> open(path).read()
'2 2\\ncat 1 0.5\\ndog 0.25 -2\\n'
>>> words, matrix = read_text_format(path)
>>> words, matrix.tolist()
(['cat', 'dog'], [[1.0, 0.5], [0.25, -2.0]])
"""

import io
import itertools
import math
import os
import re
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pa_compute
import pyarrow.csv as pa_csv

from keras_bert_lab.errors import ConfigError, DataError

WHITESPACE = re.compile(r"\s")
WRITE_ROWS = 1 << 16   # lines built per pyarrow call (keeps its 32-bit string offsets safe)


def read_text_format(path, limit=None):
    """``(words, float32 matrix (n, dim))`` of a word-vector text file (header optional), at most
    ``limit`` words. Raises :class:`DataError` naming the file and line of a bad line, for an
    empty file, and for a header that promises more lines than the file has."""
    path = os.fspath(path)
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit={limit!r}: give a positive number of words, or None for all.")
    try:
        with open(path, "rb") as f:
            first = f.readline()
            header = _header(first, path)
            if header is None:
                f.seek(0)
            wanted = limit if header is None else min(limit or header[0], header[0])
            lines = list(itertools.islice(f, wanted)) if wanted is not None else None
            data = b"".join(lines) if lines is not None else f.read()
    except FileNotFoundError:
        raise DataError(f"No word-vector file at {path}: check the path.") from None
    start = 2 if header else 1   # line number of the first vector line
    if not data or data.isspace():
        what = "empty but for its header" if header else "empty"
        raise DataError(f"{path} has no word vectors (the file is {what}): write one "
                        "'word v1 … vn' line per word.")
    try:
        words, matrix = _read_fast(data)
    except (pa.ArrowException, ValueError):
        words, matrix = _read_slow(data, path, start)
    if not np.isfinite(matrix).all():   # the slow pass names the line
        words, matrix = _read_slow(data, path, start)
    if header is not None:
        expected = header[0] if limit is None else min(limit, header[0])
        if len(words) < expected:
            raise DataError(f"{path}: the header promises {header[0]} words but the file holds "
                            f"{len(words)}: fix the header's first number or restore the lines.")
        if matrix.shape[1] != header[1]:
            raise DataError(f"{path} line {start}: {matrix.shape[1]} values, but the header "
                            f"says {header[1]} dimensions: fix the header or the vectors.")
    return words, matrix


def _header(first, path):
    """``(count, dim)`` if the first line is a word2vec header, else None."""
    try:
        fields = first.decode("utf-8").split()
    except UnicodeDecodeError:
        raise DataError(f"{path} line 1 is not UTF-8 text: save the file as UTF-8.") from None
    if len(fields) == 2 and all(f.isdigit() for f in fields):
        count, dim = int(fields[0]), int(fields[1])
        if count < 1 or dim < 1:
            raise DataError(f"{path} line 1: header '{first.decode().strip()}' must be two "
                            "positive integers 'count dim'.")
        return count, dim
    return None


def _read_fast(data):
    """pyarrow's CSV reader on space-separated fields; raises on anything irregular."""
    end = data.find(b"\n")
    first_line = (data if end < 0 else data[:end]).rstrip(b"\r")
    dim = len(first_line.rstrip(b" ").split(b" ")) - 1
    trailing = first_line.endswith(b" ")
    names = ["word"] + [f"v{i}" for i in range(dim)] + (["trailing"] * trailing)
    if dim < 1:
        raise ValueError("no values")
    types = {name: pa.float32() for name in names[1:1 + dim]}
    types["word"] = pa.string()
    if trailing:
        types["trailing"] = pa.string()
    table = pa_csv.read_csv(
        pa.BufferReader(data),
        read_options=pa_csv.ReadOptions(column_names=names, block_size=1 << 24),
        parse_options=pa_csv.ParseOptions(delimiter=" ", quote_char=False, escape_char=False,
                                          double_quote=False, ignore_empty_lines=True),
        convert_options=pa_csv.ConvertOptions(column_types=types, null_values=[],
                                               strings_can_be_null=False,
                                               quoted_strings_can_be_null=False))
    if trailing and table.column("trailing").to_pylist() != [""] * table.num_rows:
        raise ValueError("ragged lines")
    columns = [table.column(f"v{i}") for i in range(dim)]
    if any(column.null_count for column in columns):
        raise ValueError("missing values")
    words = table.column("word").to_pylist()
    if "" in words:
        raise ValueError("empty word")
    matrix = np.empty((table.num_rows, dim), "float32")
    for i, column in enumerate(columns):
        matrix[:, i] = column.to_numpy()
    return words, matrix


def _read_slow(data, path, start):
    """Line by line; returns what the fast reader refused, or names the first bad line."""
    words, rows, dim = [], [], None
    for number, raw in enumerate(io.BytesIO(data), start):
        try:
            line = raw.decode("utf-8").rstrip("\r\n").rstrip(" \t")
        except UnicodeDecodeError:
            raise DataError(f"{path} line {number} is not UTF-8 text: save the file as "
                            "UTF-8.") from None
        if not line:
            continue
        fields = re.split("[ \t]+", line)
        if not fields[0]:
            raise DataError(f"{path} line {number} starts with whitespace (an empty word): "
                            "each line is 'word v1 … vn'.")
        if dim is None:
            dim = len(fields) - 1
            if dim < 1:
                raise DataError(f"{path} line {number}: a word with no values; each line is "
                                "'word v1 … vn'.")
        if len(fields) != dim + 1:
            raise DataError(f"{path} line {number}: {len(fields) - 1} values where the first "
                            f"vector line has {dim}: every line needs the same number; fix or "
                            "remove this line.")
        try:
            row = [float(x) for x in fields[1:]]
        except ValueError:
            bad = next(x for x in fields[1:] if not _is_float(x))
            raise DataError(f"{path} line {number}: value {bad!r} is not a number; each line "
                            "is 'word v1 … vn' with numeric values.") from None
        if not all(math.isfinite(x) for x in row):
            raise DataError(f"{path} line {number}: a value is NaN or infinite; fix or remove "
                            "this line.")
        words.append(fields[0])
        rows.append(row)
    return words, np.asarray(rows, "float32").reshape(len(rows), dim or 0)


def _is_float(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_writable_words(words, what):
    """A word that a one-per-line or space-separated file cannot hold raises DataError."""
    if all(words) and not WHITESPACE.search("".join(words)):
        return
    for i, word in enumerate(words):
        if not word or WHITESPACE.search(word):
            raise DataError(f"Word {i} {word!r} is empty or holds whitespace, which the {what} "
                            "cannot store: rename it (e.g. replace spaces with '_').")


def write_atomically(path, write, binary=False):
    """Call ``write(file)`` on a temporary file beside ``path`` (UTF-8 text, or bytes with
    ``binary``), then move it into place."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".",
                                   suffix=".tmp")
    try:
        if binary:
            with os.fdopen(handle, "wb") as f:
                write(f)
        else:
            with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as f:
                write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def write_text_format(path, words, matrix):
    """Write word2vec's text format (header ``count dim``, then ``word v1 … vn`` lines)
    atomically. Values are written in the shortest form that reads back as the same float32
    (pyarrow's float-to-string cast), so GloVe's values keep their digits."""
    matrix = np.asarray(matrix, "float32")
    if matrix.ndim != 2 or matrix.shape[0] != len(words) or not len(words):
        raise DataError(f"{len(words)} words but a matrix of shape {matrix.shape}: give one "
                        "row per word (and at least one word).")
    check_writable_words(words, "text format")

    def write(f):
        f.write(f"{matrix.shape[0]} {matrix.shape[1]}\n".encode())
        for start in range(0, matrix.shape[0], WRITE_ROWS):
            f.write(_text_lines(words[start:start + WRITE_ROWS],
                                matrix[start:start + WRITE_ROWS]))

    write_atomically(path, write, binary=True)


def _text_lines(words, matrix):
    """The UTF-8 bytes of ``word v1 … vn\\n`` lines, built by pyarrow's string kernels."""
    columns = [pa.array(list(words), pa.string())]
    columns += [pa_compute.cast(pa.array(matrix[:, i]), pa.string())
                for i in range(matrix.shape[1])]
    lines = pa_compute.binary_join_element_wise(*columns, " ")
    lines = pa_compute.binary_join_element_wise(lines, "", "\n")   # each line + "\n"
    offsets = np.frombuffer(lines.buffers()[1], "int32")
    first, last = offsets[lines.offset], offsets[lines.offset + len(lines)]
    return memoryview(lines.buffers()[2])[int(first):int(last)]
