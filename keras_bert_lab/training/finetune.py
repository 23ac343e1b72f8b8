"""The fine-tuning loop: epochs of ``fit`` with BERT's schedule, keeping the best epoch.

BERT's fine-tuning recipe (Devlin et al. 2019, §4 and App. A.3): start from the pretrained
weights, add one small head, train everything for 2–4 epochs with AdamW at a small learning rate
(2e-5 … 5e-5 for base; small models such as MiniLM like ~1e-4), warm up linearly over the first
10 % of steps and decay linearly to zero, and keep the epoch that scores best on the validation
set. Optional layer-wise learning-rate decay (``layer_decay=0.9``) trains lower layers slower.
ULMFiT's techniques apply to every task model (:mod:`keras_bert_lab.training.transfer`):
``layer_decay=1/2.6`` is its discriminative fine-tuning, ``schedule="slanted"`` its slanted
triangular rate, ``unfreeze="gradual"`` its gradual unfreezing (``"top"`` trains only the top
layer group — the head — throughout).
The per-task recipes that read data and score predictions are in :mod:`keras_bert_lab.recipes`.
"""

import pathlib
import time

import keras

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.training.optimizers import adamw
from keras_bert_lab.training.run import plot_curves, write_rows
from keras_bert_lab.training.schedules import SlantedTriangular, WarmupLinearDecay
from keras_bert_lab.training.transfer import GradualUnfreezing, freeze_below, layer_groups

SCHEDULES = ("linear", "slanted")
UNFREEZE = ("all", "top", "gradual")


def learning_rate_schedule(name, learning_rate, total_steps, warmup_ratio=0.1, cut_fraction=0.1,
                           ratio=32.0):
    """``"linear"``: BERT's warm-up over ``warmup_ratio`` then linear decay to 0; ``"slanted"``:
    ULMFiT's slanted triangular rate (``cut_fraction``, ``ratio``)."""
    if name == "linear":
        return WarmupLinearDecay(learning_rate, int(warmup_ratio * total_steps), total_steps)
    if name == "slanted":
        return SlantedTriangular(learning_rate, total_steps, cut_fraction, ratio)
    raise ConfigError(f"Unknown schedule {name!r}; use one of {', '.join(SCHEDULES)}.")


def fit_best_epoch(model, train, evaluate, monitor, output_dir, *, epochs=3, learning_rate=5e-5,
                   warmup_ratio=0.1, weight_decay=0.01, layer_decay=1.0, patience=2, mode="max",
                   schedule="linear", cut_fraction=0.1, ratio=32.0, unfreeze="all", verbose=1):
    """Fit ``model`` on ``train`` with the recipe; keep and restore the best epoch.

    Args:
        model: a task model; its ``compile(optimizer=...)`` supplies loss and metrics.
        train: a finite dataset of batches of known length
            (:func:`keras_bert_lab.pipelines.batches.batches`).
        evaluate: ``callable(model) -> {name: float}`` on the validation data, after each epoch.
        monitor: the key of ``evaluate``'s result that picks the best epoch; ``mode`` "max"/"min".
        output_dir: where ``log.csv`` and ``curves.png`` go.
        epochs, learning_rate, warmup_ratio, weight_decay, layer_decay: the schedule and AdamW.
        patience: stop after this many epochs without a better score.
        schedule, cut_fraction, ratio: :func:`learning_rate_schedule`.
        unfreeze: ``"all"`` layer groups train, only the ``"top"`` one, or ``"gradual"``ly more.

    Returns ``{"epochs": [{"epoch", "loss", "seconds", **evaluate(model)}], "best_epoch",
    "best", "monitor", "train_seconds", "stopped_early"}``.
    """
    if mode not in ("max", "min"):
        raise ConfigError(f"mode={mode!r}; use 'max' or 'min'.")
    steps_per_epoch = int(train.cardinality())
    if steps_per_epoch <= 0:
        raise ConfigError("The training set is empty or of unknown length; build it with "
                          "keras_bert_lab.pipelines.batches.batches().")
    if unfreeze not in UNFREEZE:
        raise ConfigError(f"unfreeze={unfreeze!r}; use one of {', '.join(UNFREEZE)}.")
    total = steps_per_epoch * epochs
    rate = learning_rate_schedule(schedule, learning_rate, total, warmup_ratio, cut_fraction,
                                  ratio)
    groups = layer_groups(model)
    freeze_below(model, 1 if unfreeze == "top" else len(groups), groups)
    model.compile(optimizer=adamw(model, learning_rate=rate, weight_decay=weight_decay,
                                  layer_decay=layer_decay))
    callbacks = [GradualUnfreezing(groups=groups)] if unfreeze == "gradual" else []
    output = pathlib.Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    better = (lambda a, b: a > b) if mode == "max" else (lambda a, b: a < b)
    rows, best, best_weights, waited, started = [], None, None, 0, time.time()
    for epoch in range(epochs):
        began = time.time()
        history = model.fit(train, epochs=epoch + 1, initial_epoch=epoch, shuffle=False,
                            verbose=verbose, callbacks=callbacks)
        scores = {k: float(v) for k, v in evaluate(model).items()}
        if monitor not in scores:
            raise ConfigError(f"evaluate() returned {sorted(scores)}, not the monitored "
                              f"{monitor!r}.")
        row = {"epoch": epoch + 1, "loss": float(history.history["loss"][-1]),
               "seconds": round(time.time() - began, 1), **scores}
        rows.append(row)
        improved = best is None or better(scores[monitor], best[monitor])
        if improved:
            best, waited = row, 0
            best_weights = [keras.ops.convert_to_numpy(v) for v in model.weights]
        else:
            waited += 1
        if verbose:
            print(f"epoch {epoch + 1}/{epochs}: "
                  + ", ".join(f"{k} {v:.4f}" for k, v in scores.items())
                  + (" (best)" if improved else f" (best {best[monitor]:.4f} at {best['epoch']})"))
        write_rows(output / "log.csv", rows)
        if waited >= patience:
            break
    for variable, value in zip(model.weights, best_weights):
        variable.assign(value)
    freeze_below(model, len(groups), groups)   # every group trainable again
    plot_curves(rows, "epoch", [("loss", "training loss"), (monitor, f"validation {monitor}")],
                output / "curves.png")
    return {"epochs": rows, "best_epoch": best["epoch"], "best": best, "monitor": monitor,
            "train_seconds": round(time.time() - started, 1), "stopped_early": len(rows) < epochs}
