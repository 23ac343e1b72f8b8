"""``PretrainRecipe``: the one run skeleton of ``kbl pretrain --model bert|gpt|elmo|awd-lstm``.

Every pretraining run goes the same way, in this order, so that a mistake costs nothing: the
run folder is checked (no writes), every input is read and checked (corpora, vocabulary, the
model, the held-out batches), and only then is the folder prepared; training resumes from the
newest checkpoint on ``--resume``, runs its phases with checkpoints, a CSV log and evaluation
(:func:`~keras_bert_lab.training.pretrain.train_phases`), and ends with ``metrics.json``,
``curves.png`` and ``preset/``. A failure leaves no partial files
(:func:`~keras_bert_lab.training.run.guarded`).

A family's recipe (``models/<family>/pretrain.py``) subclasses :class:`PretrainRecipe` and fills
in what differs: :meth:`read_inputs`, :meth:`build`, :meth:`phases`, :meth:`start`,
:meth:`finish`, :meth:`preset_files`, the log's columns and the curves; its module's
``run = Recipe().run`` is what ``kbl pretrain`` calls.
"""

import os
import time

import keras

from keras_bert_lab.errors import TrainingError
from keras_bert_lab.training.checkpoints import restore_checkpoint
from keras_bert_lab.training.pretrain import train_phases
from keras_bert_lab.training.run import (check_run_folder, guarded, plot_curves, prepare_output,
                                         read_rows, truncate_log, write_json)


class PretrainRecipe:
    """The run skeleton (see the module docstring); subclasses fill in the hooks."""

    name = ""                # the ``--model`` value, for the preset's ``source``
    log_columns = None       # log.csv's columns (None: BERT's)
    curves = ()              # (column, label) pairs plotted against the step in curves.png
    curve_groups = ("train", "heldout")   # one line per ``split`` (None: one line)

    def settings_to_store(self, settings, output_dir, resume):
        """``(settings, stored)``: the settings to run and the dict ``settings.json`` holds."""
        return settings, settings.to_dict()

    def read_inputs(self, settings, output_dir, resume):
        """Everything the run reads (corpora, vocabulary…), checked; nothing is written yet."""
        raise NotImplementedError

    def fit_settings(self, settings, inputs, output_dir, resume, verbose):
        """The settings after reading the inputs (BERT's time budget sizes the run here)."""
        return settings

    def build(self, settings, inputs):
        """The compiled model (the random seed is set)."""
        raise NotImplementedError

    def phases(self, settings, inputs):
        """The :class:`~keras_bert_lab.training.pretrain.Phase` list to train."""
        raise NotImplementedError

    def start(self, model, settings, inputs, output_dir, resume):
        """After the folder is prepared, before any checkpoint is restored: write what the run
        reuses on ``--resume`` (its vocabulary); return the first metrics."""
        return {}

    def finish(self, model, settings, inputs):
        """The metrics measured after training."""
        return {}

    def preset_files(self, settings, inputs):
        """``save_to_preset``'s arguments besides the path and ``source``."""
        raise NotImplementedError

    def source(self, settings):
        """The preset's ``source``: how it was trained."""
        return (f"kbl pretrain --model {self.name} ({settings.size}, {settings.total_steps} "
                f"steps on {'+'.join(settings.corpus)}, seed {settings.seed})")

    def run(self, settings, output_dir, resume=False, overwrite=False, verbose=1, callbacks=()):
        """Pretrain per ``settings`` into ``output_dir``; returns the final metrics dict."""
        return guarded()(self._run)(settings, output_dir, resume, overwrite, verbose, callbacks)

    def _run(self, settings, output_dir, resume, overwrite, verbose, callbacks):
        started = time.time()
        settings, stored = self.settings_to_store(settings, output_dir, resume)
        check_run_folder(output_dir, stored, resume=resume, overwrite=overwrite)
        inputs = self.read_inputs(settings, output_dir, resume)
        settings = self.fit_settings(settings, inputs, output_dir, resume, verbose)
        keras.utils.set_random_seed(settings.seed)
        model = self.build(settings, inputs)
        phases = self.phases(settings, inputs)
        prepare_output(output_dir, stored, resume=resume, overwrite=overwrite)
        metrics = dict(self.start(model, settings, inputs, output_dir, resume))
        start_step = restore(model, output_dir, settings) if resume else 0
        stopped = train_phases(
            model, phases, output_dir, start_step=start_step,
            checkpoint_every=settings.checkpoint_every,
            keep_checkpoints=settings.keep_checkpoints, eval_every=settings.eval_every,
            log_every=settings.log_every, accumulation=getattr(settings, "accumulation", 1),
            verbose=verbose, callbacks=callbacks,
            **({"log_columns": self.log_columns} if self.log_columns else {}))
        if stopped:
            raise TrainingError(stopped)
        metrics.update(self.finish(model, settings, inputs))
        metrics["seconds"] = round(time.time() - started, 1)
        write_json(os.path.join(output_dir, "metrics.json"), metrics)
        grouping = {"groups": self.curve_groups, "group_key": "split"} if self.curve_groups else {}
        plot_curves(read_rows(os.path.join(output_dir, "log.csv")), "step", list(self.curves),
                    os.path.join(output_dir, "curves.png"), **grouping)
        model.save_to_preset(os.path.join(output_dir, "preset"), overwrite=True,
                             source=self.source(settings), **self.preset_files(settings, inputs))
        return metrics


def restore(model, output_dir, settings):
    """The step a resumed run starts from: its newest checkpoint restored into ``model`` (and
    the log's rows past it, which the run writes again, dropped)."""
    meta = restore_checkpoint(model, os.path.join(output_dir, "checkpoints"))
    start_step = meta["step"] if meta else 0
    truncate_log(os.path.join(output_dir, "log.csv"), start_step)  # logged again from here
    print(f"Resuming at step {start_step} of {settings.total_steps}.")
    return start_step
