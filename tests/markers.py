"""Markers shared by the test modules."""

import keras
import pytest

# Code that never touches a Keras backend (NumPy, the text side, tf.data): run it once, under
# TensorFlow; everything that builds or runs a Keras model runs under every backend.
backend_independent = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="backend-independent code; runs once")
