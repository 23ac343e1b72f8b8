"""keras-hub ``BertBackbone`` preset directories, in and out.

keras-hub saves a backbone as ``config.json`` (class and constructor arguments),
``model.weights.h5``, ``tokenizer.json`` (``lowercase`` …) and ``assets/tokenizer/vocabulary.txt``.
Its BERT differs from ours only in how the weights are cut: query, key and value are three
``(H, N, D)`` kernels where ours is one fused ``(H, 3, N, D)``. Two architectural constants are
fixed in keras-hub: LayerNorm epsilon 1e-12 (so only such configs can be exported) and the *tanh
approximation* of GELU (ours, Google's and Hugging Face's use the exact erf form) — the weights
carry over exactly, but a keras-hub model's outputs differ from ours by about 1e-3.

``keras_hub`` imports TensorFlow (≈ 4 s, 0.8 GB); it is imported only inside these functions.

Example:
>>> from keras_bert_lab.presets import resolve_preset                        # doctest: +SKIP
>>> from keras_bert_lab.models.bert.convert_keras_hub import (                  # doctest: +SKIP
...     export_keras_hub, import_keras_hub)
>>> export_keras_hub(resolve_preset("minilm_l6_en_uncased"), "minilm_keras_hub/")   # doctest: +SKIP
>>> import keras_hub                                                                # doctest: +SKIP
>>> keras_hub.models.BertBackbone.from_preset("minilm_keras_hub/")                  # doctest: +SKIP
>>> import_keras_hub("minilm_keras_hub/", "minilm_again/")                          # doctest: +SKIP
"""

import pathlib

import numpy as np

from keras_bert_lab.errors import PresetError
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets import vocabulary as vocabulary_file
from keras_bert_lab.models.bert.hf_weights import require_classic

VOCAB_PATH = pathlib.Path("assets", "tokenizer", "vocabulary.txt")


def weight_table(config):
    """``[(preset name, keras_hub_path(s), to_ours, to_keras_hub)]`` for a BERT config (dict).

    ``keras_hub_path`` is the ``variable.path`` of the keras-hub ``BertBackbone`` twin; the fused
    attention tensors pair with three (query, key, value) paths.
    """
    require_classic(config, "keras-hub's BertBackbone")
    same = (lambda w: w, lambda w: w)
    rows = [
        ("embeddings/token_embedding/embeddings", "token_embedding/embeddings", *same),
        ("embeddings/position_embedding", "position_embedding/embeddings", *same),
        ("embeddings/segment_embedding/embeddings", "segment_embedding/embeddings", *same),
        ("embeddings/norm/gamma", "embeddings_layer_norm/gamma", *same),
        ("embeddings/norm/beta", "embeddings_layer_norm/beta", *same),
    ]
    for i in range(config["num_layers"]):
        ours, kh = f"encoder_layer_{i}/", f"transformer_layer_{i}/"
        att = f"{kh}self_attention_layer/"
        rows += [
            # (H, N, D) × 3  <->  (H, 3, N, D);  bias (N, D) × 3  <->  (3, N, D)
            (f"{ours}attention/qkv/kernel",
             tuple(f"{att}{n}/kernel" for n in ("query", "key", "value")),
             lambda ws: np.stack(ws, axis=1), lambda k: tuple(k[:, j] for j in range(3))),
            (f"{ours}attention/qkv/bias",
             tuple(f"{att}{n}/bias" for n in ("query", "key", "value")),
             lambda bs: np.stack(bs), lambda b: tuple(b[j] for j in range(3))),
            (f"{ours}attention/output/kernel", f"{att}attention_output/kernel", *same),
            (f"{ours}attention/output/bias", f"{att}attention_output/bias", *same),
            (f"{ours}attention_norm/gamma", f"{kh}self_attention_layer_norm/gamma", *same),
            (f"{ours}attention_norm/beta", f"{kh}self_attention_layer_norm/beta", *same),
            (f"{ours}ffn_in/kernel", f"{kh}feedforward_intermediate_dense/kernel", *same),
            (f"{ours}ffn_in/bias", f"{kh}feedforward_intermediate_dense/bias", *same),
            (f"{ours}ffn_out/kernel", f"{kh}feedforward_output_dense/kernel", *same),
            (f"{ours}ffn_out/bias", f"{kh}feedforward_output_dense/bias", *same),
            (f"{ours}ffn_norm/gamma", f"{kh}feedforward_layer_norm/gamma", *same),
            (f"{ours}ffn_norm/beta", f"{kh}feedforward_layer_norm/beta", *same),
        ]
    rows += [("pooler/kernel", "pooled_dense/kernel", *same),
             ("pooler/bias", "pooled_dense/bias", *same)]
    return [("backbone/" + name, keys, to_ours, to_kh) for name, keys, to_ours, to_kh in rows]


def config_from_keras_hub(kh_config):
    """Our BERT config (a dict of ``BertConfig`` fields) from a keras-hub ``BertBackbone``'s."""
    try:
        return dict(
            vocabulary_size=kh_config["vocabulary_size"], hidden_size=kh_config["hidden_dim"],
            num_layers=kh_config["num_layers"], num_heads=kh_config["num_heads"],
            intermediate_size=kh_config["intermediate_dim"],
            max_positions=kh_config.get("max_sequence_length", 512),
            type_vocab_size=kh_config.get("num_segments", 2),
            dropout=kh_config.get("dropout", 0.1), attention_dropout=kh_config.get("dropout", 0.1),
            layer_norm_epsilon=1e-12, initializer_range=0.02)
    except KeyError as error:
        raise PresetError(f"keras-hub BertBackbone config lacks {error}.") from None


def config_to_keras_hub(config):
    """The constructor arguments of keras-hub's ``BertBackbone`` for our BERT config (dict)."""
    require_classic(config, "keras-hub's BertBackbone")
    if config["layer_norm_epsilon"] != 1e-12:
        raise PresetError(f"keras-hub's BertBackbone fixes LayerNorm epsilon at 1e-12; this model "
                          f"uses {config['layer_norm_epsilon']}, so it cannot be exported "
                          "faithfully.")
    return {"vocabulary_size": config["vocabulary_size"], "num_layers": config["num_layers"],
            "num_heads": config["num_heads"], "hidden_dim": config["hidden_size"],
            "intermediate_dim": config["intermediate_size"], "dropout": config["dropout"],
            "max_sequence_length": config["max_positions"],
            "num_segments": config["type_vocab_size"]}


def read_keras_hub_preset(directory):
    """``(our config dict, vocabulary, lowercase)`` from a keras-hub preset directory's files."""
    directory = pathlib.Path(directory)
    config_path = directory / "config.json"
    if not config_path.is_file():
        present = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
        raise PresetError(f"{directory} is not a keras-hub preset: no config.json (it has: "
                          f"{', '.join(present) or 'nothing'}).")
    spec = _read_json(config_path)
    if spec.get("class_name") != "BertBackbone":
        raise PresetError(f"{config_path} describes a keras-hub {spec.get('class_name')!r}; only "
                          "BertBackbone presets can be imported.")
    config = config_from_keras_hub(spec.get("config", {}))
    vocab_path = directory / VOCAB_PATH
    if not vocab_path.is_file():
        raise PresetError(f"{directory} lacks {VOCAB_PATH}; save the keras-hub tokenizer with the "
                          "backbone (tokenizer.save_to_preset(directory)).")
    vocabulary = vocabulary_file.read_vocabulary(vocab_path)
    vocabulary_file.check_vocabulary_size(vocabulary, config["vocabulary_size"],
                                        where=f"vocabulary {vocab_path}")
    tokenizer_path = directory / "tokenizer.json"
    lowercase = None
    if tokenizer_path.is_file():
        lowercase = _read_json(tokenizer_path).get("config", {}).get("lowercase")
    if lowercase is None:
        lowercase = vocabulary_file.guess_lowercase(vocabulary)
    return config, vocabulary, bool(lowercase)


def import_keras_hub(directory, preset_dir, overwrite=False, source=None, license=None):
    """Convert a keras-hub ``BertBackbone`` preset into one of ours (``kbl preset import-keras-hub``)."""
    import keras
    import keras_hub

    config, vocabulary, lowercase = read_keras_hub_preset(directory)
    try:
        kh = keras_hub.models.BertBackbone.from_preset(str(directory))
    except Exception as error:
        raise PresetError(f"keras-hub could not load {directory}: {type(error).__name__}: "
                          f"{error}") from None
    theirs = {v.path: v for v in kh.weights}
    weights = {}
    for name, keys, to_ours, _ in weight_table(config):
        key_tuple = keys if isinstance(keys, tuple) else (keys,)
        absent = [k for k in key_tuple if k not in theirs]
        if absent:
            raise PresetError(f"keras-hub model in {directory} lacks {absent}.")
        arrays = [keras.ops.convert_to_numpy(theirs[k]).astype("float32") for k in key_tuple]
        weights[name] = to_ours(tuple(arrays) if isinstance(keys, tuple) else arrays[0])
    return preset_format.write_preset(
        preset_dir, backbone_class="BertBackbone", config=config, weights=weights,
        vocabulary=vocabulary, tokenizer={"lowercase": lowercase},
        source=source or f"keras-hub preset {pathlib.Path(directory).absolute()}",
        license=license, overwrite=overwrite)


def export_keras_hub(model, directory, vocabulary=None, lowercase=None, overwrite=False):
    """Write a backbone (or a task's backbone, or a preset directory) as a keras-hub preset.

    ``keras_hub.models.BertBackbone.from_preset(directory)`` and
    ``keras_hub.models.BertTokenizer.from_preset(directory)`` load it. Heads are not exported.
    """
    import keras_hub

    with preset_format.opened(model, vocabulary) as preset:
        tokens, weights, config = preset.vocabulary(), preset.weights(), preset.config
        if lowercase is None:
            lowercase = preset.tokenizer.get("lowercase", vocabulary_file.guess_lowercase(tokens))
    kh = keras_hub.models.BertBackbone(**config_to_keras_hub(config))
    theirs = {v.path: v for v in kh.weights}
    for name, keys, _, to_kh in weight_table(config):
        value = to_kh(np.asarray(weights[name], "float32"))
        if isinstance(keys, tuple):
            for key, part in zip(keys, value):
                theirs[key].assign(part)
        else:
            theirs[keys].assign(value)
    try:
        tokenizer = keras_hub.models.BertTokenizer(vocabulary=tokens, lowercase=bool(lowercase))
    except ValueError as error:
        raise PresetError(f"keras-hub's BertTokenizer rejects this vocabulary: {error}") from None
    with preset_format.atomic_directory(directory, overwrite=overwrite) as tmp:
        kh.save_to_preset(str(tmp))
        tokenizer.save_to_preset(str(tmp))
    return pathlib.Path(directory).absolute()


def _read_json(path):
    return preset_format.read_json(path, what="keras-hub preset")
