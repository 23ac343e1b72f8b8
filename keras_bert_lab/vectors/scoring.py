"""Cosine scores of a vocabulary against query vectors, in float32, step for step as gensim's
``KeyedVectors`` computes them — so that rankings, and therefore analogy answers, agree with it
to the last bit, not just to rounding.

The conventions (facts of gensim 4.4, re-implemented here in NumPy):

- the norm of each row is ``np.linalg.norm(matrix, axis=1)`` in float32, and a row's unit vector
  is the row divided by its norm, in float32;
- a query is a weighted mean of such unit rows (or of raw vectors), accumulated in float32 one
  term at a time (each sum rounded to float32), divided by the total absolute weight in float64,
  then scaled to unit length in float64 (multiplying by the reciprocal of the norm) and rounded
  to float32 — :func:`combine`;
- a word's score is ``matrix[:stop] @ query / norms[:stop]`` (a float32 matrix-vector product);
- the best ``k`` are found with a partial sort (``argpartition`` then ``argsort`` of those) —
  :func:`top_k`.

A float32 matrix-*matrix* product (many queries at once) rounds differently from the
matrix-vector product in the last bit or two, so batched callers use :func:`batch_scores` to
rank and fall back to :func:`exact_scores` where two candidates are closer than
:data:`NEAR_TIE`.

Example:

>>> import numpy as np
>>> matrix = np.array([[1, 0], [0, 2], [1, 1]], "float32")
>>> norms = row_norms(matrix)
>>> query = combine([unit_rows(matrix, norms, [0])[0]], [1.0])
>>> [round(float(s), 4) for s in exact_scores(matrix, norms, query, 3)]
[1.0, 0.0, 0.7071]
>>> top_k(np.array([0.1, 0.9, 0.5], "float32"), 2).tolist()
[1, 2]
"""

import numpy as np

EPSILON = 1e-6   # 3CosMul's guard against a zero denominator (Levy & Goldberg 2014; gensim)
NEAR_TIE = 1e-5  # batched scores closer than this are recomputed one query at a time


def row_norms(matrix):
    """The L2 norm of every row, float32 (``np.linalg.norm(matrix, axis=1)``)."""
    return np.linalg.norm(matrix, axis=1)


def unit_rows(matrix, norms, rows=None):
    """Rows ``rows`` (all by default) divided by their norms, in float32; all-zero rows stay
    zero."""
    if rows is None:
        block, scale = matrix, norms
    else:
        rows = np.asarray(rows)
        block, scale = matrix[rows], norms[rows]
    scale = scale[..., None]
    return np.divide(block, scale, out=np.zeros_like(block), where=scale > 0)


def unit_vector(vectors):
    """Scale vectors (the last axis) to unit length: norm in float64, multiply by its reciprocal,
    round to float32. A zero vector stays zero."""
    v64 = np.asarray(vectors, "float64")
    length = np.sqrt(np.sum(v64 * v64, axis=-1, keepdims=True))
    scale = np.divide(1.0, length, out=np.ones_like(length), where=length > 0)
    return (v64 * scale).astype("float32")


def combine(terms, weights):
    """The unit-length weighted mean of ``terms`` (arrays of shape ``(dim,)`` or ``(n, dim)``,
    one per weight), accumulated in float32 in the order given."""
    if len(terms) == 0 or len(terms) != len(weights):
        raise ValueError("combine needs one weight per term and at least one term")
    mean = np.zeros(np.shape(terms[0]), "float32")
    total = 0.0
    for term, weight in zip(terms, weights):
        mean = (mean.astype("float64") + float(weight) * np.asarray(term, "float64"))
        mean = mean.astype("float32")
        total += abs(float(weight))
    return unit_vector(mean.astype("float64") / total)


def exact_scores(matrix, norms, query, stop):
    """Cosine of ``query`` (a unit vector) with each of the first ``stop`` rows: one float32
    matrix-vector product divided by the norms."""
    return np.dot(matrix[:stop], query) / norms[:stop]


def batch_scores(matrix, norms, queries, stop):
    """:func:`exact_scores` for many queries ``(q, dim)`` at once → ``(q, stop)`` (equal up to
    float32 rounding of the product)."""
    scores = queries @ matrix[:stop].T
    scores /= norms[:stop]
    return scores


def shifted(cosines, out=None):
    """Cosines moved from [-1, 1] to [0, 1], as 3CosMul needs: ``(1 + cos) / 2`` (in place with
    ``out=cosines``)."""
    result = np.add(cosines, 1, out=out)
    result /= 2
    return result


def cosmul(pos_b, pos_c, neg_a, out=None):
    """3CosMul of shifted cosines: ``b * c / (a + EPSILON)`` (in place with ``out=pos_b``; then
    ``neg_a`` is overwritten too)."""
    if out is None:
        return pos_b * pos_c / (neg_a + EPSILON)
    np.multiply(pos_b, pos_c, out=out)
    neg_a += EPSILON
    out /= neg_a
    return out


def top_k(scores, k):
    """Indices of the ``k`` highest of a 1-D array, best first (a partial sort; with exact ties
    the order is NumPy's)."""
    negated = -scores
    if k >= negated.size:
        return np.argsort(negated)[:k]
    best = np.argpartition(negated, k)[:k]
    return best.take(np.argsort(negated.take(best)))


def top_k_rows(scores, k):
    """Row-wise top ``k`` of a 2-D array ``(q, n)`` → ``(q, min(k, n))`` indices and scores,
    best first, equal scores in index order. For the few candidates an analogy needs, ``k``
    passes of ``argmax`` beat ``argpartition`` by ~30× on 300,000 columns. The chosen entries of
    ``scores`` are overwritten with -inf (pass a copy to keep them)."""
    rows = np.arange(scores.shape[0])
    k = min(k, scores.shape[1])
    best = np.empty((scores.shape[0], k), "int64")
    values = np.empty((scores.shape[0], k), scores.dtype)
    for j in range(k):
        best[:, j] = np.argmax(scores, axis=1)
        values[:, j] = scores[rows, best[:, j]]
        scores[rows, best[:, j]] = -np.inf
    return best, values


def best_excluding(scores, k, excluded):
    """The ``k`` best indices of ``scores`` that are not in ``excluded``, best first: the top
    ``k + len(excluded)`` by :func:`top_k`, then the excluded ones dropped."""
    excluded = list(excluded)
    best = top_k(scores, k + len(excluded))
    skip = set(int(i) for i in excluded)
    return [int(i) for i in best if int(i) not in skip][:k]
