"""The ``--data-parallel`` and ``--model-parallel BxM`` flags of ``kbl pretrain`` / ``kbl finetune``.

A run's distribution is how it runs, not what it is: it is kept out of ``settings.json``, so a run
checkpointed on one mesh resumes on another (weights are saved whole, see
:mod:`keras_bert_lab.training.checkpoints`). :func:`distributed` is the context a recipe trains
in: it checks the backend and the batch size before anything is built, joins the processes of a
multi-process job (:mod:`.launch`), sets the global ``keras.distribution`` — so that the model's
weights are created sharded — and resets it on the way out, whatever happens.
:class:`CheckLayout` checks the built model against the layout map before the first step, and
:func:`pad_predictions` lets a last, short prediction batch through a mesh whose batch axis
does not divide it.
"""

import contextlib

import keras
import numpy as np

from keras_bert_lab.distribution.launch import join_from_environment, process_output
from keras_bert_lab.distribution.strategies import (check_backend, check_batch_size, check_model,
                                                    data_parallel_size, distribution_for,
                                                    parse_kind)
from keras_bert_lab.errors import ConfigError


def add_arguments(parser):
    """Add ``--data-parallel`` and ``--model-parallel BxM`` to a training command's parser."""
    group = parser.add_argument_group("several devices (JAX backend; not part of the run's "
                                      "settings, so a run may resume on another mesh)")
    group.add_argument("--data-parallel", action="store_true", default=None,
                       help="split each batch over every device (keras.distribution.DataParallel)")
    group.add_argument("--model-parallel", metavar="BxM", default=None,
                       help="a B x M device mesh: batches split B ways, attention heads and "
                            "feed-forward widths M ways (B*M = the device count), e.g. 2x4")


def kind_from_args(args):
    """``None``, ``"data"`` or ``"model BxM"`` from parsed arguments (``ConfigError`` for both
    flags at once or a malformed mesh)."""
    data, model = getattr(args, "data_parallel", False), getattr(args, "model_parallel", None)
    if data and model:
        raise ConfigError("Give --data-parallel or --model-parallel BxM, not both "
                          "(--model-parallel Nx1 is data parallelism over N devices).")
    if model:
        what, shape = parse_kind(f"model {model}")
        return f"model {shape[0]}x{shape[1]}"
    return "data" if data else None


@contextlib.contextmanager
def distributed(kind, model=None, batch_sizes=(), tensorflow=None):
    """Run the body under the distribution ``kind`` (``None``: as it is, on one device).

    Args:
        kind: ``None``, ``"data"`` or ``"model BxM"`` (:func:`kind_from_args`).
        model: for ``"model BxM"``, the backbone config (or a built model) the layout map is
            derived from.
        batch_sizes: global batch sizes the run will use; each must split over the batch axis.
        tensorflow: on the TensorFlow backend, ``tensorflow(batch_sizes)`` gives the context
            that data parallelism runs in (the recipes pass
            :func:`keras_bert_lab.commands.mirrored.mirrored`: this package stays free of
            TensorFlow).

    Yields the ``keras.distribution.Distribution`` (``None`` without ``kind``; on TensorFlow,
    what ``tensorflow`` yields).
    """
    if kind is None:
        yield None
        return
    check_backend(kind=kind)
    if keras.backend.backend() == "tensorflow":
        if tensorflow is None:
            raise ConfigError("Data parallelism on TensorFlow runs through the recipes "
                              "(kbl pretrain / kbl finetune --data-parallel).")
        with tensorflow(batch_sizes) as strategy:
            yield strategy
        return
    # A multi-process job (kbl launch, or by hand on several hosts) joins before JAX starts.
    index, processes = join_from_environment()
    distribution = distribution_for(kind, model)
    for size in batch_sizes:
        check_batch_size(distribution, size)
    devices = int(np.asarray(distribution.device_mesh.devices).size)
    where = f" ({devices // processes} in process {index} of {processes})" if processes > 1 else ""
    mesh = "x".join(map(str, distribution.device_mesh.shape))
    print(f"kbl: {type(distribution).__name__} on {devices} devices{where}, mesh {mesh}; "
          f"batches split {data_parallel_size(distribution)} ways", flush=True)
    previous = keras.distribution.distribution()
    keras.distribution.set_distribution(distribution)
    try:
        yield distribution
    finally:
        keras.distribution.set_distribution(previous)


class CheckLayout(keras.callbacks.Callback):
    """Before the first training step: ``check_model`` of the built model (``ConfigError`` when
    the layout map does not fit it)."""

    def __init__(self, distribution):
        super().__init__()
        self.distribution, self.checked = distribution, False

    def on_train_begin(self, logs=None):
        if not self.checked:
            check_model(self.model, self.distribution)
            self.checked = True


def callbacks(distribution):
    """The callbacks a run under ``distribution`` (or ``None``) adds to its own."""
    if isinstance(distribution, (keras.distribution.DataParallel,
                                 keras.distribution.ModelParallel)):
        return [CheckLayout(distribution)]
    return []


def pad_predictions(model, distribution):
    """Make ``model.predict_on_batch`` pad a batch to a multiple of the data-parallel size
    (repeating its first row) and cut the outputs back, so that the short last batch of a
    prediction pass runs on the mesh. Returns ``model``."""
    ways = data_parallel_size(distribution) if distribution is not None else 1
    if ways == 1 or getattr(model, "_padded_for", None) == ways:
        return model
    predict = model.predict_on_batch

    def predict_on_batch(x):
        rows = len(keras.tree.flatten(x)[0])
        extra = -rows % ways
        if not extra:
            return predict(x)
        x = keras.tree.map_structure(
            lambda v: np.concatenate([np.asarray(v), np.repeat(np.asarray(v)[:1], extra, 0)]), x)
        return keras.tree.map_structure(lambda v: keras.ops.convert_to_numpy(v)[:rows],
                                        predict(x))

    model.predict_on_batch = predict_on_batch
    model._padded_for = ways
    return model


def run_distributed(run, settings, output_dir, kind, model=None, batch_sizes=(), tensorflow=None,
                    **options):
    """``run(settings, output_dir, callbacks=…, **options)`` of a pretraining recipe under
    :func:`distributed` (``kind`` ``None``: plainly). A process other than 0 of a multi-process
    job writes its copy of the run to ``OUTPUT.process-I`` (:func:`.launch.process_output`)."""
    with distributed(kind, model, batch_sizes, tensorflow) as distribution:
        return run(settings, process_output(output_dir),
                   callbacks=[*options.pop("callbacks", ()), *callbacks(distribution)], **options)
