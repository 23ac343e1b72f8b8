"""The templated QA data behind the QA figures: answers where they are said to be, and the
``same_kind`` variant in which only the asked person picks the answer."""

import re

import pytest

from tests.markers import backend_independent
from tests.synthetic_squad import synthetic_squad

FACT = re.compile(r"The favourite (\w+) of (\w+) is ([^.]+)\.")


@backend_independent
@pytest.mark.parametrize("same_kind", [False, True])
def test_answers_and_kinds(same_kind):
    data = synthetic_squad(200, facts=3, filler=2, seed=5, same_kind=same_kind)
    mixed = 0
    for paragraph in data["data"][0]["paragraphs"]:
        context, qa = paragraph["context"], paragraph["qas"][0]
        answer = qa["answers"][0]
        assert context[answer["answer_start"]:].startswith(answer["text"] + ".")
        facts = FACT.findall(context)
        assert len(facts) == 3 and len({person for _, person, _ in facts}) == 3
        kind, person = re.match(r"What is the favourite (\w+) of (\w+)\?", qa["question"]).groups()
        assert (kind, person, answer["text"]) in facts
        kinds = {k for k, _, _ in facts}
        if same_kind:   # one kind, three different values: the kind alone cannot pick
            assert kinds == {kind} and len({v for _, _, v in facts}) == 3
        mixed += len(kinds) > 1
    assert (mixed == 0) if same_kind else mixed > 100
