"""Markers shared by the test modules."""

import keras
import pytest

# The backend whose test process runs the cases that run once: code that never touches a Keras
# backend (NumPy, the text side, tf.data), the commands' argument and file checks, the docstring
# examples, the packaging check and the tutorials' build. torch's eager execution traces and
# compiles nothing, so the few Keras steps those cases take cost least there: the 155 docstring
# examples ran in 48 s under torch against about 200 s under TensorFlow, whose graph tracing
# dominates tiny fits (one AWD-LSTM example alone: 50 s).
ONCE = "torch"

# Code that never touches a Keras backend: run it once; everything that builds or runs a Keras
# model runs under every backend.
backend_independent = pytest.mark.skipif(
    keras.backend.backend() != ONCE, reason="backend-independent code; runs once")

# The exact resume of a whole recipe (three runs: unbroken, interrupted, resumed) is checked on
# one backend; the training loop's exact resume is checked on every backend by
# tests/training/test_training.py::test_exact_resume, and each recipe's outputs on every backend.
recipe_resume = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="a recipe's exact resume runs on torch; the loop's on every backend")

# The docstring examples are run once: they show how to call the code, and what they show is
# tested on every backend by the module's own tests.
examples_once = pytest.mark.skipif(
    keras.backend.backend() != ONCE,
    reason="docstring examples run once; their behaviour is tested on every backend")
