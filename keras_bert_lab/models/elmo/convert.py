"""The original ELMo release format (``options.json`` + ``lm_weights.hdf5``) to and from presets.

bilm-tf's ``dump_weights`` writes the biLM (not its softmax) as one HDF5 file::

    char_embed                                        [261, E]       (no padding row)
    CNN/W_cnn_{i}, CNN/b_cnn_{i}                      [1, w_i, E, n_i], [n_i]
    CNN_high_{k}/W_carry, b_carry, W_transform, b_transform   [F, F], [F]
    CNN_proj/W_proj, b_proj                           [F, P], [P]
    RNN_{d}/RNN/MultiRNNCell/Cell{i}/LSTMCell/W_0     [P + P, 4U]   (d = 0 forward, 1 backward)
                                             .../B    [4U]          (forget bias +1 not included)
                                             .../W_P_0 [U, P]

Each tensor maps by name to one variable of :class:`~keras_bert_lab.models.elmo.backbone.ElmoBackbone`
(:func:`weight_table`), unchanged except two reshapes: the character embedding gains the zero row
0 that the +1-shifted character ids use for padding (bilm-tf and allennlp add it the same way when
they load), and the convolution kernels lose their leading 1. The same table writes the file back
(:func:`export_original`), so import and export cannot drift. Everything is checked before a
preset is written or a model loaded: each dataset must exist with the shape the options imply; a
disagreement names the option and the HDF5 path.

Example:
>>> options = {"char_cnn": {"filters": [[1, 4], [2, 8]], "embedding": {"dim": 4}, "n_highway": 1},
...            "lstm": {"dim": 64, "projection_dim": 16, "n_layers": 2}}
>>> table = weight_table(config_from_options(options))
>>> table["RNN_1/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"].name, table["CNN/W_cnn_1"].shape
('backbone/backward_lstm_0/kernel', (1, 2, 4, 8))
>>> table["CNN_high_0/W_carry"].name, table["char_embed"].shape   # + the padding row on load
('backbone/char_cnn/highway_0/gate_kernel', (261, 4))
"""

import dataclasses
import json
import os
import pathlib

import numpy as np

from keras_bert_lab import families
from keras_bert_lab.errors import ConfigError, PresetError
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets.vocabulary import coerce_vocabulary

OPTIONS_FILE, WEIGHTS_FILE = "options.json", "lm_weights.hdf5"
DIRECTIONS = ("forward", "backward")  # RNN_0, RNN_1
KNOWN_OPTIONS = {"char_cnn": ("filters", "embedding", "n_highway", "n_characters",
                              "max_characters_per_token", "activation"),
                 "lstm": ("dim", "projection_dim", "n_layers", "cell_clip", "proj_clip",
                          "use_skip_connections")}
REQUIRED_OPTIONS = {"char_cnn": ("filters", "embedding"),
                    "lstm": ("dim", "projection_dim", "n_layers")}
# Top-level keys of a training run's options.json that do not shape the biLM.
TRAINING_OPTIONS = ("bidirectional", "dropout", "all_clip_norm_val", "n_epochs",
                    "n_train_tokens", "batch_size", "unroll_steps", "n_negative_samples_batch",
                    "share_embedding_softmax", "sample_softmax")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One tensor of the release format: its preset name, its shape there, and the options each
    dimension comes from (named in errors)."""

    name: str
    shape: tuple
    options: tuple
    kind: str = "same"  # "same", "char_embed" (+ zero row 0), "conv" (drop the leading 1)

    def to_preset(self, value):
        if self.kind == "char_embed":
            return np.concatenate([np.zeros((1, value.shape[1]), value.dtype), value])
        return value[0] if self.kind == "conv" else value

    def to_original(self, value):
        if self.kind == "char_embed":
            return value[1:]
        return value[None] if self.kind == "conv" else value


def weight_table(config):
    """``{hdf5 path: Entry}`` for an ``ElmoConfig`` (or the dict of its fields)."""
    config = _fields(config)
    e, p, u = config["character_dim"], config["projection_dim"], config["lstm_dim"]
    filters = [(int(w), int(n)) for w, n in config["filters"]]
    f = sum(n for _, n in filters)
    table = {"char_embed": Entry("backbone/char_cnn/character_embedding/embeddings",
                                 (config["num_characters"] - 1, e),
                                 ("char_cnn.n_characters", "char_cnn.embedding.dim"), "char_embed")}
    for i, (width, count) in enumerate(filters):
        conv = f"backbone/char_cnn/conv_{i}"
        table[f"CNN/W_cnn_{i}"] = Entry(f"{conv}/kernel", (1, width, e, count), (
            "the release format", f"char_cnn.filters[{i}] (width)", "char_cnn.embedding.dim",
            f"char_cnn.filters[{i}] (count)"), "conv")
        table[f"CNN/b_cnn_{i}"] = Entry(f"{conv}/bias", (count,),
                                        (f"char_cnn.filters[{i}] (count)",))
    width = "char_cnn.filters (their counts sum to the highway width)"
    for k in range(config["num_highway"]):
        highway = f"backbone/char_cnn/highway_{k}"
        for original, ours in (("carry", "gate"), ("transform", "transform")):
            table[f"CNN_high_{k}/W_{original}"] = Entry(f"{highway}/{ours}_kernel", (f, f),
                                                        (width, width))
            table[f"CNN_high_{k}/b_{original}"] = Entry(f"{highway}/{ours}_bias", (f,), (width,))
    table["CNN_proj/W_proj"] = Entry("backbone/char_cnn/projection/kernel", (f, p),
                                     (width, "lstm.projection_dim"))
    table["CNN_proj/b_proj"] = Entry("backbone/char_cnn/projection/bias", (p,),
                                     ("lstm.projection_dim",))
    for d, direction in enumerate(DIRECTIONS):
        for i in range(config["num_layers"]):
            cell = f"RNN_{d}/RNN/MultiRNNCell/Cell{i}/LSTMCell"
            layer = f"backbone/{direction}_lstm_{i}"
            table[f"{cell}/W_0"] = Entry(f"{layer}/kernel", (p + p, 4 * u),
                                         ("lstm.projection_dim", "lstm.dim"))
            table[f"{cell}/B"] = Entry(f"{layer}/bias", (4 * u,), ("lstm.dim",))
            table[f"{cell}/W_P_0"] = Entry(f"{layer}/projection", (u, p),
                                           ("lstm.dim", "lstm.projection_dim"))
    return table


def read_options(options):
    """The options dict from a dict, a path to ``options.json``, or its directory."""
    if isinstance(options, dict):
        return options
    path = pathlib.Path(options)
    if path.is_dir():
        path = path / OPTIONS_FILE
    if not path.is_file():
        raise PresetError(f"ELMo options file {path} does not exist.")
    options = preset_format.read_json(path, what="ELMo options.json")
    if not isinstance(options, dict):
        raise PresetError(f"{path} does not hold a JSON object; it is not an ELMo options.json.")
    return options


def config_from_options(options):
    """The ``ElmoConfig`` fields (a dict) of an original ``options.json`` (a dict or a path).

    Checks the structure (sections, required and unknown keys) and names the option at fault;
    the values are checked by ``ElmoConfig``. Training settings are ignored; ``n_tokens_vocab``
    becomes ``vocabulary_size``; an ``n_characters`` of 261 (bilm-tf's training value, before the
    padding row is added) is read as 262.
    """
    options = read_options(options)
    for section in ("char_cnn", "lstm"):
        if not isinstance(options.get(section), dict):
            raise ConfigError(f"options.json has no '{section}' section; only character-input "
                              "biLMs (char_cnn + lstm) are supported.")
    unknown = sorted(set(options) - {"char_cnn", "lstm", "n_tokens_vocab", *TRAINING_OPTIONS})
    if unknown:
        raise ConfigError(f"options.json has unknown option(s) {unknown}.")
    if options.get("bidirectional") is False:
        raise ConfigError("options.json: bidirectional is false; ElmoBackbone is bidirectional.")
    for section, keys in KNOWN_OPTIONS.items():
        unknown = sorted(set(options[section]) - set(keys))
        if unknown:
            raise ConfigError(f"options.json: unknown {section} option(s) {unknown}; known: "
                              f"{sorted(keys)}.")
        for key in REQUIRED_OPTIONS[section]:
            if key not in options[section]:
                raise ConfigError(f"options.json lacks {section}.{key}.")
    cnn, lstm = options["char_cnn"], options["lstm"]
    if not isinstance(cnn["embedding"], dict) or "dim" not in cnn["embedding"]:
        raise ConfigError("options.json lacks char_cnn.embedding.dim.")
    _check_values(cnn, lstm)
    n_characters = cnn.get("n_characters", 262)
    return dict(
        filters=[list(f) for f in cnn["filters"]], character_dim=cnn["embedding"]["dim"],
        num_highway=cnn.get("n_highway", 0),
        num_characters=262 if n_characters == 261 else n_characters,
        max_characters=cnn.get("max_characters_per_token", 50),
        activation=cnn.get("activation", "relu"), lstm_dim=lstm["dim"],
        projection_dim=lstm["projection_dim"], num_layers=lstm["n_layers"],
        cell_clip=lstm.get("cell_clip"), projection_clip=lstm.get("proj_clip"),
        use_skip_connections=bool(lstm.get("use_skip_connections", False)),
        vocabulary_size=options.get("n_tokens_vocab") or 0)


def _check_values(cnn, lstm):
    """The values the weight table needs, checked so that a preset is never written from nonsense
    (``ElmoConfig`` checks them all again when a model is built)."""
    def positive(value):
        return isinstance(value, int) and not isinstance(value, bool) and value > 0

    filters = cnn["filters"]
    if not isinstance(filters, list) or not filters or not all(
            isinstance(f, (list, tuple)) and len(f) == 2 and all(positive(v) for v in f)
            for f in filters):
        raise ConfigError(f"options.json: char_cnn.filters must be a list of [width, count] "
                          f"pairs of positive integers, got {filters!r}.")
    values = {"char_cnn.embedding.dim": cnn["embedding"]["dim"],
              "char_cnn.n_characters": cnn.get("n_characters", 262),
              "lstm.dim": lstm["dim"], "lstm.projection_dim": lstm["projection_dim"],
              "lstm.n_layers": lstm["n_layers"]}
    for name, value in values.items():
        if not positive(value):
            raise ConfigError(f"options.json: {name} must be a positive integer, got {value!r}.")
    if not (isinstance(cnn.get("n_highway", 0), int) and cnn.get("n_highway", 0) >= 0):
        raise ConfigError(f"options.json: char_cnn.n_highway must be an integer >= 0, got "
                          f"{cnn['n_highway']!r}.")
    if cnn.get("activation", "relu") not in ("relu", "tanh"):
        raise ConfigError(f"options.json: char_cnn.activation must be one of ('relu', 'tanh'), "
                          f"got {cnn['activation']!r}.")


def options_from_config(config):
    """The ``options.json`` dict of an ``ElmoConfig`` (given as its dict)."""
    config = _fields(config)
    options = {
        "lstm": {"dim": config["lstm_dim"], "projection_dim": config["projection_dim"],
                 "n_layers": config["num_layers"], "cell_clip": config["cell_clip"],
                 "proj_clip": config["projection_clip"],
                 "use_skip_connections": config["use_skip_connections"]},
        "char_cnn": {"filters": [list(f) for f in config["filters"]],
                     "embedding": {"dim": config["character_dim"]},
                     "n_highway": config["num_highway"], "n_characters": config["num_characters"],
                     "max_characters_per_token": config["max_characters"],
                     "activation": config["activation"]},
    }
    if config.get("vocabulary_size"):
        options["n_tokens_vocab"] = config["vocabulary_size"]
    return options


def _fields(config):
    return config.to_dict() if hasattr(config, "to_dict") else dict(config)


def _missing_reason(path, config):
    """Which option asks for a dataset (a convolution, highway layer or LSTM layer count)."""
    parts = path.split("/")
    if parts[0] == "CNN":
        return f"char_cnn.filters lists {len(config['filters'])} convolutions"
    if parts[0].startswith("CNN_high_"):
        return f"char_cnn.n_highway is {config['num_highway']}"
    if parts[0].startswith("RNN_") and len(parts) > 3 and parts[3].startswith("Cell"):
        return f"lstm.n_layers is {config['num_layers']}"
    return None


def read_original(options, weights):
    """``(config dict, {preset name: array})`` from ``options.json`` and ``lm_weights.hdf5``.

    Raises ``PresetError`` before returning anything: an option that disagrees with a tensor's
    shape (naming the option and the HDF5 path), a missing or unexpected dataset (its path, and
    the option that asks for it), an unreadable file. ``ConfigError`` for an invalid
    ``options.json``. Names are as in a preset (``backbone/...``).
    """
    import h5py

    config = config_from_options(options)
    table = weight_table(config)
    path = os.fspath(weights)
    if os.path.isdir(path):
        path = os.path.join(path, WEIGHTS_FILE)
    if not os.path.isfile(path):
        raise PresetError(f"ELMo weights file {path} does not exist.")
    try:
        with h5py.File(path, "r") as f:
            found = {}
            f.visititems(lambda name, item: found.__setitem__(name, item)
                         if isinstance(item, h5py.Dataset) else None)
            _check(found, table, config, path)
            named = {entry.name: entry.to_preset(np.asarray(found[key][()], "float32"))
                     for key, entry in table.items()}
    except PresetError:
        raise
    except (OSError, RuntimeError, KeyError, ValueError) as error:  # h5py's errors on bad files
        raise PresetError(f"ELMo weights file {path} is not a readable HDF5 file ({error}).") \
            from None
    return config, named


def _check(found, table, config, path):
    missing = [key for key in table if key not in found]
    if missing:
        reasons = {key: _missing_reason(key, config) for key in missing}
        detail = "; ".join(f"{key} ({reasons[key]} in options.json)" if reasons[key] else key
                           for key in missing)
        raise PresetError(f"{path} lacks dataset(s) {detail}. The file is truncated, not an ELMo "
                          "lm_weights.hdf5, or options.json does not belong to it.")
    for key, entry in table.items():
        actual = tuple(found[key].shape)
        if actual == entry.shape:
            continue
        if len(actual) != len(entry.shape):
            raise PresetError(f"{path}: dataset {key} has shape {actual}; a biLM with these "
                              f"options needs {entry.shape}.")
        dim = next(i for i, (a, b) in enumerate(zip(actual, entry.shape)) if a != b)
        option = entry.options[dim]
        raise PresetError(f"options.json disagrees with {path}: {option} makes dataset {key} "
                          f"{entry.shape}, but the file holds {actual} (dimension {dim}). Fix "
                          f"{option} in options.json, or use the options that came with these "
                          "weights.")
    extra = sorted(key for key in found if key not in table)
    if extra:
        reasons = sorted({_missing_reason(key, config) or "the biLM has no such tensor "
                          "(a softmax or word-embedding tensor?)" for key in extra})
        raise PresetError(f"{path} holds dataset(s) {extra} that options.json does not describe "
                          f"({'; '.join(reasons)}). Fix options.json to match the file.")


def import_original(options, weights, preset_dir, vocabulary=None, source=None, license=None,
                    overwrite=False):
    """Write a preset directory (``ElmoBackbone``) from a released biLM.

    ``vocabulary``: the language model's word vocabulary (a vocab.txt path or a token list),
    needed when ``options.json`` has ``n_tokens_vocab``; it sets ``vocabulary_size``. Without it the
    preset has no softmax vocabulary (``vocabulary_size`` 0, an empty ``vocab.txt``).
    """
    config, named = read_original(options, weights)
    tokens = coerce_vocabulary(vocabulary) or []
    if config["vocabulary_size"] and len(tokens) != config["vocabulary_size"]:
        raise PresetError(f"options.json has n_tokens_vocab={config['vocabulary_size']} but the "
                          f"vocabulary given has {len(tokens)} tokens; pass the vocabulary the "
                          "biLM was trained with (vocabulary=<vocab.txt>).")
    config["vocabulary_size"] = len(tokens)
    return preset_format.write_preset(
        preset_dir, backbone_class="ElmoBackbone", config=config, weights=named, vocabulary=tokens,
        tokenizer={"lowercase": False}, overwrite=overwrite, license=license,
        source=source or f"ELMo biLM {pathlib.Path(os.fspath(weights)).absolute()}")


def export_original(model, directory, overwrite=False):
    """Write ``options.json`` and ``lm_weights.hdf5`` in the release layout into ``directory``.

    ``model``: an ``ElmoBackbone``, a task holding one as ``backbone`` (its softmax is not written:
    the release format has none), or an ``ElmoBackbone`` preset directory. Returns the directory.
    """
    import h5py

    if isinstance(model, (str, os.PathLike, preset_format.Preset)):
        preset = model if isinstance(model, preset_format.Preset) else \
            preset_format.read_preset(model)
        families.require(preset, "elmo", "only biLMs have the ELMo release format")
        config, weights = preset.config, preset.weights()
    else:
        from keras_bert_lab.presets.weights import model_weights

        config, weights = getattr(model, "backbone", model).config.to_dict(), model_weights(model)
    table = weight_table(config)
    absent = sorted(entry.name for entry in table.values() if entry.name not in weights)
    if absent:
        raise PresetError(f"Cannot export: the model lacks {absent} (not an ElmoBackbone of this "
                          "config?).")
    with preset_format.atomic_directory(directory, overwrite=overwrite) as tmp:
        (tmp / OPTIONS_FILE).write_text(json.dumps(options_from_config(config), indent=2) + "\n",
                                        encoding="utf-8")
        with h5py.File(tmp / WEIGHTS_FILE, "w") as f:
            for key, entry in table.items():
                f.create_dataset(key, data=entry.to_original(
                    np.asarray(weights[entry.name], "float32")))
    return pathlib.Path(directory).expanduser().absolute()
