"""``export_saved_model``: a fine-tuned classifier preset → a SavedModel that serves raw text.

The export holds the whole path from text to answer: BERT's basic tokenization and WordPiece
(lower-casing, accent stripping, CJK and punctuation splitting exactly as the library's
tokenizer does), ``[CLS] A [SEP] (B [SEP])`` packing with longest-first truncation and padding,
the model, and softmax/sigmoid decoding to class names. It is written with core TensorFlow ops
only, so ``tf.saved_model.load(directory)`` works in a process where neither keras_bert_lab nor
Keras nor tensorflow-text is installed, and TensorFlow Serving can run it as is.

Weights in a preset are backend-free, so the model is rebuilt under the TensorFlow backend
whatever backend trained it: in this process when it already runs TensorFlow, else in a
``KERAS_BACKEND=tensorflow`` child process (:mod:`keras_bert_lab.export.__main__`). This module
imports no TensorFlow itself.

The directory is written next to its destination and renamed into place at the end, so a failed
export leaves nothing behind. An existing destination is replaced only with ``overwrite=True``,
and only when it holds a previous export (its ``assets.extra/keras_bert_lab_export.json``):
any other folder is refused, never deleted.

Example (loading, in any process that has TensorFlow)::

    import tensorflow as tf
    model = tf.saved_model.load("export/sentiment")
    out = model.serve(tf.constant(["A gripping, funny film.", "Dull."]))
    out["label"], out["scores"]            # [b'positive', b'negative'], (2, 2) probabilities
    # a sentence-pair model: model.serve(tf.constant([...]), tf.constant([...]))
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

from keras_bert_lab import errors, families
from keras_bert_lab.errors import ConfigError, KblError, PresetError
from keras_bert_lab.export import onnx_export
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets import registry
from keras_bert_lab.version import __version__

INFO_FILE = "assets.extra/keras_bert_lab_export.json"  # assets.extra: files TF ignores
FORMAT = "keras_bert_lab.saved_model_export"
EXPORT_ENTRIES = {"saved_model.pb", "fingerprint.pb", "variables", "assets", "assets.extra"}
HOW = ("export writes fine-tuned {classes} presets (sentence or sentence-pair "
       "classification or regression), such as the preset/ folder of `kbl finetune "
       "classify` or `kbl finetune pair`")


def describe_task(preset):
    """What the task a preset holds is, for messages: its class's ``description``, found
    through the preset's family (``"a {class name} task"`` when there is none)."""
    name = (preset.task or {}).get("class_name")
    try:
        description = preset.family.task_named(name).description
    except KblError:
        description = None
    return description or f"a {name} task"


def classifiers(use):
    """The classifier classes of the families whose registry entry lists ``use`` among its
    ``exports`` ("BertClassifier", or "BertClassifier or …")."""
    return " or ".join(f.task("classify").__name__ for f in families.FAMILIES if use in f.exports)


def check_preset(preset, format="saved_model"):
    """The checked :class:`~keras_bert_lab.presets.format.Preset` of a classifier, or an error.

    ``PresetError`` names a missing or corrupt file; ``ConfigError`` says what a preset that is
    not an exportable classifier holds (a family whose registry entry lists no ``format`` among
    its ``exports``, or a task other than the family's ``classify``) and what export supports.
    """
    preset = registry.read_preset(preset)
    family = preset.family
    how = HOW.format(classes=classifiers(format))
    task = (preset.task or {}).get("class_name")
    if task is None:
        raise ConfigError(f"Preset {preset.directory} holds a {preset.backbone_class} without a "
                          f"task head (a pretrained backbone, not a fine-tuned classifier); {how}.")
    if format not in family.exports:
        raise ConfigError(f"Preset {preset.directory} has a {preset.backbone_class} backbone "
                          f"({family.label}); {how}.")
    if not family.has_task("classify") or task != family.task("classify").__name__:
        raise ConfigError(f"Preset {preset.directory} holds {describe_task(preset)} ({task}); "
                          f"{how}.")
    return preset


def export_options(preset, sequence_length=None, pair=None):
    """``(sequence_length, pair)`` for ``preset``: the arguments, else what the preset records.

    The length defaults to the preset's ``preprocessor.sequence_length`` (the one it was
    fine-tuned with), else 128. Whether the model reads one text or a pair is the preset's
    ``preprocessor.pair``; a preset that does not record it needs ``pair`` — guessing would
    serve a pair model on single texts (or the reverse) without a word.
    """
    recorded = preset.preprocessor or {}
    length = int(recorded.get("sequence_length", 128) if sequence_length is None
                 else sequence_length)
    if pair is None:
        pair = recorded.get("pair")
        if pair is None:
            raise ConfigError(f"Preset {preset.directory} does not record whether its model reads "
                              "one text or a sentence pair; pass pair=False or pair=True "
                              "(`kbl export … --single` or `--pair`).")
    pair = bool(pair)
    shortest = 3 if pair else 2
    longest = int(preset.config.get("max_positions", 512))
    if not shortest <= length <= longest:
        raise ConfigError(f"sequence_length={length} is out of range for this model: "
                          f"[CLS] A [SEP]{' B [SEP]' if pair else ''} needs at least {shortest} "
                          f"and its position table has {longest} rows.")
    return length, pair


def check_destination(directory, overwrite, kind="saved_model"):
    """``directory`` as an absolute path; ``ConfigError`` if it may not be written."""
    directory = pathlib.Path(directory).expanduser().absolute()
    if not (directory.exists() or directory.is_symlink()):
        return directory
    if not overwrite:
        raise ConfigError(f"{directory} already exists; pass overwrite=True (--overwrite) to "
                          "replace a previous export there, or choose another directory.")
    recognised, foreign_files, marker = (
        (is_export, unexpected_files, f"{INFO_FILE} or saved_model.pb") if kind == "saved_model"
        else (onnx_export.is_onnx_export, onnx_export.foreign_files,
              f"{onnx_export.INFO_NAME} or {onnx_export.MODEL_FILE}"))
    if not recognised(directory):
        raise ConfigError(f"{directory} exists and is not a keras_bert_lab export ({kind}: it "
                          f"lacks {marker}); --overwrite only replaces a previous export of that "
                          "kind, never another folder. Choose another directory, or move this "
                          "one away yourself.")
    foreign = foreign_files(directory)
    if foreign:
        raise ConfigError(f"{directory} holds a previous export but also {', '.join(foreign)}, "
                          "which export did not write; --overwrite would delete them. Move them "
                          "out first, or choose another directory.")
    return directory


def unexpected_files(directory):
    """Entries of an export directory that an export does not write (sorted relative paths)."""
    directory = pathlib.Path(directory)
    found = sorted(p.name for p in directory.iterdir() if p.name not in EXPORT_ENTRIES)
    extra = directory / pathlib.Path(INFO_FILE).parent
    found += sorted(f"{extra.name}/{p.name}" for p in extra.iterdir()
                    if p.name != pathlib.Path(INFO_FILE).name)
    return found


def is_export(directory):
    """Whether ``directory`` holds an export written by :func:`export_saved_model`."""
    directory = pathlib.Path(directory)
    try:
        info = json.loads((directory / INFO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (directory.is_dir() and not directory.is_symlink() and info.get("format") == FORMAT
            and (directory / "saved_model.pb").is_file())


def read_export_info(directory):
    """The description an export carries (task, labels, sequence length, signatures …)."""
    path = pathlib.Path(directory) / INFO_FILE
    if not path.is_file():
        raise PresetError(f"{directory} is not a keras_bert_lab export (no {INFO_FILE}).")
    return json.loads(path.read_text(encoding="utf-8"))


def export_saved_model(preset, directory, *, sequence_length=None, pair=None, overwrite=False,
                       vocabulary=None):
    """Export a fine-tuned ``BertClassifier`` as a SavedModel that serves raw strings.

    Signatures (see :func:`keras_bert_lab.export.archive.build_archive`): ``serve(text)`` — or
    ``serve(text_a, text_b)`` for a sentence-pair model — taking ``tf.string [B]`` and returning
    ``label`` (class names, ``tf.string [B]``), ``label_id`` (int32 ``[B]``) and ``scores``
    (float32 ``[B, K]`` probabilities; a regression model returns only ``scores`` ``[B, 1]``, a
    multi-label one also ``active``); ``serve_ids(token_ids, segment_ids, padding_mask)`` on
    packed ids; ``preprocess`` giving the packed ids. ``serving_default`` is ``serve``.

    Args:
        preset: a preset directory or name, or a ``BertClassifier`` model (any backend; saved to
            a temporary preset first).
        directory: where the SavedModel goes.
        sequence_length: texts are cut (longest first for pairs) and padded to this many tokens;
            default: the preset's recorded length, else 128.
        pair: whether the model reads sentence pairs; default: what the preset records
            (``preprocessor.pair``), which is required when it records nothing.
        overwrite: replace ``directory`` if it holds a previous export (never anything else).
        vocabulary: with a model that was not loaded from a preset: its ``vocab.txt`` path or
            token list (a model from ``from_preset`` carries its own).

    Returns the directory as a ``pathlib.Path``.
    """
    return _export_any("saved_model", preset, directory, sequence_length, pair, overwrite,
                       vocabulary)


def export_onnx(preset, directory, *, sequence_length=None, pair=None, overwrite=False,
                vocabulary=None):
    """Export a fine-tuned ``BertClassifier``'s network as ONNX (see
    :mod:`keras_bert_lab.export.onnx_export`): ``directory/model.onnx`` takes packed int32
    ``token_ids``, ``segment_ids``, ``padding_mask`` ``(B, T)`` and returns float32 ``logits``
    ``(B, K)``; ``vocab.txt`` and ``keras_bert_lab_onnx.json`` (labels, problem, lowercase,
    sequence length) sit beside it. The file is checked in onnxruntime against the Keras model
    before the directory is renamed into place. Arguments as :func:`export_saved_model`
    (``sequence_length`` and ``pair`` are recorded for packing: the graph takes any length up to
    the position table)."""
    onnx_export.check_installed()
    return _export_any("onnx", preset, directory, sequence_length, pair, overwrite, vocabulary)


def _export_any(kind, preset, directory, sequence_length, pair, overwrite, vocabulary):
    directory = check_destination(directory, overwrite, kind)
    if not _is_model(preset):
        if vocabulary is not None:
            raise ConfigError("A preset carries its own vocabulary; pass vocabulary= only with a "
                              "model.")
        checked = check_preset(preset)
        return _export(kind, checked, directory, sequence_length, pair, str(checked.directory))
    with preset_format.opened(preset, vocabulary) as opened:  # a model: a temporary preset of it
        return _export(kind, check_preset(opened.directory), directory, sequence_length, pair,
                       None)


def _export(kind, preset, directory, sequence_length, pair, name):
    length, pair = export_options(preset, sequence_length, pair)
    with preset_format.atomic_directory(directory, overwrite=True) as tmp:
        summary = _write(kind, preset.directory, tmp, length, pair)
        info = {"format": FORMAT if kind == "saved_model" else onnx_export.FORMAT,
                "format_version": 1, "task": preset.task["class_name"],
                **summary, "pair": pair, "sequence_length": length,
                "lowercase": preset.tokenizer.get("lowercase"), "preset": name,
                "source": preset.metadata.get("source"),
                "license": preset.metadata.get("license"),
                "trained_with_backend": preset.metadata.get("saved_with_backend"),
                "keras_bert_lab_version": __version__,
                "load": "tf.saved_model.load(directory).serve(" + (
                    "text_a, text_b)" if pair else "text)")}
        if kind == "onnx":
            info["load"] = ("onnxruntime.InferenceSession(directory + '/model.onnx').run(None, "
                            "{'token_ids': …, 'segment_ids': …, 'padding_mask': …})")
        path = tmp / (INFO_FILE if kind == "saved_model" else onnx_export.INFO_NAME)
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return directory


def _is_model(preset):
    return not isinstance(preset, (str, os.PathLike, preset_format.Preset))


def _write(kind, preset_dir, out_dir, sequence_length, pair):
    """Write the export with TensorFlow: here when Keras runs it, else in a child process."""
    if _keras_backend() == "tensorflow":
        return _writer(kind)(preset_dir, out_dir, sequence_length, pair)
    with tempfile.TemporaryDirectory(prefix="kbl-export-") as scratch:
        result = pathlib.Path(scratch) / "result.json"
        package_root = str(pathlib.Path(__file__).resolve().parents[2])
        env = dict(os.environ, KERAS_BACKEND="tensorflow",
                   PYTHONPATH=os.pathsep.join(
                       [package_root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        command = [sys.executable, "-m", "keras_bert_lab.export", "--worker", kind,
                   str(preset_dir), str(out_dir), str(sequence_length),
                   "pair" if pair else "single", str(result)]
        run = subprocess.run(command, env=env, capture_output=True, text=True)
        answer = json.loads(result.read_text()) if result.is_file() else {}
    if "error" in answer:
        raise getattr(errors, answer["error"]["type"], RuntimeError)(answer["error"]["message"])
    if run.returncode != 0 or "summary" not in answer:
        tail = "\n".join((run.stderr or run.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"The TensorFlow export process failed (exit {run.returncode}):\n"
                           f"{tail}")
    return answer["summary"]


def _keras_backend():
    import keras

    return keras.backend.backend()


def _writer(kind):
    if kind == "onnx":
        return onnx_export.write_onnx
    from keras_bert_lab.export.archive import write_saved_model

    return write_saved_model


def worker(argv):
    """Entry of the child process:
    ``--worker saved_model|onnx PRESET OUT LENGTH pair|single RESULT_JSON``."""
    kind, preset_dir, out_dir, length, inputs, result = argv
    try:
        answer = {"summary": _writer(kind)(preset_dir, out_dir, int(length), inputs == "pair")}
    except errors.KblError as error:
        answer = {"error": {"type": type(error).__name__, "message": str(error)}}
    pathlib.Path(result).write_text(json.dumps(answer), encoding="utf-8")
    return 0 if "summary" in answer else 2
