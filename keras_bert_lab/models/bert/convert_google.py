"""Google's original BERT checkpoints (google-research/bert, TF1) into presets.

A release directory holds ``bert_config.json``, ``vocab.txt`` and ``bert_model.ckpt.{index,
data-*}``. Variables are named by the TF1 variable scopes of ``modeling.py``::

    bert/embeddings/word_embeddings                         [V, H]
    bert/encoder/layer_0/attention/self/query/kernel        [H, H]  (in, out)
    bert/encoder/layer_0/output/LayerNorm/gamma             [H]
    bert/pooler/dense/kernel                                [H, H]
    cls/predictions/transform/dense/kernel                  [H, H]
    cls/predictions/output_bias                             [V]
    cls/seq_relationship/output_weights                     [2, H]  (out, in: a raw matmul weight)

Checkpoints saved during pretraining also hold the optimizer's ``…/adam_m`` and ``…/adam_v`` slots
and ``global_step``; those are skipped. Every name is translated to its Hugging Face twin (``/`` →
``.``, ``layer_0`` → ``layer.0``, ``gamma``/``beta`` → ``weight``/``bias``, dense ``kernel`` →
transposed ``weight``) and converted through the same table as Hugging Face checkpoints, so the
two paths cannot disagree. TensorFlow is imported only when a checkpoint is read.

Example:
>>> from keras_bert_lab.models.bert.convert_google import import_google         # doctest: +SKIP
>>> import_google("uncased_L-12_H-768_A-12/", "presets/bert_base_uncased")  # doctest: +SKIP
"""

import glob
import json
import os
import pathlib
import re

from keras_bert_lab.errors import PresetError
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets import vocabulary as vocabulary_file
from keras_bert_lab.models.bert.convert_hf import PRETRAINER
from keras_bert_lab.models.bert.hf_weights import config_from_hf, weights_from_hf

SKIPPED_SUFFIXES = ("adam_m", "adam_v")
SKIPPED_NAMES = ("global_step",)


def find_checkpoint(path):
    """``(checkpoint prefix, directory)`` for a release directory or a checkpoint prefix."""
    path = os.fspath(path)
    if os.path.isdir(path):
        indexes = sorted(glob.glob(os.path.join(path, "*.index")))
        if not indexes:
            raise PresetError(f"{path} holds no TensorFlow checkpoint (no *.index file); Google's "
                              "releases ship bert_model.ckpt.index and bert_model.ckpt.data-*.")
        preferred = [p for p in indexes if os.path.basename(p) == "bert_model.ckpt.index"]
        return (preferred or indexes)[0][: -len(".index")], path
    prefix = path[: -len(".index")] if path.endswith(".index") else path
    if not os.path.isfile(prefix + ".index"):
        raise PresetError(f"No TensorFlow checkpoint at {path} (expected {prefix}.index and "
                          f"{prefix}.data-*).")
    return prefix, os.path.dirname(prefix) or "."


def google_to_hf_name(name):
    """The Hugging Face key of a Google variable and whether its value is transposed.

    Returns ``None`` for optimizer slots and counters.

    >>> google_to_hf_name("bert/encoder/layer_3/attention/self/query/kernel")
    ('bert.encoder.layer.3.attention.self.query.weight', True)
    >>> google_to_hf_name("cls/seq_relationship/output_weights")
    ('cls.seq_relationship.weight', False)
    >>> google_to_hf_name("bert/embeddings/word_embeddings/adam_m") is None
    True
    """
    parts = name.split("/")
    if parts[-1] in SKIPPED_SUFFIXES or name in SKIPPED_NAMES:
        return None
    special = {"cls/predictions/output_bias": "cls.predictions.bias",
               "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
               "cls/seq_relationship/output_bias": "cls.seq_relationship.bias"}
    if name in special:
        return special[name], False
    key = re.sub(r"layer_(\d+)", r"layer.\1", name).replace("/", ".")
    for old, new in ((".gamma", ".weight"), (".beta", ".bias")):
        if key.endswith(old):
            return key[: -len(old)] + new, False
    if key.endswith(".kernel"):
        return key[: -len(".kernel")] + ".weight", True
    if key.endswith("_embeddings"):
        return key + ".weight", False
    return key, False  # biases keep their name; anything else is reported as unexpected


def read_google_checkpoint(path):
    """``(config dict, state_dict in Hugging Face layout, vocabulary, skipped names)``."""
    import tensorflow as tf

    prefix, directory = find_checkpoint(path)
    config_path = os.path.join(directory, "bert_config.json")
    if not os.path.isfile(config_path):
        raise PresetError(f"{directory} lacks bert_config.json (the architecture of the "
                          "checkpoint); Google's releases ship it next to bert_model.ckpt.*.")
    try:
        with open(config_path, encoding="utf-8") as f:
            config = config_from_hf(json.load(f))
    except json.JSONDecodeError as error:
        raise PresetError(f"{config_path} is not a valid BERT config ({error}).") from None
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
    except Exception as error:  # tf raises DataLossError, NotFoundError, ...
        raise PresetError(f"TensorFlow checkpoint {prefix} is truncated or corrupt: "
                          f"{type(error).__name__}: {str(error).splitlines()[0]}") from None
    state, skipped = {}, []
    for name in sorted(shapes):
        translated = google_to_hf_name(name)
        if translated is None:
            skipped.append(name)
            continue
        key, transpose = translated
        try:
            value = reader.get_tensor(name)
        except Exception as error:
            raise PresetError(f"Cannot read {name} from {prefix} (truncated data file?): "
                              f"{type(error).__name__}.") from None
        state[key] = value.T if transpose else value
    vocab_path = os.path.join(directory, "vocab.txt")
    if not os.path.isfile(vocab_path):
        raise PresetError(f"{directory} lacks vocab.txt, the WordPiece vocabulary of the model.")
    vocabulary = vocabulary_file.read_vocabulary(vocab_path)
    vocabulary_file.check_vocabulary_size(vocabulary, config["vocabulary_size"],
                                        where=f"vocabulary {vocab_path}")
    return config, state, vocabulary, skipped


def import_google(path, preset_dir, heads=None, allow_partial=False, lowercase=None,
                  overwrite=False, source=None, license=None):
    """Convert a Google BERT checkpoint into a preset directory (``kbl preset import-google``).

    The MLM/NSP heads (``cls/*``) are kept as a ``BertPretrainer``'s when the checkpoint has
    them and ``heads`` is not ``False``; optimizer slots are skipped. ``lowercase`` defaults to a
    guess from the vocabulary (uncased vocabularies have no upper-case tokens).
    """
    config, state, vocabulary, _ = read_google_checkpoint(path)
    with_heads = any(k.startswith("cls.") for k in state) if heads is None else bool(heads)
    weights, _ = weights_from_hf(state, config, heads=with_heads, allow_partial=allow_partial)
    lowercase = vocabulary_file.guess_lowercase(vocabulary) if lowercase is None else lowercase
    checkpoint = pathlib.Path(find_checkpoint(path)[0]).absolute()
    return preset_format.write_preset(
        preset_dir, backbone_class="BertBackbone", config=config, weights=weights,
        vocabulary=vocabulary, tokenizer={"lowercase": bool(lowercase)},
        task=PRETRAINER if with_heads else None,
        source=source or f"Google BERT checkpoint {checkpoint}", license=license,
        overwrite=overwrite)
