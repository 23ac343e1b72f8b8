"""Extractive QA (SQuAD) for BERT and GPT: windows of a context as model inputs, scores to answers.

The steps of google-research/bert's ``run_squad.py`` (Devlin et al. 2019, §4.2–4.3) between the
data (:mod:`keras_bert_lab.data.squad`) and the model, with the character↔token mapping taken from
the tokenizer's offsets (as Hugging Face's fast tokenizers do) instead of whitespace words:

1. :func:`prepare_features` — ``[CLS] question [SEP] context window [SEP]``, packed by the one
   :class:`~keras_bert_lab.preprocessing.packer.BertPacker`: the question is cut to
   ``max_query_length`` tokens, the context is cut into windows of the room that is left, each
   starting ``doc_stride`` tokens after the previous one (Google's ``doc_stride`` is the *step*;
   HF's ``stride`` is the *overlap*, so HF ``stride = room - doc_stride`` gives the same windows).
   A window's gold positions are the answer's first and last token, or ``0`` ([CLS]) for both
   when the answer is not wholly inside it (or there is none: SQuAD 2.0).
2. :func:`postprocess` — over all windows of an example: the ``n_best`` highest start and end
   scores among context tokens, spans with ``start ≤ end`` and at most ``max_answer_length``
   tokens whose start lies in the window where it has the most context (Google's
   ``_check_is_max_context``), ranked by ``start + end`` score; the best is cut from the original
   context by character offsets. SQuAD 2.0: "" when ``score_null − best_span > null_threshold``,
   with ``score_null`` the [CLS] score (the minimum over windows, as the reference takes it).

:class:`SpanQAPreprocessor` holds a tokenizer and the window settings for both steps.

The rows are a layout class (:class:`BertRows` here); GPT's
(:class:`~keras_bert_lab.models.gpt.preprocessor.GPTSpanRows`, with a GPT-1 ``BytePairTokenizer``)
are ``[start] question [delim] context window [extract]`` (GPT-1's layout for two texts,
Radford et al. 2018, Figure 1; GPT-1 itself reported no SQuAD) and "no answer" is the extract token — the one state that has read the whole window under
the causal mask (the start token's state has read nothing). The windows, offsets and answer
selection are the same.

Shapes: ``N`` windows (features), ``L`` sequence length.
"""

import collections
import dataclasses
import warnings

import numpy as np

from keras_bert_lab import families
from keras_bert_lab.data.squad import SquadExample  # noqa: F401 (examples)
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.preprocessing.packer import BertPacker
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from keras_bert_lab.presets.registry import read_preset


@dataclasses.dataclass
class SquadFeatures:
    """Model inputs of the windows plus what post-processing needs to map them back.

    Attributes:
        inputs: ``token_ids``, ``segment_ids`` (BERT only), ``padding_mask``, each (N, L) int32.
        start_positions, end_positions: (N,) int32 gold token positions (the null position
            when the window does not hold the answer).
        null_positions: (N,) int32, the position that stands for "no answer": [CLS] (0) for
            BERT, the extract token for GPT.
        example_index: (N,) int32, the example each window belongs to.
        offsets: (N, L, 2) int32 character span of each context token in the example's context;
            -1 for every other position (question, special tokens, padding).
        max_context: (N, L) bool, the token has more context in this window than in any other.
        trainable: (N,) bool, the example had a gold answer that matched (or is impossible).
    """

    inputs: dict
    start_positions: np.ndarray
    end_positions: np.ndarray
    null_positions: np.ndarray
    example_index: np.ndarray
    offsets: np.ndarray
    max_context: np.ndarray
    trainable: np.ndarray

    def __len__(self):
        return len(self.example_index)

    def labels(self):
        """Labels for :class:`~keras_bert_lab.models.bert.span_qa.BertSpanQA`."""
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


class BertRows:
    """The rows of a window: ``[CLS] question [SEP] window [SEP]``; "no answer" is [CLS].

    A layout has ``questions(texts)`` and ``contexts(texts)`` (token ids; the contexts' with
    character offsets), ``null_position(question_length, window_length)`` and
    ``pack(questions, windows)`` (the model inputs); another family's rows subclass it (GPT's:
    :class:`~keras_bert_lab.models.gpt.preprocessor.GPTSpanRows`)."""

    def __init__(self, tokenizer, sequence_length):
        self.tokenizer, self.sequence_length = tokenizer, sequence_length

    def questions(self, texts):
        return [list(ids) for ids in self.tokenizer.tokenize(texts)]

    def contexts(self, texts):
        return self.tokenizer.tokenize_with_offsets(texts)

    def null_position(self, question_length, window_length):
        return 0

    def pack(self, questions, windows):   # every window fits: no cut
        return BertPacker.from_tokenizer(self.tokenizer, self.sequence_length)(questions, windows)


def prepare_features(examples, tokenizer, sequence_length=384, doc_stride=128,
                     max_query_length=64, layout=BertRows):
    """Windows of ``[CLS] question [SEP] context [SEP]`` (see the module docstring, step 1), or
    of another row layout (GPT's ``[start] question [delim] context [extract]``).

    Args:
        examples: ``SquadExample``\\ s (from :func:`keras_bert_lab.data.squad.read_squad`).
        tokenizer: the tokenizer the layout reads (a ``WordPieceTokenizer`` for BERT's rows, a
            GPT-1 ``BytePairTokenizer`` for GPT's; their offsets map characters to tokens).
        sequence_length: ``L``, tokens per window. Default 384.
        doc_stride: context tokens from one window's start to the next (Google's meaning). 128.
        max_query_length: longer questions keep their first this-many tokens. Default 64.
        layout: the row layout class (:class:`BertRows`, or a family's subclass).

    Returns a :class:`SquadFeatures`.

    Example:
    >>> from keras_bert_lab.data.registry import locate
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> example = SquadExample("q1", "Who?", "It was made by Ada Lovelace in 1843.",
    ...                        answers=(("Ada Lovelace", 15),))
    >>> features = prepare_features([example], tokenizer, sequence_length=12, doc_stride=4)
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
    layout = layout(tokenizer, sequence_length)
    questions = layout.questions([e.question for e in examples])
    unique = list(dict.fromkeys(e.context for e in examples))   # SQuAD asks ~5 per context
    context_index = {context: i for i, context in enumerate(unique)}
    contexts = layout.contexts(unique)
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
        room_here = sequence_length - len(question) - 3
        if room_here < 1:
            raise ConfigError(
                f"sequence_length={sequence_length} leaves no room for context after a question "
                f"of {len(question)} tokens (max_query_length={max_query_length}) and the 3 "
                "special tokens; raise sequence_length or lower max_query_length.")
        windows = context_windows(len(ids), room_here, doc_stride)
        best_window = _max_context(windows, len(ids))
        offset = len(question) + 2                       # where the context starts in a window
        for w, (start, length) in enumerate(windows):
            offsets = np.full((sequence_length, 2), -1, "int32")
            offsets[offset:offset + length, 0] = starts[start:start + length]
            offsets[offset:offset + length, 1] = ends[start:start + length]
            max_context = np.zeros(sequence_length, bool)
            max_context[offset:offset + length] = best_window[start:start + length] == w
            first = last = null = layout.null_position(len(question), length)
            if answer is not None and start <= answer[0] and answer[1] < start + length:
                first, last = answer[0] - start + offset, answer[1] - start + offset
            for key, value in (("question", question), ("window", ids[start:start + length]),
                               ("offsets", offsets), ("max_context", max_context),
                               ("start_positions", first), ("end_positions", last),
                               ("null_positions", null), ("example_index", index),
                               ("trainable", trainable)):
                rows[key].append(value)
    if no_tokens:
        warnings.warn(f"{no_tokens} context(s) have no tokens (only whitespace or control "
                      "characters); their questions get no windows.", stacklevel=2)
    if not rows:
        raise DataError("None of the examples has a context with tokens.")
    inputs = layout.pack(rows.pop("question"), rows.pop("window"))
    arrays = {key: np.asarray(value) for key, value in rows.items()}
    for key in ("start_positions", "end_positions", "null_positions", "example_index"):
        arrays[key] = arrays[key].astype("int32")
    return SquadFeatures(inputs={k: v.astype("int32") for k, v in inputs.items()}, **arrays)


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
    >>> from keras_bert_lab.data.registry import locate
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> examples = [SquadExample("q1", "Who?", "It was made by Ada Lovelace.")]
    >>> features = prepare_features(examples, tokenizer, sequence_length=16)
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
            null = features.null_positions[row]
            null_score = min(null_score, float(start[null] + end[null]))
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


class SpanQAPreprocessor:
    """SQuAD examples → windowed model inputs (:func:`prepare_features`), and scores → answers
    (:func:`postprocess`), with one tokenizer, one row layout and one set of window settings.

    Args:
        tokenizer: a ``WordPieceTokenizer`` (BERT's rows).
        sequence_length, doc_stride, max_query_length: see :func:`prepare_features`.

    ``from_preset`` gives the preprocessor of the preset's family (its registry entry's
    ``squad`` preprocessor: this class for BERT,
    :class:`~keras_bert_lab.models.gpt.preprocessor.GPTSpanQAPreprocessor` for GPT), with the
    preset's tokenizer.

    Example (``BertSpanQA`` gives the scores):
    >>> from keras_bert_lab.data.registry import locate
    >>> qa = SpanQAPreprocessor(WordPieceTokenizer(locate("bert_uncased_vocab")),
    ...                         sequence_length=16)
    >>> examples = [SquadExample("q1", "Who?", "It was made by Ada Lovelace.")]
    >>> features = qa(examples)
    >>> start, end = np.zeros((1, 16)), np.zeros((1, 16))
    >>> start[0, 8], end[0, 10] = 5.0, 5.0
    >>> qa.answers(examples, features, {"start_logits": start, "end_logits": end})
    {'q1': 'Ada Lovelace'}
    """

    layout = BertRows

    def __init__(self, tokenizer, sequence_length=384, doc_stride=128, max_query_length=64):
        self.tokenizer, self.sequence_length = tokenizer, int(sequence_length)
        self.doc_stride, self.max_query_length = int(doc_stride), int(max_query_length)

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """The preprocessor of the preset's family, its tokenizer, these window settings."""
        info = read_preset(preset, verify=False)
        own = families.preprocessor_for(info, "squad", cls)
        if own is not cls:
            return own.from_preset(info.directory, **kwargs)
        return cls(info.family.tokenizer_class.from_preset(info.directory), **kwargs)

    def __call__(self, examples):
        return prepare_features(examples, self.tokenizer, self.sequence_length, self.doc_stride,
                                self.max_query_length, layout=self.layout)

    def answers(self, examples, features, logits, **kwargs):
        """``{id: answer text}`` from the model's ``{"start_logits", "end_logits"}`` on
        ``features``; ``kwargs`` as in :func:`postprocess`."""
        return postprocess(examples, features, logits["start_logits"], logits["end_logits"],
                           **kwargs)[0]


def predict_answers(model, examples, features, version_2=False, batch_size=32, n_best=20,
           max_answer_length=30, null_threshold=0.0):
    """``(predictions, n_best_lists)`` of ``model`` on prepared features (see
    :func:`postprocess`): the scores of every window, in batches cut to their longest window
    and padded back with a very low score."""
    logits = model.predict_packed(features.inputs, batch_size=batch_size)
    return postprocess(examples, features, logits["start_logits"], logits["end_logits"],
                       n_best=n_best, max_answer_length=max_answer_length, version_2=version_2,
                       null_threshold=null_threshold)
