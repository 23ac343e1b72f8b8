"""What every ``kbl finetune`` task shares: settings and flags, data splits, the run, the report.

Each task recipe (:mod:`.classify`, :mod:`.squad`, :mod:`.ner`) reads its data, builds its task
model from a preset and its preprocessor from the same preset, then runs the same steps:
:func:`start` (the run folder, every RNG seeded), :func:`fine_tune` (BERT's schedule, the best
validation epoch kept: :func:`keras_bert_lab.training.finetune.fit_best_epoch`) and :func:`finish`
(``metrics.json`` and the fine-tuned preset).

Long module: each :class:`FinetuneSettings` field is a flag, a preset recommendation and a value
the run reads; the fields, their flags and the steps that use them are one contract, so they are
kept in one file where a new setting is added once.
"""

import dataclasses
import functools
import os
import pathlib

import keras

from keras_bert_lab import families
from keras_bert_lab.data.splits import split_indices
from keras_bert_lab.distribution import check_batch_size, check_model, data_parallel_size, launch
from keras_bert_lab.distribution import session
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.commands.mirrored import in_use as mirrored_in_use
from keras_bert_lab.commands.mirrored import mirrored, predict_by_replicas
from keras_bert_lab.training.finetune import SCHEDULES, UNFREEZE, fit_best_epoch
from keras_bert_lab.training.run import check_run_folder, guarded, prepare_output, write_json


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
    schedule: str = "linear"
    cut_fraction: float = 0.1
    slanted_ratio: float = 32.0
    unfreeze: str = "all"
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
                  ("schedule", self.schedule in SCHEDULES),
                  ("cut_fraction", 0 < self.cut_fraction < 1),
                  ("slanted_ratio", self.slanted_ratio >= 1),
                  ("unfreeze", self.unfreeze in UNFREEZE),
                  ("sequence_length", self.sequence_length >= 3),
                  ("limit", self.limit is None or self.limit >= 1))
        for name, ok in checks:
            if not ok:
                raise ConfigError(f"--{name.replace('_', '-')}={getattr(self, name)} is out of "
                                  "range; see `kbl finetune <task> --help` for valid values.")

    def to_dict(self):
        return dataclasses.asdict(self)


CHOICES = {"schedule": SCHEDULES, "unfreeze": UNFREEZE}
# The settings a preset may recommend (its preprocessor entry "finetune"); a flag the user gives
# wins over the preset, the preset over the task's default.
RECOMMENDABLE = ("epochs", "batch_size", "learning_rate", "warmup_ratio", "weight_decay",
                 "layer_decay", "schedule", "cut_fraction", "slanted_ratio", "unfreeze",
                 "patience", "pooling")


class Unset:
    """A flag's default when the user did not give it: ``value``, unless the preset recommends
    another (see :func:`settings_from_args`)."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return repr(self.value)


def add_common_arguments(parser, **defaults):
    """Add one flag per :class:`FinetuneSettings` field; ``defaults`` override per task."""
    base = FinetuneSettings()
    session.add_arguments(parser)  # how the run trains, not what it is: not in settings.json
    helps = {"preset": "preset name or directory to start from",
             "output": "output directory (metrics.json, log.csv, curves.png, preset/)",
             "layer_decay": "learning-rate factor from each layer group to the one below (1 = "
                            "off; ELECTRA 0.8-0.9; ULMFiT's discriminative rates 1/2.6 = 0.385)",
             "schedule": "learning-rate schedule: BERT's linear warm-up and decay, or "
                         "ULMFiT's slanted triangular rate",
             "cut_fraction": "slanted schedule: share of steps spent increasing the rate",
             "slanted_ratio": "slanted schedule: the peak rate over the lowest",
             "unfreeze": "which layer groups train: all, only the top one (the head), or "
                         "gradually one more per epoch from the top (ULMFiT)",
             "patience": "stop after this many epochs without a better validation score",
             "limit": "use only the first N training examples (smoke runs)",
             "sequence_length": "tokens per example; longer texts are cut"}
    for field in dataclasses.fields(FinetuneSettings):
        value = defaults.get(field.name, getattr(base, field.name))
        flag = "--" + field.name.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(flag, action="store_true", default=value,
                                help="replace a previous run in the output directory")
        else:
            kind = int if field.name == "limit" else type(value)
            help_text = helps.get(field.name)
            if field.name in RECOMMENDABLE:
                value = Unset(value)
                help_text = (help_text + "; " if help_text else "") + \
                    f"default {value!r} or the preset's recommendation"
            elif field.name == "sequence_length":
                value = Unset(value)
                help_text += f"; default {value!r}, or the preset's positions when fewer"
            parser.add_argument(flag, type=kind, default=value, help=help_text,
                                choices=CHOICES.get(field.name))


def add_data_arguments(parser, datasets=(), test_fraction=False, default_valid_fraction=0.1):
    """The data flags of a task: ``--dataset`` (registry sets) or ``--train``/``--valid``/
    ``--test`` files, and the share of ``--train`` held out when a part is not given."""
    if datasets:
        parser.add_argument("--dataset", choices=list(datasets),
                            help="a registry data set instead of --train/--valid/--test")
    parser.add_argument("--train", help="training file")
    parser.add_argument("--valid", help="validation file; default: split off --train")
    parser.add_argument("--test", help="test file, scored once with the best epoch")
    parser.add_argument("--valid-fraction", type=float, default=default_valid_fraction,
                        help="share of the training examples held out for validation when there "
                             "is no --valid")
    if test_fraction:
        parser.add_argument("--test-fraction", type=float, default=0.0,
                            help="share held out as a test part when splitting (default none)")


# The task flags that only some families take (their finetune modules' FLAGS), each with the
# value it has when not given.
FAMILY_FLAGS = {"pooling": "cls", "lm_loss_weight": 0.0, "label_all_pieces": False}


def add_lm_loss_weight(parser):
    parser.add_argument("--lm-loss-weight", type=float, default=0.0,
                        help="GPT presets: weight λ of the auxiliary language-modelling loss "
                             "(GPT-1: 0.5; 0 = off)")


def adapter(settings, args, kind, command):
    """The ``kind`` adapter of the preset's family (its registry entry's ``finetune`` module:
    ``models/<family>/finetune.py``, or the encoders' shared :mod:`.encoder`), after refusing a task
    flag given for a family that does not take it — with one line naming the flag and the families
    it applies to, never silently ignored."""
    from keras_bert_lab.presets.registry import read_preset

    family = read_preset(settings.preset, verify=False).family
    for flag, unset in FAMILY_FLAGS.items():
        value = getattr(args, flag, unset)
        if value != unset and not isinstance(value, Unset) and flag not in family.finetune_flags():
            takers = [f.label for f in families.FAMILIES if flag in f.finetune_flags()]
            raise ConfigError(f"--{flag.replace('_', '-')} applies to {' and '.join(takers)} "
                              f"presets; leave it out with {family.label} preset "
                              f"{settings.preset}.")
    return family.finetune_adapter(kind, command)


def _peek(preset):
    """The preset's metadata, unchecked (``None`` when it cannot be read: that is reported
    with its own message where the preset is checked, :func:`check_preset`)."""
    from keras_bert_lab.presets.registry import read_preset

    try:
        return read_preset(preset, verify=False)
    except Exception:   # noqa: BLE001
        return None


def recommended(preset):
    """The fine-tuning settings ``preset`` recommends (``{}`` when none, or no such preset).

    A preset directory recommends through its preprocessor entry ``"finetune"``; a named preset
    also through the ``"finetune"`` entry of its registry file (measured settings,
    ``benchmarks/finetune_techniques.py``), under the directory's own.
    """
    from keras_bert_lab.presets.registry import named_presets

    named = {}
    if isinstance(preset, str) and not os.path.isdir(preset):
        named = (named_presets().get(preset) or {}).get("finetune") or {}
    info = _peek(preset)
    own = ((info.preprocessor or {}).get("finetune") or {}) if info is not None else {}
    return {k: v for k, v in {**named, **own}.items() if k in RECOMMENDABLE}


def preset_choice(args, name):
    """A task flag a preset may recommend (``--pooling``): the value given, else the preset's
    recommendation (printed, as :func:`settings_from_args` does), else the flag's default."""
    value = getattr(args, name)
    if not isinstance(value, Unset):
        return value
    advice = recommended(args.preset).get(name)
    if advice is None:
        return value.value
    print(f"preset recommends: --{name.replace('_', '-')} {advice}")
    return advice


def settings_from_args(args):
    """The :class:`FinetuneSettings` of parsed ``kbl finetune`` arguments: given flags, then the
    preset's recommendations (:func:`recommended`), then the task's defaults."""
    names = [f.name for f in dataclasses.fields(FinetuneSettings) if hasattr(args, f.name)]
    values = {name: getattr(args, name) for name in names}
    advice = recommended(values["preset"]) if "preset" in values else {}
    taken = {k: v for k, v in advice.items() if isinstance(values.get(k), Unset)}
    if taken:
        print("preset recommends: " + ", ".join(f"--{k.replace('_', '-')} {v}"
                                                for k, v in taken.items()))
    length = values.get("sequence_length")
    positions = (getattr(_peek(values["preset"]), "config", None) or {}).get("max_positions") \
        if isinstance(length, Unset) and "preset" in values else None
    if positions and length.value > int(positions):   # the default, cut to the preset's table
        values["sequence_length"] = int(positions)
    values = {k: taken.get(k, v.value if isinstance(v, Unset) else v) for k, v in values.items()}
    return FinetuneSettings(**values)


def _subset(data, indices):
    return data.subset(indices) if hasattr(data, "subset") else [data[i] for i in indices]


def load_splits(args, read_file, read_dataset):
    """``({"train", "valid", "test"}, description)``: the data of a task's flags.

    ``--dataset NAME`` (``read_dataset(name)`` gives a dict of parts or one set) or ``--train
    FILE`` (``read_file(path)``), never both. A missing validation part is held out of train by
    ``--valid-fraction`` (and, with ``--test-fraction``, a test part too), shuffled by ``--seed``;
    ``test`` may be ``None``.
    """
    dataset = getattr(args, "dataset", None)
    if bool(dataset) == bool(args.train):
        raise ConfigError("Pass either --dataset NAME or --train FILE (with --valid/--test), "
                          "not both or neither.")
    if dataset:
        data = read_dataset(dataset)
        parts = data if isinstance(data, dict) else {"train": data}
        how = f"registry data set {dataset!r}"
    else:
        parts = {"train": read_file(args.train)}
        how = f"train {args.train}"
    for name in ("valid", "test"):
        path = getattr(args, name, None)
        if path:
            parts[name] = read_file(path)
            how += f", {name} {path}"
    test_fraction = 0.0 if parts.get("test") is not None else getattr(args, "test_fraction", 0.0)
    valid_fraction = 0.0 if parts.get("valid") is not None else args.valid_fraction
    if parts.get("valid") is None or test_fraction:
        if not 0 <= valid_fraction < 1 or not 0 <= test_fraction < 1 \
                or valid_fraction + test_fraction >= 1 \
                or (parts.get("valid") is None and valid_fraction <= 0):
            raise ConfigError(f"--valid-fraction {args.valid_fraction} and --test-fraction "
                              f"{getattr(args, 'test_fraction', 0.0)} must be in [0, 1) "
                              "(validation > 0 without --valid) and leave examples for training.")
        fractions = (1 - valid_fraction - test_fraction, valid_fraction, test_fraction)
        train, valid, test = split_indices(len(parts["train"]), fractions, args.seed)
        if not train or (valid_fraction and not valid):
            raise DataError(f"{len(parts['train'])} training examples are too few to hold out "
                            f"{valid_fraction:.0%} for validation; pass --valid FILE.")
        held = [f"{valid_fraction:.0%} validation"] if valid_fraction else []
        held += [f"{test_fraction:.0%} test"] if test_fraction else []
        source = parts["train"]
        parts["train"] = _subset(source, train)
        if valid_fraction:
            parts["valid"] = _subset(source, valid)
        if test_fraction:
            parts["test"] = _subset(source, test)
        how += f" ({' and '.join(held)} held out of train with seed {args.seed})"
    parts.setdefault("test", None)
    return parts, how


def _backbone_config(preset):
    """The backbone config of ``preset``, which ``--model-parallel``'s layout map splits."""
    from keras_bert_lab.presets.registry import read_preset

    info = read_preset(preset, verify=False)  # an unreadable preset: its own error, here
    family = info.family
    if "model" not in family.distribution:
        able = [f.label for f in families.FAMILIES if "model" in f.distribution]
        raise ConfigError(f"--model-parallel splits {' and '.join(able)} backbones; preset "
                          f"{preset} holds a {info.backbone_class}. Use --data-parallel.")
    return family.config_class.from_dict(info.config)


def guard(run):
    """Decorates each task's ``run(args)``: a failure leaves no partial files, and nothing at
    all before the first step (:func:`keras_bert_lab.training.run.guarded`); with
    ``--data-parallel`` / ``--model-parallel BxM`` the task runs under that distribution
    (:func:`keras_bert_lab.distribution.session.distributed`), reset afterwards."""
    checked = guarded(lambda args: args.output)(run)

    @functools.wraps(run)
    def wrapper(args):
        kind = session.kind_from_args(args)
        if kind is None:
            return checked(args)
        if int(os.environ.get(launch.COUNT) or 1) > 1:
            raise ConfigError("kbl finetune trains on the devices of one process; several "
                              "processes (kbl launch) run kbl pretrain.")
        model = _backbone_config(args.preset) if kind.startswith("model") else None
        sizes = [args.batch_size] if isinstance(args.batch_size, int) else []
        with session.distributed(kind, model, sizes, mirrored):
            return checked(args)

    return wrapper


def check_preset(settings):
    """The checked preset of ``settings.preset`` (files, checksums), with ``--sequence-length``
    checked against its position table: ``PresetError`` / ``ConfigError`` before any work."""
    from keras_bert_lab.presets.registry import read_preset

    preset = read_preset(settings.preset)
    positions = (preset.config or {}).get("max_positions")
    if positions is not None and settings.sequence_length > int(positions):
        raise ConfigError(f"--sequence-length {settings.sequence_length} is longer than the "
                          f"{positions} positions of preset {settings.preset}; use at most "
                          f"{positions}.")
    return preset


def start(settings):
    """Check the preset and that the run folder can take this run (see
    :func:`keras_bert_lab.training.run.check_run_folder`; nothing is written yet: the folder is
    made by :func:`fine_tune`, once the data are ready) and seed every RNG with
    ``settings.seed``; returns the folder."""
    check_preset(settings)
    check_run_folder(settings.output, settings.to_dict(), overwrite=settings.overwrite)
    keras.utils.set_random_seed(settings.seed)
    return pathlib.Path(settings.output)


def fine_tune(model, train, settings, evaluate, monitor, mode="max", verbose=1):
    """Make the run folder (:func:`~keras_bert_lab.training.run.prepare_output`), then
    :func:`~keras_bert_lab.training.finetune.fit_best_epoch` with the settings' schedule.

    Under a distribution (``--data-parallel``, ``--model-parallel``) the batch size is checked
    against it and the model against its layout map first, and short batches — each epoch's
    last, a prediction pass's last — are padded to a multiple of the data-parallel size: in
    training with rows of weight 0, in prediction with rows cut from the outputs again."""
    distribution = keras.distribution.distribution()
    if distribution is not None:
        check_batch_size(distribution, settings.batch_size)
        check_model(model, distribution)
        train = _pad_batches(train, data_parallel_size(distribution))
        session.pad_predictions(model, distribution)
    elif keras.backend.backend() == "tensorflow" and mirrored_in_use():
        predict_by_replicas(model)
    prepare_output(settings.output, settings.to_dict(), overwrite=settings.overwrite)
    return fit_best_epoch(
        model, train, evaluate, monitor, settings.output, epochs=settings.epochs,
        learning_rate=settings.learning_rate, warmup_ratio=settings.warmup_ratio,
        weight_decay=settings.weight_decay, layer_decay=settings.layer_decay,
        patience=settings.patience, mode=mode, schedule=settings.schedule,
        cut_fraction=settings.cut_fraction, ratio=settings.slanted_ratio,
        unfreeze=settings.unfreeze, verbose=verbose)


def _pad_batches(train, ways):
    """``(x, y, weight)`` batches of a multiple of ``ways`` rows: a short batch gets copies of
    its first row with weight 0 (weights of 1 are added when the batch has none)."""
    import tensorflow as tf

    if ways == 1:
        return train

    def pad(*batch):
        rows = tf.shape(tf.nest.flatten(batch[0])[0])[0]
        extra = -rows % ways

        def more(t):
            return tf.concat([t, tf.repeat(t[:1], extra, axis=0)], 0)

        def zeros(w):
            return tf.concat([w, tf.zeros(tf.concat([[extra], tf.shape(w)[1:]], 0), w.dtype)], 0)

        weights = batch[2] if len(batch) > 2 else tf.ones([rows])
        return (*tf.nest.map_structure(more, tuple(batch[:2])),
                tf.nest.map_structure(zeros, weights))

    return train.map(pad)


def finish(model, settings, report, test_metrics=None, extra=None, preprocessor=None):
    """Write ``metrics.json`` and the fine-tuned preset (``output/preset``, recording the
    sequence length and ``preprocessor``'s entries, e.g. ``{"pair": True}``); print a summary.
    Returns the metrics dict: ``report`` from :func:`fine_tune`, ``test`` metrics, the settings
    and the backend."""
    output = pathlib.Path(settings.output)
    metrics = {**report, "test": test_metrics, "settings": settings.to_dict(),
               "backend": keras.backend.backend(), **(extra or {})}
    preset = model.save_to_preset(output / "preset", overwrite=True,
                                  source=f"fine-tuned from {settings.preset} by kbl finetune",
                                  preprocessor={"sequence_length": settings.sequence_length,
                                                **(preprocessor or {})})
    metrics["preset"] = str(preset)
    write_json(output / "metrics.json", metrics)
    best = report["best"]
    print(f"best epoch {best['epoch']}: {report['monitor']} {best[report['monitor']]:.4f}"
          + (" | test " + ", ".join(f"{k} {v:.4f}" for k, v in test_metrics.items()
                                    if isinstance(v, (int, float)))
             if test_metrics else "")
          + f" | {report['train_seconds']:.0f} s | preset: {preset}")
    return metrics
