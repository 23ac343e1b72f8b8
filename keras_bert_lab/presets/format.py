"""The preset directory format: a model's config, weights, vocabulary and provenance, on disk.

A preset directory holds four files (five for a byte-pair-encoding model):

``config.json``
    ``{"format": "keras_bert_lab.preset", "format_version": 1, "family": "bert",
    "backbone_class": "BertBackbone", "backbone": {config fields}, "task": null |
    {"class_name", "module", "config"}, "tokenizer": {"class_name": "WordPieceTokenizer",
    "lowercase": ...}, "preprocessor": null | {"sequence_length": 256},
    "sentence_embedding": null | {"pooling": "mean", "normalize": true}}``. ``family`` names the
    model family (:mod:`keras_bert_lab.families`) whose classes load the preset; a preset written
    before families were recorded has none, and its ``backbone_class`` tells the family.
``model.weights.h5``
    HDF5 with one float32 dataset per variable, named by its path inside the model:
    ``backbone/encoder_layer_0/attention/qkv/kernel``, and ``task/masked_lm_head/...`` for heads.
    Names rather than positions make every mismatch nameable, let a task load the backbone of a
    preset saved by another task (its own heads are then new), and let the converters
    (:mod:`keras_bert_lab.presets.convert`) write presets from NumPy arrays without building a
    model.
``vocab.txt``
    The vocabulary, one token per line (id = line number).
``merges.txt`` (optional; BPE models such as GPT only)
    The byte-pair merges in rank order, one ``left right`` pair per line (no header), which the
    BPE tokenizer applies to rebuild the tokens of ``vocab.txt``. Absent for WordPiece models.
``metadata.json``
    Where the weights came from (``source``), their ``license``, ``parameter_count``, the versions
    that wrote them and ``files``: the sha256 and size of each other file, checked on load so a
    truncated copy or a swapped file is caught before it is used.

Long module: the one description of the format, its writer and its reader, kept together so the
three cannot drift apart.

Saving writes into a temporary sibling directory and renames it into place, so a crash never
leaves a half-written preset behind. Nothing here imports a model class: models load themselves
from a :class:`Preset` (``BertBackbone.from_preset``, or ``Backbone.from_preset``, which asks
``preset.family``); this module only reads, checks and writes.

Example:
>>> import tempfile, os
>>> import numpy as np
>>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]
>>> path = write_preset(os.path.join(tempfile.mkdtemp(), "p"), backbone_class="BertBackbone",
...                     config={"vocabulary_size": 8}, vocabulary=vocab,
...                     weights={"backbone/embedding": np.zeros((8, 2), "float32")})
>>> sorted(os.listdir(path))
['config.json', 'metadata.json', 'model.weights.h5', 'vocab.txt']
>>> preset = read_preset(path)
>>> preset.family.name, preset.backbone_class, preset.config, preset.vocabulary()[-1]
('bert', 'BertBackbone', {'vocabulary_size': 8}, 'c')
>>> preset.tokenizer
{'lowercase': True, 'class_name': 'WordPieceTokenizer'}
"""

import contextlib
import dataclasses
import hashlib
import json
import os
import pathlib
import shutil
import tempfile

import numpy as np

from keras_bert_lab import families
from keras_bert_lab.errors import PresetError, renamed
from keras_bert_lab.presets.vocabulary import (check_vocabulary_size, coerce_vocabulary,
                                               guess_lowercase, read_vocabulary, write_vocabulary)
from keras_bert_lab.presets.weights import model_weights, read_weights, write_weights
from keras_bert_lab.version import __version__

FORMAT = "keras_bert_lab.preset"
FORMAT_VERSION = 1
CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE, METADATA_FILE = (
    "config.json", "model.weights.h5", "vocab.txt", "metadata.json")
MERGES_FILE = "merges.txt"  # optional: BPE merges
REQUIRED_FILES = (CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE, METADATA_FILE)
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclasses.dataclass(frozen=True)
class PresetInfo:
    """What a model loaded from a preset remembers, so that ``save_to_preset`` can carry it over."""

    vocabulary: tuple
    tokenizer: dict
    source: str
    license: str
    sentence_embedding: dict | None = None
    preprocessor: dict | None = None
    merges: tuple | None = None


@dataclasses.dataclass(frozen=True)
class Preset:
    """A checked preset directory (see :func:`read_preset`). ``config`` is the backbone's config
    as a dict; the backbone class named by ``backbone_class`` parses and validates it.
    ``family_name`` is the family the preset records (``None`` in presets written before
    families were recorded); :attr:`family` is the family itself."""

    directory: pathlib.Path
    backbone_class: str
    config: dict
    task: dict | None
    tokenizer: dict
    preprocessor: dict | None
    sentence_embedding: dict | None
    metadata: dict
    family_name: str | None = None

    @property
    def family(self):
        """The :class:`~keras_bert_lab.families.Family` whose classes load this preset
        (``PresetError`` for a family this version does not know)."""
        return families.for_preset(self)

    @property
    def weights_path(self):
        return self.directory / WEIGHTS_FILE

    @property
    def vocabulary_path(self):
        return self.directory / VOCAB_FILE

    def vocabulary(self):
        # A model without a word vocabulary (an ELMo biLM without its softmax) has an empty one.
        if self.config.get("vocabulary_size") == 0 and self.vocabulary_path.stat().st_size == 0:
            return []
        return read_vocabulary(self.vocabulary_path)

    @property
    def merges_path(self):
        """``merges.txt`` of a BPE preset, ``None`` when the preset has none (WordPiece)."""
        path = self.directory / MERGES_FILE
        return path if path.is_file() else None

    def merges(self):
        """The BPE merges as ``"left right"`` strings in rank order, or ``None``."""
        return None if self.merges_path is None else read_merges(self.merges_path)

    def weights(self):
        """``{name: np.ndarray}`` of every stored tensor."""
        return read_weights(self.weights_path)

    def info(self):
        return PresetInfo(tuple(self.vocabulary()), dict(self.tokenizer),
                          self.metadata.get("source", "unknown"),
                          self.metadata.get("license", "unspecified"), self.sentence_embedding,
                          self.preprocessor, None if self.merges_path is None
                          else tuple(self.merges()))


# ---- files -----------------------------------------------------------------------------------
def sha256(path, chunk=1 << 20):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


# Files of what keras_bert_lab writes (preset, export, feature cache): what overwrite replaces
OWN_DIRECTORY_FILES = ((CONFIG_FILE, METADATA_FILE), ("saved_model.pb", "assets.extra"),
                       ("keras_bert_lab_onnx.json",), ("manifest.json", "index.npy"))


@contextlib.contextmanager
def atomic_directory(directory, overwrite=False):
    """Yield a temporary sibling of ``directory`` to fill; on success rename it into place.

    On error the temporary directory is removed and ``directory`` is left as it was. An existing
    ``directory`` is replaced only with ``overwrite=True``, and only when keras_bert_lab wrote it
    (``OWN_DIRECTORY_FILES``): a file, or a folder of anything else, is never deleted.
    """
    directory = pathlib.Path(directory).expanduser().absolute()
    if directory.exists() and not overwrite:
        raise PresetError(f"{directory} already exists; pass overwrite=True (--overwrite) to "
                          "replace it, or choose another directory.")
    ours = any(all((directory / name).exists() for name in names) for names in OWN_DIRECTORY_FILES)
    if directory.exists() and not ours or directory.parent.is_file():
        what = "a file" if directory.is_file() or directory.parent.is_file() else \
            "a folder keras_bert_lab did not write"
        raise PresetError(f"{directory} is {what}; overwrite only replaces a preset, export or "
                          "feature cache of keras_bert_lab. Choose another directory.")
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


def read_json(path, what="preset"):
    try:
        return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PresetError(f"{path} is not valid JSON ({error}); the {what} is corrupt.") from None


def check_merges(merges, source="merges"):
    """``merges`` (``"left right"`` strings or pairs) as strings, or ``PresetError``."""
    out = []
    for i, merge in enumerate(merges):
        pair = merge.split(" ") if isinstance(merge, str) else list(merge)
        if len(pair) != 2 or not all(isinstance(p, str) and p and not any(c in p for c in " \r\n")
                                     for p in pair):
            raise PresetError(f"{source}: merge {i} is {merge!r}; each merge is two non-empty "
                              "symbols without whitespace, 'left right'.")
        out.append(" ".join(pair))
    return out


def read_merges(path):
    """A ``merges.txt`` as ``"left right"`` strings (a ``#version`` header line is skipped)."""
    lines = pathlib.Path(path).read_text(encoding="utf-8").split("\n")
    lines = [line.rstrip("\r") for line in lines if line.strip()]
    if lines and lines[0].startswith("#version"):
        lines = lines[1:]
    return check_merges(lines, source=str(path))


def _count_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


# ---- write -----------------------------------------------------------------------------------
def write_preset(directory, *, backbone_class, config, weights, vocabulary, tokenizer=None,
                 task=None, preprocessor=None, sentence_embedding=None, source=None, license=None,
                 parameter_count=None, backbone_parameter_count=None, overwrite=False,
                 merges=None, family=None):
    """Write a preset directory from plain data (what the converters and :func:`save_preset` call).

    Args:
        directory: where the preset goes (written atomically; see the module docstring).
        backbone_class: the class name that loads it (``"BertBackbone"``).
        config: the backbone config as a dict; its ``vocabulary_size`` must match ``vocabulary``.
        weights: ``{name: array}``, names as in the module docstring.
        vocabulary: list of tokens.
        tokenizer: tokenizer options, e.g. ``{"lowercase": True}``; casing is guessed from the
            vocabulary when absent.
        task: ``{"class_name", "module", "config"}`` of the task whose heads are in ``weights``.
        preprocessor: preprocessing defaults, e.g. ``{"sequence_length": 256}``.
        sentence_embedding: a pooling recipe, e.g. ``{"pooling": "mean", "normalize": True}``.
        source, license: provenance recorded in ``metadata.json``.
        parameter_count, backbone_parameter_count: default: counted from ``weights``.
        overwrite: replace an existing directory.
        merges: BPE merges for ``merges.txt``: ``"left right"`` strings or pairs in rank order, a
            merges file or a tokenizer with ``merges``; ``None`` (WordPiece) writes no such file.
        family: the model family's name; default: the family of ``backbone_class`` (none is
            recorded for a class of no family, and such a preset cannot be loaded).

    Returns the directory as a ``pathlib.Path``.
    """
    import keras

    tokens = list(vocabulary)
    if isinstance(merges, (str, os.PathLike)):
        merges = read_merges(merges)
    merges = None if merges is None else check_merges(getattr(merges, "merges", merges))
    if "vocabulary_size" in config:
        check_vocabulary_size(tokens, config["vocabulary_size"], where="vocabulary")
    family = _family_to_record(backbone_class, family)
    tokenizer = dict(tokenizer or {})
    tokenizer.setdefault("lowercase", guess_lowercase(tokens))
    if family is not None and family.tokenizer is not None:
        tokenizer.setdefault("class_name", family.tokenizer.rpartition(":")[2])
    counts = {"backbone": 0, "all": 0}
    for name, value in weights.items():
        counts["all"] += int(np.size(value))
        counts["backbone"] += int(np.size(value)) if name.startswith("backbone/") else 0
    document = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "family": None if family is None else family.name,
                "backbone_class": backbone_class, "backbone": dict(config), "task": task,
                "tokenizer": tokenizer, "preprocessor": preprocessor,
                "sentence_embedding": sentence_embedding}
    metadata = {
        "source": source or "keras_bert_lab (trained or initialised)",
        "license": license or "unspecified",
        "parameter_count": int(parameter_count if parameter_count is not None else counts["all"]),
        "backbone_parameter_count": int(backbone_parameter_count if backbone_parameter_count
                                        is not None else counts["backbone"]),
        "keras_bert_lab_version": __version__,
        "keras_version": keras.__version__,
        "saved_with_backend": keras.backend.backend(),
    }
    with atomic_directory(directory, overwrite=overwrite) as tmp:
        (tmp / CONFIG_FILE).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        write_vocabulary(tmp / VOCAB_FILE, tokens)
        write_weights(tmp / WEIGHTS_FILE, weights)
        files = (CONFIG_FILE, WEIGHTS_FILE, VOCAB_FILE)
        if merges is not None:
            (tmp / MERGES_FILE).write_text("".join(m + "\n" for m in merges), encoding="utf-8")
            files += (MERGES_FILE,)
        metadata["files"] = {name: {"sha256": sha256(tmp / name),
                                    "bytes": (tmp / name).stat().st_size} for name in files}
        (tmp / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
    return pathlib.Path(directory).expanduser().absolute()


def _family_to_record(backbone_class, family):
    """The :class:`~keras_bert_lab.families.Family` a new preset records, checked against its
    backbone class (``None``: a class of no family)."""
    if family is None:
        return families.for_backbone(backbone_class)
    family = families.get(family) if isinstance(family, str) else family
    if backbone_class not in family.backbone_names:
        raise PresetError(f"backbone_class {backbone_class!r} is not a {family.name} backbone "
                          f"({', '.join(family.backbone_names)}); pass the family's backbone "
                          "class, or leave family out.")
    return family


def task_entry(model):
    """The ``task`` entry of a model's preset: ``None`` for a backbone, else class and arguments."""
    if getattr(model, "backbone", None) is None:
        return None
    config = {k: v for k, v in model.get_config().items()
              if k not in ("backbone", "name", "trainable", "dtype")}
    try:
        json.dumps(config)
    except TypeError:
        config = {}
    return {"class_name": type(model).__name__, "module": type(model).__module__, "config": config}


def save_preset(model, directory, vocabulary=None, lowercase=None, source=None, license=None,
                sentence_embedding=None, preprocessor=None, overwrite=False, merges=None):
    """Save ``model`` (a backbone, or a task holding one as ``backbone``) as a preset directory.

    Args:
        model: the model; a task saves its heads too.
        directory: where the preset goes.
        vocabulary: a ``vocab.txt`` path, a list of tokens or a tokenizer; defaults to the one the
            model was loaded with (``from_preset``). Its size must equal the config's
            ``vocabulary_size``.
        lowercase: whether the tokenizer lower-cases; default: the loaded preset's, else guessed
            from the vocabulary (no upper-case tokens → uncased).
        source, license: provenance recorded in ``metadata.json``.
        sentence_embedding: optional pooling recipe, e.g. ``{"pooling": "mean", "normalize": True}``.
        preprocessor: optional preprocessing defaults, e.g. ``{"sequence_length": 128}``.
        overwrite: replace an existing directory.
        merges: BPE merges for ``merges.txt`` (a BPE model such as GPT); default: the loaded
            preset's.

    Values not given are carried over from the preset the model was loaded from.
    """
    backbone = getattr(model, "backbone", None) or model
    family = families.family_of(backbone)   # a subclass is saved as its family's backbone
    info = getattr(model, "preset_info", None) or getattr(backbone, "preset_info", None)
    tokens = coerce_vocabulary(vocabulary)
    if tokens is None:
        if info is None:
            raise PresetError("A preset needs its vocabulary: pass vocabulary=<vocab.txt path, "
                              "token list or tokenizer>.")
        tokens = list(info.vocabulary)
    check_vocabulary_size(tokens, backbone.config.vocabulary_size, where="vocabulary")
    tokenizer = dict(info.tokenizer) if info else {}
    if lowercase is not None:
        tokenizer["lowercase"] = bool(lowercase)
    if info is not None:
        sentence_embedding = sentence_embedding or info.sentence_embedding
        preprocessor = preprocessor or info.preprocessor
        source = source or info.source
        license = license or info.license
        merges = info.merges if merges is None else merges
    return write_preset(
        directory, backbone_class=family.backbone_class.__name__, family=family,
        config=backbone.config.to_dict(),
        weights=model_weights(model), vocabulary=tokens, tokenizer=tokenizer,
        task=task_entry(model), preprocessor=preprocessor, sentence_embedding=sentence_embedding,
        source=source, license=license, parameter_count=model.count_params(),
        backbone_parameter_count=backbone.count_params(), overwrite=overwrite, merges=merges)


@contextlib.contextmanager
def opened(model, vocabulary=None):
    """Context of a checked :class:`Preset` of ``model``: a preset directory (or :class:`Preset`)
    as is, or a model (backbone or task) saved to a temporary preset — what the exporters read."""
    if isinstance(model, Preset):
        yield model
    elif isinstance(model, (str, os.PathLike)):
        if vocabulary is not None:
            raise PresetError("A preset carries its own vocabulary; pass vocabulary= only with "
                              "a model.")
        yield read_preset(model)
    else:
        with tempfile.TemporaryDirectory(prefix="kbl-export-") as tmp:
            yield read_preset(save_preset(model, pathlib.Path(tmp) / "preset",
                                          vocabulary=vocabulary))


# ---- read ------------------------------------------------------------------------------------
def read_preset(directory, verify=True):
    """Open and check a preset directory: files present, checksums, config format, vocab size.

    Raises ``PresetError`` naming the problem: a missing file (listing what is there), a file
    whose sha256 differs from ``metadata.json`` (truncated, corrupted or replaced), a config that
    cannot be parsed, or a ``vocab.txt`` whose size differs from the config's ``vocabulary_size``.
    (Names of registered presets are resolved by :func:`keras_bert_lab.presets.read_preset`.)
    """
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise PresetError(f"Preset directory {directory} does not exist (or is not a directory).")
    missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
    if missing:
        present = sorted(p.name for p in directory.iterdir())
        raise PresetError(f"Preset {directory} lacks {', '.join(missing)} (it has: "
                          f"{', '.join(present) or 'nothing'}); a preset needs "
                          f"{', '.join(REQUIRED_FILES)}. Re-create it with save_to_preset or "
                          "`kbl preset import-*`.")
    config = read_json(directory / CONFIG_FILE)
    if config.get("format") != FORMAT:
        raise PresetError(f"{directory / CONFIG_FILE} is not a keras_bert_lab preset config "
                          f"(format {config.get('format')!r}); a keras-hub or Hugging Face "
                          "directory must be converted first (`kbl preset import-keras-hub` / "
                          "`import-hf`).")
    if config.get("format_version", 0) > FORMAT_VERSION:
        raise PresetError(f"Preset {directory} has format_version {config['format_version']}; this "
                          f"keras_bert_lab reads up to {FORMAT_VERSION}. Upgrade keras_bert_lab.")
    metadata = read_json(directory / METADATA_FILE)
    files = metadata.get("files")
    if verify and not files:
        raise PresetError(f"{directory / METADATA_FILE} lists no files and their checksums, so "
                          "the preset cannot be verified; re-create it with save_to_preset (from "
                          "Python, from_preset(..., verify=False) loads it unchecked).")
    for name, expected in (files or {}).items() if verify else ():
        path = directory / name
        if not path.is_file():
            raise PresetError(f"Preset {directory} lacks {name}, listed in metadata.json.")
        size, digest = path.stat().st_size, sha256(path)
        if digest != expected.get("sha256"):
            raise PresetError(
                f"{path} does not match metadata.json (sha256 {digest[:12]}…, {size} bytes; "
                f"expected {expected.get('sha256', '?')[:12]}…, {expected.get('bytes')} bytes): "
                "the file is truncated, corrupted or was replaced. Copy the preset again or "
                "re-create it (from Python, from_preset(..., verify=False) skips this check).")
    backbone = config.get("backbone")
    if not isinstance(backbone, dict):
        raise PresetError(f"{directory / CONFIG_FILE} has no backbone config (a JSON object).")
    backbone = renamed(backbone, warn=False)   # a preset saved with vocab_size
    preset = Preset(directory, config.get("backbone_class", "BertBackbone"), backbone,
                    config.get("task"), config.get("tokenizer") or {}, config.get("preprocessor"),
                    config.get("sentence_embedding"), metadata, config.get("family"))
    lines = _count_lines(directory / VOCAB_FILE)
    if "vocabulary_size" in backbone and lines != backbone["vocabulary_size"]:
        raise PresetError(f"{directory / VOCAB_FILE} has {lines} tokens but the token embedding "
                          f"has {backbone['vocabulary_size']} rows (config vocabulary_size); the "
                          "vocabulary does not belong to this model.")
    return preset
