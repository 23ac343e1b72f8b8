"""The templated QA generator (tests/synthetic_squad.py): its answers sit where it says, and the
``same_kind`` / ``answer_first`` options (tutorial 11's two phrasings) change only what they
promise."""

import doctest
import re

from keras_bert_lab.data.squad import read_squad
from tests import synthetic_squad as module
from tests.markers import backend_independent
from tests.synthetic_squad import synthetic_squad

pytestmark = backend_independent
CLUE_FIRST = re.compile(r"The favourite (\w+) of (\w+) is ([^.]+)\.")
ANSWER_FIRST = re.compile(r"([^.]+?) is the favourite (\w+) of (\w+)\.")


def paragraphs(data):
    return data["data"][0]["paragraphs"]


def test_docstring_examples():
    assert doctest.testmod(module).failed == 0


def test_answers_are_where_the_file_says_in_every_variant():
    for options in ({}, {"same_kind": True}, {"answer_first": True},
                    {"same_kind": True, "answer_first": True, "answer_last": True}):
        data = synthetic_squad(60, facts=3, filler=2, seed=4, **options)
        examples, version_2 = read_squad(data)
        assert len(examples) == 60 and not version_2
        for example in examples:
            (text, start), = example.answers   # read_squad keeps only answers found in place
            assert example.context[start:start + len(text)] == text


def test_the_default_data_are_unchanged():
    """The options draw nothing when off: the files benchmarks/RESULTS.md used stay the same."""
    first = paragraphs(synthetic_squad(3, seed=1))[0]
    assert first["qas"][0]["question"] == "What is the favourite color of Henry?"
    assert first["qas"][0]["answers"] == [{"text": "green", "answer_start": 76}]


def test_same_kind_asks_about_one_attribute_with_distinct_values():
    for paragraph in paragraphs(synthetic_squad(80, facts=3, filler=1, seed=2, same_kind=True)):
        facts = CLUE_FIRST.findall(paragraph["context"])
        assert len(facts) == 3
        kinds, people, values = zip(*facts)
        asked_kind, asked_person = re.match(r"What is the favourite (\w+) of (\w+)\?",
                                            paragraph["qas"][0]["question"]).groups()
        assert set(kinds) == {asked_kind}
        assert len(set(values)) == 3 and len(set(people)) == 3 and asked_person in people


def test_answer_first_states_the_same_facts_value_first():
    clue = paragraphs(synthetic_squad(40, facts=3, filler=2, seed=6, same_kind=True))
    answer = paragraphs(synthetic_squad(40, facts=3, filler=2, seed=6, same_kind=True,
                                        answer_first=True))
    for one, other in zip(clue, answer):
        assert one["qas"][0]["question"] == other["qas"][0]["question"]
        assert one["qas"][0]["answers"][0]["text"].lower() == \
            other["qas"][0]["answers"][0]["text"].lower()
        before = [(kind, person, value.lower()) for kind, person, value
                  in CLUE_FIRST.findall(one["context"])]
        after = [(kind, person, value.strip().lower()) for value, kind, person
                 in ANSWER_FIRST.findall(other["context"])]
        assert before == after
        # the answer opens its sentence: nothing about whose value it is comes before it
        start = other["qas"][0]["answers"][0]["answer_start"]
        assert start == 0 or other["context"][start - 2:start] == ". "
