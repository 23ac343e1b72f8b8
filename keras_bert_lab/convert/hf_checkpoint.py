"""Hugging Face BERT checkpoint directories, in (to a model or a preset) and out.

A Hugging Face BERT directory holds ``config.json``, the weights (``model.safetensors`` or
``pytorch_model.bin``, possibly sharded with an ``*.index.json``), ``vocab.txt`` and usually
``tokenizer_config.json`` (``do_lower_case``). ``BertModel`` checkpoints — sentence-transformers
models among them — name their tensors ``embeddings.…``/``encoder.…``/``pooler.…``; those of
``BertForPreTraining``/``BertForMaskedLM`` add a ``bert.`` prefix and the heads under ``cls.``.
Tensor names and layouts are translated by the table in :mod:`keras_bert_lab.convert.huggingface`;
this module reads and writes the files around it.

Example:
>>> from keras_bert_lab.convert.hf_checkpoint import import_hf, export_hf   # doctest: +SKIP
>>> import_hf("all-MiniLM-L6-v2/", "presets/minilm")                        # doctest: +SKIP
>>> export_hf("presets/minilm", "minilm-hf/")   # transformers.BertModel.from_pretrained works  # doctest: +SKIP
"""

import dataclasses
import json
import pathlib
import re

import numpy as np

from keras_bert_lab import presets
from keras_bert_lab.convert.huggingface import (config_from_hf, config_to_hf, export_hf_weights,
                                                load_hf_weights)
from keras_bert_lab.convert.tensor_files import read_state_dict, write_safetensors
from keras_bert_lab.errors import PresetError

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


@dataclasses.dataclass
class HFCheckpoint:
    """The parts of a Hugging Face BERT directory, read and checked."""

    directory: pathlib.Path
    config: object                  # BertConfig
    hf_config: dict
    state_dict: dict                # name -> np.ndarray, HF layout
    vocabulary: list
    lowercase: bool
    sentence_embedding: dict | None
    license: str | None

    @property
    def has_heads(self):
        return any(k.startswith("cls.") for k in self.state_dict)


def read_hf_checkpoint(directory, lowercase=None):
    """Read a Hugging Face BERT directory; ``PresetError`` names any missing or broken part.

    ``lowercase`` overrides the casing found in ``tokenizer_config.json`` (or guessed from the
    vocabulary: an uncased vocabulary has no upper-case tokens).
    """
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise PresetError(f"Hugging Face checkpoint directory {directory} does not exist.")
    present = sorted(p.name for p in directory.iterdir())
    if not (directory / "config.json").is_file():
        raise PresetError(f"{directory} lacks config.json (it has: {', '.join(present)}); a "
                          "Hugging Face BERT directory needs config.json, model.safetensors or "
                          "pytorch_model.bin, and vocab.txt.")
    hf_config = _read_json(directory / "config.json")
    if hf_config.get("model_type", "bert") != "bert":
        raise PresetError(f"{directory / 'config.json'} describes a {hf_config['model_type']!r} "
                          "model; only BERT checkpoints (model_type 'bert') can be converted.")
    try:
        config = config_from_hf(hf_config)
    except KeyError as error:
        raise PresetError(f"{directory / 'config.json'} lacks the field {error}.") from None
    state_dict = rename_legacy_keys(_read_weights(directory, present))
    if not (directory / "vocab.txt").is_file():
        raise PresetError(f"{directory} lacks vocab.txt (it has: {', '.join(present)}); the "
                          "WordPiece vocabulary is needed to build the tokenizer.")
    vocabulary = presets.read_vocabulary(directory / "vocab.txt")
    presets.check_vocabulary(vocabulary, config, where=f"vocabulary {directory / 'vocab.txt'}")
    if lowercase is None:
        tokenizer_config = directory / "tokenizer_config.json"
        lowercase = (_read_json(tokenizer_config).get("do_lower_case")
                     if tokenizer_config.is_file() else None)
        lowercase = presets.guess_lowercase(vocabulary) if lowercase is None else lowercase
    return HFCheckpoint(directory, config, hf_config, state_dict, vocabulary, bool(lowercase),
                        _sentence_embedding(directory), _license(directory))


def load_hf_checkpoint(directory, heads=None, allow_partial=False, lowercase=None):
    """A model with the checkpoint's weights: ``BertPretrainer`` when it has ``cls.*`` heads
    (and ``heads`` is not ``False``), ``BertBackbone`` otherwise.

    Strict by default (missing or unexpected tensors raise, listing them); ``allow_partial=True``
    loads what matches. Returns ``(model, report)`` with ``report = {"missing", "unexpected"}``.
    """
    from keras_bert_lab.models.bert import BertBackbone
    from keras_bert_lab.tasks.pretraining import BertPretrainer

    checkpoint = read_hf_checkpoint(directory, lowercase=lowercase)
    backbone = BertBackbone(checkpoint.config)
    with_heads = checkpoint.has_heads if heads is None else heads
    model = BertPretrainer(backbone) if with_heads else backbone
    state = checkpoint.state_dict
    if not with_heads:  # a backbone ignores the heads of a BertForPreTraining checkpoint
        state = {k: v for k, v in state.items() if not k.startswith("cls.")}
    _check_tied_decoder(state, checkpoint.directory)
    report = load_hf_weights(model, state, allow_partial=allow_partial)
    model.preset_info = backbone.preset_info = presets.PresetInfo(
        tuple(checkpoint.vocabulary), {"lowercase": checkpoint.lowercase},
        f"Hugging Face checkpoint {checkpoint.directory.absolute()}",
        checkpoint.license or "unspecified", checkpoint.sentence_embedding)
    return model, report


def import_hf(directory, preset_dir, heads=None, allow_partial=False, lowercase=None,
              overwrite=False, source=None, license=None):
    """Convert a Hugging Face BERT directory into a preset directory (``kbl preset import-hf``).

    A sentence-transformers directory (``1_Pooling/config.json``) also records its pooling
    recipe, used by :class:`keras_bert_lab.tasks.sentence_embedding.SentenceEmbedder`.
    Returns the preset directory.
    """
    model, _ = load_hf_checkpoint(directory, heads=heads, allow_partial=allow_partial,
                                  lowercase=lowercase)
    return presets.save_preset(model, preset_dir, overwrite=overwrite, source=source,
                               license=license)


def export_hf(model, directory, vocabulary=None, lowercase=None, overwrite=False):
    """Write ``model`` (a backbone, a task, or a preset name/directory) as a Hugging Face directory.

    The directory gets ``config.json``, ``model.safetensors``, ``vocab.txt``,
    ``tokenizer_config.json`` and ``special_tokens_map.json``: ``transformers.BertModel`` (or
    ``BertForPreTraining`` for a pretrainer) and ``BertTokenizerFast`` load it with
    ``from_pretrained``. A backbone is written as ``BertModel`` (no ``bert.`` prefix). A model
    with a sentence-embedding recipe (e.g. from a sentence-transformers import) also gets
    ``modules.json`` and ``1_Pooling/config.json``, so the recipe survives the round trip.
    """
    model, backbone, info, tokens = presets.export_inputs(model, vocabulary)
    if lowercase is None:
        lowercase = info.tokenizer.get("lowercase") if info else None
    if lowercase is None:
        lowercase = presets.guess_lowercase(tokens)
    is_backbone = model is backbone
    hf_config = config_to_hf(backbone.config)
    hf_config["architectures"] = ["BertModel" if is_backbone else "BertForPreTraining"]
    tensors = export_hf_weights(model, prefix="" if is_backbone else "bert.")
    tensors.pop("cls.predictions.decoder.weight", None)  # tied: transformers re-ties on load
    tensors.pop("cls.predictions.decoder.bias", None)
    specials = dict(zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"),
                        presets.SPECIAL_TOKENS))
    with presets.atomic_directory(directory, overwrite=overwrite) as tmp:
        (tmp / "config.json").write_text(json.dumps(hf_config, indent=2) + "\n")
        write_safetensors(tmp / "model.safetensors", tensors)
        presets.write_vocabulary(tmp / "vocab.txt", tokens)
        (tmp / "tokenizer_config.json").write_text(json.dumps(
            {"tokenizer_class": "BertTokenizer", "do_lower_case": bool(lowercase),
             "model_max_length": backbone.config.max_positions, **specials}, indent=2) + "\n")
        (tmp / "special_tokens_map.json").write_text(json.dumps(specials, indent=2) + "\n")
        recipe = info.sentence_embedding if info else None
        if recipe and recipe.get("pooling") == "mean":
            _write_sentence_transformers_files(tmp, recipe, backbone.config.hidden_size)
    return pathlib.Path(directory).absolute()


def _write_sentence_transformers_files(directory, recipe, hidden_size):
    """modules.json + 1_Pooling/config.json (+ max length): the pooling recipe, as
    sentence-transformers writes it, so that the exported directory is again a sentence model."""
    modules = [{"idx": 0, "name": "0", "path": "",
                "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling"}]
    if recipe.get("normalize"):
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    (directory / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (directory / "1_Pooling").mkdir()
    (directory / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": hidden_size, "pooling_mode_cls_token": False,
         "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
         "pooling_mode_mean_sqrt_len_tokens": False}, indent=2) + "\n")
    if recipe.get("sequence_length"):
        (directory / "sentence_bert_config.json").write_text(json.dumps(
            {"max_seq_length": int(recipe["sequence_length"]), "do_lower_case": False}) + "\n")


def _check_tied_decoder(state, directory):
    """Our masked-LM decoder *is* the token embedding (as in BERT); a checkpoint whose decoder
    was trained apart from it cannot be represented, so say so instead of dropping it."""
    decoder = state.get("cls.predictions.decoder.weight")
    if decoder is None:
        return
    prefix = "bert." if any(k.startswith("bert.") for k in state) else ""
    embedding = state.get(f"{prefix}embeddings.word_embeddings.weight")
    if embedding is not None and (decoder.shape != embedding.shape
                                  or not np.array_equal(decoder, embedding)):
        raise PresetError(f"{directory}: cls.predictions.decoder.weight differs from the word "
                          "embeddings (an untied decoder); our masked-LM head ties them. Load "
                          "with heads=False to keep only the backbone.")


def rename_legacy_keys(state_dict):
    """Early PyTorch ports (e.g. the first ``bert-base-uncased``) name LayerNorm parameters
    ``gamma``/``beta``, as TensorFlow did; ``transformers`` renames them on load, and so do we.

    >>> sorted(rename_legacy_keys({"embeddings.LayerNorm.gamma": 1, "pooler.dense.bias": 2}))
    ['embeddings.LayerNorm.weight', 'pooler.dense.bias']
    """
    out = {}
    for key, value in state_dict.items():
        if key.endswith("LayerNorm.gamma"):
            key = key[: -len("gamma")] + "weight"
        elif key.endswith("LayerNorm.beta"):
            key = key[: -len("beta")] + "bias"
        out[key] = value
    return out


def _read_weights(directory, present):
    for index_name in INDEX_FILES:
        index = directory / index_name
        if index.is_file():  # sharded: {"weight_map": {tensor: shard file}}
            shards = sorted(set(_read_json(index).get("weight_map", {}).values()))
            state = {}
            for shard in shards:
                state.update(read_state_dict(directory / shard))
            return state
    for name in WEIGHT_FILES:
        if (directory / name).is_file():
            return read_state_dict(directory / name)
    raise PresetError(f"{directory} has no weights: expected one of {', '.join(WEIGHT_FILES)} "
                      f"(or a sharded index); it has: {', '.join(present)}. TensorFlow-only "
                      "checkpoints (tf_model.h5) are not supported; Google's original "
                      "bert_model.ckpt is (`kbl preset import-google`).")


def _sentence_embedding(directory):
    """The pooling recipe of a sentence-transformers directory, or ``None``."""
    pooling = directory / "1_Pooling" / "config.json"
    if not pooling.is_file():
        return None
    options = _read_json(pooling)
    modes = [m for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")
             if options.get(f"pooling_mode_{m}")]
    if modes != ["mean_tokens"]:
        return None  # only mean pooling is implemented; the backbone still loads
    modules = directory / "modules.json"
    normalize = modules.is_file() and any(
        m.get("type", "").endswith("Normalize") for m in _read_json(modules))
    recipe = {"pooling": "mean", "normalize": bool(normalize)}
    st_config = directory / "sentence_bert_config.json"
    if st_config.is_file() and _read_json(st_config).get("max_seq_length"):
        recipe["sequence_length"] = int(_read_json(st_config)["max_seq_length"])
    return recipe


def _license(directory):
    """The ``license:`` of a model card's front matter (README.md), if any."""
    card = directory / "README.md"
    if not card.is_file():
        return None
    text = card.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return None
    match = re.search(r"^license:\s*(\S+)\s*$", text.split("---", 2)[1], re.MULTILINE)
    return match.group(1) if match else None


def _read_json(path):
    try:
        return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PresetError(f"{path} is not valid JSON ({error}).") from None
