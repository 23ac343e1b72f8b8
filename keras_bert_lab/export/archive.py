"""The TensorFlow side of the export: a classifier preset → a self-contained SavedModel.

Runs only under ``KERAS_BACKEND=tensorflow`` (:func:`keras_bert_lab.export.export_saved_model`
starts a TensorFlow process for it when the caller runs JAX or PyTorch). The task is rebuilt from
its preset — weights are stored backend-free, so a model trained on any backend comes back
bit-identical — and a ``keras.export.ExportArchive`` writes its forward pass together with the
in-graph text preprocessing (:mod:`keras_bert_lab.export.tokenizer`) and the decoding of
:func:`keras_bert_lab.models.bert.classifier.decode_logits` as serving functions. Only core TensorFlow
ops end up in the graph: the result loads with ``tf.saved_model.load`` where neither Keras,
tensorflow-text nor keras_bert_lab is installed.

Shapes: ``B`` texts, ``K`` outputs, ``L`` sequence length.
"""

import keras
import tensorflow as tf

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.export.tokenizer import GraphPreprocessor
from keras_bert_lab.presets.registry import read_preset

def classifier_of(preset):
    """``(classifier, tokenizer)`` of a classifier preset, of the preset's family (the registry's
    ``classify`` task and tokenizer), in float32 whatever the global policy."""
    family = read_preset(preset, verify=False).family
    return (family.task("classify").from_preset(preset, dtype="float32"),
            family.tokenizer_class.from_preset(preset))


def class_names(model):
    """The class names the export returns: the model's labels, else ``"0"``, ``"1"``, …"""
    return list(model.labels) if model.labels else [str(i) for i in range(model.num_classes)]


def decode(logits, problem, names):
    """Serving outputs from ``(B, K)`` float32 logits (the graph twin of ``decode_logits``).

    ``single_label``: ``scores`` (softmax), ``label_id`` (argmax, int32), ``label`` (its name).
    ``multi_label``: ``scores`` (sigmoid), ``active`` (bool, p ≥ 0.5: the classes that apply),
    ``label_id``/``label`` of the highest score. ``regression``: ``scores`` ``(B, 1)``, the
    predicted value.
    """
    if problem == "regression":
        return {"scores": logits}
    scores = tf.nn.softmax(logits) if problem == "single_label" else tf.sigmoid(logits)
    label_id = tf.argmax(scores, axis=-1, output_type=tf.int32)
    out = {"scores": scores, "label_id": label_id,
           "label": tf.gather(tf.constant(names, tf.string), label_id)}
    if problem == "multi_label":
        out["active"] = scores >= 0.5
    return out


def trimmed(features):
    """Packed ``(B, L)`` inputs cut to the batch's longest text: padding changes no output, and
    a batch of short texts stops paying for ``L`` (what ``Task.predict_packed`` does)."""
    longest = tf.maximum(tf.reduce_max(tf.reduce_sum(features["padding_mask"], axis=-1)), 1)
    return {name: value[:, :longest] for name, value in features.items()}


def build_archive(preset, sequence_length, pair):
    """An ``ExportArchive`` with the serving functions of a ``BertClassifier`` preset.

    Endpoints (every input has a leading batch axis ``B``):

    - ``serve(text)`` or, for a sentence-pair model, ``serve(text_a, text_b)``: ``tf.string``
      ``[B]`` → the outputs of :func:`decode` (the first endpoint: also ``serving_default``).
      Texts are packed to ``L`` tokens, then the batch is cut to its longest text;
    - ``serve_ids(token_ids, segment_ids, padding_mask)``: int32 ``(B, T)`` packed inputs → the
      same outputs;
    - ``preprocess(text[, text_b])``: the packed ``(B, L)`` int32 inputs ``serve`` feeds the
      model (to inspect tokenization or batch it elsewhere).

    Args:
        preset: a preset directory (checked by the caller).
        sequence_length: ``L``.
        pair: whether the model reads sentence pairs.
    """
    if keras.backend.backend() != "tensorflow":
        raise ConfigError("build_archive runs under KERAS_BACKEND=tensorflow; call "
                          "keras_bert_lab.export.export_saved_model, which starts one.")
    model, tokenizer = classifier_of(preset)
    input_names = model.backbone.input_names
    preprocessor = GraphPreprocessor(tokenizer, sequence_length)
    names = class_names(model)

    def outputs(features):
        logits = tf.cast(model(features, training=False), tf.float32)  # (B, K)
        return decode(logits, model.problem, names)

    def serve_text(*texts):
        if len(texts) == 2:
            tf.debugging.assert_equal(tf.size(texts[0]), tf.size(texts[1]), message=(
                "serve(text_a, text_b) needs one text_b per text_a"))
        return outputs(trimmed(preprocessor(*texts)))

    archive = keras.export.ExportArchive()
    # Variables used by the endpoints are found by tracing; the vocabulary table (a resource)
    # must be named. (Walking the whole model for resources too would only add seconds.)
    archive.track(preprocessor)
    inputs = ["text_a", "text_b"] if pair else ["text"]
    signature = [tf.TensorSpec([None], tf.string, name=name) for name in inputs]
    # Named arguments (a lambda's become the signature's input names).
    if pair:
        archive.add_endpoint("serve", lambda text_a, text_b: serve_text(text_a, text_b),
                             input_signature=signature)
        archive.add_endpoint("preprocess", lambda text_a, text_b: preprocessor(text_a, text_b),
                             input_signature=signature)
    else:
        archive.add_endpoint("serve", lambda text: serve_text(text), input_signature=signature)
        archive.add_endpoint("preprocess", lambda text: preprocessor(text),
                             input_signature=signature)
    archive.add_endpoint(
        "serve_ids", lambda token_ids, segment_ids, padding_mask: outputs(
            dict(zip(input_names, (token_ids, segment_ids, padding_mask)))),
        input_signature=[tf.TensorSpec([None, None], tf.int32, name=name)
                         for name in input_names])
    return archive, model


def write_saved_model(preset, directory, sequence_length, pair):
    """Write the SavedModel of :func:`build_archive` into ``directory``; returns a summary dict
    (problem, class names, signatures) for the export's description file."""
    archive, model = build_archive(preset, sequence_length, pair)
    archive.write_out(str(directory), verbose=False)
    inputs = ["text_a", "text_b"] if pair else ["text"]
    outputs = (["scores"] if model.problem == "regression" else
               ["label", "label_id", "scores"] + (["active"] if model.problem == "multi_label"
                                                  else []))
    return {"problem": model.problem, "labels": class_names(model),
            "num_classes": model.num_classes, "pooling": model.pooling,
            "signatures": {"serve": {"inputs": inputs, "outputs": outputs},
                           "serve_ids": {"inputs": list(model.backbone.input_names),
                                         "outputs": outputs},
                           "preprocess": {"inputs": inputs,
                                          "outputs": list(model.backbone.input_names)}},
            "tensorflow_version": tf.__version__}
