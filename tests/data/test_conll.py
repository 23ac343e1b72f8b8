"""CoNLL reading (columns, delimiters, DOCSTART, errors) and label sets."""

import pytest

from keras_bert_lab.data import conll
from keras_bert_lab.data import registry as datasets
from keras_bert_lab.data.conll import TaggedSentence
from keras_bert_lab.data.splits import split
from keras_bert_lab.errors import DataError
from tests.markers import backend_independent

pytestmark = backend_independent


def write(tmp_path, text, name="data.conll"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_read_conll_docstart_whitespace_separators_and_columns(tmp_path):
    text = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n \t \n"
            "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n-DOCSTART- -X- -X- O\n"
            "BRUSSELS NNP B-NP B-LOC")  # no final newline
    path = write(tmp_path, text)
    got = [(s.words, s.tags) for s in conll.read_conll(path)]
    assert got == [(["EU", "rejects"], ["B-ORG", "O"]),
                   (["Peter", "Blackburn"], ["B-PER", "I-PER"]), (["BRUSSELS"], ["B-LOC"])]
    chunks = conll.read_conll(path, token_column=0, tag_column=2)
    assert chunks[1].tags == ["B-NP", "I-NP"]


def test_read_conll_tab_delimiter_keeps_spaces_in_tokens(tmp_path):
    path = write(tmp_path, "New York\tB-LOC\nis\tO\n\n")
    assert conll.read_conll(path, delimiter="\t")[0].words == ["New York", "is"]


def test_read_conll_errors_name_file_and_line(tmp_path):
    path = write(tmp_path, "EU B-ORG\nrejects O\n\nPeter NNP B-PER\n")
    with pytest.raises(DataError, match=r"data\.conll, line 4: 3 columns .* has 2"):
        conll.read_conll(path)
    with pytest.raises(DataError, match="line 1: tag_column=5"):
        conll.read_conll(path, tag_column=5)
    with pytest.raises(DataError, match="does not exist"):
        conll.read_conll(tmp_path / "missing.conll")
    with pytest.raises(DataError, match="no tagged tokens"):
        conll.read_conll(write(tmp_path, "\n \n-DOCSTART- O\n", "empty.conll"))


def test_one_column_file_is_refused_not_read_as_its_own_tags(tmp_path):
    """With one column, the default token (0) and tag (-1) columns are the same column: each word
    would silently become its own tag."""
    path = write(tmp_path, "EU\nrejects\n\nPeter\n")
    with pytest.raises(DataError, match=r"line 1: token_column=0 and tag_column=-1 are the same "
                                        r"column of 1.*--tag-column"):
        conll.read_conll(path)
    with pytest.raises(DataError, match="same column of 2"):
        conll.read_conll(write(tmp_path, "EU B-ORG\n", "two.conll"), token_column=1)


def test_encodings_are_handled_as_by_the_other_readers(tmp_path):
    latin = tmp_path / "latin.conll"
    latin.write_bytes("EU B-ORG\n\nMüller B-PER\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin\.conll, line 3: bytes that are not utf-8.*"
                                        r"--encoding latin-1"):
        conll.read_conll(latin)
    assert conll.read_conll(latin, encoding="latin-1")[1].words == ["Müller"]
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(DataError, match=r"model\.bin, line \d+: bytes that are not utf-8"):
        conll.read_conll(binary)
    bom_crlf = tmp_path / "excel.conll"   # a byte-order mark and Windows line ends
    bom_crlf.write_bytes("\ufeffEU\tB-ORG\r\nrejects\tO\r\n".encode("utf-8"))
    sentence, = conll.read_conll(bom_crlf, delimiter="\t")
    assert (sentence.words, sentence.tags) == (["EU", "rejects"], ["B-ORG", "O"])


def test_read_wnut16_registry_file():
    path = datasets.locate("wnut16")
    sentences = conll.read_conll(path, delimiter="\t")
    lines = path.read_text(encoding="utf-8").split("\n")
    token_lines = [line for line in lines if line.strip()]
    assert len(sentences) == 2394
    assert sum(len(s.words) for s in sentences) == len(token_lines)
    assert sentences[0].words[:3] == ["@paulwalk", "It", "'s"]
    labels = conll.label_list(sentences)
    assert labels[0] == "O" and len(labels) == 21  # O + B/I of 10 types


def test_label_list_and_unknown_tags():
    train = [TaggedSentence(["a", "b", "c"], ["B-x", "O", "I-y"]), TaggedSentence(["d"], ["MISC"])]
    labels = conll.label_list(train)
    assert labels == ["O", "B-x", "I-x", "B-y", "I-y", "MISC"]
    dev = [TaggedSentence(["a", "b"], ["B-z", "B-z"]), TaggedSentence(["c"], ["I-q"])]
    with pytest.raises(DataError, match=r"dev file .*'B-z' \(2x\), 'I-q' \(1x\)"):
        conll.check_labels(dev, labels, where="dev file")


def test_split_is_a_seeded_partition():
    items = list(range(101))
    a = split(items, (0.8, 0.2), seed=3)
    b = split(items, (0.8, 0.2), seed=3)
    assert a == b and len(a[0]) == 81 and sorted(a[0] + a[1]) == items
    assert a != split(items, (0.8, 0.2), seed=4)
    with pytest.raises(DataError):
        split(items, (0.8, 0.3))
