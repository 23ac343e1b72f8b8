"""`kbl vectors`: nearest, analogy, evaluate and plot on a vectors file; words outside the
vocabulary are reported and skipped, never a traceback."""

import keras
import pytest

from keras_bert_lab.cli import main
from keras_bert_lab.vectors import WordVectors

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                reason="NumPy-only command; runs once")


@pytest.fixture()
def vectors_file(tmp_path):
    vectors = WordVectors(["king", "queen", "man", "woman", "apple"],
                          [[1, 1, 0], [1, -1, 0], [0, 1, 0.1], [0, -1, 0.1], [0, 0, 1]])
    path = tmp_path / "v.txt"
    vectors.write_text(path)
    return str(path)


def test_nearest_and_analogy(vectors_file, capsys):
    assert main(["vectors", "nearest", "king", "Nope", "--vectors", vectors_file, "-k", "2"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("king: ") and "skipped 'Nope'" in captured.err
    assert main(["vectors", "analogy", "man", "king", "woman", "--vectors", vectors_file,
                 "-k", "1"]) == 0
    assert capsys.readouterr().out.strip().startswith("man : king :: woman : queen")
    assert main(["vectors", "analogy", "man", "king", "--vectors", vectors_file]) == 2
    assert "three words" in capsys.readouterr().err


def test_plot_and_bad_file(vectors_file, tmp_path, capsys):
    assert main(["vectors", "plot", "king", "queen", "--vectors", vectors_file, "-k", "3",
                 "--output", str(tmp_path / "plots")]) == 0
    assert (tmp_path / "plots" / "cells.png").stat().st_size > 1000
    assert (tmp_path / "plots" / "neighbourhood.png").stat().st_size > 1000
    bad = tmp_path / "bad.txt"
    bad.write_text("a 1 2\nb 1 x\n")
    assert main(["vectors", "nearest", "a", "--vectors", str(bad)]) == 2
    assert "bad.txt" in capsys.readouterr().err
