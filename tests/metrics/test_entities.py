"""Entity-level scores against seqeval (default conlleval chunking and strict IOB2)."""

import random
import warnings

import pytest

from keras_bert_lab.errors import DataError
from keras_bert_lab.metrics import entities as tagging
from tests.markers import backend_independent

pytestmark = backend_independent


seqeval_metrics = pytest.importorskip("seqeval.metrics")
seqeval_scheme = pytest.importorskip("seqeval.scheme")

EDGE_CASES = [
    ([["O", "B-PER", "I-PER"]], [["O", "B-PER", "I-PER"]]),                 # entity at the end
    ([["O", "B-PER", "I-PER"]], [["O", "B-PER", "O"]]),
    ([["I-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "I-LOC"]]),  # I- without B-
    ([["B-PER", "B-PER", "I-PER"]], [["B-PER", "I-PER", "I-PER"]]),          # adjacent, same type
    ([["B-PER", "B-LOC", "I-LOC"]], [["B-PER", "I-LOC", "I-LOC"]]),          # adjacent, other type
    ([["B-PER", "I-LOC", "O"]], [["B-PER", "I-PER", "O"]]),                  # type change inside
    ([["O", "O"], ["O"]], [["O", "O"], ["O"]]),                              # all O
    ([["O", "O"]], [["B-X", "O"]]),                                          # no true entity
    ([["B-geo-loc", "I-geo-loc"], ["I-geo-loc"]], [["B-geo-loc", "I-geo-loc"], ["B-geo-loc"]]),
    ([["B-A", "I-A"], ["I-A", "O"]], [["B-A", "O"], ["I-A", "O"]]),          # across sentences
]


def reference(true, pred, mode):
    options = {"mode": "strict", "scheme": seqeval_scheme.IOB2} if mode == "strict" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        totals = (seqeval_metrics.precision_score(true, pred, **options),
                  seqeval_metrics.recall_score(true, pred, **options),
                  seqeval_metrics.f1_score(true, pred, **options))
        report = seqeval_metrics.classification_report(true, pred, output_dict=True, **options)
    per_type = {k: v for k, v in report.items() if not k.endswith(" avg")}
    return totals, per_type


def assert_same_as_seqeval(true, pred, mode):
    ours = tagging.entity_scores(true, pred, mode=mode)
    (precision, recall, f1), per_type = reference(true, pred, mode)
    assert ours["precision"] == pytest.approx(precision, abs=1e-12)
    assert ours["recall"] == pytest.approx(recall, abs=1e-12)
    assert ours["f1"] == pytest.approx(f1, abs=1e-12)
    assert sorted(ours["per_type"]) == sorted(per_type)
    for kind, row in per_type.items():
        for key, ours_key in (("precision", "precision"), ("recall", "recall"),
                              ("f1-score", "f1"), ("support", "support")):
            assert ours["per_type"][kind][ours_key] == pytest.approx(row[key], abs=1e-12), kind


@pytest.mark.parametrize("mode", ["conlleval", "strict"])
@pytest.mark.parametrize("case", range(len(EDGE_CASES)))
def test_entity_scores_edge_cases_match_seqeval(case, mode):
    true, pred = EDGE_CASES[case]
    assert_same_as_seqeval(true, pred, mode)


@pytest.mark.parametrize("mode", ["conlleval", "strict"])
def test_entities_match_seqeval_on_single_sequences(mode):
    from seqeval.metrics.sequence_labeling import get_entities
    from seqeval.scheme import IOB2, Tokens

    rng = random.Random(0)
    tags = ["O", "B-A", "I-A", "B-B", "I-B", "B-geo-loc", "I-geo-loc"]
    for _ in range(500):
        seq = [rng.choice(tags) for _ in range(rng.randint(0, 12))]
        if mode == "strict":
            expected = [(e.tag, e.start, e.end - 1) for e in Tokens(seq, IOB2).entities]
        else:
            expected = get_entities(seq)
        assert tagging.entities(seq, mode=mode) == expected, seq


@pytest.mark.parametrize("mode", ["conlleval", "strict"])
def test_entity_scores_random_corpora_match_seqeval(mode):
    rng = random.Random(1)
    tags = ["O"] * 4 + ["B-A", "I-A", "B-B", "I-B", "B-C-d", "I-C-d"]
    for _ in range(150):
        true, pred = [], []
        for _ in range(rng.randint(1, 6)):
            n = rng.randint(1, 10)
            t = [rng.choice(tags) for _ in range(n)]
            # predictions: mostly the truth with some tags flipped, sometimes anything
            p = [rng.choice(tags) if rng.random() < 0.3 else tag for tag in t]
            true.append(t)
            pred.append(p)
        assert_same_as_seqeval(true, pred, mode)


def test_strict_mode_rejects_non_iob2_tags_and_unknown_mode():
    with pytest.raises(DataError, match="not IOB2"):
        tagging.entities(["S-PER"], mode="strict")
    with pytest.raises(DataError, match="mode"):
        tagging.entities(["B-PER"], mode="loose")
    with pytest.raises(DataError, match="same number"):
        tagging.entity_scores([["O"]], [["O", "O"]])
