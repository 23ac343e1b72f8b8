"""Weights between Hugging Face ``transformers`` BERT checkpoints and ours (NumPy only).

One table (``weight_map``) pairs each of our variables with its Hugging Face key and the two
reshapes between the layouts, so import and export cannot drift apart. Hugging Face stores linear
layers as ``[out, in]``; ours are ``[in, out]`` kernels, and attention kernels are per head:
``qkv`` is ``(H, 3, N, D)`` (query, key, value stacked) and the attention output is ``(N, D, H)``.
"""

import numpy as np

from keras_bert_lab.errors import PresetError
from keras_bert_lab.models.config import BertConfig


def config_from_hf(hf_config):
    """A ``BertConfig`` from a Hugging Face ``config.json`` dict (BERT architectures only)."""
    act = hf_config.get("hidden_act", "gelu")
    if act != "gelu":
        raise PresetError(f"Hugging Face config has hidden_act={act!r}; only exact 'gelu' is "
                          "supported (BERT's activation).")
    if hf_config.get("position_embedding_type", "absolute") != "absolute":
        raise PresetError("Only absolute position embeddings are supported, got "
                          f"{hf_config['position_embedding_type']!r}.")
    return BertConfig(
        vocab_size=hf_config["vocab_size"], hidden_size=hf_config["hidden_size"],
        num_layers=hf_config["num_hidden_layers"], num_heads=hf_config["num_attention_heads"],
        intermediate_size=hf_config["intermediate_size"],
        max_positions=hf_config["max_position_embeddings"],
        type_vocab_size=hf_config.get("type_vocab_size", 2),
        dropout=hf_config.get("hidden_dropout_prob", 0.1),
        attention_dropout=hf_config.get("attention_probs_dropout_prob", 0.1),
        layer_norm_epsilon=hf_config.get("layer_norm_eps", 1e-12),
        initializer_range=hf_config.get("initializer_range", 0.02))


def config_to_hf(config):
    """The Hugging Face ``config.json`` dict of a ``BertConfig``."""
    return {
        "architectures": ["BertForPreTraining"], "model_type": "bert",
        "vocab_size": config.vocab_size, "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_layers, "num_attention_heads": config.num_heads,
        "intermediate_size": config.intermediate_size, "hidden_act": "gelu",
        "max_position_embeddings": config.max_positions, "type_vocab_size": config.type_vocab_size,
        "hidden_dropout_prob": config.dropout,
        "attention_probs_dropout_prob": config.attention_dropout,
        "layer_norm_eps": config.layer_norm_epsilon, "initializer_range": config.initializer_range,
        "pad_token_id": 0, "position_embedding_type": "absolute",
    }


def weight_map(model, prefix="bert."):
    """``[(our_variable, hf_key, to_ours, to_hf)]`` for a backbone or a model holding one.

    ``model`` is a ``BertBackbone`` or a task whose ``backbone`` attribute is one (the pretrainer
    adds ``cls.predictions.*`` and ``cls.seq_relationship.*``). ``to_ours`` maps one HF array to our
    layout; ``to_hf`` the reverse. Keys of the ``q``/``k``/``v`` projections map to one fused
    variable, so their entries carry a tuple of three keys.
    """
    backbone = getattr(model, "backbone", model)
    c = backbone.config
    h, n, d = c.hidden_size, c.num_heads, c.head_size
    p = prefix
    ident = (lambda w: w, lambda w: w)
    linear = (lambda w: w.T, lambda k: k.T)
    emb = backbone.embeddings
    rows = [
        (emb.token_embedding.embeddings, f"{p}embeddings.word_embeddings.weight", *ident),
        (emb.position_embedding, f"{p}embeddings.position_embeddings.weight", *ident),
        (emb.segment_embedding.embeddings, f"{p}embeddings.token_type_embeddings.weight", *ident),
        (emb.norm.gamma, f"{p}embeddings.LayerNorm.weight", *ident),
        (emb.norm.beta, f"{p}embeddings.LayerNorm.bias", *ident),
    ]
    for i, block in enumerate(backbone.encoder_layers):
        hf = f"{p}encoder.layer.{i}."
        qkv = tuple(f"{hf}attention.self.{name}" for name in ("query", "key", "value"))
        rows += [
            # three [out, in] = [H, H] matrices -> (H, 3, N, D)
            (block.attention.qkv.kernel, tuple(k + ".weight" for k in qkv),
             lambda ws: np.stack([w.T.reshape(h, n, d) for w in ws], axis=1),
             lambda k: tuple(k[:, j].reshape(h, h).T for j in range(3))),
            (block.attention.qkv.bias, tuple(k + ".bias" for k in qkv),
             lambda bs: np.stack([b.reshape(n, d) for b in bs]),
             lambda b: tuple(b[j].reshape(h) for j in range(3))),
            (block.attention.output_dense.kernel, f"{hf}attention.output.dense.weight",
             lambda w: w.T.reshape(n, d, h), lambda k: k.reshape(h, h).T),
            (block.attention.output_dense.bias, f"{hf}attention.output.dense.bias", *ident),
            (block.attention_norm.gamma, f"{hf}attention.output.LayerNorm.weight", *ident),
            (block.attention_norm.beta, f"{hf}attention.output.LayerNorm.bias", *ident),
            (block.ffn_in.kernel, f"{hf}intermediate.dense.weight", *linear),
            (block.ffn_in.bias, f"{hf}intermediate.dense.bias", *ident),
            (block.ffn_out.kernel, f"{hf}output.dense.weight", *linear),
            (block.ffn_out.bias, f"{hf}output.dense.bias", *ident),
            (block.ffn_norm.gamma, f"{hf}output.LayerNorm.weight", *ident),
            (block.ffn_norm.beta, f"{hf}output.LayerNorm.bias", *ident),
        ]
    rows += [
        (backbone.pooler.kernel, f"{p}pooler.dense.weight", *linear),
        (backbone.pooler.bias, f"{p}pooler.dense.bias", *ident),
    ]
    mlm = getattr(model, "masked_lm_head", None)
    if mlm is not None:
        rows += [
            (mlm.transform.kernel, "cls.predictions.transform.dense.weight", *linear),
            (mlm.transform.bias, "cls.predictions.transform.dense.bias", *ident),
            (mlm.norm.gamma, "cls.predictions.transform.LayerNorm.weight", *ident),
            (mlm.norm.beta, "cls.predictions.transform.LayerNorm.bias", *ident),
            (mlm.output_bias, "cls.predictions.bias", *ident),
        ]
    nsp = getattr(model, "next_sentence_head", None)
    if nsp is not None:
        rows += [
            (nsp.kernel, "cls.seq_relationship.weight", *linear),
            (nsp.bias, "cls.seq_relationship.bias", *ident),
        ]
    return rows


# Keys that carry no weight of their own in our layout (buffers, or copies of tied weights).
_IGNORED_SUFFIXES = ("position_ids", "cls.predictions.decoder.weight", "cls.predictions.decoder.bias")


def _strip_prefix(state_dict):
    """Checkpoints of ``BertModel`` have no ``bert.`` prefix; those of ``BertFor*`` do."""
    has_prefix = any(k.startswith("bert.") for k in state_dict)
    return "bert." if has_prefix else ""


def load_hf_weights(model, state_dict, allow_partial=False):
    """Copy a Hugging Face BERT ``state_dict`` (name → NumPy array) into ``model``.

    Strict by default: a missing key, an unexpected key or a shape mismatch raises
    ``PresetError`` naming the tensors. With ``allow_partial=True`` what matches is loaded and the
    rest is returned as ``{"missing": [...], "unexpected": [...]}`` for the caller to report.

    Example:
    >>> import transformers, torch                                      # doctest: +SKIP
    >>> hf = transformers.BertForPreTraining(transformers.BertConfig())  # doctest: +SKIP
    >>> ours = BertPretrainer(BertBackbone(config_from_hf(hf.config.to_dict())))  # doctest: +SKIP
    >>> load_hf_weights(ours, {k: v.numpy() for k, v in hf.state_dict().items()})  # doctest: +SKIP
    """
    rows = weight_map(model, prefix=_strip_prefix(state_dict))
    used, missing, assignments = set(), [], []
    for variable, keys, to_ours, _ in rows:
        key_tuple = keys if isinstance(keys, tuple) else (keys,)
        absent = [k for k in key_tuple if k not in state_dict]
        if absent:
            missing += absent
            continue
        used.update(key_tuple)
        arrays = [np.asarray(state_dict[k], dtype="float32") for k in key_tuple]
        value = to_ours(tuple(arrays) if isinstance(keys, tuple) else arrays[0])
        if tuple(value.shape) != tuple(variable.shape):
            shapes = ", ".join(f"{k} {tuple(a.shape)}" for k, a in zip(key_tuple, arrays))
            raise PresetError(
                f"Shape mismatch for {variable.path}: ours {tuple(variable.shape)}, checkpoint "
                f"{shapes}; the config does not match these weights.")
        assignments.append((variable, value))
    unexpected = sorted(k for k in state_dict if k not in used
                        and not k.endswith(_IGNORED_SUFFIXES))
    if (missing or unexpected) and not allow_partial:
        raise PresetError(
            f"Checkpoint does not match the model: missing {missing or 'none'}; unexpected "
            f"{unexpected or 'none'}. Pass allow_partial=True to load what matches.")
    for variable, value in assignments:
        variable.assign(value)
    return {"missing": missing, "unexpected": unexpected}


def export_hf_weights(model, prefix="bert."):
    """Our weights as a Hugging Face state dict (name → float32 NumPy array)."""
    import keras

    out = {}
    for variable, keys, _, to_hf in weight_map(model, prefix=prefix):
        value = to_hf(keras.ops.convert_to_numpy(variable).astype("float32"))
        if isinstance(keys, tuple):
            out.update({k: np.ascontiguousarray(v) for k, v in zip(keys, value)})
        else:
            out[keys] = np.ascontiguousarray(value)
    if getattr(model, "masked_lm_head", None) is not None:
        out["cls.predictions.decoder.weight"] = out[f"{prefix}embeddings.word_embeddings.weight"]
        out["cls.predictions.decoder.bias"] = out["cls.predictions.bias"]
    return out
