"""The checks every task model must pass, in one place (keras-hub's ``run_task_test`` habit).

:func:`run_task_test` takes a tiny task and a batch and checks, in order: the outputs (names,
shapes, float32, padding-independent through ``predict_packed``), ``compile()`` defaults and two
``fit`` epochs (finite, falling loss; every trainable weight moves), ``get_config`` /
``from_config``, the ``.keras`` round trip, and the preset round trip (same outputs and task
arguments; a backbone-only load gives the same backbone). :func:`check_presets_in_other_backends`
loads saved presets under the other two Keras backends in one subprocess each and compares the
outputs.
"""

import os
import pathlib
import subprocess
import sys

import keras
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
TOLERANCE = 1e-5


def numpy_outputs(model, x):
    """The outputs of one eager call (no compiled predict function per model: the round trips
    build five models; ``predict_packed`` checks the compiled path)."""
    return keras.tree.map_structure(keras.ops.convert_to_numpy, model(x, training=False))


def assert_same_outputs(got, expected, atol=TOLERANCE, what=""):
    keras.tree.assert_same_structure(got, expected)
    for a, b in zip(keras.tree.flatten(got), keras.tree.flatten(expected)):
        np.testing.assert_allclose(a, b, atol=atol, rtol=0, err_msg=what)


def _weights(model):
    return [keras.ops.convert_to_numpy(v).copy() for v in model.trainable_variables]


def run_task_test(model, x, y=None, sample_weight=None, *, expected_shapes, vocabulary,
                  tmp_path, train=True, merges=None, shift_invariant=()):
    """Run the shared checks on ``model`` (see the module docstring); returns the preset path.

    Args:
        model: a freshly built task on a tiny backbone, dropout included.
        x, y, sample_weight: one batch (NumPy), as ``fit`` takes it.
        expected_shapes: the output shapes, in the output structure (a shape or a dict).
        vocabulary: the token list saved with the preset; ``merges`` too for a BPE model.
        train: whether ``compile()`` + ``fit`` apply (a task without a training loss: no).
        shift_invariant: paths of weights whose gradient is zero in exact arithmetic (a bias
            added to every score of a softmax, e.g. a multiple-choice head's): rounding may or
            may not move them, so they are left out of the "every weight trains" check.
    """
    cls = type(model)
    # 1. outputs
    out = numpy_outputs(model, x)
    shapes = keras.tree.map_structure(lambda v: tuple(v.shape), out)
    assert shapes == expected_shapes, (shapes, expected_shapes)
    assert all(v.dtype == np.float32 for v in keras.tree.flatten(out))
    assert_same_outputs(model.predict_packed(x, batch_size=2), out, what="predict_packed")
    # 2. training with the compile() defaults
    if train:
        model.compile()
        before = _weights(model)
        history = model.fit(x, y, sample_weight=sample_weight, epochs=2, batch_size=len(
            keras.tree.flatten(x)[0]), verbose=0).history
        assert all(np.isfinite(history["loss"])), history
        moved = [not np.array_equal(a, b) for a, b in zip(before, _weights(model))]
        frozen = [v.path for v, m in zip(model.trainable_variables, moved)
                  if not m and v.path not in shift_invariant]
        assert not frozen, f"trainable weights that fit did not update: {frozen}"
        out = numpy_outputs(model, x)
    # 3. config
    config = model.get_config()
    again = cls.from_config(config)
    assert again.get_config() == config
    # 4. the .keras file
    path = tmp_path / f"{cls.__name__}.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is cls
    assert_same_outputs(numpy_outputs(restored, x), out, what=".keras round trip")
    # 5. the preset
    preset = model.save_to_preset(tmp_path / f"{cls.__name__}_preset", vocabulary=vocabulary,
                                  **({"merges": merges} if merges else {}))
    loaded = cls.from_preset(preset)
    assert_same_outputs(numpy_outputs(loaded, x), out, what="preset round trip")
    arguments = {k: v for k, v in loaded.get_config().items() if k not in ("backbone", "name")}
    assert arguments == {k: v for k, v in config.items() if k not in ("backbone", "name")}
    backbone = type(model.backbone).from_preset(preset)
    backbone_inputs = {k: x[k] for k in model.backbone.input}
    if backbone_inputs["token_ids"].ndim == 2:
        assert_same_outputs(numpy_outputs(backbone, backbone_inputs)["sequence_output"],
                            numpy_outputs(model.backbone, backbone_inputs)["sequence_output"],
                            what="backbone of the preset")
    return preset


LOAD_ELSEWHERE = """
import importlib, sys, keras, numpy as np
for line in open(sys.argv[1]):
    module, name, preset, inputs, output = line.split()
    cls = getattr(importlib.import_module(module), name)
    out = cls.from_preset(preset).predict_on_batch(dict(np.load(inputs)))
    flat = keras.tree.flatten(keras.tree.map_structure(keras.ops.convert_to_numpy, out))
    np.savez(output, *flat)
"""


def check_presets_in_other_backends(cases, tmp_path):
    """Load each ``(model, preset, x)`` case's preset under the other two backends (one
    subprocess per backend, both at once) and compare the outputs with ``model``'s here."""
    manifest = {}
    script = tmp_path / "load_elsewhere.py"
    script.write_text(LOAD_ELSEWHERE)
    others = sorted({"tensorflow", "jax", "torch"} - {keras.backend.backend()})
    expected = {}
    for i, (model, preset, x) in enumerate(cases):
        np.savez(tmp_path / f"x{i}.npz", **x)
        expected[i] = keras.tree.flatten(numpy_outputs(model, x))
        for backend in others:
            manifest.setdefault(backend, []).append(
                f"{type(model).__module__} {type(model).__name__} {preset} {tmp_path / f'x{i}.npz'}"
                f" {tmp_path / f'{backend}_{i}.npz'}")
    runs = {}
    for backend, lines in manifest.items():
        (tmp_path / f"{backend}.txt").write_text("\n".join(lines) + "\n")
        runs[backend] = subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / f"{backend}.txt")], cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3"))
    for backend, run in runs.items():
        _, err = run.communicate(timeout=600)
        assert run.returncode == 0, f"{backend}: {err[-3000:]}"
        for i, (model, _, _) in enumerate(cases):
            with np.load(tmp_path / f"{backend}_{i}.npz") as got:
                arrays = [got[f"arr_{k}"] for k in range(len(got.files))]
            for a, b in zip(arrays, expected[i]):
                np.testing.assert_allclose(a, b, atol=TOLERANCE, rtol=0,
                                           err_msg=f"{type(model).__name__} under {backend}")
