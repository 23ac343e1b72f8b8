"""``--data-parallel`` on TensorFlow: ``tf.distribute.MirroredStrategy``.

Keras' TensorFlow trainer runs ``fit``/``evaluate``/``predict`` under the ``tf.distribute``
strategy that was current when the model was built: each step is split over the strategy's
replicas and the gradients are summed across them before one update, so a run trains as on one
device (equal losses with dropout off — dropout draws differ per replica). The replicas are every
GPU TensorFlow sees or, without GPUs, ``KBL_CPU_DEVICES`` logical CPU devices carved out of the
one CPU (for trying the path on a laptop: they share its cores). Model parallelism and several
processes run on JAX (:mod:`keras_bert_lab.distribution`).
"""

import contextlib
import os

import keras

from keras_bert_lab.errors import ConfigError, InputError

CPU_DEVICES = "KBL_CPU_DEVICES"  # logical CPU devices to mirror over when there is no GPU
_strategies = {}


def replica_devices():
    """The device names MirroredStrategy mirrors over: all GPUs, else ``KBL_CPU_DEVICES``
    logical CPUs (1 when unset). Logical CPUs must be made before TensorFlow starts its
    runtime; a ``ConfigError`` says so when that moment has passed."""
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        return [d.name for d in tf.config.list_logical_devices("GPU")]
    text = os.environ.get(CPU_DEVICES) or "1"
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"{CPU_DEVICES}={text!r} must be a whole number of at least 1.")
    wanted = int(text)
    if wanted > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * wanted)
        except RuntimeError:  # the runtime is up already: the split stays as it was made
            pass
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    if len(devices) != wanted:
        raise ConfigError(f"{CPU_DEVICES}={wanted} asks for {wanted} CPU devices but TensorFlow "
                          f"had already started with {len(devices)}; set it before the command "
                          "starts.")
    return devices


@contextlib.contextmanager
def mirrored(batch_sizes=()):
    """Build and train inside ``MirroredStrategy(replica_devices()).scope()``; ``InputError``
    first when a global batch size does not split over the replicas."""
    import tensorflow as tf

    devices = replica_devices()
    for size in batch_sizes:
        if size % len(devices):
            lower, upper = size // len(devices) * len(devices), (size // len(devices) + 1) * \
                len(devices)
            near = f"{lower} or {upper}" if lower else f"{upper}"
            raise InputError(f"Batch size {size} does not split over the {len(devices)} "
                             f"replicas of MirroredStrategy; use a multiple of {len(devices)} "
                             f"(e.g. {near}).")
    # One strategy per process and device set: a second MirroredStrategy in the same process
    # would reuse the first one's collective-op instance keys and abort its all-reduces.
    strategy = _strategies.get(tuple(devices))
    if strategy is None:
        strategy = _strategies[tuple(devices)] = tf.distribute.MirroredStrategy(devices)
    print(f"kbl: MirroredStrategy on {len(devices)} devices ({', '.join(devices)}); batches "
          f"split {len(devices)} ways", flush=True)
    with strategy.scope():
        yield strategy


def in_use():
    """Whether a ``MirroredStrategy`` scope (:func:`mirrored`) is current."""
    import tensorflow as tf

    return isinstance(tf.distribute.get_strategy(), tf.distribute.MirroredStrategy)


def predict_by_replicas(model):
    """Make ``model.predict_on_batch`` split its batch over the replicas.

    Under a strategy, Keras' ``predict_on_batch`` hands the whole batch to every replica and
    concatenates their answers (4 replicas: 4 copies); ``predict`` distributes its input, so the
    batch goes through ``predict`` as one batch instead. Returns ``model``."""
    def predict_on_batch(x):
        rows = len(keras.tree.flatten(x)[0])
        return model.predict(x, batch_size=max(rows, 1), verbose=0)

    model.predict_on_batch = predict_on_batch
    return model
