"""The GLUE metrics of classification and regression, in NumPy.

Accuracy and macro-F1 for classes (scikit-learn's definitions), Pearson and Spearman correlation
for scores (SciPy's), and :func:`classification_scores`, which picks them for a classifier's
logits by problem type.

Example:

>>> round(pearson([1, 2, 3, 4], [1, 3, 2, 4]), 4), spearman([1, 2, 3, 4], [10, 30, 20, 40])
(0.8, 0.8)
>>> accuracy([0, 1, 1, 2], [0, 1, 0, 2]), round(macro_f1([0, 1, 1, 2], [0, 1, 0, 2]), 4)
(0.75, 0.7778)
"""

import numpy as np


def accuracy(y_true, y_pred):
    """Share of exact matches (rows must match entirely for 2-D multi-label arrays)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim > 1:
        return float(np.mean(np.all(y_true == y_pred, axis=-1)))
    return float(np.mean(y_true == y_pred)) if len(y_true) else 0.0


def macro_f1(y_true, y_pred, labels=None):
    """Unweighted mean of per-class F1, over ``labels`` (default: classes in either array —
    scikit-learn's ``f1_score(average="macro")``; a class with no true and no predicted example
    has F1 0 there too). 2-D multi-hot arrays: mean of each column's binary F1."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim > 1:
        return float(np.mean([_f1(y_true[:, k] == 1, y_pred[:, k] == 1)
                              for k in range(y_true.shape[1])]))
    if labels is None:
        labels = np.union1d(y_true, y_pred)
    if len(labels) == 0:
        return 0.0
    return float(np.mean([_f1(y_true == k, y_pred == k) for k in labels]))


def _f1(truth, predicted):
    tp = np.sum(truth & predicted)
    denominator = np.sum(truth) + np.sum(predicted)
    return 2.0 * tp / denominator if denominator else 0.0


def pearson(x, y):
    """Pearson's correlation coefficient (``scipy.stats.pearsonr``'s r); 0 for a constant input."""
    x, y = np.asarray(x, "float64"), np.asarray(y, "float64")
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
    return float(np.sum(x * y) / denominator) if denominator > 0 else 0.0


def rank(x):
    """Ranks from 1, ties sharing their mean rank (``scipy.stats.rankdata``)."""
    x = np.asarray(x, "float64")
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), "float64")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], len(x)]
    for start, end in zip(starts, ends):
        ranks[order[start:end]] = (start + end + 1) / 2.0   # mean of ranks start+1 … end
    return ranks


def spearman(x, y):
    """Spearman's rank correlation: Pearson's r of the (tie-averaged) ranks."""
    return pearson(rank(x), rank(y))


def classification_scores(logits, y_true, problem):
    """The validation/test scores of a classifier's logits: Pearson, Spearman and MSE for
    regression; accuracy and macro-F1 for classes (multi-label: an output is on at logit ≥ 0)."""
    logits = np.asarray(logits)
    if problem == "regression":
        predicted = logits[:, 0]
        return {"pearson": pearson(predicted, y_true), "spearman": spearman(predicted, y_true),
                "mse": float(np.mean((predicted - np.asarray(y_true)) ** 2))}
    if problem == "multi_label":
        predicted = (logits >= 0).astype("float32")
        return {"accuracy": accuracy(y_true, predicted), "macro_f1": macro_f1(y_true, predicted)}
    predicted = logits.argmax(axis=-1)
    return {"accuracy": accuracy(y_true, predicted), "macro_f1": macro_f1(y_true, predicted)}
