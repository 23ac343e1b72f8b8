"""The pretraining loop: a fixed number of optimizer steps in phases, resumable at any step.

:func:`train_phases` drives ``model.fit`` over one or more :class:`Phase`\\ s (BERT's 128-token
then 512-token phases), in ``fit`` calls whose epochs end where held-out evaluation runs, with a
:class:`~keras_bert_lab.training.checkpoints.TrainingCheckpoint` (every N steps, and on
SIGINT/SIGTERM) and a CSV log. Steps count optimizer updates: with gradient accumulation each
takes several batches. Data come from the caller as a function of the batches to skip — a stream
that is a pure function of its seed restarts at the batch a resumed step needs, so a run killed at
step 300 of 600 and resumed ends with the weights of an unbroken run (same seed and backend) up
to float round-off. The recipe that builds the model and the streams is
:mod:`keras_bert_lab.models.bert.pretrain`.
"""

import dataclasses
import os

from keras_bert_lab.errors import TrainingError
from keras_bert_lab.training.callbacks import StepLog
from keras_bert_lab.training.checkpoints import TrainingCheckpoint
from keras_bert_lab.training.run import is_out_of_memory

LOG_COLUMNS = ("step", "split", "loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy",
               "learning_rate", "tokens_per_s", "elapsed_s")


@dataclasses.dataclass
class Phase:
    """Optimizer steps ``[begin, end)`` on one stream.

    ``stream(skip)`` returns the training dataset with its first ``skip`` batches skipped;
    ``heldout`` is a finite dataset evaluated at the end of each ``fit`` epoch (or ``None``);
    ``batch_size`` and ``sequence_length`` describe one micro-batch (for the log and for the
    out-of-memory advice).
    """

    begin: int
    end: int
    stream: object
    heldout: object
    batch_size: int
    sequence_length: int


def segments(start, end, every):
    """Split steps ``[start, end)`` into ``(first_step, epochs, steps_per_epoch)`` fit calls whose
    epochs end on multiples of ``every`` (where held-out evaluation runs) or at ``end``.

    >>> segments(5, 30, 10)
    [(5, 1, 5), (10, 2, 10)]
    """
    out, step = [], start
    if step % every and step < end:
        n = min(every - step % every, end - step)
        out.append((step, 1, n))
        step += n
    full = (end - step) // every
    if full:
        out.append((step, full, every))
        step += full * every
    if step < end:
        out.append((step, 1, end - step))
    return out


def train_phases(model, phases, output_dir, *, start_step=0, checkpoint_every=100,
                 keep_checkpoints=3, eval_every=200, log_every=20, accumulation=1, verbose=1,
                 callbacks=(), log_columns=LOG_COLUMNS):
    """Fit ``model`` (compiled) from ``start_step`` through every phase; returns the reason the
    run stopped early (a signal or a non-finite loss, with the checkpoint to resume from) or
    ``None``. Writes ``checkpoints/`` and ``log.csv`` (``log_columns``; BERT's by default) under
    ``output_dir``.

    A backend's out-of-memory error becomes a ``TrainingError`` with the batch size and
    accumulation that keep the effective batch (and so the schedule) the same.
    """
    checkpoint = TrainingCheckpoint(os.path.join(output_dir, "checkpoints"),
                                    every_steps=checkpoint_every, keep=keep_checkpoints)
    fitted = False
    total = max(phase.end for phase in phases)
    for phase in phases:
        if start_step >= phase.end or phase.begin == phase.end:
            continue
        log = StepLog(os.path.join(output_dir, "log.csv"),
                      phase.batch_size * phase.sequence_length, log_every, log_columns)
        for first, epochs, per_epoch in segments(max(start_step, phase.begin), phase.end,
                                                 eval_every):
            stream = phase.stream((first - phase.begin) * accumulation)
            try:
                model.fit(stream, epochs=epochs, steps_per_epoch=per_epoch * accumulation,
                          shuffle=False, validation_data=phase.heldout,
                          callbacks=[checkpoint, log, *callbacks], verbose=verbose)
            except Exception as error:  # noqa: BLE001 - re-raised with advice when it is memory
                if is_out_of_memory(error):
                    raise TrainingError(
                        f"A batch of {phase.batch_size} × {phase.sequence_length} tokens does not "
                        f"fit in memory ({type(error).__name__}). Use a smaller --batch-size with "
                        "--accumulation so the effective batch stays the same (e.g. --batch-size "
                        f"{max(1, phase.batch_size // 2)} --accumulation {accumulation * 2}); "
                        "--steps counts optimizer updates, so the run keeps its length and "
                        "schedule.") from None
                raise
            fitted = True
            if checkpoint.stopped_because:
                return checkpoint.stopped_because
    if fitted and checkpoint.last_saved_step != total:
        checkpoint.save()
    return None
