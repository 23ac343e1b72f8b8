"""Preset weights: one float32 HDF5 dataset per variable, named by its path inside the model.

``backbone/<variable path>`` for the backbone's variables and ``task/<variable path>`` for a task's
heads (a variable shared by the two, such as the token embedding tied to the masked-LM decoder, is
stored once, as the backbone's). Loading matches by name and shape, so every mismatch can be
named.
"""

import os
import warnings

import numpy as np

from keras_bert_lab.errors import PresetError

FORMAT = "keras_bert_lab.weights"
FORMAT_VERSION = 1


def named_variables(model):
    """``[(name, variable)]``: ``backbone/<path>`` for the backbone's, ``task/<path>`` for heads.

    ``model`` is a backbone or a task whose ``backbone`` attribute is one; a variable shared by
    the two (a tied embedding) is listed once, as the backbone's.
    """
    backbone = getattr(model, "backbone", model)
    rows, seen = [], set()
    for prefix, variables in (("backbone", backbone.weights), ("task", model.weights)):
        for variable in variables:
            if id(variable) not in seen:
                seen.add(id(variable))
                rows.append((f"{prefix}/{variable.path}", variable))
    return rows


def model_weights(model):
    """``{name: float32 np.ndarray}`` of a model, named as in a preset."""
    import keras

    return {name: np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(variable, "float32")),
                             dtype="float32")
            for name, variable in named_variables(model)}


def write_weights(path, weights):
    """Write ``{name: array}`` to an HDF5 file in the preset layout (float32)."""
    import h5py

    with h5py.File(path, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["format_version"] = FORMAT_VERSION
        for name, value in weights.items():
            f.create_dataset(name, data=np.asarray(value, dtype="float32"))


def read_weights(path):
    """``{name: np.ndarray}`` from a preset weights file; ``PresetError`` if it is unreadable."""
    import h5py

    out = {}
    try:
        with h5py.File(path, "r") as f:
            f.visititems(lambda name, item: out.__setitem__(name, item[()])
                         if isinstance(item, h5py.Dataset) else None)
    except FileNotFoundError:
        raise PresetError(f"Weights file {path} does not exist.") from None
    except (OSError, KeyError, ValueError, RuntimeError) as error:
        raise PresetError(f"Weights file {path} is truncated or corrupt and cannot be read "
                          f"({error}); copy or re-create the preset.") from None
    return out


def load_weights(model, weights, allow_partial=False, load_heads=True, where="the weights"):
    """Assign ``weights`` (``{name: array}`` or a weights file) to ``model`` (a backbone or a task).

    The backbone's variables are matched strictly by name: a shape difference always raises,
    naming the first mismatching tensor (in model order) and both shapes; missing or unexpected
    backbone tensors raise with both lists unless ``allow_partial=True``, which loads what matches
    and warns with the rest. Head (``task/``) tensors are loaded when ``load_heads`` and present
    with the same shapes; other heads stay freshly initialised (a warning names the ones whose
    shape changed, e.g. a classifier given a new number of classes), and heads of other tasks are
    ignored.

    Returns ``{"missing": [...], "unexpected": [...], "new_heads": [...]}``.
    """
    if not isinstance(weights, dict):
        where = os.fspath(weights)
        weights = read_weights(weights)
    missing, new_heads, assignments = [], [], []
    named = named_variables(model)
    for name, variable in named:
        is_head = name.startswith("task/")
        if name not in weights or (is_head and not load_heads):
            (new_heads if is_head else missing).append(name)
            continue
        value = np.asarray(weights[name])
        if is_head and tuple(value.shape) != tuple(variable.shape):
            warnings.warn(f"{name} is {tuple(value.shape)} in {where} but this head needs "
                          f"{tuple(variable.shape)}; it starts freshly initialised.", stacklevel=2)
            new_heads.append(name)
            continue
        if tuple(value.shape) != tuple(variable.shape):
            raise PresetError(
                f"Weights do not fit the config: {name} is {tuple(value.shape)} in {where} but "
                f"the config builds {tuple(variable.shape)}. The first mismatching tensor is "
                "named; check that config.json belongs to these weights.")
        assignments.append((variable, value))
    wanted = {name for name, _ in named}
    unexpected = sorted(n for n in weights if n not in wanted and not n.startswith("task/"))
    if (missing or unexpected) and not allow_partial:
        raise PresetError(f"{where} do not match the model: missing {missing or 'none'}; "
                          f"unexpected {unexpected or 'none'}. Pass allow_partial=True to load "
                          "what matches.")
    if missing or unexpected:
        warnings.warn(f"Loaded {len(assignments)} tensors from {where}; left as initialised: "
                      f"{missing or 'none'}; ignored: {unexpected or 'none'}.", stacklevel=2)
    for variable, value in assignments:
        variable.assign(value)
    return {"missing": missing, "unexpected": unexpected, "new_heads": new_heads}
