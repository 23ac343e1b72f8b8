"""Weight tables between Hugging Face ``transformers`` checkpoints and our presets (NumPy only).

A table is a list of :class:`Row`\\ s: each pairs one tensor of a preset (named as in
:mod:`keras_bert_lab.presets.format`, e.g. ``backbone/encoder_layer_0/attention/qkv/kernel``)
with its Hugging Face key(s), its shape and the two reshapes between the layouts, so import
(:func:`weights_from_state`) and export (:func:`weights_to_state`) cannot drift apart. Hugging
Face stores linear layers as ``[out, in]``; ours are ``[in, out]`` kernels, and attention kernels
are per head: ``qkv`` is ``(H, 3, N, D)`` (query, key, value stacked) and the attention output is
``(N, D, H)``.

:func:`encoder_layer_rows` is the block every BERT-style encoder of ``transformers`` shares
(``BertLayer``, ``ElectraLayer``, ``RobertaLayer``: ``attention.self.{query,key,value}``,
``attention.output``, ``intermediate``, ``output``), so each family's table adds only its own
embeddings and heads.

Example:
>>> rows = encoder_layer_rows("backbone/encoder_layer_0", "encoder.layer.0", 4, 2, 16)
>>> rows[0].name, rows[0].shape, rows[0].hf_keys[0]
('backbone/encoder_layer_0/attention/qkv/kernel', (4, 3, 2, 2), 'encoder.layer.0.attention.self.query.weight')
"""

import dataclasses

import numpy as np

from keras_bert_lab.errors import PresetError

SAME = (lambda w: w[0], lambda w: (w,))           # one array, the same layout
LINEAR = (lambda w: w[0].T, lambda k: (k.T,))      # torch [out, in] <-> our [in, out]


@dataclasses.dataclass(frozen=True)
class Row:
    """One preset tensor: its name, Hugging Face key(s), shape, and the two layout maps.

    ``hf_keys`` holds three keys (query, key, value) for the fused attention tensors; ``to_ours``
    takes one array per key, ``to_hf`` returns one per key.
    """

    name: str
    hf_keys: tuple
    shape: tuple
    to_ours: object
    to_hf: object


def row(name, keys, shape, maps=SAME):
    """A :class:`Row`; ``keys`` one key or several."""
    keys = (keys,) if isinstance(keys, str) else tuple(keys)
    return Row(name, keys, tuple(shape), *maps)


def norm(ours, theirs, width):
    """A LayerNorm: our ``gamma``/``beta``, their ``weight``/``bias``."""
    return [row(f"{ours}/gamma", f"{theirs}.weight", (width,)),
            row(f"{ours}/beta", f"{theirs}.bias", (width,))]


def dense(ours, theirs, shape):
    """A ``Dense`` of kernel ``shape`` (in, out) and its bias: a torch ``Linear``."""
    return [row(f"{ours}/kernel", f"{theirs}.weight", shape, LINEAR),
            row(f"{ours}/bias", f"{theirs}.bias", shape[-1:])]


def encoder_layer_rows(ours, theirs, hidden_size, num_heads, intermediate_size):
    """The rows of one post-LN encoder block (our ``TransformerEncoderBlock`` at ``ours``,
    ``transformers``' ``BertLayer``-style module at ``theirs``)."""
    h, n, i = hidden_size, num_heads, intermediate_size
    d = h // n
    qkv = [f"{theirs}.attention.self.{part}" for part in ("query", "key", "value")]
    return [
        # three [out, in] = [H, H] matrices <-> (H, 3, N, D); three (H,) biases <-> (3, N, D)
        row(f"{ours}/attention/qkv/kernel", [k + ".weight" for k in qkv], (h, 3, n, d),
            (lambda ws: np.stack([w.T.reshape(h, n, d) for w in ws], axis=1),
             lambda k: tuple(k[:, j].reshape(h, h).T for j in range(3)))),
        row(f"{ours}/attention/qkv/bias", [k + ".bias" for k in qkv], (3, n, d),
            (lambda bs: np.stack([b.reshape(n, d) for b in bs]),
             lambda b: tuple(b[j].reshape(h) for j in range(3)))),
        row(f"{ours}/attention/output/kernel", f"{theirs}.attention.output.dense.weight",
            (n, d, h), (lambda w: w[0].T.reshape(n, d, h), lambda k: (k.reshape(h, h).T,))),
        row(f"{ours}/attention/output/bias", f"{theirs}.attention.output.dense.bias", (h,)),
        *norm(f"{ours}/attention_norm", f"{theirs}.attention.output.LayerNorm", h),
        *dense(f"{ours}/ffn_in", f"{theirs}.intermediate.dense", (h, i)),
        *dense(f"{ours}/ffn_out", f"{theirs}.output.dense", (i, h)),
        *norm(f"{ours}/ffn_norm", f"{theirs}.output.LayerNorm", h),
    ]


def check_encoder_options(hf_config, model):
    """``PresetError`` unless a BERT-style ``config.json`` uses what our encoder block computes:
    exact GELU and absolute positions (``model`` names the family in the message)."""
    if hf_config.get("hidden_act", "gelu") != "gelu":
        raise PresetError(f"Hugging Face config has hidden_act={hf_config['hidden_act']!r}; only "
                          f"exact 'gelu' ({model}'s activation) is supported.")
    if hf_config.get("position_embedding_type", "absolute") != "absolute":
        raise PresetError("Only absolute position embeddings are supported, got "
                          f"{hf_config['position_embedding_type']!r}.")


def encoder_config_from_hf(hf_config, model):
    """The fields of a BERT-style encoder's config (our names) read from a Hugging Face
    ``config.json``, after :func:`check_encoder_options`; ``PresetError`` names a missing field
    (``model`` names the family in the messages)."""
    check_encoder_options(hf_config, model)
    try:
        return dict(
            vocabulary_size=hf_config["vocab_size"], hidden_size=hf_config["hidden_size"],
            num_layers=hf_config["num_hidden_layers"], num_heads=hf_config["num_attention_heads"],
            intermediate_size=hf_config["intermediate_size"],
            max_positions=hf_config["max_position_embeddings"],
            type_vocab_size=hf_config.get("type_vocab_size", 2),
            dropout=hf_config.get("hidden_dropout_prob", 0.1),
            attention_dropout=hf_config.get("attention_probs_dropout_prob", 0.1),
            layer_norm_epsilon=hf_config.get("layer_norm_eps", 1e-12),
            initializer_range=hf_config.get("initializer_range", 0.02))
    except KeyError as error:
        raise PresetError(f"Hugging Face {model} config lacks the field {error}.") from None


def weights_from_state(rows, state_dict, allow_partial=False, ignored_suffixes=()):
    """A Hugging Face ``state_dict`` (name → array) as preset weights ``{name: array}``.

    Strict by default: a missing key, an unexpected key (other than those ending with
    ``ignored_suffixes``: buffers, copies of tied weights) or a shape mismatch raises
    ``PresetError`` naming the tensors. With ``allow_partial=True`` what matches is converted and
    the rest reported. Returns ``(weights, {"missing": [...], "unexpected": [...]})``.
    """
    used, missing, weights = set(), [], {}
    for entry in rows:
        absent = [k for k in entry.hf_keys if k not in state_dict]
        if absent:
            missing += absent
            continue
        used.update(entry.hf_keys)
        arrays = [np.asarray(state_dict[k], dtype="float32") for k in entry.hf_keys]
        try:
            value = entry.to_ours(arrays)
        except ValueError:  # a reshape that cannot work: the shapes are wrong
            value = arrays[0]
        if tuple(value.shape) != entry.shape:
            shapes = ", ".join(f"{k} {tuple(a.shape)}" for k, a in zip(entry.hf_keys, arrays))
            raise PresetError(f"Shape mismatch for {entry.name}: the config needs {entry.shape}, "
                              f"the checkpoint has {shapes}; the config does not match these "
                              "weights.")
        weights[entry.name] = value
    unexpected = sorted(k for k in state_dict if k not in used
                        and not k.endswith(tuple(ignored_suffixes)))
    if (missing or unexpected) and not allow_partial:
        raise PresetError(
            f"Checkpoint does not match the model: missing {missing or 'none'}; unexpected "
            f"{unexpected or 'none'}. Pass allow_partial=True to load what matches.")
    return weights, {"missing": missing, "unexpected": unexpected}


def weights_to_state(rows, weights):
    """Preset weights as a Hugging Face state dict (name → contiguous float32 NumPy array)."""
    out = {}
    for entry in rows:
        if entry.name not in weights:
            raise PresetError(f"The weights lack {entry.name}; they do not belong to this "
                              "config.")
        parts = entry.to_hf(np.asarray(weights[entry.name], dtype="float32"))
        out.update({key: np.ascontiguousarray(part) for key, part in zip(entry.hf_keys, parts)})
    return out
