"""From a flag to a ``keras.distribution``: ``"data"`` or ``"model BxM"``.

Data parallelism (``"data"``) keeps a whole copy of the model on every device and splits each batch
between them; gradients are averaged by an all-reduce that XLA inserts. ``"model BxM"`` arranges the
devices in a ``B × M`` grid: each batch is split ``B`` ways (the ``batch`` axis) and every large
weight ``M`` ways (the ``model`` axis) by the layout map of :mod:`.layouts`. ``"model 1xM"`` is pure
tensor parallelism, ``"model Nx1"`` is data parallelism again.

Keras runs these on JAX (several processes: ``keras.distribution.initialize`` first). On one CPU,
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` set before JAX is imported gives 8 devices.
"""

import math
import re

import keras

from keras_bert_lab.distribution.layouts import BATCH, MODEL, REPLICATED, check_layout, layout_map
from keras_bert_lab.errors import ConfigError, InputError

_MODEL_KIND = re.compile(r"model[\s:=]*(\d+)\s*[x×]\s*(\d+)")


def parse_kind(kind):
    """``"data"`` → ``("data", None)``; ``"model 2x4"`` → ``("model", (2, 4))``."""
    text = str(kind).strip().lower()
    if text == "data":
        return "data", None
    found = _MODEL_KIND.fullmatch(text)
    if not found:
        raise ConfigError(f"Unknown distribution {kind!r}: use 'data' (data parallel on every "
                          "device) or 'model BxM', e.g. 'model 2x4' (batch split 2 ways, weights "
                          "4 ways; B×M = the number of devices).")
    return "model", (int(found.group(1)), int(found.group(2)))


def device_mesh(shape, devices=None):
    """A ``DeviceMesh`` of ``shape`` (batch, model) over ``devices`` (default: all of them)."""
    devices = list(keras.distribution.list_devices() if devices is None else devices)
    if any(int(n) < 1 for n in shape):
        raise ConfigError(f"Mesh shape {tuple(shape)} must hold positive sizes.")
    if math.prod(shape) != len(devices):
        factors = [f"{b}x{len(devices) // b}" for b in range(1, len(devices) + 1)
                   if len(devices) % b == 0]
        raise ConfigError(
            f"A {'x'.join(map(str, shape))} mesh needs {math.prod(shape)} devices but "
            f"{len(devices)} are available ({devices[:2]}…); the batch and model sizes must "
            f"multiply to the device count: one of {factors}.")
    return keras.distribution.DeviceMesh(tuple(shape), (BATCH, MODEL), devices=devices)


def distribution_for(kind, model=None, devices=None):
    """The ``keras.distribution.Distribution`` for a flag value.

    Use it as ``with distribution.scope():`` around building and training the model, or set it
    globally with ``keras.distribution.set_distribution``: weights are created sharded then. For
    model parallelism, check the built model with ``check_layout(model, layout_map(model,
    distribution.device_mesh))`` (see :mod:`.layouts`).

    Args:
        kind: ``"data"`` (``DataParallel`` over all devices) or ``"model BxM"`` (``ModelParallel``
            over a ``(B, M)`` mesh with axes ``("batch", "model")``).
        model: for ``"model BxM"``, the backbone config (``BertConfig``, ``GPTConfig``) or a
            built model of the same architecture to derive the layout map from.
        devices: device names (default ``keras.distribution.list_devices()``).

    Example:
    >>> distribution = distribution_for("data", devices=["cpu:0"])
    >>> type(distribution).__name__, data_parallel_size(distribution)
    ('DataParallel', 1)
    """
    what, shape = parse_kind(kind)
    devices = list(keras.distribution.list_devices() if devices is None else devices)
    if what == "data":
        return keras.distribution.DataParallel(devices=devices)
    if model is None:
        raise ConfigError("distribution_for('model BxM') needs the backbone config (or a built "
                          "model) to derive its layout map from.")
    mesh = device_mesh(shape, devices)
    return keras.distribution.ModelParallel(layout_map=layout_map(model, mesh),
                                            batch_dim_name=BATCH)


def check_backend(backend=None, kind="data"):
    """``ConfigError`` unless the Keras backend (default: the current one) can train ``kind``:
    JAX runs ``keras.distribution`` (data and model parallel, several processes); TensorFlow runs
    data parallelism through ``tf.distribute.MirroredStrategy``; PyTorch neither."""
    backend = backend or keras.backend.backend()
    if backend == "jax" or (backend == "tensorflow" and parse_kind(kind)[0] == "data"):
        return
    other = {"tensorflow": "on TensorFlow, --data-parallel runs under "
                           "tf.distribute.MirroredStrategy; model parallelism needs JAX",
             "torch": "keras.distribution has no PyTorch implementation"}.get(backend, "")
    raise ConfigError(f"Training on several devices runs on the JAX backend: set "
                      f"KERAS_BACKEND=jax (here: {backend}{'; ' + other if other else ''}).")


def check_model(model, distribution):
    """After building ``model`` under ``distribution``: ``{path: axes}`` of its weights (``()``
    replicated), or ``ConfigError`` when a model-parallel layout map does not fit the model
    (see :func:`~keras_bert_lab.distribution.layouts.check_layout`)."""
    if isinstance(distribution, keras.distribution.ModelParallel):
        return check_layout(model, layout_map(model, distribution.device_mesh))
    return {v.path: REPLICATED for v in model.weights}


def data_parallel_size(distribution):
    """How many ways a global batch is split: the size of the mesh's batch axis."""
    mesh = distribution.device_mesh
    return mesh.shape[list(mesh.axis_names).index(distribution.batch_dim_name)]


def check_batch_size(distribution, batch_size):
    """``InputError`` unless the global ``batch_size`` splits evenly over the batch axis."""
    ways = data_parallel_size(distribution)
    if batch_size % ways:
        lower, upper = batch_size // ways * ways, (batch_size // ways + 1) * ways
        near = f"{lower} or {upper}" if lower else f"{upper}"
        raise InputError(
            f"Batch size {batch_size} does not split over the {ways} data-parallel replicas of "
            f"{type(distribution).__name__}; use a multiple of {ways} (e.g. {near}), or a mesh "
            "with fewer batch rows.")
