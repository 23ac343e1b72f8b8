"""The official SQuAD scores: exact match and F1 (``evaluate-v1.1.py`` / ``evaluate-v2.0.py``).

Answers are normalised (lower case, no punctuation, no articles, single spaces) and each
prediction takes the maximum over the question's gold answers; SQuAD 2.0's no-answer questions
score 1 for an empty prediction. Pure Python.
"""

import collections
import re
import string

from keras_bert_lab.data.squad import SquadExample  # noqa: F401 (examples)


def normalize_answer(text):
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces.

    Example:
    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


_PUNCTUATION = frozenset(string.punctuation)


def exact_match(prediction, gold):
    """1.0 when the normalised texts are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction, gold, version_2=False):
    """Token-overlap F1 of the normalised texts (SQuAD 2.0: 1.0 when both are empty).

    Example:
    >>> round(f1_score("the golden statue", "a golden statue of Mary"), 4)
    0.6667
    """
    predicted, truth = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if version_2 and (not predicted or not truth):
        return float(predicted == truth)
    common = collections.Counter(predicted) & collections.Counter(truth)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(truth)
    return 2 * precision * recall / (precision + recall)


def squad_scores(examples, predictions, version_2=False):
    """Official SQuAD exact match and F1 in percent, the maximum over each question's answers.

    v1.1 follows ``evaluate-v1.1.py``; v2.0 follows ``evaluate-v2.0.py`` (gold answers that
    normalise to nothing are dropped; a question left with none — unanswerable — is answered
    correctly only by ""). A question without a prediction scores 0.

    Returns ``{"exact_match", "f1", "total"}``, for v2.0 also ``has_answer_*`` / ``no_answer_*``
    exact match and F1 with their counts.

    Example:
    >>> examples = [SquadExample("a", "?", "x", gold_texts=("Denver Broncos",)),
    ...             SquadExample("b", "?", "x", gold_texts=("1882",))]
    >>> squad_scores(examples, {"a": "the Denver Broncos", "b": "in 1882 and 1883"})
    {'exact_match': 50.0, 'f1': 70.0, 'total': 2}
    """
    groups = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for example in examples:
        gold = list(example.gold_texts)
        if version_2:
            gold = [g for g in gold if normalize_answer(g)] or [""]
        prediction = predictions.get(example.id)
        em = f1 = 0.0
        if prediction is not None and gold:
            em = max(exact_match(prediction, g) for g in gold)
            f1 = max(f1_score(prediction, g, version_2) for g in gold)
        keys = ["all"]
        if version_2:
            keys.append("has_answer" if gold != [""] else "no_answer")
        for key in keys:
            groups[key][0] += em
            groups[key][1] += f1
            groups[key][2] += 1
    total = groups["all"][2]
    scores = {"exact_match": 100.0 * groups["all"][0] / max(total, 1),
              "f1": 100.0 * groups["all"][1] / max(total, 1), "total": total}
    if version_2:
        for key in ("has_answer", "no_answer"):
            em, f1, count = groups[key]
            scores.update({f"{key}_exact_match": 100.0 * em / count if count else 0.0,
                           f"{key}_f1": 100.0 * f1 / count if count else 0.0,
                           f"{key}_total": count})
    return scores
