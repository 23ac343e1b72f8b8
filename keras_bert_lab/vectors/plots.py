"""Pictures of word vectors, drawn with matplotlib's Agg canvas (no display, no global pyplot
state) and saved as PNG:

- :func:`plot_vector_cells`: each word's vector as one row of coloured cells on one shared,
  diverging colour scale — words with related meanings show related patterns (e.g. "stick" beside
  "branch" and "glue");
- :func:`plot_neighbourhood`: a word and its nearest neighbours, projected to two dimensions by
  PCA (NumPy's SVD), labelled.

Example:

>>> import os, tempfile
>>> from keras_bert_lab.vectors import WordVectors
>>> vectors = WordVectors(["a", "b", "c", "d"], [[1, 0, 2], [0, 1, 1], [1, 1, 0], [2, 1, 1]])
>>> folder = tempfile.mkdtemp()
>>> plot_vector_cells(vectors, ["a", "b"], os.path.join(folder, "cells.png")).name
'cells.png'
>>> plot_neighbourhood(vectors, "a", os.path.join(folder, "near.png"), k=2).name
'near.png'
"""

import os
import pathlib

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from keras_bert_lab.errors import ConfigError


def _save(figure, path):
    path = pathlib.Path(os.fspath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=110, bbox_inches="tight")
    return path


def plot_vector_cells(vectors, words, path, cmap="RdBu_r", title=None):
    """Draw the vectors of ``words`` as rows of coloured cells (one cell per dimension, one
    colour scale symmetric around zero for all rows) and save a PNG at ``path``; returns the
    path."""
    words = list(words)
    if not words:
        raise ConfigError("plot_vector_cells needs at least one word.")
    rows = np.stack([vectors[w] for w in words]).astype("float64")
    limit = float(np.abs(rows).max()) or 1.0
    figure = Figure(figsize=(max(6.0, 0.14 * rows.shape[1] + 2), 0.45 * len(words) + 1.2))
    axes = figure.add_subplot()
    image = axes.imshow(rows, cmap=cmap, vmin=-limit, vmax=limit, aspect="auto",
                        interpolation="nearest")
    axes.set_yticks(range(len(words)), words)
    axes.set_xlabel("dimension")
    axes.set_title(title or f"{len(words)} word vectors ({rows.shape[1]} dimensions)")
    figure.colorbar(image, ax=axes, fraction=0.03, pad=0.02)
    return _save(figure, path)


def project_2d(matrix):
    """Rows of ``matrix`` projected onto its first two principal components (centred; SVD).

    >>> project_2d(np.array([[0.0, 0, 0], [2, 0, 0], [0, 1, 0]])).shape
    (3, 2)
    """
    centred = np.asarray(matrix, "float64") - np.mean(matrix, axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    points = centred @ components[:2].T
    if points.shape[1] < 2:
        points = np.pad(points, ((0, 0), (0, 2 - points.shape[1])))
    return points


def plot_neighbourhood(vectors, word, path, k=15, restrict_vocab=None, title=None):
    """Plot ``word`` and its ``k`` nearest neighbours (cosine) in 2-D by PCA of their unit
    vectors, labelled with the words (and cosines), and save a PNG at ``path``; returns the
    path."""
    neighbours = vectors.nearest(word, k=k, restrict_vocab=restrict_vocab)
    words = [word] + [w for w, _ in neighbours]
    points = project_2d(vectors.unit[[vectors.index(w) for w in words]])
    figure = Figure(figsize=(7, 6))
    axes = figure.add_subplot()
    axes.scatter(points[1:, 0], points[1:, 1], s=18, color="tab:blue")
    axes.scatter(points[:1, 0], points[:1, 1], s=60, color="tab:red", marker="*")
    axes.annotate(word, points[0], xytext=(4, 4), textcoords="offset points", color="tab:red",
                  fontweight="bold")
    for (w, cosine), point in zip(neighbours, points[1:]):
        axes.annotate(f"{w} ({cosine:.2f})", point, xytext=(4, 2), textcoords="offset points",
                      fontsize=8)
    axes.set_title(title or f"'{word}' and its {len(neighbours)} nearest neighbours (PCA)")
    axes.set_xticks([])
    axes.set_yticks([])
    return _save(figure, path)
