"""Keras callbacks of the training runs (checkpoints are in :mod:`.checkpoints`)."""

import csv
import math
import os
import time

import keras
import numpy as np

from keras_bert_lab.training.run import append_row


class StepLog(keras.callbacks.Callback):
    """Adds ``tokens_per_s`` to the progress bar and appends rows to a CSV log.

    A ``train`` row every ``log_every`` optimizer updates (never for the start state, once per
    update under gradient accumulation) and a ``heldout`` row with the ``val_*`` metrics at the end
    of each epoch that validated. A train row's metrics are their means over the batches since
    the previous row, each batch weighted equally — Keras' logs hold means since the epoch began,
    which would draw a curve that steps down at every epoch start. (Exact for the losses, whose
    batches are all the same size; a metric weighted within its batch, such as masked-token
    accuracy, is averaged per batch. A ``*perplexity`` metric, the exp of a mean cross-entropy, is
    windowed in log space: the row holds the exp of the window's mean cross-entropy; an ``*auc``,
    which no mean of batches gives, is the epoch's so far.)

    Args:
        path: the CSV file (``log.csv``); rows are appended.
        tokens_per_step: tokens in one micro-batch (for ``tokens_per_s``).
        log_every: optimizer updates between train rows.
        columns: the CSV header (values missing from a row stay empty).
    """

    def __init__(self, path, tokens_per_step, log_every, columns):
        super().__init__()
        self.path, self.tokens_per_step, self.log_every = path, tokens_per_step, log_every
        self.columns = tuple(columns)
        self.start = time.time()
        self._window = None
        self._logged = None
        self._previous = (0, {})   # (batches done in this epoch, their mean metrics) at the last row

    def _step(self):
        return int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def on_train_begin(self, logs=None):
        self._logged = self._step()

    def on_train_end(self, logs=None):
        # a run shorter than log_every still has its log (not at the start: a run that fails
        # before training leaves nothing behind)
        if not os.path.exists(self.path):
            with open(self.path, "w", newline="") as f:
                csv.writer(f).writerow(self.columns)

    def on_train_batch_begin(self, batch, logs=None):
        if self._window is None:
            self._window = (time.time(), batch)

    def on_train_batch_end(self, batch, logs=None):
        logs = logs if logs is not None else {}
        began, first = self._window
        done = batch - first + 1
        logs["tokens_per_s"] = done * self.tokens_per_step / max(time.time() - began, 1e-9)
        step = self._step()
        if step % self.log_every == 0 and step != self._logged:  # once per update
            self._logged = step
            lr = self.model.optimizer.learning_rate
            means = {k: float(v) for k, v in logs.items()
                     if k != "tokens_per_s" and (np.isscalar(v) or np.ndim(v) == 0)}
            before, previous = self._previous
            count = batch + 1
            row = {}
            for k, v in means.items():   # a perplexity is exp(mean): its window is in log space
                if k.endswith("auc"):    # not a mean of batches: the epoch's so far, as it is
                    row[k] = v
                    continue
                f, g = (math.log, math.exp) if k.endswith("perplexity") else (float, float)
                old = f(previous[k]) if k in previous else 0.0
                row[k] = g((count * f(v) - before * old) / (count - before))
            self._previous = (count, means)
            row["tokens_per_s"] = logs["tokens_per_s"]
            row.update(step=step, split="train", elapsed_s=round(time.time() - self.start, 2),
                       learning_rate=float(keras.ops.convert_to_numpy(lr)))
            append_row(self.path, row, self.columns)

    def on_epoch_begin(self, epoch, logs=None):
        self._window, self._previous = None, (0, {})

    def on_epoch_end(self, epoch, logs=None):
        val = {k[4:]: float(v) for k, v in (logs or {}).items() if k.startswith("val_")}
        if val:
            val.update(step=self._step(), split="heldout",
                       elapsed_s=round(time.time() - self.start, 2))
            append_row(self.path, val, self.columns)
