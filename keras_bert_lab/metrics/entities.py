"""Entity-level precision, recall and F1 of tag sequences, as ``seqeval`` computes them.

The default mode is conlleval's chunking (an ``I-X`` after ``O`` or after another type starts an
entity; a type change ends one), and ``mode="strict"`` is seqeval's strict IOB2 (an entity is
``B-X`` followed by ``I-X``\\ s; a stray ``I-`` is no entity). Scores are micro-averaged over
entities; a ratio with a zero denominator is 0, as in seqeval. Pure Python.
"""

from keras_bert_lab.errors import DataError

MODES = ("conlleval", "strict")

def _conll_parts(tag):
    # seqeval's reading of a tag: the first character is the chunk tag, the type follows
    # the first "-" (or "_" when there is none).
    return tag[0], tag[1:].split("-", maxsplit=1)[-1] or "_"


def _chunk_ends(prev_tag, tag, prev_type, kind):
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != kind


def _chunk_starts(prev_tag, tag, prev_type, kind):
    if tag in ("B", "S"):
        return True
    if tag in ("E", "I") and prev_tag in ("E", "S", "O"):
        return True
    return tag not in ("O", ".") and prev_type != kind


def entities(tags, mode="conlleval"):
    """The entities of one tag sequence as ``(type, start, end)`` (``end`` inclusive).

    ``mode="conlleval"``: conlleval's chunking rules, as seqeval's default (BIO, IOBES and stray
    ``I-``\\ s all handled the conlleval way). ``mode="strict"``: seqeval's strict IOB2 — ``B-X``
    then any ``I-X``; other ``I-`` tags are no entity; a tag that is not ``B-``/``I-``/``O`` is a
    ``DataError``.

    Example:
    >>> entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC"])
    [('PER', 0, 1), ('LOC', 3, 3), ('LOC', 4, 4)]
    >>> entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC"], mode="strict")
    [('PER', 0, 1), ('LOC', 4, 4)]
    """
    if mode == "strict":
        return _strict_entities(tags)
    if mode != "conlleval":
        raise DataError(f"mode={mode!r}; choose one of {MODES}.")
    found = []
    prev_tag, prev_type, begin = "O", "", 0
    for i, chunk in enumerate(list(tags) + ["O"]):
        tag, kind = _conll_parts(chunk)
        if _chunk_ends(prev_tag, tag, prev_type, kind):
            found.append((prev_type, begin, i - 1))
        if _chunk_starts(prev_tag, tag, prev_type, kind):
            begin = i
        prev_tag, prev_type = tag, kind
    return found


def _strict_entities(tags):
    found, i, tags = [], 0, list(tags)
    parts = []
    for tag in tags:
        if tag == "O":
            parts.append(("O", ""))
        elif tag[:1] == "O":
            parts.append(("O", ""))
        elif tag[:1] in ("B", "I"):
            parts.append((tag[0], tag[1:].strip("-") or "_"))
        else:
            raise DataError(f"Tag {tag!r} is not IOB2 (B-X, I-X or O); strict mode scores IOB2 "
                            "only — use mode='conlleval' for other schemes.")
    while i < len(parts):
        prefix, kind = parts[i]
        if prefix != "B":
            i += 1
            continue
        end = i + 1
        while end < len(parts) and parts[end] == ("I", kind):
            end += 1
        found.append((kind, i, end - 1))
        i = end
    return found


def _ratio(a, b):
    return a / b if b else 0.0


def _prf(tp, predicted, true):
    precision, recall = _ratio(tp, predicted), _ratio(tp, true)
    f1 = _ratio(2 * precision * recall, precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1, "support": true}


def entity_scores(true_tags, predicted_tags, mode="conlleval"):
    """Entity-level precision, recall and F1 of predicted tag sequences (seqeval's numbers).

    An entity counts as found when its type, first and last word all match. Totals are
    micro-averaged; ``per_type`` has the same figures for each type (seqeval's
    ``classification_report``), and ``support`` is the number of true entities.

    Args:
        true_tags, predicted_tags: lists of tag lists, sentence by sentence, of equal lengths.
        mode: ``"conlleval"`` (seqeval's default) or ``"strict"`` (seqeval strict IOB2).

    Example:
    >>> true = [["B-PER", "I-PER", "O", "B-LOC"]]
    >>> scores = entity_scores(true, [["B-PER", "I-PER", "O", "O"]])
    >>> scores["precision"], scores["recall"], round(scores["f1"], 4)
    (1.0, 0.5, 0.6667)
    >>> scores["per_type"]["LOC"]
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'support': 1}
    """
    if len(true_tags) != len(predicted_tags) or any(
            len(t) != len(p) for t, p in zip(true_tags, predicted_tags)):
        raise DataError("true_tags and predicted_tags must have the same number of sentences "
                        "and the same number of tags in each.")
    if mode == "conlleval":
        # seqeval joins the sentences with an "O" between them and chunks the whole stream.
        def stream(sequences):
            return [tag for seq in sequences for tag in list(seq) + ["O"]]
        true_set = set(entities(stream(true_tags)))
        pred_set = set(entities(stream(predicted_tags)))
    else:
        true_set = {(e[0], s, e[1], e[2]) for s, seq in enumerate(true_tags)
                    for e in entities(seq, "strict")}
        pred_set = {(e[0], s, e[1], e[2]) for s, seq in enumerate(predicted_tags)
                    for e in entities(seq, "strict")}
    per_type = {}
    for kind in sorted({e[0] for e in true_set | pred_set}):
        t = {e for e in true_set if e[0] == kind}
        p = {e for e in pred_set if e[0] == kind}
        per_type[kind] = _prf(len(t & p), len(p), len(t))
    total = _prf(len(true_set & pred_set), len(pred_set), len(true_set))
    return {**total, "predicted": len(pred_set), "correct": len(true_set & pred_set),
            "per_type": per_type}


def tagger_scores(model, preprocessor, sentences, data, batch_size=32):
    """``(scores, predicted_tags)``: entity scores of ``model`` on aligned ``sentences`` — seqeval
    default (``precision``, ``recall``, ``f1``, ``per_type``) plus ``strict_*`` (strict IOB2, when
    the tags are IOB2) — and one predicted tag per word (batches cut to length, padded back)."""
    predicted = preprocessor.decode(model.predict_packed(data.features, batch_size=batch_size),
                                    data)
    gold = [s.tags for s in sentences]
    scores = entity_scores(gold, predicted)
    try:
        strict = entity_scores(gold, predicted, mode="strict")
        scores.update({f"strict_{k}": strict[k] for k in ("precision", "recall", "f1")})
    except DataError:
        pass  # tags outside IOB2: conlleval scoring only
    return scores, predicted
