"""The SQuAD scores against the official evaluation scripts' definitions."""

import contextlib
import importlib.util
import io
import json
import pathlib

import numpy as np
import pytest

from keras_bert_lab.data.registry import locate
from keras_bert_lab.data.squad import SquadExample, read_squad
from keras_bert_lab.metrics.squad import normalize_answer, squad_scores
from tests.synthetic_squad import synthetic_squad
from tests.markers import backend_independent

pytestmark = backend_independent


@pytest.fixture(scope="module")
def official():
    """The official SQuAD v1.1 evaluation script as shipped by allennlp (loaded by path)."""
    spec = importlib.util.find_spec("allennlp")
    if spec is None:
        pytest.skip("allennlp (data package) is not installed")
    path = pathlib.Path(spec.submodule_search_locations[0]) / "tools" / "squad_eval.py"
    module_spec = importlib.util.spec_from_file_location("official_squad_v11", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def sample():
    return json.loads(pathlib.Path(locate("squad_sample")).read_text(encoding="utf-8"))


def test_scores_equal_the_official_v1_script(official):
    data = synthetic_squad(40, seed=11)
    data["data"] += sample()["data"]
    examples, _ = read_squad(data)
    rng = np.random.default_rng(3)
    predictions = {}
    for i, example in enumerate(examples):
        gold = example.gold_texts[-1]
        words = example.context.split()
        choice = i % 6
        if choice == 0:
            predictions[example.id] = gold
        elif choice == 1:
            predictions[example.id] = "The " + gold.upper() + "!"
        elif choice == 2:
            a = int(rng.integers(0, len(words) - 3))
            predictions[example.id] = " ".join(words[a:a + int(rng.integers(1, 6))])
        elif choice == 3:
            predictions[example.id] = gold + " and " + words[0]
        elif choice == 4:
            predictions[example.id] = ""
        # choice 5: unanswered
    with contextlib.redirect_stderr(io.StringIO()):       # "Unanswered question …" lines
        expected = official.evaluate(data["data"], predictions)
    got = squad_scores(examples, predictions)
    assert got["exact_match"] == pytest.approx(expected["exact_match"], abs=1e-9)
    assert got["f1"] == pytest.approx(expected["f1"], abs=1e-9)
    assert 0 < got["exact_match"] < got["f1"] < 100
    for text in ("The  Eiffel-Tower!", "an apple, a pear", "Ångström's café"):
        assert normalize_answer(text) == official.normalize_answer(text)


def test_squad_2_scoring_of_no_answer_questions():
    examples = [SquadExample("n", "?", "x", is_impossible=True),
                SquadExample("h", "?", "x", gold_texts=("Denver Broncos", "the"))]
    scores = squad_scores(examples, {"n": "", "h": "Broncos"}, version_2=True)
    # "n": empty prediction for no answer = 1; "h": "the" normalises to nothing and is dropped,
    # so F1 vs "Denver Broncos" = 2·(1·½)/(1+½) = 2/3, EM 0
    assert scores["no_answer_exact_match"] == 100.0 and scores["no_answer_total"] == 1
    assert scores["has_answer_f1"] == pytest.approx(200 / 3)
    assert scores["exact_match"] == 50.0 and scores["f1"] == pytest.approx((100 + 200 / 3) / 2)
    assert squad_scores(examples, {"n": "Denver", "h": ""}, version_2=True)["f1"] == 0.0
