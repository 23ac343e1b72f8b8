"""Hugging Face BERT checkpoint directories, in (to a preset) and out.

A Hugging Face BERT directory holds ``config.json``, the weights (``model.safetensors`` or
``pytorch_model.bin``, possibly sharded with an ``*.index.json``), ``vocab.txt`` and usually
``tokenizer_config.json`` (``do_lower_case``). ``BertModel`` checkpoints — sentence-transformers
models among them — name their tensors ``embeddings.…``/``encoder.…``/``pooler.…``; those of
``BertForPreTraining``/``BertForMaskedLM`` add a ``bert.`` prefix and the heads under ``cls.``.
Tensor names and layouts are translated by the table in
:mod:`keras_bert_lab.models.bert.hf_weights`; this module reads and writes the files around
it.

Example:
>>> from keras_bert_lab.models.bert.convert_hf import import_hf, export_hf  # doctest: +SKIP
>>> import_hf("all-MiniLM-L6-v2/", "presets/minilm")                        # doctest: +SKIP
>>> export_hf("presets/minilm", "minilm-hf/")   # transformers.BertModel.from_pretrained works  # doctest: +SKIP
"""

import dataclasses
import json
import pathlib
import re

import numpy as np

from keras_bert_lab.errors import PresetError
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets import vocabulary as vocabulary_file
from keras_bert_lab.models.bert.hf_weights import (config_from_hf, config_to_hf, has_prefix,
                                                        weights_from_hf, weights_to_hf)
from keras_bert_lab.presets.convert.tensor_files import read_state_dict, write_safetensors

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
PRETRAINER = {"class_name": "BertPretrainer", "module": "keras_bert_lab.models.bert.pretrainer",
              "config": {}}


@dataclasses.dataclass
class HFCheckpoint:
    """The parts of a Hugging Face BERT directory, read and checked."""

    directory: pathlib.Path
    config: dict                    # BertConfig fields
    hf_config: dict
    state_dict: dict                # name -> np.ndarray, HF layout
    vocabulary: list
    lowercase: bool
    sentence_embedding: dict | None
    sequence_length: int | None     # sentence-transformers' max_seq_length
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
    config = config_from_hf(hf_config)
    state_dict = rename_legacy_keys(_read_weights(directory, present))
    vocabulary, where, fast_lowercase = _read_vocabulary(directory, present)
    vocabulary_file.check_vocabulary_size(vocabulary, config["vocabulary_size"], where=where)
    if lowercase is None:
        lowercase = fast_lowercase
    if lowercase is None:
        tokenizer_config = directory / "tokenizer_config.json"
        lowercase = (_read_json(tokenizer_config).get("do_lower_case")
                     if tokenizer_config.is_file() else None)
        lowercase = vocabulary_file.guess_lowercase(vocabulary) if lowercase is None else lowercase
    recipe, sequence_length = _sentence_embedding(directory)
    return HFCheckpoint(directory, config, hf_config, state_dict, vocabulary, bool(lowercase),
                        recipe, sequence_length, _license(directory))


def import_hf(directory, preset_dir, heads=None, allow_partial=False, lowercase=None,
              overwrite=False, source=None, license=None):
    """Convert a Hugging Face BERT directory into a preset directory (``kbl preset import-hf``).

    The heads (``cls.*``) are kept as a ``BertPretrainer``'s when the checkpoint has them and
    ``heads`` is not ``False``. Strict by default (missing or unexpected tensors raise, listing
    them); ``allow_partial=True`` converts what matches. A sentence-transformers directory
    (``1_Pooling/config.json``) also records its pooling recipe and maximum length, used by
    :class:`~keras_bert_lab.models.bert.sentence_embedder.SentenceEmbedder` and the preprocessors.
    Returns the preset directory.
    """
    checkpoint = read_hf_checkpoint(directory, lowercase=lowercase)
    with_heads = checkpoint.has_heads if heads is None else bool(heads)
    if with_heads:
        _check_tied_decoder(checkpoint.state_dict, checkpoint.directory)
    weights, _ = weights_from_hf(checkpoint.state_dict, checkpoint.config, heads=with_heads,
                                 allow_partial=allow_partial)
    length = checkpoint.sequence_length
    return preset_format.write_preset(
        preset_dir, backbone_class="BertBackbone", config=checkpoint.config, weights=weights,
        vocabulary=checkpoint.vocabulary, tokenizer={"lowercase": checkpoint.lowercase},
        task=PRETRAINER if with_heads else None,
        preprocessor={"sequence_length": length} if length else None,
        sentence_embedding=checkpoint.sentence_embedding,
        source=source or f"Hugging Face checkpoint {checkpoint.directory.absolute()}",
        license=license or checkpoint.license, overwrite=overwrite)


def export_hf(model, directory, vocabulary=None, lowercase=None, overwrite=False):
    """Write ``model`` (a backbone, a task, or a preset directory) as a Hugging Face directory.

    The directory gets ``config.json``, ``model.safetensors``, ``vocab.txt``,
    ``tokenizer_config.json`` and ``special_tokens_map.json``: ``transformers.BertModel`` (or
    ``BertForPreTraining`` for a pretrainer) and ``BertTokenizerFast`` load it with
    ``from_pretrained``. A backbone is written as ``BertModel`` (no ``bert.`` prefix). A model
    with a sentence-embedding recipe (e.g. from a sentence-transformers import) also gets
    ``modules.json`` and ``1_Pooling/config.json``, so the recipe survives the round trip.
    """
    with preset_format.opened(model, vocabulary) as preset:
        tokens = preset.vocabulary()
        if lowercase is None:
            lowercase = preset.tokenizer.get("lowercase", vocabulary_file.guess_lowercase(tokens))
        weights = preset.weights()
        heads = any(name.startswith("task/masked_lm_head/") for name in weights)
        hf_config = config_to_hf(preset.config)
        hf_config["architectures"] = ["BertForPreTraining" if heads else "BertModel"]
        tensors = weights_to_hf(weights, preset.config, prefix="bert." if heads else "")
        specials = dict(zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"),
                            preset_format.SPECIAL_TOKENS))
        with preset_format.atomic_directory(directory, overwrite=overwrite) as tmp:
            (tmp / "config.json").write_text(json.dumps(hf_config, indent=2) + "\n")
            write_safetensors(tmp / "model.safetensors", tensors)
            vocabulary_file.write_vocabulary(tmp / "vocab.txt", tokens)
            (tmp / "tokenizer_config.json").write_text(json.dumps(
                {"tokenizer_class": "BertTokenizer", "do_lower_case": bool(lowercase),
                 "model_max_length": preset.config["max_positions"], **specials}, indent=2) + "\n")
            (tmp / "special_tokens_map.json").write_text(json.dumps(specials, indent=2) + "\n")
            recipe = preset.sentence_embedding
            if recipe and recipe.get("pooling") == "mean":
                length = (preset.preprocessor or {}).get("sequence_length")
                _write_sentence_transformers_files(tmp, recipe, preset.config["hidden_size"],
                                                   length)
    return pathlib.Path(directory).absolute()


def _write_sentence_transformers_files(directory, recipe, hidden_size, sequence_length):
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
    if sequence_length:
        (directory / "sentence_bert_config.json").write_text(json.dumps(
            {"max_seq_length": int(sequence_length), "do_lower_case": False}) + "\n")


def _check_tied_decoder(state, directory):
    """Our masked-LM decoder *is* the token embedding (as in BERT); a checkpoint whose decoder
    was trained apart from it cannot be represented, so say so instead of dropping it."""
    decoder = state.get("cls.predictions.decoder.weight")
    if decoder is None:
        return
    prefix = "bert." if has_prefix(state) else ""
    embedding = state.get(f"{prefix}embeddings.word_embeddings.weight")
    if embedding is not None and (decoder.shape != embedding.shape
                                  or not np.array_equal(decoder, embedding)):
        raise PresetError(f"{directory}: cls.predictions.decoder.weight differs from the word "
                          "embeddings (an untied decoder); our masked-LM head ties them. Import "
                          "with heads=False (--heads no) to keep only the backbone.")


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


def _read_vocabulary(directory, present):
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
    model = _read_json(fast).get("model") or {}
    vocab = model.get("vocab")
    if model.get("type") != "WordPiece" or not isinstance(vocab, dict) or not vocab:
        raise PresetError(f"{fast} holds a {model.get('type')!r} tokenizer, not a WordPiece "
                          "vocabulary; add the checkpoint's vocab.txt.")
    ids = sorted(vocab.values())
    if ids != list(range(len(ids))):
        raise PresetError(f"{fast}: the WordPiece ids are not 0 … {len(ids) - 1} without gaps; "
                          "add the checkpoint's vocab.txt.")
    tokens = sorted(vocab, key=vocab.get)
    normalizer = _read_json(fast).get("normalizer") or {}
    return tokens, f"vocabulary in {fast}", normalizer.get("lowercase")


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
    """``(pooling recipe, max_seq_length)`` of a sentence-transformers directory (``None`` each
    where absent)."""
    st_config = directory / "sentence_bert_config.json"
    length = _read_json(st_config).get("max_seq_length") if st_config.is_file() else None
    length = int(length) if length else None
    pooling = directory / "1_Pooling" / "config.json"
    if not pooling.is_file():
        return None, length
    options = _read_json(pooling)
    modes = [m for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")
             if options.get(f"pooling_mode_{m}")]
    if modes != ["mean_tokens"]:
        return None, length  # only mean pooling is implemented; the backbone still loads
    modules = directory / "modules.json"
    normalize = modules.is_file() and any(
        m.get("type", "").endswith("Normalize") for m in _read_json(modules))
    return {"pooling": "mean", "normalize": bool(normalize)}, length


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
    return preset_format.read_json(path, what="Hugging Face checkpoint")
