"""SQuAD: reading v1.1/v2.0 JSON, windowing contexts into BERT inputs, choosing answers, scoring.

The steps of google-research/bert's ``run_squad.py`` (Devlin et al. 2019, §4.2–4.3), with the
character↔token mapping taken from the tokenizer's offsets (as Hugging Face's fast tokenizers do)
instead of whitespace words:

1. :func:`read_squad` — examples with their gold answers; an answer whose text is not found at
   its ``answer_start`` is counted and left out of training (the reference skips it), and an empty
   context is skipped — both with a warning.
2. :func:`prepare_features` — ``[CLS] question [SEP] context window [SEP]``: the question is cut
   to ``max_query_length`` tokens, the context is cut into windows of the room that is left,
   each starting ``doc_stride`` tokens after the previous one (Google's ``doc_stride`` is the
   *step*; HF's ``stride`` is the *overlap*, so HF ``stride = room - doc_stride`` gives the same
   windows). A window's gold positions are the answer's first and last token, or ``0`` ([CLS])
   for both when the answer is not wholly inside it (or there is none: SQuAD 2.0).
3. :func:`postprocess` — over all windows of an example: the ``n_best`` highest start and end
   scores among context tokens, spans with ``start ≤ end`` and at most ``max_answer_length``
   tokens whose start lies in the window where it has the most context (Google's
   ``_check_is_max_context``), ranked by ``start + end`` score; the best is cut from the original
   context by character offsets. SQuAD 2.0: "" when ``score_null − best_span > null_threshold``,
   with ``score_null`` the [CLS] score (the minimum over windows, as the reference takes it).
4. :func:`squad_scores` — the official exact match and F1 (lower case, no punctuation, no
   articles, single spaces; the maximum over the gold answers; v2.0: no-answer questions score 1
   for an empty prediction).

Shapes: ``N`` windows (features), ``L`` max sequence length.
"""

import collections
import dataclasses
import json
import pathlib
import re
import string
import warnings

import numpy as np

from keras_bert_lab.errors import ConfigError, DataError


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


def read_squad(source, version_2=None):
    """Examples of a SQuAD v1.1 or v2.0 file (a path or the parsed JSON).

    Args:
        source: path of a SQuAD JSON file, or its contents as a dict.
        version_2: whether it is SQuAD 2.0 (unanswerable questions); ``None`` = from the file
            (``"version": "v2.0"`` or any ``is_impossible`` field).

    Returns ``(examples, version_2)``.

    Example:
    >>> from keras_bert_lab.datasets import locate
    >>> examples, v2 = read_squad(locate("squad_sample"))
    >>> len(examples), v2, examples[0].answers
    (5, False, (('Saint Bernadette Soubirous', 515),))
    """
    if isinstance(source, dict):
        data, where = source, "(dict)"
    else:
        where = str(source)
        try:
            data = json.loads(pathlib.Path(source).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DataError(f"No SQuAD file at {where}; give the path of a SQuAD v1.1/v2.0 JSON "
                            "file.") from None
        except json.JSONDecodeError as error:
            raise DataError(f"{where} is not valid JSON ({error}); SQuAD files are one JSON "
                            "object with a 'data' list.") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataError(f"{where} has no 'data' list of articles; is it SQuAD JSON "
                        "({'version': ..., 'data': [{'title', 'paragraphs': [...]}]})?")
    if version_2 is None:
        version_2 = str(data.get("version", "")).startswith("v2") or any(
            "is_impossible" in qa for article in data["data"]
            for paragraph in article.get("paragraphs", []) for qa in paragraph.get("qas", []))
    examples, mismatched, empty = [], [], 0
    for article in data["data"]:
        for paragraph in article.get("paragraphs", []):
            context = paragraph.get("context", "")
            qas = paragraph.get("qas", [])
            if not context.strip():
                empty += len(qas)
                continue
            for qa in qas:
                try:
                    qid, question = str(qa["id"]), qa["question"]
                except KeyError as error:
                    raise DataError(f"{where}: a question lacks the field {error}; each entry of "
                                    "'qas' needs 'id', 'question' and 'answers'.") from None
                impossible = bool(qa.get("is_impossible", False)) and version_2
                given = [] if impossible else qa.get("answers", [])
                answers = []
                for answer in given:
                    text, start = answer["text"], int(answer["answer_start"])
                    if context[start:start + len(text)] == text and text.strip():
                        answers.append((text, start))
                    else:
                        mismatched.append(qid)
                plausible = tuple((a["text"], int(a["answer_start"]))
                                  for a in qa.get("plausible_answers", []))
                examples.append(SquadExample(
                    id=qid, question=question, context=context, answers=tuple(answers),
                    gold_texts=tuple(a["text"] for a in given), is_impossible=impossible,
                    title=article.get("title", ""), plausible_answers=plausible))
    if mismatched:
        warnings.warn(f"{where}: {len(mismatched)} answer(s) do not match the context at their "
                      f"answer_start (e.g. question {mismatched[0]}); they still score but do not "
                      "train.", stacklevel=2)
    if empty:
        warnings.warn(f"{where}: skipped {empty} question(s) on empty contexts.", stacklevel=2)
    return examples, bool(version_2)


@dataclasses.dataclass
class SquadFeatures:
    """Model inputs of the windows plus what post-processing needs to map them back.

    Attributes:
        inputs: ``token_ids``, ``segment_ids``, ``padding_mask``, each (N, L) int32.
        start_positions, end_positions: (N,) int32 gold token positions (0 = [CLS]).
        example_index: (N,) int32, the example each window belongs to.
        offsets: (N, L, 2) int32 character span of each context token in the example's context;
            -1 for every other position (question, special tokens, padding).
        max_context: (N, L) bool, the token has more context in this window than in any other.
        trainable: (N,) bool, the example had a gold answer that matched (or is impossible).
    """

    inputs: dict
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    offsets: np.ndarray
    max_context: np.ndarray
    trainable: np.ndarray

    def __len__(self):
        return len(self.example_index)

    def labels(self):
        """Labels for :class:`~keras_bert_lab.tasks.question_answering.BertSpanQA`."""
        return {"start_logits": self.start_positions, "end_logits": self.end_positions}

    def select(self, mask):
        """The windows where ``mask`` (N,) is true."""
        return SquadFeatures(
            inputs={k: v[mask] for k, v in self.inputs.items()},
            **{f.name: getattr(self, f.name)[mask] for f in dataclasses.fields(self)
               if f.name != "inputs"})


def context_windows(num_tokens, room, doc_stride):
    """``(start, length)`` of each window of ``room`` tokens, each ``doc_stride`` after the last.

    As ``run_squad.py``: the last window ends with the context (it may be shorter), and a stride
    longer than a window steps by the window so no token is skipped.

    Example:
    >>> context_windows(10, room=4, doc_stride=3)
    [(0, 4), (3, 4), (6, 4)]
    """
    windows, start = [], 0
    while True:
        length = min(num_tokens - start, room)
        windows.append((start, length))
        if start + length >= num_tokens:
            return windows
        start += min(length, doc_stride)


def _max_context(windows, num_tokens):
    """For each token, the index of the window where it has the most context on either side."""
    best_score = np.full(num_tokens, -np.inf)
    best = np.zeros(num_tokens, "int64")
    for w, (start, length) in enumerate(windows):
        position = np.arange(start, start + length)
        score = np.minimum(position - start, start + length - 1 - position) + 0.01 * length
        better = score > best_score[position]
        best_score[position[better]] = score[better]
        best[position[better]] = w
    return best


def prepare_features(examples, tokenizer, max_seq_length=384, doc_stride=128,
                     max_query_length=64):
    """Windows of ``[CLS] question [SEP] context [SEP]`` (see the module docstring, step 2).

    Args:
        examples: ``SquadExample``s (from :func:`read_squad`).
        tokenizer: a ``WordPieceTokenizer`` (its offsets map characters to tokens).
        max_seq_length: ``L``, tokens per window. Default 384.
        doc_stride: context tokens from one window's start to the next (Google's meaning). 128.
        max_query_length: longer questions keep their first this-many tokens. Default 64.

    Returns a :class:`SquadFeatures`.

    Example:
    >>> from keras_bert_lab.datasets import locate
    >>> from keras_bert_lab.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> example = SquadExample("q1", "Who?", "It was made by Ada Lovelace in 1843.",
    ...                        answers=(("Ada Lovelace", 15),))
    >>> features = prepare_features([example], tokenizer, max_seq_length=12, doc_stride=4)
    >>> len(features), features.start_positions.tolist(), features.end_positions.tolist()
    (2, [8, 4], [10, 6])
    >>> tokenizer.detokenize(features.inputs["token_ids"][0].tolist())
    'who ? it was made by ada lovelace'
    """
    if max_query_length < 0:
        raise ConfigError(f"max_query_length={max_query_length} must be ≥ 0.")
    if doc_stride < 1:
        raise ConfigError(f"doc_stride={doc_stride}: windows must advance by at least one token.")
    if not examples:
        raise DataError("No examples to prepare; the SQuAD file has no usable questions.")
    questions = tokenizer.tokenize([e.question for e in examples])
    unique = list(dict.fromkeys(e.context for e in examples))   # SQuAD asks ~5 per context
    context_index = {context: i for i, context in enumerate(unique)}
    contexts = tokenizer.tokenize_with_offsets(unique)
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    rows = collections.defaultdict(list)
    no_tokens = 0
    for index, example in enumerate(examples):
        question = list(questions[index])[:max_query_length]
        c = context_index[example.context]
        ids = contexts["token_ids"][c]
        starts, ends = contexts["start_offsets"][c], contexts["end_offsets"][c]
        if not ids:
            no_tokens += 1
            continue
        # the gold answer as context token indices (tokens overlapping its characters)
        answer = None
        if example.answers:
            text, char_start = example.answers[0]
            char_end = char_start + len(text)
            covered = [t for t in range(len(ids)) if starts[t] < char_end and ends[t] > char_start]
            if covered:
                answer = (covered[0], covered[-1])
        trainable = answer is not None or example.is_impossible
        room_here = max_seq_length - len(question) - 3
        if room_here < 1:
            raise ConfigError(
                f"max_seq_length={max_seq_length} leaves no room for context after a question of "
                f"{len(question)} tokens (max_query_length={max_query_length}) and [CLS] [SEP] "
                "[SEP]; raise max_seq_length or lower max_query_length.")
        windows = context_windows(len(ids), room_here, doc_stride)
        best_window = _max_context(windows, len(ids))
        offset = len(question) + 2                       # where the context starts in a window
        for w, (start, length) in enumerate(windows):
            token_ids = np.zeros(max_seq_length, "int32")
            sequence = [cls_id, *question, sep_id, *ids[start:start + length], sep_id]
            token_ids[:len(sequence)] = sequence
            segment_ids = np.zeros(max_seq_length, "int32")
            segment_ids[offset:len(sequence)] = 1
            padding_mask = (np.arange(max_seq_length) < len(sequence)).astype("int32")
            offsets = np.full((max_seq_length, 2), -1, "int32")
            offsets[offset:offset + length, 0] = starts[start:start + length]
            offsets[offset:offset + length, 1] = ends[start:start + length]
            max_context = np.zeros(max_seq_length, bool)
            max_context[offset:offset + length] = best_window[start:start + length] == w
            first = last = 0
            if answer is not None and start <= answer[0] and answer[1] < start + length:
                first, last = answer[0] - start + offset, answer[1] - start + offset
            for key, value in (("token_ids", token_ids), ("segment_ids", segment_ids),
                               ("padding_mask", padding_mask), ("offsets", offsets),
                               ("max_context", max_context), ("start_positions", first),
                               ("end_positions", last), ("example_index", index),
                               ("trainable", trainable)):
                rows[key].append(value)
    if no_tokens:
        warnings.warn(f"{no_tokens} context(s) have no tokens (only whitespace or control "
                      "characters); their questions get no windows.", stacklevel=2)
    if not rows:
        raise DataError("None of the examples has a context with tokens.")
    arrays = {key: np.asarray(value) for key, value in rows.items()}
    return SquadFeatures(
        inputs={k: arrays.pop(k) for k in ("token_ids", "segment_ids", "padding_mask")},
        start_positions=arrays["start_positions"].astype("int32"),
        end_positions=arrays["end_positions"].astype("int32"),
        example_index=arrays["example_index"].astype("int32"), offsets=arrays["offsets"],
        max_context=arrays["max_context"], trainable=arrays["trainable"])


def postprocess(examples, features, start_logits, end_logits, n_best=20, max_answer_length=30,
                version_2=False, null_threshold=0.0):
    """Answer text per example from the windows' scores (module docstring, step 3).

    Args:
        examples: the ``SquadExample``s the features were made from.
        features: their :class:`SquadFeatures`.
        start_logits, end_logits: (N, T) scores, ``T ≤ L`` (a batch may have been cut shorter
            than ``L``; positions beyond ``T`` are padding).
        n_best: start and end candidates per window, and answers kept per example. Default 20.
        max_answer_length: longest answer in tokens. Default 30.
        version_2: allow "no answer" (SQuAD 2.0).
        null_threshold: predict "" when ``score_null - best_span_score`` exceeds it. Default 0.

    Returns ``(predictions, n_best_lists)``: ``{id: text}`` and ``{id: [{"text", "score",
    "start_logit", "end_logit"}, ...]}`` (best first; for 2.0 the null score as ``"null_score"``
    in each list entry).

    Example:
    >>> import numpy as np
    >>> from keras_bert_lab.datasets import locate
    >>> from keras_bert_lab.text.tokenizer import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> examples = [SquadExample("q1", "Who?", "It was made by Ada Lovelace.")]
    >>> features = prepare_features(examples, tokenizer, max_seq_length=16)
    >>> start, end = np.zeros((1, 16)), np.zeros((1, 16))
    >>> start[0, 8], end[0, 10] = 5.0, 5.0      # "ada" .. "##lace" ("love" "##lace")
    >>> postprocess(examples, features, start, end)[0]
    {'q1': 'Ada Lovelace'}
    """
    start_logits, end_logits = np.asarray(start_logits), np.asarray(end_logits)
    if start_logits.shape != end_logits.shape or len(start_logits) != len(features):
        raise DataError(f"Scores of shape {start_logits.shape} / {end_logits.shape} for "
                        f"{len(features)} windows; give one row of start and end scores per "
                        "window.")
    length = start_logits.shape[1]
    windows_of = collections.defaultdict(list)
    for row, index in enumerate(features.example_index):
        windows_of[int(index)].append(row)
    predictions, n_best_lists = {}, {}
    for index, example in enumerate(examples):
        candidates, null_score = [], np.inf
        for row in windows_of.get(index, []):
            start, end = start_logits[row], end_logits[row]
            offsets = features.offsets[row, :length]
            context = offsets[:, 0] >= 0                                            # (T,)
            null_score = min(null_score, float(start[0] + end[0]))
            starts = np.flatnonzero(context & features.max_context[row, :length])
            ends = np.flatnonzero(context)
            starts = starts[np.argsort(-start[starts], kind="stable")[:n_best]]
            ends = ends[np.argsort(-end[ends], kind="stable")[:n_best]]
            for s in starts:
                for e in ends:
                    if s <= e < s + max_answer_length:
                        candidates.append((float(start[s] + end[e]), row, int(s), int(e)))
        candidates.sort(key=lambda c: -c[0])
        entries = []
        for score, row, s, e in candidates[:n_best]:
            begin, finish = features.offsets[row, s, 0], features.offsets[row, e, 1]
            entries.append({"text": example.context[begin:finish], "score": score,
                            "start_logit": float(start_logits[row, s]),
                            "end_logit": float(end_logits[row, e])})
        best = entries[0]["text"] if entries else ""
        if version_2:
            if not entries or null_score - entries[0]["score"] > null_threshold:
                best = ""
            for entry in entries:
                entry["null_score"] = null_score
        predictions[example.id] = best
        n_best_lists[example.id] = entries
    return predictions, n_best_lists


# ---- official metrics -------------------------------------------------------------------------
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


# ---- constructed data -------------------------------------------------------------------------
_PEOPLE = ("alice", "bob", "carol", "david", "emma", "frank", "grace", "henry", "julia", "kevin",
           "laura", "oscar", "peter", "sarah", "thomas", "victor")
_FACTS = {
    "color": ("red", "blue", "green", "yellow", "purple", "orange", "black", "white", "pink",
              "dark blue", "light green", "silver grey"),
    "city": ("paris", "london", "rome", "berlin", "madrid", "tokyo", "cairo", "oslo", "new york",
             "buenos aires", "hong kong", "cape town"),
    "pet": ("dog", "cat", "parrot", "rabbit", "horse", "turtle", "goat", "golden fish",
            "white mouse", "grey owl"),
    "sport": ("tennis", "football", "golf", "hockey", "cricket", "rugby", "boxing", "table tennis",
              "water polo", "ice skating"),
}
_FILLER = ("The weather was mild that day.", "Many people visited the old market.",
           "A train left the station before noon.", "The river was calm and wide.",
           "Some children played in the park.", "The library opened a new room.",
           "Music could be heard from the hall.", "A small boat crossed the lake.",
           "The shop sold bread and fresh fruit.", "Clouds moved slowly over the hills.",
           "An old bridge connects the two towns.", "The museum was closed on Monday.")


def synthetic_squad(num_questions, facts=3, filler=2, seed=0, answer_last=False):
    """A SQuAD v1.1 dict of templated questions, for learnability and long-context checks.

    Each context states ``facts`` facts ("The favourite city of Emma is New York.") about
    different people and attributes, shuffled among ``filler`` neutral sentences; the question asks
    for one of them ("What is the favourite city of Emma?"). Answers are one or two words. With
    ``answer_last`` the asked fact is the context's last sentence (after all the filler), which
    with much filler puts it in the last window of a long context.

    Example:
    >>> data = synthetic_squad(2, facts=1, filler=1, seed=3)
    >>> qa = data["data"][0]["paragraphs"][0]["qas"][0]
    >>> context = data["data"][0]["paragraphs"][0]["context"]
    >>> answer = qa["answers"][0]
    >>> context[answer["answer_start"]:][:len(answer["text"])] == answer["text"]
    True
    """
    rng = np.random.default_rng(seed)
    paragraphs = []
    for number in range(num_questions):
        people = rng.choice(len(_PEOPLE), size=facts, replace=False)
        kinds = [list(_FACTS)[k] for k in rng.integers(0, len(_FACTS), size=facts)]
        stated = []
        for person, kind in zip(people, kinds):
            values = _FACTS[kind]
            value = values[rng.integers(0, len(values))]
            stated.append((_PEOPLE[person].title(), kind, value.title() if kind == "city"
                           else value))
        sentences = [f"The favourite {kind} of {person} is {value}." for person, kind, value
                     in stated]
        asked = sentences[0]
        others = sentences[1:] + [_FILLER[i] for i in rng.integers(0, len(_FILLER), size=filler)]
        order = rng.permutation(len(others) + (0 if answer_last else 1))
        pool = others + ([] if answer_last else [asked])
        sentences = [pool[i] for i in order] + ([asked] if answer_last else [])
        context = " ".join(sentences)
        person, kind, value = stated[0]
        start = context.index(asked) + asked.index(f" is {value}.") + 4
        paragraphs.append({"context": context, "qas": [{
            "id": f"synthetic-{seed}-{number}",
            "question": f"What is the favourite {kind} of {person}?",
            "answers": [{"text": value, "answer_start": start}]}]})
    return {"version": "1.1", "data": [{"title": "synthetic", "paragraphs": paragraphs}]}


def write_squad(data, path):
    """Write a SQuAD dict as JSON (UTF-8) and return the path."""
    pathlib.Path(path).write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
