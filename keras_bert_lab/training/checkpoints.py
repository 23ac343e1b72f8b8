"""Checkpoints that resume a run exactly: weights, optimizer state, RNG state, step, data position.

A checkpoint is a directory ``ckpt-00000300/`` holding ``state.npz`` (every model variable —
weights *and* the dropout seed-generator states — then every optimizer variable: moments, step
counter, loss-scale state) and ``meta.json`` (step, time, caller's extra state such as the data
stream position). It is written under a temporary name and renamed into place, so a run killed
mid-write leaves the previous checkpoint intact and never a half-written one. Only the newest
``keep`` are kept.

Variables are stored in creation order and checked by shape on restore: a model built from the
same config in a new process (any auto-generated layer names may differ) restores exactly.
"""

import json
import os
import shutil
import signal
import time

import keras
import numpy as np

from keras_bert_lab.errors import TrainingError

PREFIX = "ckpt-"


def _state_variables(model):
    if model.optimizer is None:
        raise TrainingError("Compile the model before saving or restoring a training checkpoint.")
    if not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)
    return list(model.variables) + list(model.optimizer.variables)


def list_checkpoints(directory):
    """Complete checkpoint directories under ``directory``, oldest first."""
    if not os.path.isdir(directory):
        return []
    names = sorted(n for n in os.listdir(directory)
                   if n.startswith(PREFIX) and not n.endswith(".tmp")
                   and os.path.isfile(os.path.join(directory, n, "meta.json")))
    return [os.path.join(directory, n) for n in names]


def save_checkpoint(model, directory, step, extra=None, keep=3):
    """Write ``ckpt-{step}`` atomically and prune to the newest ``keep``; returns its path."""
    os.makedirs(directory, exist_ok=True)
    final = os.path.join(directory, f"{PREFIX}{int(step):08d}")
    tmp = final + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    arrays = {f"v{i:05d}": keras.ops.convert_to_numpy(v) for i, v in
              enumerate(_state_variables(model))}
    np.savez(os.path.join(tmp, "state.npz"), **arrays)
    with open(os.path.join(tmp, "meta.json"), "w") as f:
        json.dump({"step": int(step), "time": time.time(), "num_variables": len(arrays),
                   "backend": keras.backend.backend(), "extra": extra or {}}, f, indent=2)
    if os.path.exists(final):
        shutil.rmtree(final)
    os.replace(tmp, final)
    for old in list_checkpoints(directory)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def restore_checkpoint(model, path):
    """Load a checkpoint (a ``ckpt-*`` directory, or the run directory for its newest) into a
    compiled ``model``; returns its ``meta.json`` dict, or ``None`` when there is none."""
    if not os.path.basename(os.path.normpath(path)).startswith(PREFIX):
        found = list_checkpoints(path)
        if not found:
            return None
        path = found[-1]
    with open(os.path.join(path, "meta.json")) as f:
        meta = json.load(f)
    variables = _state_variables(model)
    try:
        with np.load(os.path.join(path, "state.npz")) as data:
            arrays = [data[f"v{i:05d}"] for i in range(len(data.files))]
    except Exception as error:
        raise TrainingError(f"Checkpoint {path} is unreadable ({error}); delete it to fall back to "
                          "the previous one.") from None
    if len(arrays) != len(variables):
        raise TrainingError(f"Checkpoint {path} holds {len(arrays)} variables but the model and "
                          f"optimizer have {len(variables)}: it was written by another model, "
                          "optimizer or precision policy.")
    for variable, array in zip(variables, arrays):
        if tuple(variable.shape) != array.shape:
            raise TrainingError(f"Checkpoint {path}: {variable.path} has shape {array.shape} there "
                              f"but {tuple(variable.shape)} in the model.")
    for variable, array in zip(variables, arrays):
        variable.assign(array)
    return meta


class TrainingCheckpoint(keras.callbacks.Callback):
    """Save every ``every_steps`` optimizer steps, and on SIGINT/SIGTERM (then stop training).

    A non-finite loss stops training without saving, so the newest checkpoint is the last good
    state; ``stopped_because`` then says at which step and where that checkpoint is (it also
    names the signal after an interruption). ``extra_state`` is an optional callable returning a
    JSON-able dict stored with each checkpoint. The step is the optimizer's iteration count: with
    gradient accumulation that counts updates, not batches, and checkpoints (also on a signal) are
    taken only right after an update, so no half-accumulated gradient is ever the resume point.

    Example:
    >>> callback = TrainingCheckpoint("/tmp/run/checkpoints", every_steps=500, keep=3)
    """

    def __init__(self, directory, every_steps=1000, keep=3, extra_state=None,
                 handle_signals=True):
        super().__init__()
        self.directory = directory
        self.every_steps = every_steps
        self.keep = keep
        self.extra_state = extra_state
        self.handle_signals = handle_signals
        self.interrupted = None
        self.stopped_because = None
        self._previous_handlers = {}
        self.last_saved_step = None
        self._seen_step = None

    def _step(self):
        return int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def save(self):
        step = self._step()
        extra = self.extra_state() if self.extra_state else None
        save_checkpoint(self.model, self.directory, step, extra=extra, keep=self.keep)
        self.last_saved_step = step

    def _on_signal(self, signum, frame):
        self.interrupted = signal.Signals(signum).name

    def on_train_begin(self, logs=None):
        self._seen_step = self._step()
        if self.handle_signals:
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    self._previous_handlers[sig] = signal.signal(sig, self._on_signal)
                except ValueError:  # not the main thread: leave signals alone
                    pass

    def on_train_batch_end(self, batch, logs=None):
        step = self._step()
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(float(loss)):
            found = list_checkpoints(self.directory)
            self.stopped_because = (
                f"the loss became {float(loss)} at step {step}; stopped without saving. The last "
                f"good checkpoint is {found[-1] if found else '(none yet)'}: lower the learning "
                "rate or use float32, then resume from it.")
            self.model.stop_training = True
            return
        updated, self._seen_step = step != self._seen_step, step
        if not updated:  # a micro-batch of gradient accumulation: the weights did not change
            return
        if self.interrupted or (self.every_steps and step % self.every_steps == 0):
            if step != self.last_saved_step:
                self.save()
        if self.interrupted:
            self.stopped_because = (f"interrupted by {self.interrupted} at step {step}; "
                                    f"checkpoint saved in {self.directory}: resume with --resume.")
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        for sig, handler in self._previous_handlers.items():
            signal.signal(sig, handler)
        self._previous_handlers = {}
