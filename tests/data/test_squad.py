"""SQuAD v1.1/v2.0 reading: the real sample, v2 fields, mismatched answers, bad files."""

import json

import pytest

from keras_bert_lab.data.registry import locate
from keras_bert_lab.data.squad import check_trainable, read_squad
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


def squad(answers, context="Paris is the capital of France."):
    return {"data": [{"title": "t", "paragraphs": [{"context": context, "qas": [
        {"id": "q1", "question": "What is the capital?", "answers": answers}]}]}]}


@pytest.mark.parametrize("answers,match", [
    ([{"text": "Paris", "answer_start": "zero"}], r"question q1 has answer_start='zero'"),
    ([{"text": "Paris", "answer_start": 1.5}], r"answer_start=1\.5"),
    ([{"text": "Paris", "answer_start": -1}], r"answer_start=-1.*integer ≥ 0"),
    ([{"text": "Paris"}], r"answer_start=None"),
    ([{"answer_start": 0}], r"question q1 has an answer without a 'text' string"),
    (["Paris"], r"answer without a 'text'"),
])
def test_malformed_answers_name_the_question_and_the_field(answers, match):
    with pytest.raises(DataError, match=match):
        read_squad(squad(answers))


def test_offsets_given_as_digit_strings_are_read():
    (example,), _ = read_squad(squad([{"text": "Paris", "answer_start": "0"}]))
    assert example.answers == (("Paris", 0),)


def test_encoding_errors_name_the_line(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(json.dumps(squad([{"text": "Paris", "answer_start": 0}],
                                      context="Paris is the capital of France.\n"),
                                indent=1, ensure_ascii=False).replace("France", "Fränce")
                     .encode("latin-1"))
    with pytest.raises(DataError, match=r"latin\.json, line \d+: bytes that are not utf-8"):
        read_squad(path)
    binary = tmp_path / "weights.json"
    binary.write_bytes(bytes(range(128, 256)))
    with pytest.raises(DataError, match="line 1: bytes that are not utf-8"):
        read_squad(binary)


def test_a_training_file_whose_every_offset_is_wrong_is_refused():
    examples, _ = read_squad(squad([{"text": "Paris", "answer_start": 3}]))
    assert examples[0].answers == () and examples[0].gold_texts == ("Paris",)
    with pytest.raises(DataError, match="none of its 1 question.*answer_start counts characters"):
        check_trainable(examples, "train.json")
    check_trainable(read_squad(squad([{"text": "Paris", "answer_start": 0}]))[0], "ok.json")
