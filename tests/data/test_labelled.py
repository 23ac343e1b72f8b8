"""Labelled-data readers, label vocabularies, the registry sets and packing."""

import json

import numpy as np
import pytest

from keras_bert_lab.data import labelled as ld
from keras_bert_lab.data.labels import LabelVocabulary
from keras_bert_lab.data.registry import locate
from keras_bert_lab.data.splits import split, split_indices
from keras_bert_lab.errors import DataError
from tests.markers import backend_independent

pytestmark = backend_independent


def write(tmp_path, name, text, encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


# ---- readers ---------------------------------------------------------------------------------
def test_csv_tsv_and_jsonl_read_the_same_examples(tmp_path):
    csv_path = write(tmp_path, "a.csv", '\ufefftext,label\n"Good, really",pos\n\nBad.,neg\n')
    tsv_path = write(tmp_path, "a.tsv", 'text\tlabel\nGood, really\tpos\nBad.\tneg\n')
    jsonl_path = write(tmp_path, "a.jsonl", '{"text": "Good, really", "label": "pos"}\n\n'
                                            '{"text": "Bad.", "label": "neg"}\n')
    for path, lines in ((csv_path, [2, 4]), (tsv_path, [2, 3]), (jsonl_path, [1, 3])):
        data = ld.read_labelled(path)
        assert data.texts == ["Good, really", "Bad."] and data.labels == ["pos", "neg"]
        assert data.lines == lines and data.texts_pair is None


def test_pairs_and_regression_scores(tmp_path):
    path = write(tmp_path, "p.jsonl", json.dumps({"s1": "A", "s2": "B", "score": 4.2}) + "\n")
    data = ld.read_labelled(path, "s1", "s2", "score", regression=True)
    assert (data.texts, data.texts_pair, data.labels) == (["A"], ["B"], [4.2])


@pytest.mark.parametrize("name,text,kwargs,match", [
    ("a.csv", "sentence,label\nhi,pos\n", {}, r"a\.csv, line 2: no column 'text' \(columns: "
                                              r"\['label', 'sentence'\]\); .*--text-column"),
    ("a.csv", "text,label\nhi,pos\n", {"text_pair_column": "b"}, "--text-pair-column"),
    ("a.tsv", "text\tlabel\nhi\tpos\n  \tneg\n", {}, r"line 3: column 'text' is empty"),
    ("a.csv", "text,label\nhi,\n", {}, r"line 2: column 'label' is empty"),
    ("a.csv", "text,label\nhi,pos,extra\n", {}, r"line 2: 3 fields but the header has 2"),
    ("a.csv", "text,label\nhi,high\n", {"regression": True}, r"line 2: score 'high'.*not a number"),
    ("a.csv", "text,label\nhi,nan\n", {"regression": True}, r"line 2: score .* not finite"),
    ("a.jsonl", '{"text": "hi", "label": 1}\n[1, 2]\n', {}, r"line 2: a JSON list, not an object"),
    ("a.jsonl", '{"text": "hi", "label": 1}\n{"text": \n', {}, r"line 2: not valid JSON"),
    ("a.jsonl", '{"text": 5, "label": 1}\n', {}, r"line 1: column 'text' holds int"),
    ("a.txt", "text,label\n", {}, r"extension 'txt'.*--format"),
    ("a.csv", "", {}, r"is empty; a CSV/TSV needs a header"),
    ("a.csv", "text,label\n", {}, r"holds no examples"),
])
def test_reader_errors_name_file_line_and_fix(tmp_path, name, text, kwargs, match):
    path = write(tmp_path, name, text)
    with pytest.raises(DataError, match=match):
        ld.read_labelled(path, **kwargs)


def test_bad_encoding_names_the_line_and_the_option(tmp_path):
    path = write(tmp_path, "a.tsv", "text\tlabel\nfine\tpos\ncaf\u00e9\tneg\n", encoding="latin-1")
    with pytest.raises(DataError, match=r"a\.tsv, line 3: bytes that are not utf-8.*--encoding"):
        ld.read_labelled(path)
    assert ld.read_labelled(path, encoding="latin-1").texts[1] == "caf\u00e9"


def test_missing_file_and_explicit_format(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        ld.read_labelled(tmp_path / "nope.csv")
    path = write(tmp_path, "data.txt", "text\tlabel\nhi\tpos\n")
    assert ld.read_labelled(path, format="tsv").labels == ["pos"]


# ---- labels ----------------------------------------------------------------------------------
def test_label_vocabulary():
    vocab = LabelVocabulary.fit(["10", "9", 2.0], [["9"]])
    assert vocab.names == ["2", "9", "10"]           # integer-like names sort as numbers
    assert vocab.encode([10, "2"]).tolist() == [2, 0]
    np.testing.assert_array_equal(vocab.encode_multi_hot([["9", "10"], "2"]),
                                  [[0, 1, 1], [1, 0, 0]])
    with pytest.raises(DataError, match=r"dev\.csv, line 4: label 'x' is not in the label set "
                                        r"\['2', '9', '10'\]"):
        vocab.encode(["2", "x"], source="dev.csv", lines=[3, 4])
    with pytest.raises(DataError, match="distinct"):
        LabelVocabulary(["a", "a"])


# ---- multiple choice -------------------------------------------------------------------------
def test_multiple_choice_reader(tmp_path):
    rows = [{"context": "He sat", "choices": ["down.", "up."], "label": 1},
            {"context": "She ran", "choices": ["fast.", "slow."], "label": "fast."},
            {"context": "It fell", "choices": ["over.", "up."], "label": "0"}]
    path = write(tmp_path, "mc.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    data = ld.read_multiple_choice(path)
    assert data.labels == [1, 0, 0] and data.num_choices == 2 and data.lines == [1, 2, 3]


@pytest.mark.parametrize("rows,match", [
    ([{"context": "a", "choices": ["x", "y"], "label": 0},
      {"context": "b", "choices": ["x", "y", "z"], "label": 0}], r"line 2: 3 choices but line 1 has 2"),
    ([{"context": "a", "choices": ["x", "y"], "label": 2}], r"line 1: label 2 is not a choice"),
    ([{"context": "a", "choices": ["x"], "label": 0}], r"at least 2 texts"),
    ([{"context": "a", "choices": ["x", ""], "label": 0}], r"choice 1 is empty"),
    ([{"context": "a", "options": ["x", "y"], "label": 0}], r"no column 'choices'.*--choices-column"),
])
def test_multiple_choice_errors(tmp_path, rows, match):
    path = write(tmp_path, "mc.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(DataError, match=match):
        ld.read_multiple_choice(path)


# ---- registry sets ---------------------------------------------------------------------------
def test_rotten_tomatoes_polarity_and_split():
    parts = ld.load_dataset("rotten_tomatoes", seed=0)
    # An independent read of the file: the sign of the mean rating, zeros dropped.
    raw = locate("rotten_tomatoes").read_bytes().decode("latin-1").splitlines()[1:]
    expected = {}
    for line in raw:
        _, score, text = line.split("\t", 2)
        if float(score) != 0:
            expected[text.strip()] = "positive" if float(score) > 0 else "negative"
    total = sum(len(p) for p in parts.values())
    assert total == 10605 - 37
    assert [len(parts[k]) for k in ("train", "valid", "test")] == [8454, 1057, 1057]
    for part in parts.values():
        assert all(expected[t] == label for t, label in zip(part.texts, part.labels))
    lines = [set(p.lines) for p in parts.values()]
    assert not (lines[0] & lines[1] or lines[0] & lines[2] or lines[1] & lines[2])
    assert ld.load_dataset("rotten_tomatoes", seed=0)["test"].lines == parts["test"].lines
    assert ld.load_dataset("rotten_tomatoes", seed=1)["test"].lines != parts["test"].lines


def test_stsb_reads_fields_4_5_6_despite_extra_columns():
    sizes = {"train": 5749, "dev": 1500, "test": 1379}
    for part, size in sizes.items():
        data = ld.read_stsb(locate("stsb", part))
        assert len(data) == size and data.texts_pair is not None
        assert 0.0 <= min(data.labels) and max(data.labels) <= 5.0
    raw = locate("stsb", "train").read_text(encoding="utf-8").splitlines()
    number, fields = next((i, line.split("\t")) for i, line in enumerate(raw, start=1)
                          if len(line.split("\t")) > 7)
    data = ld.read_stsb(locate("stsb", "train"))
    k = data.lines.index(number)
    assert (data.labels[k], data.texts[k], data.texts_pair[k]) == (
        float(fields[4]), fields[5].strip(), fields[6].strip())


def test_split_indices_and_unknown_dataset():
    parts = split_indices(100, seed=3)
    assert sorted(sum(parts, [])) == list(range(100))
    assert [len(p) for p in split_indices(2394, (0.8, 0.2, 0.0))] == [1915, 479, 0]
    assert split(list("abcdefghij"), (0.5, 0.5), seed=3) == [
        [list("abcdefghij")[i] for i in part] for part in split_indices(10, (0.5, 0.5), seed=3)]
    with pytest.raises(DataError, match="sum to 1"):
        split_indices(10, fractions=(0.5, 0.2))
    with pytest.raises(DataError, match="Unknown labelled data set 'sst2'"):
        ld.load_dataset("sst2")
    with pytest.raises(DataError, match="Unknown labelled data set 'wnut16'"):
        ld.load_dataset("wnut16")   # a tagging set, not a labelled one


def test_question_labels_keep_each_line_once_and_name_a_bad_line(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("NUM:date When was it ?\nLOC:city Where is it ?\nNUM:date When was it ?\n")
    data = ld.read_question_labels(path)
    assert (data.texts, data.labels, data.lines) == (["When was it ?", "Where is it ?"],
                                                     ["NUM", "LOC"], [1, 2])
    path.write_text("NUM:date When ?\nno label here\n")
    with pytest.raises(DataError, match="line 2: expected 'COARSE:fine question'"):
        ld.read_question_labels(path)
