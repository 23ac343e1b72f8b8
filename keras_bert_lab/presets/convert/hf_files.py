"""Hugging Face checkpoint directories: the files around the weights, read and written once for
every family's converter (NumPy only; the tensors go through :mod:`.tensor_files`).

A ``transformers`` directory holds ``config.json``, the weights (``model.safetensors`` or
``pytorch_model.bin``, possibly sharded with an ``*.index.json``), and for a WordPiece model
``vocab.txt`` (or only a fast tokenizer's ``tokenizer.json``) and ``tokenizer_config.json``
(``do_lower_case``). A model card (``README.md``) may state the license.
"""

import json
import pathlib
import re

from keras_bert_lab.errors import PresetError
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets import vocabulary as vocabulary_file
from keras_bert_lab.presets.convert.tensor_files import read_state_dict

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def open_directory(directory, model_type, needs):
    """``(directory, present file names, config.json dict)`` of a Hugging Face directory whose
    ``model_type`` is ``model_type``; ``PresetError`` names what is missing (``needs``: the
    files such a directory holds, for the message) or the wrong model type."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise PresetError(f"Hugging Face checkpoint directory {directory} does not exist.")
    present = sorted(p.name for p in directory.iterdir())
    if not (directory / "config.json").is_file():
        raise PresetError(f"{directory} lacks config.json (it has: {', '.join(present)}); a "
                          f"Hugging Face {model_type} directory needs {needs}.")
    hf_config = read_json(directory / "config.json")
    found = hf_config.get("model_type", model_type)
    if found != model_type:
        raise PresetError(f"{directory / 'config.json'} describes a {found!r} model; only "
                          f"{model_type!r} checkpoints (model_type {model_type!r}) can be "
                          "converted here.")
    return directory, present, hf_config


def wordpiece_casing(directory, vocabulary, fast_lowercase=None):
    """Whether a WordPiece checkpoint lower-cases its text: the fast tokenizer's normaliser,
    else ``tokenizer_config.json``'s ``do_lower_case``, else a guess from the vocabulary (an
    uncased vocabulary has no upper-case tokens)."""
    if fast_lowercase is not None:
        return bool(fast_lowercase)
    tokenizer_config = pathlib.Path(directory) / "tokenizer_config.json"
    lowercase = (read_json(tokenizer_config).get("do_lower_case")
                 if tokenizer_config.is_file() else None)
    return bool(vocabulary_file.guess_lowercase(vocabulary) if lowercase is None else lowercase)


def write_wordpiece_tokenizer(directory, tokens, lowercase, max_length):
    """``vocab.txt``, ``tokenizer_config.json`` and ``special_tokens_map.json`` of a WordPiece
    model (``transformers.BertTokenizerFast`` reads them; ELECTRA's tokenizer is BERT's)."""
    directory = pathlib.Path(directory)
    specials = dict(zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"),
                        preset_format.SPECIAL_TOKENS))
    vocabulary_file.write_vocabulary(directory / "vocab.txt", tokens)
    (directory / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer", "do_lower_case": bool(lowercase),
         "model_max_length": int(max_length), **specials}, indent=2) + "\n")
    (directory / "special_tokens_map.json").write_text(json.dumps(specials, indent=2) + "\n")


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


def read_vocabulary(directory, present):
    """``(tokens, where, lowercase)``: ``vocab.txt``, or — as newer ``transformers`` save a fast
    tokenizer only — the WordPiece vocabulary and lower-casing inside ``tokenizer.json``
    (``lowercase`` is ``None`` when the file does not say)."""
    if (directory / "vocab.txt").is_file():
        return (vocabulary_file.read_vocabulary(directory / "vocab.txt"),
                f"vocabulary {directory / 'vocab.txt'}", None)
    fast = directory / "tokenizer.json"
    if not fast.is_file():
        raise PresetError(f"{directory} lacks vocab.txt (it has: {', '.join(present)}); the "
                          "WordPiece vocabulary is needed to build the tokenizer (vocab.txt, or "
                          "a fast tokenizer's tokenizer.json).")
    model = read_json(fast).get("model") or {}
    vocab = model.get("vocab")
    if model.get("type") != "WordPiece" or not isinstance(vocab, dict) or not vocab:
        raise PresetError(f"{fast} holds a {model.get('type')!r} tokenizer, not a WordPiece "
                          "vocabulary; add the checkpoint's vocab.txt.")
    ids = sorted(vocab.values())
    if ids != list(range(len(ids))):
        raise PresetError(f"{fast}: the WordPiece ids are not 0 … {len(ids) - 1} without gaps; "
                          "add the checkpoint's vocab.txt.")
    tokens = sorted(vocab, key=vocab.get)
    normalizer = read_json(fast).get("normalizer") or {}
    return tokens, f"vocabulary in {fast}", normalizer.get("lowercase")


def read_weights(directory, present):
    for index_name in INDEX_FILES:
        index = directory / index_name
        if index.is_file():  # sharded: {"weight_map": {tensor: shard file}}
            shards = sorted(set(read_json(index).get("weight_map", {}).values()))
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


def read_license(directory):
    """The ``license:`` of a model card's front matter (README.md), if any."""
    card = directory / "README.md"
    if not card.is_file():
        return None
    text = card.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return None
    match = re.search(r"^license:\s*(\S+)\s*$", text.split("---", 2)[1], re.MULTILINE)
    return match.group(1) if match else None


def read_json(path):
    return preset_format.read_json(path, what="Hugging Face checkpoint")
