"""Weights between Hugging Face ``transformers`` BERT checkpoints and our presets (NumPy only).

One table (:func:`weight_table`) pairs each tensor of a preset with its Hugging Face key(s), its
shape and the two reshapes between the layouts (the rows and their machinery:
:mod:`keras_bert_lab.presets.convert.hf_table`, shared with the other encoders), so import and
export cannot drift apart. No model is built: a converted preset is checked when a model loads
it, by name and shape.

Example:
>>> config = config_from_hf({"vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1,
...                          "num_attention_heads": 2, "intermediate_size": 16,
...                          "max_position_embeddings": 16})
>>> rows = weight_table(config)
>>> row = rows[5]              # layer 0: query, key and value fused into one kernel
>>> row.name, row.shape
('backbone/encoder_layer_0/attention/qkv/kernel', (4, 3, 2, 2))
>>> row.hf_keys[0]
'bert.encoder.layer.0.attention.self.query.weight'
"""

from keras_bert_lab.errors import PresetError
from keras_bert_lab.presets.convert.hf_table import (Row, encoder_config_from_hf,  # noqa: F401
                                                     dense, encoder_layer_rows,
                                                     norm, row, weights_from_state,
                                                     weights_to_state)

# BertConfig's modern options at their BERT values: a Hugging Face BertModel (and the formats
# converted through this table) has none of the others; presets.convert.modernbert maps them.
CLASSIC_OPTIONS = {"norm_first": False, "use_bias": True, "feedforward": "gelu",
                   "position_embedding": "learned"}

# Keys that carry no weight of their own in our layout (buffers, or copies of tied weights).
_IGNORED_SUFFIXES = ("position_ids", "cls.predictions.decoder.weight",
                     "cls.predictions.decoder.bias")


def config_from_hf(hf_config):
    """Our BERT config (a dict of ``BertConfig`` fields) from a Hugging Face ``config.json``."""
    config = encoder_config_from_hf(hf_config, "BERT")
    _head_size(config)
    return config


def config_to_hf(config):
    """The Hugging Face ``config.json`` dict of a BERT config (a ``BertConfig`` or its dict)."""
    c = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    require_classic(c)
    return {
        "architectures": ["BertForPreTraining"], "model_type": "bert",
        "vocab_size": c["vocabulary_size"], "hidden_size": c["hidden_size"],
        "num_hidden_layers": c["num_layers"], "num_attention_heads": c["num_heads"],
        "intermediate_size": c["intermediate_size"], "hidden_act": "gelu",
        "max_position_embeddings": c["max_positions"], "type_vocab_size": c["type_vocab_size"],
        "hidden_dropout_prob": c["dropout"],
        "attention_probs_dropout_prob": c["attention_dropout"],
        "layer_norm_eps": c["layer_norm_epsilon"], "initializer_range": c["initializer_range"],
        "pad_token_id": 0, "position_embedding_type": "absolute",
    }


def require_classic(config, target="A Hugging Face BertModel"):
    """Raise ``PresetError`` naming the first modern option of ``config`` (a dict) that ``target``
    cannot hold; a config without the fields (an older preset) is BERT's."""
    for name, value in CLASSIC_OPTIONS.items():
        if config.get(name, value) != value:
            raise PresetError(
                f"{target} has no equivalent of {name}={config[name]!r}: it is BERT with "
                f"{name}={value!r} (post-LN, biases, GELU feed-forward, a learned absolute "
                "position table). Export a BERT-style config; a model with all four modern "
                "options maps to ModernBERT (keras_bert_lab.models.bert.convert_modernbert).")


def _head_size(config):
    hidden, heads = config["hidden_size"], config["num_heads"]
    if not heads or hidden % heads:
        raise PresetError(f"hidden_size {hidden} is not divisible by num_heads {heads}; this is "
                          "not a valid BERT config.")
    return hidden // heads


def weight_table(config, prefix="bert.", heads=False):
    """The :class:`~keras_bert_lab.presets.convert.hf_table.Row` of every tensor of a BERT
    backbone (``heads``: and the MLM/NSP heads).

    ``config`` is a BERT config (dict or ``BertConfig``); ``prefix`` is ``"bert."`` for
    ``BertFor*`` checkpoints and ``""`` for ``BertModel`` ones.
    """
    c = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    require_classic(c)
    h, n, i = c["hidden_size"], c["num_heads"], c["intermediate_size"]
    _head_size(c)
    p = prefix
    rows = [
        row("backbone/embeddings/token_embedding/embeddings",
            f"{p}embeddings.word_embeddings.weight", (c["vocabulary_size"], h)),
        row("backbone/embeddings/position_embedding", f"{p}embeddings.position_embeddings.weight",
            (c["max_positions"], h)),
        row("backbone/embeddings/segment_embedding/embeddings",
            f"{p}embeddings.token_type_embeddings.weight", (c["type_vocab_size"], h)),
        *norm("backbone/embeddings/norm", f"{p}embeddings.LayerNorm", h),
    ]
    for layer in range(c["num_layers"]):
        rows += encoder_layer_rows(f"backbone/encoder_layer_{layer}",
                                   f"{p}encoder.layer.{layer}", h, n, i)
    rows += dense("backbone/pooler", f"{p}pooler.dense", (h, h))
    if heads:
        rows += [
            *dense("task/masked_lm_head/transform", "cls.predictions.transform.dense", (h, h)),
            *norm("task/masked_lm_head/norm", "cls.predictions.transform.LayerNorm", h),
            row("task/masked_lm_head/output_bias", "cls.predictions.bias", (c["vocabulary_size"],)),
            *dense("task/next_sentence_head", "cls.seq_relationship", (h, 2)),
        ]
    return rows


def has_prefix(state_dict):
    """Checkpoints of ``BertModel`` have no ``bert.`` prefix; those of ``BertFor*`` do."""
    return any(k.startswith("bert.") for k in state_dict)


def weights_from_hf(state_dict, config, heads=False, allow_partial=False):
    """A Hugging Face BERT ``state_dict`` (name → array) as preset weights ``{name: array}``.

    Strict by default: a missing key, an unexpected key or a shape mismatch raises
    ``PresetError`` naming the tensors. With ``allow_partial=True`` what matches is converted and
    the rest reported. Returns ``(weights, {"missing": [...], "unexpected": [...]})``.

    Example:
    >>> import transformers, torch                                                # doctest: +SKIP
    >>> hf = transformers.BertForPreTraining(transformers.BertConfig())           # doctest: +SKIP
    >>> state = {k: v.numpy() for k, v in hf.state_dict().items()}                # doctest: +SKIP
    >>> config = config_from_hf(hf.config.to_dict())                              # doctest: +SKIP
    >>> weights, _ = weights_from_hf(state, config, heads=True)                   # doctest: +SKIP
    """
    prefix = "bert." if has_prefix(state_dict) else ""
    if not heads:  # a backbone ignores the heads of a BertForPreTraining checkpoint
        state_dict = {k: v for k, v in state_dict.items() if not k.startswith("cls.")}
    return weights_from_state(weight_table(config, prefix=prefix, heads=heads), state_dict,
                              allow_partial, _IGNORED_SUFFIXES)


def weights_to_hf(weights, config, prefix="bert."):
    """Preset weights as a Hugging Face state dict (name → float32 NumPy array).

    The MLM/NSP heads are written when ``weights`` holds them; the tied decoder is left out
    (``transformers`` ties it to the word embeddings on load).
    """
    heads = any(name.startswith("task/masked_lm_head/") for name in weights)
    return weights_to_state(weight_table(config, prefix=prefix, heads=heads), weights)


def load_hf_weights(model, state_dict, allow_partial=False):
    """Assign a Hugging Face BERT ``state_dict`` to ``model`` (a ``BertBackbone``, or a task
    holding one as ``backbone``; a ``BertPretrainer`` takes the ``cls.*`` heads too).

    What parity tests use to put ``transformers``' weights into our models. Strict by default;
    with ``allow_partial=True`` the keys our model does not have (e.g. a task head such as
    ``classifier.*``) are returned as ``unexpected`` instead of raising. Returns
    ``{"missing": [...], "unexpected": [...]}`` in Hugging Face names.
    """
    from keras_bert_lab.presets.weights import load_weights

    backbone = getattr(model, "backbone", None) or model
    heads = getattr(model, "masked_lm_head", None) is not None
    weights, report = weights_from_hf(state_dict, backbone.config, heads=heads,
                                      allow_partial=allow_partial)
    load_weights(model, weights, allow_partial=allow_partial, load_heads=heads,
                 where="the Hugging Face weights")
    return report


def export_hf_weights(model, prefix="bert."):
    """A model's weights as a complete Hugging Face state dict (see :func:`weights_to_hf`),
    with the tied decoder written out as ``transformers``' ``state_dict()`` has it."""
    from keras_bert_lab.presets.weights import model_weights

    backbone = getattr(model, "backbone", None) or model
    out = weights_to_hf(model_weights(model), backbone.config, prefix=prefix)
    if "cls.predictions.bias" in out:
        out["cls.predictions.decoder.weight"] = out[f"{prefix}embeddings.word_embeddings.weight"]
        out["cls.predictions.decoder.bias"] = out["cls.predictions.bias"]
    return out
