"""``export_onnx``: a fine-tuned classifier preset → an ONNX model of its network.

ONNX carries the network only: packed int32 ``token_ids``, ``segment_ids`` and ``padding_mask``
``(B, T)`` in (batch size and length free), float32 ``logits`` ``(B, K)`` out. WordPiece stays
outside — ONNX has no string ops that reproduce it — so the directory also holds the vocabulary
and a description to pack texts with any BERT tokenizer (ours, or a Hugging Face fast tokenizer
on the same ``vocab.txt``)::

    DIR/model.onnx                      the network (opset of tf2onnx's default)
    DIR/vocab.txt                       the preset's WordPiece vocabulary
    DIR/keras_bert_lab_onnx.json        labels, problem, lowercase, sequence length, input names,
                                        the check below

Keras writes ONNX with a backend's own exporter (tf2onnx, ``torch.onnx``, jax2onnx). Here the
model is always rebuilt under TensorFlow from its backend-free preset (in a child process when
the caller runs JAX or PyTorch, as for the SavedModel): with torch 2.13 the TorchScript exporter
stops at LayerNormalization's shape arithmetic, and jax2onnx needs Flax. The export then runs the
ONNX file in onnxruntime on a padded batch and refuses to finish if its logits differ from the
Keras model's by more than 1e-4; the difference is recorded in the description. Needs the
``onnx`` extra: ``pip install "keras_bert_lab[onnx]"`` (onnx, onnxruntime, tf2onnx).

Example (serving, in a process with onnxruntime and numpy only)::

    import json, numpy as np, onnxruntime
    session = onnxruntime.InferenceSession("export/sentiment.onnx/model.onnx")
    info = json.load(open("export/sentiment.onnx/keras_bert_lab_onnx.json"))
    logits, = session.run(None, {"token_ids": ids, "segment_ids": segments,
                                 "padding_mask": mask})          # int32 (B, T) each
    info["labels"][int(np.argmax(logits[0]))]
"""

import json
import pathlib

import numpy as np

from keras_bert_lab.errors import ConfigError

MODEL_FILE = "model.onnx"
INFO_NAME = "keras_bert_lab_onnx.json"
FORMAT = "keras_bert_lab.onnx_export"
ENTRIES = {MODEL_FILE, "vocab.txt", INFO_NAME}
TOLERANCE = 1e-4
NEEDS = ('ONNX export needs onnx, onnxruntime and tf2onnx: pip install onnx onnxruntime tf2onnx '
         '(or the extra: pip install "keras_bert_lab[onnx]").')


def check_installed():
    """``ConfigError`` naming the install command when an ONNX package is missing."""
    import importlib.util

    missing = [name for name in ("onnx", "onnxruntime", "tf2onnx")
               if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(f"{', '.join(missing)} not installed. {NEEDS}")


def sample_inputs(sequence_length, vocabulary_size, pair, rng):
    """A packed batch of 3 with padding (and a second segment for pairs) for the check."""
    length = min(sequence_length, 24)
    ids = rng.integers(5, vocabulary_size, size=(3, length)).astype("int32")
    mask = np.zeros((3, length), "int32")
    segments = np.zeros((3, length), "int32")
    for row, used in enumerate((length, max(2, length // 2), 2)):
        mask[row, :used] = 1
        ids[row, used:] = 0
        if pair and used > 3:
            segments[row, used // 2:used] = 1
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}


def write_onnx(preset, directory, sequence_length, pair):
    """The TensorFlow side: write ``model.onnx`` and ``vocab.txt`` into ``directory``, check the
    file in onnxruntime against Keras, and return the summary for the description."""
    import keras
    import onnxruntime

    from keras_bert_lab.export.archive import class_names, classifier_of

    if keras.backend.backend() != "tensorflow":
        raise ConfigError("write_onnx runs under KERAS_BACKEND=tensorflow; call "
                          "keras_bert_lab.export.export_onnx, which starts one.")
    directory = pathlib.Path(directory)
    classifier, tokenizer = classifier_of(preset)
    input_names = classifier.backbone.input_names
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in input_names}
    network = keras.Model(inputs, {"logits": classifier(inputs)})
    batch = sample_inputs(sequence_length, tokenizer.vocabulary_size, pair,
                          np.random.default_rng(0))
    expected = keras.ops.convert_to_numpy(network(batch)["logits"])  # also marks it as called
    network.export(str(directory / MODEL_FILE), format="onnx", verbose=False)
    tokenizer.save_vocabulary(directory / "vocab.txt")
    session = onnxruntime.InferenceSession(str(directory / MODEL_FILE),
                                           providers=["CPUExecutionProvider"])
    feeds = {i.name: batch[i.name] for i in session.get_inputs()}
    (got,) = session.run(["logits"], feeds)
    difference = float(np.abs(got - expected).max())
    if not difference <= TOLERANCE:
        raise ConfigError(f"The ONNX model's logits differ from the Keras model's by "
                          f"{difference:.3g} (> {TOLERANCE}) on a check batch; the export was "
                          "not written. Report this with the preset's config.json.")
    return {"problem": classifier.problem, "labels": class_names(classifier),
            "num_classes": classifier.num_classes, "inputs": list(input_names),
            "outputs": ["logits"], "onnxruntime_max_difference": difference,
            "onnxruntime_version": onnxruntime.__version__}


def is_onnx_export(directory):
    """Whether ``directory`` holds an export written by :func:`export_onnx`."""
    directory = pathlib.Path(directory)
    try:
        info = json.loads((directory / INFO_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (directory.is_dir() and not directory.is_symlink() and info.get("format") == FORMAT
            and (directory / MODEL_FILE).is_file())


def foreign_files(directory):
    """Entries of an ONNX export directory that the export does not write."""
    return sorted(p.name for p in pathlib.Path(directory).iterdir() if p.name not in ENTRIES)
