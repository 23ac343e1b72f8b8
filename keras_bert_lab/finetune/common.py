"""The fine-tuning recipe every ``kbl finetune`` task shares.

BERT's fine-tuning recipe (Devlin et al. 2019, §4 and App. A.3): start from the pretrained
weights, add one small head, train everything for 2–4 epochs with AdamW at a small learning rate
(2e-5 … 5e-5 for base; small models such as MiniLM like ~1e-4), warm up linearly over the first 10 %
of steps and decay linearly to zero, and keep the epoch that scores best on the validation set.
Optional layer-wise learning-rate decay (``--layer-decay 0.9``) trains lower layers slower.

:func:`batches` cuts each batch to its longest real sequence (rounded up to ``length_multiple``),
so short texts padded to 128 do not pay for 128 — on a CPU this is most of the cost of a GLUE-style
run. The padding that remains is masked, so results do not change.

Shapes: ``N`` examples, ``C`` choices, ``L`` padded length.
"""

import csv
import dataclasses
import json
import math
import os
import pathlib
import shutil
import time

import keras
import numpy as np

from keras_bert_lab.errors import ConfigError


@dataclasses.dataclass
class FinetuneSettings:
    """What a fine-tuning run needs besides its data (written to ``settings.json``)."""

    preset: str = "minilm_l6_en_uncased"
    output: str = "out/finetune"
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    layer_decay: float = 1.0
    patience: int = 2
    sequence_length: int = 128
    seed: int = 0
    overwrite: bool = False
    limit: int | None = None

    def __post_init__(self):
        checks = (("epochs", self.epochs >= 1), ("batch_size", self.batch_size >= 1),
                  ("learning_rate", self.learning_rate > 0),
                  ("warmup_ratio", 0 <= self.warmup_ratio < 1),
                  ("layer_decay", 0 < self.layer_decay <= 1), ("patience", self.patience >= 1),
                  ("sequence_length", self.sequence_length >= 3),
                  ("limit", self.limit is None or self.limit >= 1))
        for name, ok in checks:
            if not ok:
                raise ConfigError(f"--{name.replace('_', '-')}={getattr(self, name)} is out of "
                                  "range; see `kbl finetune <task> --help` for valid values.")

    def to_dict(self):
        return dataclasses.asdict(self)


def add_common_arguments(parser, **defaults):
    """Add one flag per :class:`FinetuneSettings` field; ``defaults`` override per task."""
    base = FinetuneSettings()
    helps = {"preset": "preset name or directory to start from",
             "output": "output directory (metrics.json, log.csv, curves.png, preset/)",
             "layer_decay": "layer-wise learning-rate decay factor (1 = off, e.g. 0.9)",
             "patience": "stop after this many epochs without a better validation score",
             "limit": "use only the first N training examples (smoke runs)"}
    for field in dataclasses.fields(FinetuneSettings):
        value = defaults.get(field.name, getattr(base, field.name))
        flag = "--" + field.name.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(flag, action="store_true", default=value,
                                help="replace a non-empty output directory")
        else:
            kind = int if field.name == "limit" else type(value)
            parser.add_argument(flag, type=kind, default=value, help=helps.get(field.name))


def settings_from_args(args):
    """The :class:`FinetuneSettings` of parsed ``kbl finetune`` arguments."""
    names = [f.name for f in dataclasses.fields(FinetuneSettings)]
    return FinetuneSettings(**{name: getattr(args, name) for name in names if hasattr(args, name)})


def prepare_output(settings):
    """Create the output directory (refusing a non-empty one unless ``overwrite``), seed every
    RNG with ``settings.seed`` and write ``settings.json``."""
    output = pathlib.Path(settings.output)
    if output.is_dir() and any(output.iterdir()):
        if not settings.overwrite:
            raise ConfigError(f"{output} is not empty; choose a new --output or pass --overwrite "
                              "to replace it.")
        shutil.rmtree(output)
    output.mkdir(parents=True, exist_ok=True)
    (output / "settings.json").write_text(json.dumps(settings.to_dict(), indent=2) + "\n")
    keras.utils.set_random_seed(settings.seed)
    return output


# ---- data ------------------------------------------------------------------------------------
def batches(features, labels=None, sample_weight=None, batch_size=32, shuffle=False, seed=0,
            length_multiple=16):
    """A finite ``tf.data.Dataset`` of ``(x, y[, sample_weight])`` batches, each cut to its length.

    Args:
        features: dict of NumPy arrays with equal first dimension ``N``; it must hold
            ``padding_mask`` ``(N, L)`` (or ``(N, C, L)``).
        labels, sample_weight: an array or a dict of arrays (``N`` first), or ``None``.
        shuffle: a new order every epoch (seeded: the same run gives the same orders).
        length_multiple: each batch keeps ``max(real tokens)`` positions rounded up to this; every
            array shaped like ``padding_mask`` (features, token labels, token weights) is cut.

    Example:
    >>> x = {"token_ids": np.ones((3, 64), "int32"), "padding_mask": np.zeros((3, 64), "int32")}
    >>> x["padding_mask"][:, :5] = 1
    >>> first = next(iter(batches(x, np.arange(3), batch_size=2)))
    >>> first[0]["token_ids"].shape.as_list(), first[1].numpy().tolist()
    ([2, 16], [0, 1])
    """
    import tensorflow as tf

    if "padding_mask" not in features:
        raise ValueError("batches() needs features['padding_mask'] to find each batch's length.")
    mask = np.asarray(features["padding_mask"])
    parts = [dict(features)] + [p for p in (labels, sample_weight) if p is not None]
    n = len(mask)
    for part in parts:
        for value in keras.tree.flatten(part):
            if len(value) != n:
                raise ValueError(f"All arrays need {n} rows (padding_mask has {n}); one has "
                                 f"{len(value)}.")
    lengths = mask.reshape(n, -1, mask.shape[-1]).sum(-1).max(-1)  # (N,) longest choice
    full = mask.shape[-1]
    rng = np.random.default_rng(seed)
    count = math.ceil(n / batch_size)

    def take(part, rows, length):
        def cut(value):
            value = np.asarray(value)[rows]
            return value[..., :length] if value.shape[1:] == mask.shape[1:] else value
        return keras.tree.map_structure(cut, part)

    def generate():
        order = rng.permutation(n) if shuffle else np.arange(n)
        for start in range(0, n, batch_size):
            rows = order[start:start + batch_size]
            length = min(full, -(-max(int(lengths[rows].max()), 1) // length_multiple)
                         * length_multiple)
            yield tuple(take(part, rows, length) for part in parts)

    def spec(value):
        value = np.asarray(value)
        shape = (None,) + value.shape[1:-1] + (None,) if value.shape[1:] == mask.shape[1:] \
            else (None,) + value.shape[1:]
        return tf.TensorSpec(shape, tf.as_dtype(value.dtype))

    signature = tuple(keras.tree.map_structure(spec, part) for part in parts)
    dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
    return dataset.apply(tf.data.experimental.assert_cardinality(count))


# ---- training --------------------------------------------------------------------------------
def finetune(model, train, settings, evaluate, monitor, mode="max", verbose=1):
    """Fit ``model`` on ``train`` with the recipe; keep and restore the best epoch.

    Args:
        model: a task model; its ``compile(optimizer=...)`` supplies loss and metrics.
        train: a finite dataset of batches (see :func:`batches`).
        settings: :class:`FinetuneSettings` (epochs, learning rate, warm-up, decay, patience).
        evaluate: ``callable(model) -> {name: float}`` on the validation data, run after each epoch.
        monitor: the key of ``evaluate``'s result that picks the best epoch; ``mode`` "max"/"min".

    Returns ``{"epochs": [{"epoch", "loss", "seconds", **evaluate(model)}], "best_epoch",
    "best", "train_seconds", "stopped_early"}`` and writes ``log.csv`` and ``curves.png``.
    """
    from keras_bert_lab.training.optimizers import adamw
    from keras_bert_lab.training.schedules import WarmupLinearDecay

    if mode not in ("max", "min"):
        raise ValueError(f"mode={mode!r}; use 'max' or 'min'.")
    steps_per_epoch = int(train.cardinality())
    if steps_per_epoch <= 0:
        raise ValueError("The training set is empty or of unknown length; build it with batches().")
    total = steps_per_epoch * settings.epochs
    schedule = WarmupLinearDecay(settings.learning_rate, int(settings.warmup_ratio * total), total)
    model.compile(optimizer=adamw(model, learning_rate=schedule,
                                  weight_decay=settings.weight_decay,
                                  layer_decay=settings.layer_decay))
    output = pathlib.Path(settings.output)
    output.mkdir(parents=True, exist_ok=True)
    better = (lambda a, b: a > b) if mode == "max" else (lambda a, b: a < b)
    rows, best, best_weights, waited, started = [], None, None, 0, time.time()
    for epoch in range(settings.epochs):
        began = time.time()
        history = model.fit(train, epochs=epoch + 1, initial_epoch=epoch, shuffle=False,
                            verbose=verbose)
        scores = {k: float(v) for k, v in evaluate(model).items()}
        if monitor not in scores:
            raise KeyError(f"evaluate() returned {sorted(scores)}, not the monitored {monitor!r}.")
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
            print(f"epoch {epoch + 1}/{settings.epochs}: "
                  + ", ".join(f"{k} {v:.4f}" for k, v in scores.items())
                  + (" (best)" if improved else f" (best {best[monitor]:.4f} at {best['epoch']})"))
        _write_log(output / "log.csv", rows)
        if waited >= settings.patience:
            break
    for variable, value in zip(model.weights, best_weights):
        variable.assign(value)
    plot_epochs(rows, monitor, output / "curves.png")
    return {"epochs": rows, "best_epoch": best["epoch"], "best": best, "monitor": monitor,
            "train_seconds": round(time.time() - started, 1),
            "stopped_early": len(rows) < settings.epochs}


def _write_log(path, rows):
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def plot_epochs(rows, monitor, path):
    """Training loss and the monitored validation score per epoch, side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [row["epoch"] for row in rows]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, key, title in ((axes[0], "loss", "training loss"),
                           (axes[1], monitor, f"validation {monitor}")):
        ax.plot(epochs, [row[key] for row in rows], "o-")
        ax.set_title(title)
        ax.set_xlabel("epoch")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def finish(model, settings, report, test_metrics=None, extra=None):
    """Write ``metrics.json`` and the fine-tuned preset (``output/preset``); print a summary.

    Returns the metrics dict: ``report`` from :func:`finetune`, ``test`` metrics, the settings and
    the backend.
    """
    output = pathlib.Path(settings.output)
    metrics = {**report, "test": test_metrics, "settings": settings.to_dict(),
               "backend": keras.backend.backend(), **(extra or {})}
    preset = model.save_to_preset(output / "preset", overwrite=True,
                                  source=f"fine-tuned from {settings.preset} by kbl finetune")
    metrics["preset"] = str(preset)
    tmp = output / "metrics.json.tmp"
    tmp.write_text(json.dumps(metrics, indent=2, default=float) + "\n", encoding="utf-8")
    os.replace(tmp, output / "metrics.json")
    best = report["best"]
    print(f"best epoch {best['epoch']}: {report['monitor']} {best[report['monitor']]:.4f}"
          + (" | test " + ", ".join(f"{k} {v:.4f}" for k, v in test_metrics.items()
                                    if isinstance(v, (int, float)))
             if test_metrics else "")
          + f" | {report['train_seconds']:.0f} s | preset: {preset}")
    return metrics
