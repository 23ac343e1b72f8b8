"""SQuAD v1.1/v2.0 reading: the real sample, v2 fields, mismatched answers, bad files."""

import json

import pytest

from keras_bert_lab.data.registry import locate
from keras_bert_lab.data.squad import read_squad
from keras_bert_lab.errors import DataError
from tests.markers import backend_independent

pytestmark = backend_independent


def sample():
    return json.loads(locate("squad_sample").read_text(encoding="utf-8"))


def test_reads_the_real_sample_file():
    examples, version_2 = read_squad(locate("squad_sample"))
    assert not version_2 and len(examples) == 5
    qas = [qa for article in sample()["data"] for p in article["paragraphs"] for qa in p["qas"]]
    assert [e.id for e in examples] == [qa["id"] for qa in qas]
    for example, qa in zip(examples, qas):
        assert example.gold_texts == tuple(a["text"] for a in qa["answers"])
        for text, start in example.answers:
            assert example.context[start:start + len(text)] == text


def test_reads_v2_counts_mismatched_answers_and_skips_empty_contexts():
    data = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [
        {"context": "Paris is the capital of France.", "qas": [
            {"id": "a", "question": "Capital?", "is_impossible": False,
             "answers": [{"text": "Paris", "answer_start": 0},
                         {"text": "Pariss", "answer_start": 0}]},   # does not match: skipped
            {"id": "b", "question": "Capital of Spain?", "is_impossible": True, "answers": [],
             "plausible_answers": [{"text": "Paris", "answer_start": 0}]}]},
        {"context": "   ", "qas": [{"id": "c", "question": "?", "answers": []}]}]}]}
    with pytest.warns(UserWarning) as record:
        examples, version_2 = read_squad(data)
    messages = " ".join(str(w.message) for w in record)
    assert "1 answer(s) do not match" in messages and "skipped 1 question(s)" in messages
    assert version_2 and [e.id for e in examples] == ["a", "b"]
    assert examples[0].answers == (("Paris", 0),)
    assert examples[0].gold_texts == ("Paris", "Pariss")
    assert examples[1].is_impossible and examples[1].answers == ()
    assert examples[1].plausible_answers == (("Paris", 0),)


def test_bad_files_raise_clear_errors(tmp_path):
    with pytest.raises(DataError, match="No SQuAD file"):
        read_squad(tmp_path / "missing.json")
    (tmp_path / "x.json").write_text('{"rows": []}')
    with pytest.raises(DataError, match="'data' list"):
        read_squad(tmp_path / "x.json")
