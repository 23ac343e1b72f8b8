"""SQuAD v1.1 / v2.0 JSON: questions on contexts with their gold answers.

:func:`read_squad` gives :class:`SquadExample`\\ s; an answer whose text is not found at its
``answer_start`` is counted and left out of training (google-research/bert's ``run_squad.py``
skips it), and an empty context is skipped — both with a warning. Windowing the examples into BERT
inputs and choosing answers is :mod:`keras_bert_lab.preprocessing.span_qa`; the official scores are
:mod:`keras_bert_lab.metrics.squad`.
"""

import dataclasses
import json
import pathlib
import warnings

from keras_bert_lab.data.tables import decode_file
from keras_bert_lab.errors import DataError


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question on one context.

    ``answers`` are the ``(text, answer_start)`` pairs whose text is at ``answer_start`` in the
    context (those train); ``gold_texts`` all given answer texts (those score); SQuAD 2.0's
    ``plausible_answers`` of an impossible question are kept for reference only.
    """

    id: str
    question: str
    context: str
    answers: tuple = ()
    gold_texts: tuple = ()
    is_impossible: bool = False
    title: str = ""
    plausible_answers: tuple = ()


def read_squad(source, version_2=None, encoding="utf-8"):
    """Examples of a SQuAD v1.1 or v2.0 file (a path or the parsed JSON).

    Args:
        source: path of a SQuAD JSON file, or its contents as a dict.
        version_2: whether it is SQuAD 2.0 (unanswerable questions); ``None`` = from the file
            (``"version": "v2.0"`` or any ``is_impossible`` field).
        encoding: the file's text encoding.

    Returns ``(examples, version_2)``.

    Example:
    >>> from keras_bert_lab.data.registry import locate
    >>> examples, v2 = read_squad(locate("squad_sample"))
    >>> len(examples), v2, examples[0].answers
    (5, False, (('Saint Bernadette Soubirous', 515),))
    """
    if isinstance(source, dict):
        data, where = source, "(dict)"
    else:
        where = str(source)
        if not pathlib.Path(source).is_file():
            raise DataError(f"No SQuAD file at {where}; give the path of a SQuAD v1.1/v2.0 JSON "
                            "file.")
        try:
            data = json.loads(decode_file(source, encoding))
        except json.JSONDecodeError as error:
            raise DataError(f"{where} is not valid JSON ({error}); SQuAD files are one JSON "
                            "object with a 'data' list.") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataError(f"{where} has no 'data' list of articles; is it SQuAD JSON "
                        "({'version': ..., 'data': [{'title', 'paragraphs': [...]}]})?")
    if version_2 is None:
        version_2 = str(data.get("version", "")).startswith("v2") or any(
            isinstance(qa, dict) and "is_impossible" in qa for article in data["data"]
            for paragraph in _items(article, "paragraphs") for qa in _items(paragraph, "qas"))
    examples, mismatched, empty = [], [], 0
    for i, article in enumerate(data["data"]):
        paragraphs = _field(article, "paragraphs", list, f"{where}: article {i}")
        for j, paragraph in enumerate(paragraphs):
            at = f"{where}: article {i}, paragraph {j}"
            context = _field(paragraph, "context", str, at, "")
            qas = _field(paragraph, "qas", list, at)
            if not context.strip():
                empty += len(qas)
                continue
            for qa in qas:
                if not isinstance(qa, dict):
                    raise DataError(f"{at}: an entry of 'qas' is a {type(qa).__name__}, not an "
                                    "object with 'id', 'question' and 'answers'.")
                try:
                    qid, question = str(qa["id"]), qa["question"]
                except KeyError as error:
                    raise DataError(f"{where}: a question lacks the field {error}; each entry of "
                                    "'qas' needs 'id', 'question' and 'answers'.") from None
                if not isinstance(question, str) or not question.strip():
                    raise DataError(f"{where}: question {qid} has no question text "
                                    f"({question!r}).")
                impossible = bool(qa.get("is_impossible", False)) and version_2
                given = [] if impossible else _field(qa, "answers", list,
                                                     f"{where}: question {qid}")
                answers = []
                given = [_answer(answer, qid, where) for answer in given]
                for text, start in given:
                    if context[start:start + len(text)] == text and text.strip():
                        answers.append((text, start))
                    else:
                        mismatched.append(qid)
                plausible = tuple(_answer(answer, qid, where) for answer in _field(
                    qa, "plausible_answers", list, f"{where}: question {qid}"))
                examples.append(SquadExample(
                    id=qid, question=question, context=context, answers=tuple(answers),
                    gold_texts=tuple(text for text, _ in given), is_impossible=impossible,
                    title=article.get("title", ""), plausible_answers=plausible))
    if mismatched:
        warnings.warn(f"{where}: {len(mismatched)} answer(s) do not match the context at their "
                      f"answer_start (e.g. question {mismatched[0]}); they still score but do not "
                      "train.", stacklevel=2)
    if empty:
        warnings.warn(f"{where}: skipped {empty} question(s) on empty contexts.", stacklevel=2)
    return examples, bool(version_2)


def _items(entry, name):
    value = entry.get(name) if isinstance(entry, dict) else None
    return value if isinstance(value, list) else []


def _field(entry, name, kind, where, default=None):
    """``entry[name]`` checked to be a ``kind`` (absent: ``default``, else an empty ``kind``)."""
    if not isinstance(entry, dict):
        raise DataError(f"{where} is a {type(entry).__name__}, not a JSON object; is it SQuAD "
                        "JSON?")
    value = entry.get(name, kind() if default is None else default)
    if not isinstance(value, kind):
        raise DataError(f"{where}: {name!r} is a {type(value).__name__} ({str(value)[:40]!r}), "
                        f"not a {'list' if kind is list else 'string'}.")
    return value


def _answer(answer, qid, where):
    """``(text, answer_start)`` of one answer entry, checked."""
    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
        raise DataError(f"{where}: question {qid} has an answer without a 'text' string "
                        f"({answer!r}); each answer needs 'text' and 'answer_start'.")
    start = answer.get("answer_start")
    if isinstance(start, str) and start.isdigit():
        start = int(start)
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise DataError(f"{where}: question {qid} has answer_start={start!r}; it must be the "
                        "character offset (an integer ≥ 0) of the answer in the context.")
    return answer["text"], start


def check_trainable(examples, where):
    """Raise ``DataError`` when no example of a training file can train (every answer's text
    missing from the context at its ``answer_start``, and no SQuAD 2.0 unanswerable question)."""
    if examples and not any(e.answers or e.is_impossible for e in examples):
        raise DataError(f"{where}: none of its {len(examples)} question(s) has an answer found "
                        "in the context at its answer_start, so nothing can train; check that "
                        "answer_start counts characters of the context (from 0).")
