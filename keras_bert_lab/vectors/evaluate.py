"""The standard evaluations of static word vectors: the Google analogy questions ("a b c d": is
``d`` the word nearest ``b - a + c``?) and correlation with human similarity judgements
(WordSim-353, SimLex-999).

Both reproduce gensim 4.4 (``KeyedVectors.evaluate_word_analogies`` and
``evaluate_word_pairs``) exactly — the same questions used, the same answers, the same
correlations — by following its conventions:

- only the first ``restrict_vocab`` words take part; with ``case_insensitive`` every word is
  upper-cased and, of several words with the same upper-case form, the first (most frequent) one
  stands for them all;
- a question or pair with a word outside that vocabulary is skipped and counted; a line that is
  not four words (analogies) or ``word1<delimiter>word2<delimiter>score`` (pairs) is skipped;
  ``#`` lines in pair files are comments;
- 3CosAdd ranks by cosine with the unit-length mean of the unit vectors of b and c (weight +1)
  and a (weight -1), leaves out a, b, c, takes the top 5 and answers with the first of them whose
  upper-case form is none of a, b, c; 3CosMul (not in gensim's evaluation) uses the same
  vocabulary and answer rule with Levy & Goldberg's score;
- Spearman's ρ is Pearson's r of the ranks, ties sharing their mean rank.

The analogy questions go through in batches (one float32 matrix product per few hundred
questions, ``argpartition`` for the top candidates); where two candidates score closer than
:data:`~keras_bert_lab.vectors.scoring.NEAR_TIE` the question is scored again one at a time, as
gensim scores it, so that float32 rounding cannot flip an answer. All 19,544 questions against
300,000 GloVe words take seconds, against minutes for gensim's per-question loop.

Example:

>>> from keras_bert_lab.vectors import load_glove
>>> glove = load_glove(limit=30000)
>>> result = evaluate_word_pairs(glove, "wordsim353")
>>> result.pairs + result.oov, 0.4 < result.spearman < 0.7     # all 353 pairs read; ρ ≈ 0.54
(353, True)
"""

import dataclasses
import os

import numpy as np

from keras_bert_lab.data import registry
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.vectors import scoring

METHODS = ("3cosadd", "3cosmul")
TOP = 5                   # candidates looked at per question (gensim's topn=5)
SCORE_BUDGET = 1 << 28    # bytes of one batch of float32 scores (decides the batch size)


@dataclasses.dataclass(frozen=True)
class Section:
    """One section of an analogy set: ``correct`` of the ``used`` (in-vocabulary) questions."""

    name: str
    correct: int
    used: int

    @property
    def accuracy(self):
        return self.correct / self.used if self.used else 0.0


@dataclasses.dataclass(frozen=True)
class AnalogyResult:
    """Per-section results (file order), the questions skipped for a word outside the vocabulary
    (``oov``) and the lines skipped as not four words (``invalid``)."""

    sections: tuple
    oov: int
    invalid: int
    method: str
    restrict_vocab: object

    def _sum(self, name, keep):
        chosen = [s for s in self.sections if keep(s)]
        return Section(name, sum(s.correct for s in chosen), sum(s.used for s in chosen))

    @property
    def semantic(self):
        """The sections not named ``gram…`` (the five semantic ones of the Google set)."""
        return self._sum("semantic", lambda s: not s.name.startswith("gram"))

    @property
    def syntactic(self):
        """The ``gram…`` sections."""
        return self._sum("syntactic", lambda s: s.name.startswith("gram"))

    @property
    def total(self):
        return self._sum("total", lambda s: True)

    @property
    def accuracy(self):
        return self.total.accuracy

    def __str__(self):
        return format_analogies(self)


@dataclasses.dataclass(frozen=True)
class WordPairResult:
    """Correlations of model cosines with human scores over ``pairs`` pairs; ``oov`` pairs were
    skipped for a word outside the vocabulary, ``invalid`` lines for their format."""

    name: str
    spearman: float
    pearson: float
    pairs: int
    oov: int
    invalid: int

    @property
    def oov_ratio(self):
        """Percent of the pairs skipped as out-of-vocabulary (gensim's third return value)."""
        return 100.0 * self.oov / (self.pairs + self.oov)

    def __str__(self):
        return format_word_pairs([self])


# ---- correlations -------------------------------------------------------------------------
def pearson(x, y):
    """Pearson's r in float64 (NaN if either input is constant).

    >>> round(pearson([1, 2, 3, 4], [1, 3, 2, 4]), 4)
    0.8
    """
    x, y = np.asarray(x, "float64"), np.asarray(y, "float64")
    xm, ym = x - x.mean(), y - y.mean()
    nx, ny = np.linalg.norm(xm), np.linalg.norm(ym)
    if nx == 0 or ny == 0:
        return float("nan")
    return float(np.clip(np.dot(xm / nx, ym / ny), -1.0, 1.0))


def average_ranks(x):
    """Ranks from 1, tied values sharing their mean rank.

    >>> average_ranks([10, 30, 20, 20]).tolist()
    [1.0, 4.0, 2.5, 2.5]
    """
    x = np.asarray(x)
    order = np.argsort(x, kind="mergesort")
    ordered = x[order]
    new = np.r_[True, ordered[1:] != ordered[:-1]]
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(x)]
    ranks = np.empty(len(x), "float64")
    ranks[order] = ((starts + ends + 1) / 2.0)[group]
    return ranks


def spearman(x, y):
    """Spearman's ρ: Pearson's r of the average ranks.

    >>> spearman([1, 2, 3, 4], [10, 30, 20, 40])
    0.8
    """
    return pearson(average_ranks(x), average_ranks(y))


# ---- the shared vocabulary convention ----------------------------------------------------
def _lookup(words, restrict_vocab, case_insensitive):
    """Key (upper-cased with ``case_insensitive``) → row, over the first ``restrict_vocab``
    words, the first word of each key winning."""
    if restrict_vocab is not None and (isinstance(restrict_vocab, bool) or
                                       not isinstance(restrict_vocab, (int, np.integer)) or
                                       restrict_vocab < 1):
        raise ConfigError(f"restrict_vocab={restrict_vocab!r}: give a positive number of words "
                          "(the first ones, most frequent) or None for all.")
    lookup = {}
    for i, word in enumerate(words[:restrict_vocab]):
        lookup.setdefault(word.upper() if case_insensitive else word, i)
    return lookup


# ---- analogies ----------------------------------------------------------------------------
def read_analogies(path, case_insensitive=True):
    """``(sections, invalid)``: ``[(name, [(a, b, c, d), …]), …]`` of an analogy file (``: name``
    lines start sections), and the number of lines skipped as not four words."""
    sections, invalid = [], 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise DataError(f"{path} line {number} is not UTF-8 text: save the file as "
                                "UTF-8.") from None
            if line.startswith(": "):
                sections.append((line.lstrip(": ").strip(), []))
                continue
            if not sections:
                raise DataError(f"{path} line {number}: a question before any ': section' line; "
                                "start the file with a section header such as ': capitals'.")
            words = line.split()
            if len(words) != 4:
                invalid += 1
                continue
            sections[-1][1].append(tuple(w.upper() if case_insensitive else w for w in words))
    return sections, invalid


def evaluate_analogies(vectors, path=None, restrict_vocab=300000, case_insensitive=True,
                       method="3cosadd", batch_size=None):
    """Accuracy of ``vectors`` (a :class:`~keras_bert_lab.vectors.WordVectors`) on analogy
    questions ``a b c d`` (default: the registry's Google set), per section, as gensim's
    ``evaluate_word_analogies`` counts it (see the module notes). Returns an
    :class:`AnalogyResult`; ``print`` it for a table."""
    if method not in METHODS:
        raise ConfigError(f"method={method!r}: choose one of {METHODS}.")
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ConfigError(f"batch_size={batch_size!r}: give a positive number of questions "
                          "per matrix product, or None to size batches by memory.")
    path = os.fspath(path) if path is not None else str(registry.locate("google_analogies"))
    if not os.path.exists(path):
        raise DataError(f"No analogy file at {path}: check the path (or leave path=None for "
                        "the Google analogy set).")
    lookup = _lookup(vectors.words, restrict_vocab, case_insensitive)
    sections, invalid = read_analogies(path, case_insensitive)
    questions, owner, oov = [], [], 0
    for number, (_, lines) in enumerate(sections):
        for question in lines:
            if all(word in lookup for word in question):
                questions.append(question)
                owner.append(number)
            else:
                oov += 1
    stop = len(vectors) if restrict_vocab is None else min(restrict_vocab, len(vectors))
    correct = _solve(vectors, questions, lookup, stop, method, case_insensitive, batch_size)
    counts = np.zeros((len(sections), 2), "int64")
    np.add.at(counts, (np.asarray(owner, "int64"), 0), correct.astype("int64"))
    np.add.at(counts, (np.asarray(owner, "int64"), 1), 1)
    result = tuple(Section(name, int(counts[i, 0]), int(counts[i, 1]))
                   for i, (name, _) in enumerate(sections))
    return AnalogyResult(result, oov, invalid, method, restrict_vocab)


def _solve(vectors, questions, lookup, stop, method, case_insensitive, batch_size):
    """A boolean array: is each (in-vocabulary) question answered correctly?"""
    correct = np.zeros(len(questions), bool)
    if not questions:
        return correct
    matrix, norms = vectors.vectors, vectors.norms
    rows = np.array([[lookup[w] for w in q[:3]] for q in questions], "int64")   # a, b, c
    units = [scoring.unit_rows(matrix, norms, rows[:, j]) for j in range(3)]
    if method == "3cosadd":
        queries = scoring.combine([units[1], units[2], units[0]], [1.0, 1.0, -1.0])
    keys = [w.upper() for w in vectors.words[:stop]] if case_insensitive else vectors.words
    size = batch_size or max(1, min(1000, SCORE_BUDGET // (4 * stop * (3 if method == "3cosmul"
                                                                         else 1))))
    for start in range(0, len(questions), size):
        chunk = slice(start, start + size)
        if method == "3cosadd":
            scores = scoring.batch_scores(matrix, norms, queries[chunk], stop)
        else:
            scores = _cosmul_batch(matrix, norms, rows[chunk], stop)
        picked = np.arange(scores.shape[0])
        for j in range(3):
            scores[picked, rows[chunk, j]] = -np.inf
        best, values = scoring.top_k_rows(scores, TOP + 1)
        for offset in range(scores.shape[0]):
            q = start + offset
            ignore, expected = questions[q][:3], questions[q][3]
            answer = _answer(best[offset], values[offset], keys, ignore)
            if answer is None:   # too close to call in batch: score it alone, as gensim does
                candidates = _exact_candidates(matrix, norms, stop, method, rows[q],
                                               queries[q] if method == "3cosadd" else None,
                                               [u[q] for u in units])
                answer = _pick(candidates, keys, ignore)
            correct[q] = answer == expected
    return correct


def _cosmul_batch(matrix, norms, rows, stop):
    """3CosMul scores ``(q, stop)`` of questions ``rows`` (a, b, c): the shifted cosines of each
    distinct word once (questions of a section share words), then ``b * c / (a + EPSILON)``
    row by row (no gathered copies)."""
    distinct, inverse = np.unique(rows.ravel(), return_inverse=True)
    inverse = inverse.reshape(-1, 3)
    queries = scoring.unit_rows(matrix, norms, distinct)
    shifted = scoring.shifted(scoring.batch_scores(matrix, norms, queries, stop))
    denominators = shifted + scoring.EPSILON
    scores = np.empty((len(rows), shifted.shape[1]), "float32")
    for q, (a, b, c) in enumerate(inverse):
        np.multiply(shifted[b], shifted[c], out=scores[q])
        scores[q] /= denominators[a]
    return scores


def _pick(candidates, keys, ignore):
    """gensim's rule: the first candidate whose key is none of a, b, c (else the last one)."""
    predicted = None
    for index in candidates:
        predicted = keys[index]
        if predicted not in ignore:
            break
    return predicted


def _answer(best, values, keys, ignore):
    """The answer from batched candidates, or None when a near tie could change it."""
    finite = int(np.isfinite(values).sum())
    position = next((p for p in range(min(TOP, finite)) if keys[best[p]] not in ignore),
                    min(TOP, finite) - 1)
    if position + 1 >= finite:   # not enough candidates left to see the margin
        return None
    if np.any(values[:position + 1] - values[1:position + 2] < scoring.NEAR_TIE):
        return None
    return keys[best[position]]


def _exact_candidates(matrix, norms, stop, method, rows, query, units):
    """gensim's top 5 for one question, scored with matrix-vector products."""
    if method == "3cosadd":
        scores = scoring.exact_scores(matrix, norms, query, stop)
        return scoring.best_excluding(scores, TOP, [int(i) for i in rows])
    cos_a, cos_b, cos_c = (scoring.exact_scores(matrix, norms, u, stop) for u in units)
    scores = scoring.cosmul(scoring.shifted(cos_b), scoring.shifted(cos_c),
                            scoring.shifted(cos_a))
    return scoring.best_excluding(scores, TOP, sorted({int(i) for i in rows}))


# ---- word pairs ---------------------------------------------------------------------------
def _pairs_path(path_or_registry_name):
    name = os.fspath(path_or_registry_name)
    known = registry.names(kind="word_pairs")
    if name in known:
        return str(registry.locate(name)), name
    if not os.path.exists(name):
        raise DataError(f"No word-pair file at {name!r}, and it is not a registry set (known: "
                        f"{', '.join(known)}): give a path or one of those names.")
    return name, os.path.basename(name)


def evaluate_word_pairs(vectors, path_or_registry_name, restrict_vocab=300000,
                        case_insensitive=True, delimiter="\t"):
    """Spearman's ρ and Pearson's r between the cosine similarity of ``vectors`` and human
    scores, over the pairs of a file ``word1<delimiter>word2<delimiter>score`` (or a registry
    set: ``"wordsim353"``, ``"simlex999"``), as gensim's ``evaluate_word_pairs`` computes them.
    Returns a :class:`WordPairResult`."""
    path, name = _pairs_path(path_or_registry_name)
    lookup = _lookup(vectors.words, restrict_vocab, case_insensitive)
    gold, model, oov, invalid = [], [], 0, 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line or line.startswith("#"):
                continue
            fields = line.split(delimiter)
            try:
                if len(fields) != 3:
                    raise ValueError
                a, b, score = (x.upper() if case_insensitive else x for x in fields)
                score = float(score)
            except ValueError:
                invalid += 1
                continue
            if a not in lookup or b not in lookup:
                oov += 1
                continue
            gold.append(score)
            model.append(np.dot(scoring.unit_vector(vectors.vectors[lookup[a]]),
                                scoring.unit_vector(vectors.vectors[lookup[b]])))
    if not gold:
        raise DataError(f"No usable pairs in {path} ({oov} out of vocabulary, {invalid} not "
                        f"'word1{delimiter!r}word2{delimiter!r}score'): check the delimiter and "
                        "the vectors' vocabulary.")
    model = np.asarray(model, "float32")
    return WordPairResult(name, spearman(gold, model), pearson(gold, model), len(gold), oov,
                          invalid)


# ---- tables -------------------------------------------------------------------------------
def format_analogies(result):
    """A plain-text table of an :class:`AnalogyResult`: sections, then semantic, syntactic and
    total, then what was skipped."""
    lines = [f"{'section (' + result.method + ')':<32}{'correct':>8}{'used':>8}{'accuracy':>10}"]
    rows = list(result.sections) + [None, result.semantic, result.syntactic, result.total]
    for row in rows:
        if row is None:
            lines.append("-" * 58)
            continue
        lines.append(f"{row.name:<32}{row.correct:>8,}{row.used:>8,}{100 * row.accuracy:>9.2f}%")
    limit = "all" if result.restrict_vocab is None else f"the first {result.restrict_vocab:,}"
    lines.append(f"skipped: {result.oov:,} questions with a word outside {limit} words; "
                 f"{result.invalid:,} invalid lines")
    return "\n".join(lines)


def format_word_pairs(results):
    """A plain-text table of :class:`WordPairResult` s."""
    lines = [f"{'word pairs':<16}{'spearman':>10}{'pearson':>10}{'pairs':>8}{'oov':>6}"]
    for r in results:
        lines.append(f"{r.name:<16}{r.spearman:>10.4f}{r.pearson:>10.4f}{r.pairs:>8,}"
                     f"{r.oov:>6,}")
    return "\n".join(lines)
