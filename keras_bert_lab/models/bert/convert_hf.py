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

import numpy as np

from keras_bert_lab.errors import PresetError
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets import vocabulary as vocabulary_file
from keras_bert_lab.models.bert.hf_weights import (config_from_hf, config_to_hf, has_prefix,
                                                        weights_from_hf, weights_to_hf)
from keras_bert_lab.presets.convert import hf_files
from keras_bert_lab.presets.convert.tensor_files import write_safetensors

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
    directory, present, hf_config = hf_files.open_directory(
        directory, "bert", "config.json, model.safetensors or pytorch_model.bin, and vocab.txt")
    config = config_from_hf(hf_config)
    state_dict = hf_files.rename_legacy_keys(hf_files.read_weights(directory, present))
    vocabulary, where, fast_lowercase = hf_files.read_vocabulary(directory, present)
    vocabulary_file.check_vocabulary_size(vocabulary, config["vocabulary_size"], where=where)
    if lowercase is None:
        lowercase = hf_files.wordpiece_casing(directory, vocabulary, fast_lowercase)
    recipe, sequence_length = _sentence_embedding(directory)
    return HFCheckpoint(directory, config, hf_config, state_dict, vocabulary, bool(lowercase),
                        recipe, sequence_length, hf_files.read_license(directory))


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
        with preset_format.atomic_directory(directory, overwrite=overwrite) as tmp:
            (tmp / "config.json").write_text(json.dumps(hf_config, indent=2) + "\n")
            write_safetensors(tmp / "model.safetensors", tensors)
            hf_files.write_wordpiece_tokenizer(tmp, tokens, lowercase,
                                               preset.config["max_positions"])
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


def _sentence_embedding(directory):
    """``(pooling recipe, max_seq_length)`` of a sentence-transformers directory (``None`` each
    where absent)."""
    st_config = directory / "sentence_bert_config.json"
    length = hf_files.read_json(st_config).get("max_seq_length") if st_config.is_file() else None
    length = int(length) if length else None
    pooling = directory / "1_Pooling" / "config.json"
    if not pooling.is_file():
        return None, length
    options = hf_files.read_json(pooling)
    modes = [m for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")
             if options.get(f"pooling_mode_{m}")]
    if modes != ["mean_tokens"]:
        return None, length  # only mean pooling is implemented; the backbone still loads
    modules = directory / "modules.json"
    normalize = modules.is_file() and any(
        m.get("type", "").endswith("Normalize") for m in hf_files.read_json(modules))
    return {"pooling": "mean", "normalize": bool(normalize)}, length
