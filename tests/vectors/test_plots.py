"""The plots write valid PNG files of the expected content size."""

import numpy as np
import pytest

from keras_bert_lab.vectors import WordVectors, plot_neighbourhood, plot_vector_cells
from tests.vectors.helpers import numpy_only

pytestmark = numpy_only

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def vectors():
    rng = np.random.default_rng(0)
    words = ["stick", "branch", "glue", "tree", "paste", "twig", "rod", "tape", "leaf", "wood"]
    return WordVectors(words, rng.standard_normal((10, 24)).astype("float32"))


def read_png(path):
    image = pytest.importorskip("matplotlib.image")
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    return image.imread(path)


def test_vector_cells(vectors, tmp_path):
    path = plot_vector_cells(vectors, ["stick", "branch", "glue"], tmp_path / "a" / "cells.png")
    assert path == tmp_path / "a" / "cells.png"
    pixels = read_png(path)
    assert pixels.shape[0] > 100 and pixels.shape[1] > 300
    assert pixels[..., :3].std() > 0.05                     # not a blank canvas
    with pytest.raises(KeyError, match="'nope'"):
        plot_vector_cells(vectors, ["stick", "nope"], tmp_path / "x.png")


def test_neighbourhood(vectors, tmp_path):
    path = plot_neighbourhood(vectors, "stick", tmp_path / "near.png", k=6)
    pixels = read_png(path)
    assert pixels.shape[0] > 200 and pixels[..., :3].std() > 0.01
    with pytest.raises(KeyError):
        plot_neighbourhood(vectors, "nope", tmp_path / "y.png")
