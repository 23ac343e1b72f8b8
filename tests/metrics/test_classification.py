"""The GLUE metrics against SciPy and hand formulas."""

import numpy as np
import pytest

from keras_bert_lab.metrics import classification
from tests.markers import backend_independent

pytestmark = backend_independent


def test_correlations_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    y = 0.6 * x + rng.normal(size=200)
    ties_x, ties_y = np.round(x), np.round(y * 2) / 2          # many ties
    for a, b in ((x, y), (ties_x, ties_y)):
        assert classification.pearson(a, b) == pytest.approx(stats.pearsonr(a, b)[0], abs=1e-12)
        assert classification.spearman(a, b) == pytest.approx(stats.spearmanr(a, b)[0], abs=1e-12)
        np.testing.assert_allclose(classification.rank(a), stats.rankdata(a))
    assert classification.pearson([1, 1, 1], [1, 2, 3]) == 0.0     # constant input: no correlation


def test_accuracy_and_macro_f1_by_hand():
    y_true = np.array([0, 0, 1, 1, 1, 2, 2, 3])
    y_pred = np.array([0, 1, 1, 1, 0, 2, 0, 1])
    # per class: (tp, true, predicted) -> F1 = 2 tp / (true + predicted)
    counts = {0: (1, 2, 3), 1: (2, 3, 4), 2: (1, 2, 1), 3: (0, 1, 0)}
    expected = np.mean([2 * tp / (t + p) for tp, t, p in counts.values()])
    assert classification.macro_f1(y_true, y_pred) == pytest.approx(expected)
    assert classification.accuracy(y_true, y_pred) == 4 / 8
    # multi-label: exact-match accuracy, mean of per-column binary F1
    t = np.array([[1, 0], [1, 1], [0, 1]])
    p = np.array([[1, 0], [0, 1], [1, 1]])
    assert classification.accuracy(t, p) == pytest.approx(1 / 3)
    assert classification.macro_f1(t, p) == pytest.approx(np.mean([2 * 1 / (2 + 2), 2 * 2 / (2 + 2)]))


def test_classification_scores_per_problem():
    logits = np.array([[2.0, -1.0], [0.0, 1.0], [3.0, 0.0]])
    scores = classification.classification_scores(logits, np.array([0, 1, 1]), "single_label")
    assert scores["accuracy"] == pytest.approx(2 / 3)
    reg = classification.classification_scores(np.array([[1.0], [2.0], [3.5]]), [1.0, 2.5, 3.0],
                                         "regression")
    assert set(reg) == {"pearson", "spearman", "mse"} and reg["spearman"] == pytest.approx(1.0)
