"""Hugging Face ELECTRA checkpoints, in (to a preset) and out (NumPy only).

``transformers`` ships an ELECTRA model as two directories: the discriminator
(``ElectraForPreTraining``: ``electra.*`` and ``discriminator_predictions.*``) and the generator
(``ElectraForMaskedLM``: ``electra.*``, ``generator_predictions.*``, ``generator_lm_head.*``, its
decoder tied to the word embeddings); a bare ``ElectraModel`` has no prefix and no head. Each
converts on its own — a discriminator to an ``ElectraDiscriminator`` preset (the one to
fine-tune), a generator to an ``ElectraMaskedLM`` preset (``kbl fill-mask``) — or the pair to one
``ElectraPretrainer`` preset that continues pretraining. The pair shares one embedding table in
the paper and in the original checkpoints; a pair whose embeddings differ is refused.

ELECTRA's original code builds a ``tanh`` pooler that pretraining never trains, and
``transformers`` leaves it out: an imported discriminator's ``backbone/pooler`` is initialised
here (seeded, as the original code initialises it) and trained by fine-tuning heads that read it.

Example:
>>> config = config_from_hf({"vocab_size": 8, "embedding_size": 4, "hidden_size": 6,
...                          "num_hidden_layers": 1, "num_attention_heads": 2,
...                          "intermediate_size": 12, "max_position_embeddings": 16,
...                          "architectures": ["ElectraForMaskedLM"]})
>>> config["role"], [r.hf_keys[0] for r in weight_table(config, head=True)][-1]
('generator', 'generator_lm_head.bias')
"""

import json
import pathlib

import numpy as np

from keras_bert_lab.errors import PresetError
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets import vocabulary as vocabulary_file
from keras_bert_lab.presets.convert import hf_files
from keras_bert_lab.presets.convert.hf_table import (dense, encoder_config_from_hf,
                                                     encoder_layer_rows, norm, row,
                                                     weights_from_state, weights_to_state)
from keras_bert_lab.presets.convert.tensor_files import write_safetensors

MODULE = "keras_bert_lab.models.electra"
TASKS = {  # role -> the task whose head a checkpoint of that role holds
    "discriminator": {"class_name": "ElectraDiscriminator", "module": f"{MODULE}.discriminator",
                      "config": {}},
    "generator": {"class_name": "ElectraMaskedLM", "module": f"{MODULE}.masked_lm", "config": {}},
}
ARCHITECTURES = {"discriminator": "ElectraForPreTraining", "generator": "ElectraForMaskedLM"}
_IGNORED_SUFFIXES = ("position_ids", "token_type_ids", "generator_lm_head.weight")
NEEDS = "config.json, model.safetensors or pytorch_model.bin, and vocab.txt"


def config_from_hf(hf_config):
    """Our ELECTRA config (a dict of ``ElectraConfig`` fields) from a Hugging Face
    ``config.json``; the role from its ``architectures`` (``ElectraForMaskedLM``: a generator)."""
    architectures = hf_config.get("architectures") or []
    return dict(encoder_config_from_hf(hf_config, "ELECTRA"),
                embedding_size=hf_config.get("embedding_size", hf_config["hidden_size"]),
                role="generator" if "ElectraForMaskedLM" in architectures else "discriminator")


def config_to_hf(config, architecture=None):
    """The Hugging Face ``config.json`` dict of an ELECTRA config (an ``ElectraConfig`` or its
    dict); ``architecture`` default: the role's (``ElectraForPreTraining`` / ``…ForMaskedLM``)."""
    c = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    return {
        "architectures": [architecture or ARCHITECTURES[c["role"]]], "model_type": "electra",
        "vocab_size": c["vocabulary_size"], "embedding_size": c["embedding_size"],
        "hidden_size": c["hidden_size"], "num_hidden_layers": c["num_layers"],
        "num_attention_heads": c["num_heads"], "intermediate_size": c["intermediate_size"],
        "hidden_act": "gelu", "max_position_embeddings": c["max_positions"],
        "type_vocab_size": c["type_vocab_size"], "hidden_dropout_prob": c["dropout"],
        "attention_probs_dropout_prob": c["attention_dropout"],
        "layer_norm_eps": c["layer_norm_epsilon"], "initializer_range": c["initializer_range"],
        "pad_token_id": 0, "position_embedding_type": "absolute", "tie_word_embeddings": True,
    }


def weight_table(config, prefix="electra.", head=False, ours="backbone", embeddings="backbone"):
    """The rows of an ELECTRA model's tensors (``head``: and its role's head).

    ``prefix``: ``"electra."`` for ``ElectraFor*`` checkpoints, ``""`` for ``ElectraModel``.
    ``ours``: where the encoder lives in the preset (``backbone``, or ``task/generator`` for an
    ``ElectraPretrainer``'s generator) and ``embeddings`` where its embedding table does (the
    pretrainer's generator uses the backbone's). The pooler is not in the table (see the module
    docstring)."""
    c = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    e, h, n, i = c["embedding_size"], c["hidden_size"], c["num_heads"], c["intermediate_size"]
    if not n or h % n:
        raise PresetError(f"hidden_size {h} is not divisible by num_heads {n}; this is not a "
                          "valid ELECTRA config.")
    p, emb = prefix, f"{embeddings}/embeddings"
    rows = [
        row(f"{emb}/token_embedding/embeddings", f"{p}embeddings.word_embeddings.weight",
            (c["vocabulary_size"], e)),
        row(f"{emb}/position_embedding", f"{p}embeddings.position_embeddings.weight",
            (c["max_positions"], e)),
        row(f"{emb}/segment_embedding/embeddings", f"{p}embeddings.token_type_embeddings.weight",
            (c["type_vocab_size"], e)),
        *norm(f"{emb}/norm", f"{p}embeddings.LayerNorm", e),
    ]
    if e != h:
        rows += dense(f"{ours}/embedding_projection", f"{p}embeddings_project", (e, h))
    for layer in range(c["num_layers"]):
        rows += encoder_layer_rows(f"{ours}/encoder_layer_{layer}", f"{p}encoder.layer.{layer}",
                                   h, n, i)
    if head and c["role"] == "discriminator":
        rows += [*dense("task/discriminator_head/dense", "discriminator_predictions.dense",
                        (h, h)),
                 *dense("task/discriminator_head/prediction",
                        "discriminator_predictions.dense_prediction", (h, 1))]
    elif head:
        where = "task/generator/masked_lm_head" if ours != "backbone" else "task/masked_lm_head"
        rows += [*dense(f"{where}/transform", "generator_predictions.dense", (h, e)),
                 *norm(f"{where}/norm", "generator_predictions.LayerNorm", e),
                 row(f"{where}/output_bias", "generator_lm_head.bias", (c["vocabulary_size"],))]
    return rows


def _prefix(state_dict):
    return "electra." if any(k.startswith("electra.") for k in state_dict) else ""


def _has_head(state_dict):
    return any(k.startswith(("discriminator_predictions.", "generator_predictions."))
               for k in state_dict)


def pooler_weights(config, seed=0):
    """A fresh ``backbone/pooler`` (truncated normal, zero bias): see the module docstring."""
    h, std = config["hidden_size"], config["initializer_range"]
    kernel = np.random.default_rng(seed).standard_normal((h, h)).astype("float32")
    kernel = np.clip(kernel, -2.0, 2.0) * std    # a truncated normal's range, as Keras draws it
    return {"backbone/pooler/kernel": kernel,
            "backbone/pooler/bias": np.zeros((h,), "float32")}


def weights_from_hf(state_dict, config, allow_partial=False, **where):
    """A Hugging Face ELECTRA ``state_dict`` as preset weights (with its head when it has one);
    strict unless ``allow_partial``. Returns ``(weights, report)`` as
    :func:`~keras_bert_lab.presets.convert.hf_table.weights_from_state`."""
    _check_tied_decoder(state_dict)
    rows = weight_table(config, _prefix(state_dict), _has_head(state_dict), **where)
    weights, report = weights_from_state(rows, state_dict, allow_partial, _IGNORED_SUFFIXES)
    if config["role"] == "discriminator" and where.get("ours", "backbone") == "backbone":
        weights.update(pooler_weights(config))
    return weights, report


def _check_tied_decoder(state):
    decoder = state.get("generator_lm_head.weight")
    embedding = state.get(f"{_prefix(state)}embeddings.word_embeddings.weight")
    if decoder is not None and embedding is not None and not np.array_equal(decoder, embedding):
        raise PresetError("generator_lm_head.weight differs from the word embeddings (an untied "
                          "decoder); ELECTRA's generator ties them, and so does ours.")


def load_hf_weights(model, state_dict, generator_state=None):
    """Put ``transformers``' weights into ``model`` (what parity tests use): an
    ``ElectraBackbone``, ``ElectraDiscriminator``, ``ElectraMaskedLM`` (one ``state_dict``) or an
    ``ElectraPretrainer`` (the discriminator's ``state_dict`` and the generator's). Returns
    ``load_weights``' report (``new_heads``: head tensors the checkpoints did not hold)."""
    from keras_bert_lab.presets.weights import load_weights

    backbone = getattr(model, "backbone", None) or model
    config = backbone.config.to_dict()
    weights, _ = weights_from_hf(state_dict, config)
    if generator_state is not None:
        weights.update(_generator_weights(generator_state, model.generator.config.to_dict(),
                                          weights))
    return load_weights(model, weights, load_heads=model is not backbone,
                        where="the Hugging Face weights")


def _generator_weights(state_dict, config, discriminator_weights):
    """A generator's weights placed as an ``ElectraPretrainer``'s (``task/generator/…``); its
    embeddings must be the discriminator's (one shared table)."""
    generator, _ = weights_from_hf(state_dict, config, ours="task/generator",
                                   embeddings="generator_embeddings")
    for name in [n for n in generator if n.startswith("generator_embeddings/")]:
        ours = name.replace("generator_embeddings/", "backbone/", 1)
        if not np.allclose(generator.pop(name), discriminator_weights[ours], atol=1e-6):
            raise PresetError(f"The generator's {name.split('/', 1)[1]} differs from the "
                              "discriminator's; ELECTRA shares the embeddings between the two, "
                              "so this pair was not trained together. Import each directory on "
                              "its own (without generator=).")
    return generator


def _read(directory, lowercase):
    directory, present, hf_config = hf_files.open_directory(directory, "electra", NEEDS)
    config = config_from_hf(hf_config)
    state = hf_files.rename_legacy_keys(hf_files.read_weights(directory, present))
    tokens, where, fast = hf_files.read_vocabulary(directory, present)
    vocabulary_file.check_vocabulary_size(tokens, config["vocabulary_size"], where=where)
    lowercase = hf_files.wordpiece_casing(directory, tokens, fast) if lowercase is None \
        else lowercase
    return directory, config, state, tokens, lowercase


def import_hf(directory, preset_dir, generator=None, allow_partial=False, lowercase=None,
              overwrite=False, source=None, license=None):
    """Convert a Hugging Face ELECTRA directory (and, with ``generator=``, its generator's) into
    a preset directory; returns it. See the module docstring for what each becomes."""
    directory, config, state, tokens, lowercase = _read(directory, lowercase)
    weights, _ = weights_from_hf(state, config, allow_partial)
    task = TASKS[config["role"]] if _has_head(state) else None
    if generator is not None:
        if config["role"] != "discriminator" or task is None:
            raise PresetError(f"{directory} holds a {config['role']} "
                              f"{'with' if task else 'without'} its head; the first directory "
                              "must be the discriminator (ElectraForPreTraining) when "
                              "generator= is given.")
        gen_dir, gen_config, gen_state, gen_tokens, _ = _read(generator, lowercase)
        if gen_config["role"] != "generator" or not _has_head(gen_state):
            raise PresetError(f"generator={gen_dir} is not an ElectraForMaskedLM checkpoint "
                              "(config.json architectures); give the generator's directory.")
        if gen_tokens != tokens:
            raise PresetError(f"{gen_dir} and {directory} have different vocabularies; a "
                              "generator and its discriminator share one.")
        weights.update(_generator_weights(gen_state, gen_config, weights))
        task = {"class_name": "ElectraPretrainer", "module": f"{MODULE}.pretrainer",
                "config": {"generator": gen_config}}
    return preset_format.write_preset(
        preset_dir, backbone_class="ElectraBackbone", config=config, weights=weights,
        vocabulary=tokens, tokenizer={"lowercase": bool(lowercase)}, task=task,
        source=source or f"Hugging Face checkpoint {directory.absolute()}",
        license=license or hf_files.read_license(directory), overwrite=overwrite)


def export_hf(model, directory, overwrite=False):
    """Write ``model`` (a backbone, a task, or a preset directory) as Hugging Face
    directories that ``transformers`` loads with ``from_pretrained``: a backbone as
    ``ElectraModel``, an ``ElectraDiscriminator`` as ``ElectraForPreTraining``, an
    ``ElectraMaskedLM`` as ``ElectraForMaskedLM``, and an ``ElectraPretrainer`` as both, in
    ``directory/discriminator`` and ``directory/generator``. Returns ``directory``."""
    with preset_format.opened(model) as preset:
        tokens, weights = preset.vocabulary(), preset.weights()
        lowercase = preset.tokenizer.get("lowercase", vocabulary_file.guess_lowercase(tokens))
        task = (preset.task or {}).get("class_name")
        parts = {"": (preset.config, task in ("ElectraDiscriminator", "ElectraMaskedLM"), {})}
        if task == "ElectraPretrainer":
            generator = dict(preset.task["config"]["generator"])
            parts = {"discriminator": (preset.config, True, {}),
                     "generator": (generator, True, {"ours": "task/generator"})}
            for name in [n for n in weights if n.startswith("backbone/embeddings/")]:
                weights[name.replace("backbone/", "generator_embeddings/", 1)] = weights[name]
        with preset_format.atomic_directory(directory, overwrite=overwrite) as tmp:
            for sub, (config, head, where) in parts.items():
                if where:
                    where["embeddings"] = "generator_embeddings"
                prefix = "electra." if head else ""
                rows = weight_table(config, prefix, head, **where)
                tensors = weights_to_state(rows, weights)
                if head and config["role"] == "generator":
                    tensors["generator_lm_head.weight"] = \
                        tensors[f"{prefix}embeddings.word_embeddings.weight"]
                out = tmp / sub if sub else tmp
                out.mkdir(exist_ok=True)
                hf_config = config_to_hf(config, None if head else "ElectraModel")
                (out / "config.json").write_text(json.dumps(hf_config, indent=2) + "\n")
                write_safetensors(out / "model.safetensors", tensors)
                hf_files.write_wordpiece_tokenizer(out, tokens, lowercase, config["max_positions"])
    return pathlib.Path(directory).absolute()
