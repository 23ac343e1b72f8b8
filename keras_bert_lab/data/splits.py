"""Fixed, seeded splits of a data set into parts (train / validation / test).

Example:
>>> split_indices(10, (0.8, 0.1, 0.1))
[[4, 6, 2, 7, 3, 5, 9, 0], [8], [1]]
>>> train, dev = split(list("abcdefghij"), (0.8, 0.2), seed=0)
>>> len(train), len(dev)
(8, 2)
"""

import numpy as np

from keras_bert_lab.errors import DataError


def split_indices(n, fractions=(0.8, 0.1, 0.1), seed=0):
    """``range(n)`` shuffled with ``seed`` and cut into ``len(fractions)`` parts (lists).

    Part ``k`` ends at ``round(n × (f₀ + … + f_k))``, so the parts always cover ``range(n)``.
    """
    if abs(sum(fractions) - 1.0) > 1e-6 or any(f < 0 for f in fractions):
        raise DataError(f"Split fractions must be non-negative and sum to 1, got {fractions}.")
    order = np.random.default_rng(seed).permutation(n)
    bounds = np.round(np.cumsum((0.0,) + tuple(fractions)) * n).astype(int)
    return [order[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]


def split(items, fractions=(0.8, 0.2), seed=0):
    """``items`` shuffled with ``seed`` and cut into parts (see :func:`split_indices`)."""
    return [[items[i] for i in part] for part in split_indices(len(items), fractions, seed)]
