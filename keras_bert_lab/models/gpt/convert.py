"""GPT-1 weights: Hugging Face ``OpenAIGPT*`` state dicts both ways, and OpenAI's original release.

**Hugging Face** (``transformers.OpenAIGPTModel``; ``OpenAIGPTLMHeadModel`` adds the prefix
``transformer.`` and a ``lm_head.weight`` tied to ``tokens_embed.weight``): ``tokens_embed``,
``positions_embed`` and per block ``h.{i}.attn.c_attn`` / ``attn.c_proj`` / ``ln_1`` /
``mlp.c_fc`` / ``mlp.c_proj`` / ``ln_2``. Their ``Conv1D`` layers store ``[in, out]`` kernels —
our layout already — so only the attention kernels are reshaped per head: ``c_attn`` ``(H, 3H)``
(query, key, value side by side) is our ``qkv`` ``(H, 3, N, D)``, ``c_proj`` ``(H, H)`` our
``(N, D, H)``. One table (:func:`weight_table`) serves import and export.

**OpenAI's release** (``finetune-transformer-lm``, 2018): ``model/params_shapes.json`` lists the
shapes of 2 + 12·L arrays, stored flattened and concatenated across ``params_0.npy`` …
``params_{n}.npy``: first the positions ``(n_ctx, H)``, then the tokens ``(40478, H)`` (the
original code concatenated them as ``model/we`` = tokens, special tokens, positions), then per
block ``attn/c_attn/w`` ``(1, H, 3H)``, ``b``, ``attn/c_proj/w``, ``b``, ``ln_1/g``, ``b``,
``mlp/c_fc/w``, ``b``, ``mlp/c_proj/w``, ``b``, ``ln_2/g``, ``b``: the same tensors as Hugging
Face's, named by the TF scopes. ``encoder_bpe_40000.json`` maps tokens to ids and
``vocab_40000.bpe`` lists the merges. The number of heads is not recorded (12 in the release).

Neither format has an LM-head bias: imports make ``GPTCausalLM(output_bias=False)`` presets, and
exporting a model whose head has a bias (``output_bias=True``, the default of ``kbl pretrain
--model gpt``) raises ``PresetError`` rather than silently dropping it.

Example:
>>> config = config_from_hf({"vocab_size": 8, "n_embd": 4, "n_layer": 1, "n_head": 2,
...                          "n_positions": 16})
>>> row = weight_table(config)[2]       # layer 0: query, key and value in one Conv1D
>>> row.name, row.hf_key, row.shape
('backbone/decoder_layer_0/attention/qkv/kernel', 'h.0.attn.c_attn.weight', (4, 3, 2, 2))
"""

import dataclasses
import io
import json
import pathlib
import tarfile
import warnings

import numpy as np

from keras_bert_lab.errors import PresetError
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets.convert.tensor_files import read_state_dict, write_safetensors

CAUSAL_LM = {"class_name": "GPTCausalLM", "module": "keras_bert_lab.models.gpt.causal_lm",
             "config": {"output_bias": False}}
# The preset name of GPTCausalLM's optional output bias, which OpenAIGPTLMHeadModel lacks.
LM_HEAD_BIAS = "task/lm_head/bias"
# Keys with no weight of their own here: buffers, and the LM head tied to the token embedding.
_IGNORED_SUFFIXES = (".attn.bias", "position_ids", "lm_head.weight")
_BLOCK_PARAMETERS = ("attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                     "attn.c_proj.bias", "ln_1.weight", "ln_1.bias", "mlp.c_fc.weight",
                     "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias", "ln_2.weight",
                     "ln_2.bias")  # in the order of OpenAI's params_shapes.json
TOKENIZER = {"lowercase": True, "type": "bpe"}
# GPT-1's hyper-parameters that a release does not record (the paper's, and transformers').
RELEASE_DEFAULTS = dict(dropout=0.1, embedding_dropout=0.1, attention_dropout=0.1,
                        layer_norm_epsilon=1e-5, initializer_range=0.02, activation="gelu")


def config_from_hf(hf_config):
    """Our GPT config (a dict of ``GPTConfig`` fields) from a Hugging Face ``config.json``."""
    act = hf_config.get("afn", "gelu")
    if act not in ("gelu", "relu", "silu", "swish"):
        raise PresetError(f"Hugging Face OpenAIGPT config has afn={act!r}; supported: gelu "
                          "(tanh approximation), relu, silu, swish.")
    try:
        config = dict(
            vocabulary_size=hf_config["vocab_size"], hidden_size=hf_config["n_embd"],
            num_layers=hf_config["n_layer"], num_heads=hf_config["n_head"],
            intermediate_size=4 * hf_config["n_embd"], max_positions=hf_config["n_positions"],
            dropout=hf_config.get("resid_pdrop", 0.1),
            embedding_dropout=hf_config.get("embd_pdrop", 0.1),
            attention_dropout=hf_config.get("attn_pdrop", 0.1),
            layer_norm_epsilon=hf_config.get("layer_norm_epsilon", 1e-5),
            initializer_range=hf_config.get("initializer_range", 0.02), activation=act)
    except KeyError as error:
        raise PresetError(f"Hugging Face OpenAIGPT config lacks the field {error}.") from None
    _head_size(config)
    return config


def config_to_hf(config):
    """The Hugging Face ``config.json`` dict (``OpenAIGPTConfig``) of a GPT config."""
    c = {**RELEASE_DEFAULTS, **(config.to_dict() if hasattr(config, "to_dict") else config)}
    if c["intermediate_size"] != 4 * c["hidden_size"] or c["activation"] == "gelu_exact":
        raise PresetError("transformers' OpenAIGPT fixes the feed-forward width to 4 × hidden "
                          "and has no exact-erf 'gelu'; this config cannot be exported.")
    return {"architectures": ["OpenAIGPTLMHeadModel"], "model_type": "openai-gpt",
            "vocab_size": c["vocabulary_size"], "n_embd": c["hidden_size"], "n_layer": c["num_layers"],
            "n_head": c["num_heads"], "n_positions": c["max_positions"], "afn": c["activation"],
            "resid_pdrop": c["dropout"], "embd_pdrop": c["embedding_dropout"],
            "attn_pdrop": c["attention_dropout"], "layer_norm_epsilon": c["layer_norm_epsilon"],
            "initializer_range": c["initializer_range"]}


def _head_size(config):
    hidden, heads = config["hidden_size"], config["num_heads"]
    if not heads or hidden % heads:
        raise PresetError(f"hidden_size {hidden} is not divisible by num_heads {heads}; pass the "
                          "model's number of attention heads (12 for the released GPT-1).")
    return hidden // heads


@dataclasses.dataclass(frozen=True)
class Row:
    """One preset tensor: its name, Hugging Face key, shape and the two layout maps."""

    name: str
    hf_key: str
    shape: tuple
    to_ours: object
    to_hf: object


def weight_table(config, prefix=""):
    """The :class:`Row` of every backbone tensor; ``prefix`` is ``"transformer."`` for
    ``OpenAIGPTLMHeadModel`` checkpoints and ``""`` for ``OpenAIGPTModel`` ones."""
    c = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    h, n, i = c["hidden_size"], c["num_heads"], c["intermediate_size"]
    d = _head_size(c)
    same = (lambda w: w, lambda w: w)
    rows = [Row("backbone/embeddings/token_embedding/embeddings", f"{prefix}tokens_embed.weight",
                (c["vocabulary_size"], h), *same),
            Row("backbone/embeddings/position_embedding", f"{prefix}positions_embed.weight",
                (c["max_positions"], h), *same)]
    for layer in range(c["num_layers"]):
        ours, theirs = f"backbone/decoder_layer_{layer}", f"{prefix}h.{layer}"

        def row(name, key, shape, maps=same):
            return Row(f"{ours}/{name}", f"{theirs}.{key}", tuple(shape), *maps)

        rows += [
            row("attention/qkv/kernel", "attn.c_attn.weight", (h, 3, n, d),
                (lambda w: w.reshape(h, 3, n, d), lambda k: k.reshape(h, 3 * h))),
            row("attention/qkv/bias", "attn.c_attn.bias", (3, n, d),
                (lambda b: b.reshape(3, n, d), lambda b: b.reshape(3 * h))),
            row("attention/output/kernel", "attn.c_proj.weight", (n, d, h),
                (lambda w: w.reshape(n, d, h), lambda k: k.reshape(h, h))),
            row("attention/output/bias", "attn.c_proj.bias", (h,)),
            row("attention_norm/gamma", "ln_1.weight", (h,)),
            row("attention_norm/beta", "ln_1.bias", (h,)),
            row("ffn_in/kernel", "mlp.c_fc.weight", (h, i)),
            row("ffn_in/bias", "mlp.c_fc.bias", (i,)),
            row("ffn_out/kernel", "mlp.c_proj.weight", (i, h)),
            row("ffn_out/bias", "mlp.c_proj.bias", (h,)),
            row("ffn_norm/gamma", "ln_2.weight", (h,)),
            row("ffn_norm/beta", "ln_2.bias", (h,)),
        ]
    return rows


def weights_from_hf(state_dict, config, allow_partial=False):
    """A Hugging Face ``OpenAIGPT*`` ``state_dict`` (name → array) as preset weights.

    Strict by default: a missing or unexpected key (e.g. a double-heads model's
    ``multiple_choice_head.*``) or a shape mismatch raises ``PresetError`` naming the tensors;
    ``allow_partial=True`` converts what matches. Returns ``(weights, {"missing", "unexpected"})``.
    """
    prefix = "transformer." if any(k.startswith("transformer.") for k in state_dict) else ""
    used, missing, weights = set(), [], {}
    for row in weight_table(config, prefix=prefix):
        if row.hf_key not in state_dict:
            missing.append(row.hf_key)
            continue
        used.add(row.hf_key)
        array = np.asarray(state_dict[row.hf_key], dtype="float32")
        try:
            value = row.to_ours(array)
        except ValueError:  # a reshape that cannot work: the shapes are wrong
            value = array
        if tuple(value.shape) != row.shape:
            raise PresetError(f"Shape mismatch for {row.name}: the config needs {row.shape}, the "
                              f"checkpoint has {row.hf_key} {tuple(array.shape)}; the config "
                              "does not match these weights.")
        weights[row.name] = value
    unexpected = sorted(k for k in state_dict if k not in used and not k.endswith(_IGNORED_SUFFIXES))
    if (missing or unexpected) and not allow_partial:
        raise PresetError(f"Checkpoint does not match the model: missing {missing or 'none'}; "
                          f"unexpected {unexpected or 'none'}. Pass allow_partial=True to load "
                          "what matches.")
    return weights, {"missing": missing, "unexpected": unexpected}


def weights_to_hf(weights, config, prefix="", lm_head=False):
    """Preset weights as a Hugging Face state dict (name → float32 array); ``lm_head`` also
    writes ``lm_head.weight``, the tied copy ``OpenAIGPTLMHeadModel.state_dict()`` holds."""
    if LM_HEAD_BIAS in weights:
        raise PresetError("This model's LM head has an output bias (GPTCausalLM(output_bias="
                          "True), the default of kbl pretrain --model gpt), which transformers' "
                          "OpenAIGPTLMHeadModel lacks: exporting would silently change its "
                          "predictions. Pretrain with --no-output-bias to get an exportable GPT.")
    out = {}
    for row in weight_table(config, prefix=prefix):
        if row.name not in weights:
            raise PresetError(f"The weights lack {row.name}; they do not belong to this config.")
        out[row.hf_key] = np.ascontiguousarray(row.to_hf(np.asarray(weights[row.name], "float32")))
    if lm_head:
        out["lm_head.weight"] = out[f"{prefix}tokens_embed.weight"]
    return out


def load_hf_weights(model, state_dict, allow_partial=False):
    """Assign a Hugging Face ``OpenAIGPT*`` state dict to ``model`` (a ``GPTBackbone`` or a
    task holding one as ``backbone``). Returns ``{"missing", "unexpected"}`` in HF names."""
    from keras_bert_lab.presets.weights import load_weights

    backbone = getattr(model, "backbone", None) or model
    weights, report = weights_from_hf(state_dict, backbone.config, allow_partial=allow_partial)
    load_weights(model, weights, allow_partial=allow_partial, where="the Hugging Face weights")
    return report


def export_hf_weights(model):
    """A model's weights as the state dict of ``OpenAIGPTLMHeadModel`` (for a task with an LM
    head) or ``OpenAIGPTModel`` (for a backbone)."""
    from keras_bert_lab.presets.weights import model_weights

    backbone = getattr(model, "backbone", None) or model
    lm_head = getattr(model, "lm_head", None) is not None
    return weights_to_hf(model_weights(model), backbone.config,
                         prefix="transformer." if lm_head else "", lm_head=lm_head)


# ---- OpenAI's original release ---------------------------------------------------------------
def read_openai_release(path):
    """``(arrays, encoder, merges)`` of an original GPT-1 release: a ``.tar.gz`` or a directory
    (holding ``model/`` or being it) with ``params_shapes.json``, ``params_{i}.npy`` and, when
    present, ``encoder_bpe*.json`` (token → id) and ``vocab*.bpe`` (merges)."""
    path = pathlib.Path(path)
    if path.is_file():
        with tarfile.open(path) as archive:
            files = {pathlib.PurePath(m.name).name: archive.extractfile(m).read()
                     for m in archive.getmembers() if m.isfile()}
    elif path.is_dir():
        root = path / "model" if (path / "model").is_dir() else path
        files = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    else:
        raise PresetError(f"{path} is neither an OpenAI GPT archive (.tar.gz) nor a directory.")
    if "params_shapes.json" not in files:
        raise PresetError(f"{path} lacks params_shapes.json (it has: {sorted(files)}); an "
                          "original GPT-1 release holds params_shapes.json and params_*.npy.")
    shapes = json.loads(files["params_shapes.json"])
    count = sum(1 for name in files if name.startswith("params_") and name.endswith(".npy"))
    try:
        flat = np.concatenate([np.load(io.BytesIO(files[f"params_{i}.npy"]))
                               for i in range(count)])
    except KeyError as error:
        raise PresetError(f"{path}: the parameter files are not numbered 0…{count - 1} "
                          f"({error} is missing).") from None
    sizes = [int(np.prod(s)) for s in shapes]
    if flat.size != sum(sizes):
        raise PresetError(f"{path}: params_*.npy hold {flat.size} numbers but params_shapes.json "
                          f"describes {sum(sizes)}; the release is incomplete or corrupt.")
    parts = np.split(flat.astype("float32"), np.cumsum(sizes)[:-1])
    arrays = [part.reshape(shape) for part, shape in zip(parts, shapes)]
    encoder = next((json.loads(v) for k, v in sorted(files.items())
                    if k.startswith("encoder_bpe") and k.endswith(".json")), None)
    merges = next((v.decode("utf-8").split("\n") for k, v in sorted(files.items())
                   if k.startswith("vocab") and k.endswith(".bpe")), None)
    if merges is not None:
        merges = [m for m in merges if m.strip() and not m.startswith("#version")]
    return arrays, encoder, merges


def state_dict_from_openai(arrays, num_heads=12, special_rows=0, seed=0):
    """``(config, HF-style state dict)`` of an original release's arrays (see the module
    docstring). ``special_rows`` appends that many N(0, 0.02) token rows (the fine-tuning tokens
    the original code added between the vocabulary and the positions)."""
    if len(arrays) < 2 or (len(arrays) - 2) % 12:
        raise PresetError(f"An original GPT-1 release holds 2 + 12 × layers arrays, got "
                          f"{len(arrays)}.")
    positions, tokens = (np.asarray(a, "float32") for a in arrays[:2])
    if special_rows:
        extra = np.random.default_rng(seed).normal(0, 0.02, (special_rows, tokens.shape[1]))
        tokens = np.concatenate([tokens, extra.astype("float32")])
    state = {"tokens_embed.weight": tokens, "positions_embed.weight": positions}
    for k, array in enumerate(arrays[2:]):
        state[f"h.{k // 12}.{_BLOCK_PARAMETERS[k % 12]}"] = np.asarray(array, "float32").reshape(
            np.shape(array)[1:] if np.ndim(array) == 3 and np.shape(array)[0] == 1
            else np.shape(array))  # the (1, in, out) kernels of the TF Conv1D
    config = dict(vocabulary_size=tokens.shape[0], hidden_size=tokens.shape[1],
                  num_layers=(len(arrays) - 2) // 12, num_heads=num_heads,
                  intermediate_size=state["h.0.mlp.c_fc.bias"].shape[0] if len(arrays) > 2
                  else 4 * tokens.shape[1], max_positions=positions.shape[0],
                  **RELEASE_DEFAULTS)
    _head_size(config)
    return config, state


def vocabulary_from_encoder(encoder, size):
    """Tokens by id from an ``encoder_bpe.json`` map; an alias sharing an id with an earlier
    token (the small test release maps ``<unk>`` to 0) is dropped with a warning. A line break in
    a token (GPT-1's ``"\\n</w>"``, which its tokenizer can never produce) is written ``\\n``, as
    the BPE tokenizer saves it, so that ``vocab.txt`` keeps one token per line."""
    tokens = [None] * size
    for token, index in encoder.items():
        token = token.replace("\n", "\\n").replace("\r", "\\r")
        if not 0 <= index < size:
            raise PresetError(f"encoder_bpe.json maps {token!r} to {index}, outside the "
                              f"{size}-row token embedding.")
        if tokens[index] is None:
            tokens[index] = token
        else:
            warnings.warn(f"encoder_bpe.json maps {token!r} and {tokens[index]!r} to id {index};"
                          f" keeping {tokens[index]!r}.", stacklevel=3)
    gaps = [i for i, t in enumerate(tokens) if t is None]
    if gaps:
        raise PresetError(f"encoder_bpe.json has no token for id(s) {gaps[:10]}; the vocabulary "
                          "does not cover the token embedding.")
    return tokens


def import_openai(path, preset_dir, num_heads=12, special_tokens=(), seed=0, overwrite=False,
                  source=None, license="MIT (openai/finetune-transformer-lm)"):
    """Convert an original GPT-1 release into a ``GPTCausalLM`` preset directory.

    ``special_tokens`` (e.g. ``("_start_", "_delimiter_", "_classify_")``) get new N(0, 0.02)
    rows after the vocabulary, seeded by ``seed``. Returns the preset directory.
    """
    arrays, encoder, merges = read_openai_release(path)
    if encoder is None or merges is None:
        raise PresetError(f"{path} lacks encoder_bpe*.json or vocab*.bpe; both are needed for the "
                          "tokenizer of the preset.")
    config, state = state_dict_from_openai(arrays, num_heads, len(special_tokens), seed)
    tokens = vocabulary_from_encoder(encoder, len(arrays[1])) + list(special_tokens)
    weights, _ = weights_from_hf(state, config)
    return preset_format.write_preset(
        preset_dir, backbone_class="GPTBackbone", config=config, weights=weights,
        vocabulary=tokens, merges=merges, tokenizer=TOKENIZER, task=CAUSAL_LM,
        source=source or f"OpenAI GPT-1 release {pathlib.Path(path).absolute()}",
        license=license, overwrite=overwrite)


# ---- Hugging Face directories ----------------------------------------------------------------
def import_hf(directory, preset_dir, allow_partial=False, overwrite=False, source=None,
              license=None):
    """Convert a Hugging Face ``openai-gpt`` directory (``config.json``, ``model.safetensors`` or
    ``pytorch_model.bin``, ``vocab.json``, ``merges.txt``) into a ``GPTCausalLM`` preset."""
    directory = pathlib.Path(directory)
    present = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
    needed = ["config.json", "vocab.json", "merges.txt"]
    weights_file = next((directory / n for n in ("model.safetensors", "pytorch_model.bin")
                         if (directory / n).is_file()), None)
    if weights_file is None or any(n not in present for n in needed):
        raise PresetError(f"{directory} is not a Hugging Face openai-gpt directory (it has: "
                          f"{', '.join(present) or 'nothing'}); it needs {', '.join(needed)} and "
                          "model.safetensors or pytorch_model.bin.")
    config = config_from_hf(preset_format.read_json(directory / "config.json", "checkpoint"))
    weights, _ = weights_from_hf(read_state_dict(weights_file), config, allow_partial)
    encoder = preset_format.read_json(directory / "vocab.json", "checkpoint")
    return preset_format.write_preset(
        preset_dir, backbone_class="GPTBackbone", config=config, weights=weights,
        vocabulary=vocabulary_from_encoder(encoder, config["vocabulary_size"]),
        merges=preset_format.read_merges(directory / "merges.txt"), tokenizer=TOKENIZER,
        task=CAUSAL_LM, source=source or f"Hugging Face checkpoint {directory.absolute()}",
        license=license, overwrite=overwrite)


def export_hf(model, directory, overwrite=False):
    """Write ``model`` (a GPT backbone or task loaded from / saved to a preset with merges, or a
    preset directory) as a Hugging Face directory that ``OpenAIGPTLMHeadModel.from_pretrained``
    and ``OpenAIGPTTokenizer.from_pretrained`` read."""
    with preset_format.opened(model) as preset:
        merges = preset.merges()
        if merges is None:
            raise PresetError(f"Preset {preset.directory} has no merges.txt; a GPT tokenizer "
                              "needs its BPE merges.")
        tensors = weights_to_hf(preset.weights(), preset.config, prefix="transformer.")
        with preset_format.atomic_directory(directory, overwrite=overwrite) as tmp:
            (tmp / "config.json").write_text(json.dumps(config_to_hf(preset.config), indent=2))
            write_safetensors(tmp / "model.safetensors", tensors)
            vocab = {token: i for i, token in enumerate(preset.vocabulary())}
            (tmp / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
            (tmp / "merges.txt").write_text("#version: 0.2\n" + "".join(m + "\n" for m in merges),
                                            encoding="utf-8")
    return pathlib.Path(directory).absolute()
