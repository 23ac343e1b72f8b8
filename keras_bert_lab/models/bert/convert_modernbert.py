"""Weights between Hugging Face ``transformers`` ModernBERT checkpoints and our BERT layout.

ModernBERT (Warner et al. 2024) is BERT's encoder with the four modern options of ``BertConfig``
on: pre-LN blocks and a final LayerNorm (``norm_first``), no biases (``use_bias=False``), a GEGLU
feed-forward (``feedforward="geglu"``) and rotary positions (``position_embedding="rotary"``).
One table (:func:`weight_table`) pairs each of our tensors with its Hugging Face key, as in
:mod:`~.huggingface`; ``Wqkv`` is already our fused ``(H, 3, N, D)`` layout once transposed, and
``Wi``'s first half is the GEGLU input, its second the gate, as in our ``ffn_in``.

What does not carry over, and how it is met:

- ModernBERT has **no segment table**: ours gets a zero ``(type_vocab_size, H)`` table, so segment
  ids change nothing until fine-tuning trains it (export requires it to be zero still);
- its first layer has **no LayerNorm before attention** (the embedding's norm precedes it): our
  pre-LN backbone leaves that norm out of its first block too;
- it has **no pooler**: ours keeps its own, as initialised (:func:`load_hf_weights`);
- its **local layers** (sliding-window attention with their own rotary base, 2 layers in 3 by
  default) have no equivalent: only checkpoints whose every layer is global convert
  (``global_attn_every_n_layers=1``), else :func:`config_from_hf` raises ``PresetError``;
- one ``use_bias`` stands for its ``attention_bias``, ``mlp_bias`` and ``norm_bias``, which must
  agree; its three dropout rates become our two (their places differ; inference is the same).

Example:
>>> config = config_from_hf({"vocab_size": 8, "hidden_size": 4, "intermediate_size": 6,
...                          "num_hidden_layers": 2, "num_attention_heads": 2,
...                          "global_attn_every_n_layers": 1, "global_rope_theta": 1e4})
>>> config["norm_first"], config["feedforward"], config["position_embedding"]
(True, 'geglu', 'rotary')
>>> [(row.name, row.hf_keys[0]) for row in weight_table(config)][2]
('backbone/encoder_layer_0/attention/qkv/kernel', 'layers.0.attn.Wqkv.weight')
"""

import numpy as np

from keras_bert_lab.errors import PresetError
from keras_bert_lab.models.bert.hf_weights import Row

SEGMENT_TABLE = "backbone/embeddings/segment_embedding/embeddings"


def config_from_hf(hf_config, type_vocab_size=2):
    """Our BERT config (a dict of ``BertConfig`` fields) from a ModernBERT ``config.json``."""
    act = hf_config.get("hidden_activation", "gelu")
    if act != "gelu":
        raise PresetError(f"ModernBERT config has hidden_activation={act!r}; only exact 'gelu' "
                          "converts (our GEGLU's activation).")
    layers = hf_config["num_hidden_layers"]
    every = hf_config.get("global_attn_every_n_layers", 3)
    types = hf_config.get("layer_types") or ["full_attention" if i % every == 0
                                              else "sliding_attention" for i in range(layers)]
    local = [i for i, kind in enumerate(types) if kind != "full_attention"]
    if local:
        raise PresetError(f"ModernBERT layers {local} use local (sliding-window) attention, which "
                          "BertBackbone does not have; only checkpoints with every layer global "
                          "(global_attn_every_n_layers=1) convert.")
    rope = (hf_config.get("rope_parameters") or {}).get("full_attention") or {}
    if rope.get("rope_type", "default") != "default":
        raise PresetError(f"ModernBERT rope_type {rope['rope_type']!r} is not supported; only "
                          "'default' rotary angles convert.")
    biases = {name: hf_config.get(name, False)
              for name in ("attention_bias", "mlp_bias", "norm_bias")}
    if len(set(biases.values())) > 1:
        raise PresetError(f"ModernBERT config has {biases}; BertConfig.use_bias covers all three, "
                          "so they must agree.")
    try:
        return dict(
            vocabulary_size=hf_config["vocab_size"], hidden_size=hf_config["hidden_size"],
            num_layers=layers, num_heads=hf_config["num_attention_heads"],
            intermediate_size=hf_config["intermediate_size"],
            max_positions=hf_config.get("max_position_embeddings", 8192),
            type_vocab_size=type_vocab_size,
            dropout=max(hf_config.get("embedding_dropout", 0.0),
                        hf_config.get("mlp_dropout", 0.0)),
            attention_dropout=hf_config.get("attention_dropout", 0.0),
            layer_norm_epsilon=hf_config.get("norm_eps", 1e-5),
            initializer_range=hf_config.get("initializer_range", 0.02),
            norm_first=True, use_bias=bool(biases["attention_bias"]), feedforward="geglu",
            position_embedding="rotary",
            rotary_base=float(rope.get("rope_theta", hf_config.get("global_rope_theta",
                                                                    160000.0))))
    except KeyError as error:
        raise PresetError(f"ModernBERT config lacks the field {error}.") from None


def config_to_hf(config):
    """The ModernBERT ``config.json`` dict of a BERT config with the four modern options on
    (every layer global; dropout rates carried over approximately)."""
    c = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    _check_modern(c)
    return {
        "architectures": ["ModernBertModel"], "model_type": "modernbert",
        "vocab_size": c["vocabulary_size"], "hidden_size": c["hidden_size"],
        "intermediate_size": c["intermediate_size"], "num_hidden_layers": c["num_layers"],
        "num_attention_heads": c["num_heads"], "hidden_activation": "gelu",
        "max_position_embeddings": c["max_positions"], "norm_eps": c["layer_norm_epsilon"],
        "initializer_range": c["initializer_range"], "attention_bias": c["use_bias"],
        "mlp_bias": c["use_bias"], "norm_bias": c["use_bias"],
        "embedding_dropout": c["dropout"], "mlp_dropout": c["dropout"],
        "attention_dropout": c["attention_dropout"], "global_attn_every_n_layers": 1,
        "global_rope_theta": c["rotary_base"],
    }


def _check_modern(c):
    wanted = dict(norm_first=True, feedforward="geglu", position_embedding="rotary")
    wrong = {k: c.get(k) for k, v in wanted.items() if c.get(k) != v}
    if wrong:
        raise PresetError(f"A ModernBERT checkpoint needs {wanted}; this config has {wrong}.")


def weight_table(config, prefix=""):
    """The :class:`~.huggingface.Row` of every backbone tensor a ModernBERT checkpoint holds (all
    but the segment table and the pooler). ``prefix`` is ``"model."`` for ``ModernBertFor*``."""
    c = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    _check_modern(c)
    h, n, i, bias = c["hidden_size"], c["num_heads"], c["intermediate_size"], c["use_bias"]
    d = h // n
    same = (lambda w: w[0], lambda w: (w,))
    linear = (lambda w: w[0].T, lambda k: (k.T,))
    p = prefix

    def row(name, key, shape, maps=same):
        return Row(name, (key,), tuple(shape), *maps)

    def norm(ours, theirs):
        return [row(f"{ours}/gamma", f"{theirs}.weight", (h,))] + (
            [row(f"{ours}/beta", f"{theirs}.bias", (h,))] if bias else [])

    def dense(ours, theirs, shape, maps=linear):
        return [row(f"{ours}/kernel", f"{theirs}.weight", shape, maps)] + (
            [row(f"{ours}/bias", f"{theirs}.bias", shape[-1:])] if bias else [])

    rows = [row("backbone/embeddings/token_embedding/embeddings",
                f"{p}embeddings.tok_embeddings.weight", (c["vocabulary_size"], h)),
            *norm("backbone/embeddings/norm", f"{p}embeddings.norm")]
    for layer in range(c["num_layers"]):
        ours, theirs = f"backbone/encoder_layer_{layer}", f"{p}layers.{layer}"
        rows += [
            # Wqkv [3H, H] -> (H, 3H) = (H, 3, N, D); its bias (3H,) = (3, N, D)
            row(f"{ours}/attention/qkv/kernel", f"{theirs}.attn.Wqkv.weight", (h, 3, n, d),
                (lambda w: w[0].T.reshape(h, 3, n, d), lambda k: (k.reshape(h, 3 * h).T,))),
            *([row(f"{ours}/attention/qkv/bias", f"{theirs}.attn.Wqkv.bias", (3, n, d),
                   (lambda b: b[0].reshape(3, n, d), lambda b: (b.reshape(3 * h),)))]
              if bias else []),
            *dense(f"{ours}/attention/output", f"{theirs}.attn.Wo", (n, d, h),
                   (lambda w: w[0].T.reshape(n, d, h), lambda k: (k.reshape(h, h).T,))),
            *(norm(f"{ours}/attention_norm", f"{theirs}.attn_norm") if layer else []),
            *dense(f"{ours}/ffn_in", f"{theirs}.mlp.Wi", (h, 2 * i)),
            *dense(f"{ours}/ffn_out", f"{theirs}.mlp.Wo", (i, h)),
            *norm(f"{ours}/ffn_norm", f"{theirs}.mlp_norm"),
        ]
    return rows + norm("backbone/final_norm", f"{p}final_norm")


def weights_from_hf(state_dict, config):
    """A ModernBERT ``state_dict`` (name → array) as our backbone's weights ``{name: array}``,
    with a zero segment table and no pooler. Strict: a missing or unexpected encoder key, or a
    shape mismatch, raises ``PresetError`` naming it; a ``ModernBertFor*`` checkpoint's heads
    (``head.*``, ``decoder.*``, ``classifier.*``) are ignored."""
    prefix = "model." if any(k.startswith("model.") for k in state_dict) else ""
    if prefix:
        state_dict = {k: v for k, v in state_dict.items() if k.startswith(prefix)}
    rows = weight_table(config, prefix)
    missing = [k for row in rows for k in row.hf_keys if k not in state_dict]
    used = {k for row in rows for k in row.hf_keys}
    unexpected = sorted(k for k in state_dict if k not in used)
    if missing or unexpected:
        raise PresetError(f"ModernBERT checkpoint does not match the config: missing "
                          f"{missing or 'none'}; unexpected {unexpected or 'none'}.")
    weights = {}
    for row in rows:
        value = np.asarray(state_dict[row.hf_keys[0]], dtype="float32")
        try:
            value = row.to_ours([value])
        except ValueError:  # a reshape that cannot work: the shapes are wrong
            pass
        if tuple(value.shape) != row.shape:
            raise PresetError(f"Shape mismatch for {row.name}: the config needs {row.shape}, "
                              f"{row.hf_keys[0]} is {tuple(value.shape)}.")
        weights[row.name] = value
    c = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    weights[SEGMENT_TABLE] = np.zeros((c["type_vocab_size"], c["hidden_size"]), "float32")
    return weights


def weights_to_hf(weights, config, prefix=""):
    """Our backbone's weights as a ModernBERT state dict (name → float32 array); the pooler is
    left out, and the segment table must be zero (ModernBERT has none)."""
    if np.any(np.asarray(weights[SEGMENT_TABLE])):
        raise PresetError("The segment table is not zero, and ModernBERT has none: the model "
                          "would compute something else; export a model whose segments were "
                          "never trained.")
    out = {}
    for row in weight_table(config, prefix):
        out.update(zip(row.hf_keys, (np.ascontiguousarray(part) for part in
                                     row.to_hf(np.asarray(weights[row.name], "float32")))))
    return out


def load_hf_weights(backbone, state_dict):
    """Assign a ModernBERT ``state_dict`` to a ``BertBackbone`` built from :func:`config_from_hf`'s
    config (the pooler keeps its initial weights: ModernBERT has none).

    Example:
    >>> import transformers                                                       # doctest: +SKIP
    >>> from keras_bert_lab import BertBackbone                                   # doctest: +SKIP
    >>> hf = transformers.ModernBertModel(transformers.ModernBertConfig(
    ...     global_attn_every_n_layers=1))                                        # doctest: +SKIP
    >>> backbone = BertBackbone(config_from_hf(hf.config.to_dict()))             # doctest: +SKIP
    >>> load_hf_weights(backbone, {k: v.numpy() for k, v in hf.state_dict().items()})  # doctest: +SKIP
    """
    import keras

    from keras_bert_lab.presets.weights import load_weights, named_variables

    weights = weights_from_hf(state_dict, backbone.config)
    weights.update({name: keras.ops.convert_to_numpy(variable)
                    for name, variable in named_variables(backbone)
                    if name.startswith("backbone/pooler/")})
    load_weights(backbone, weights, where="the ModernBERT weights")
