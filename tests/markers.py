"""Markers shared by the test modules."""

import keras
import pytest

# Code that never touches a Keras backend (NumPy, the text side, tf.data): run it once, under
# TensorFlow; everything that builds or runs a Keras model runs under every backend.
backend_independent = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="backend-independent code; runs once")

# The exact resume of a whole recipe (three runs: unbroken, interrupted, resumed) is checked on
# one backend; the training loop's exact resume is checked on every backend by
# tests/training/test_training.py::test_exact_resume, and each recipe's outputs on every backend.
recipe_resume = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="a recipe's exact resume runs on torch; the loop's on every backend")

# The docstring examples are run once, under torch: they show how to call the code, and what
# they show is tested on every backend by the module's own tests. Under torch the 155 examples
# took 48 s against ~200 s under TensorFlow, which traces a graph for each tiny fit or predict.
examples_once = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="docstring examples run once; their behaviour is tested on every backend")
