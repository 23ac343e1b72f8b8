# %% [markdown]
# # 4. ULMFiT: pretrain a language model, fine-tune it, unfreeze it gradually
#
# *Station 4 of 12 — [the map](README.md).* Runs on every Keras backend: set `KERAS_BACKEND`
# to `tensorflow`, `jax` or `torch` before starting; the code is the same.
#
# - **Needs:** WikiText-2 (`wikitext2`) and Rotten Tomatoes (`rotten_tomatoes`) — installed by
#   `make install`.
# - **Smoke mode** (`KBL_TUTORIAL_MODE=smoke`): a tiny AWD-LSTM trained for a few steps on a few
#   WikiText-2 articles and a few hundred Rotten Tomatoes snippets; every classifier on a handful
#   of snippets for two epochs.
# - **Full mode** (the default): the `mini` AWD-LSTM (3 LSTMs, 128/384/128) pretrained on
#   WikiText-2 for a few minutes, its language model fine-tuned on Rotten Tomatoes' text, then
#   four ways of fine-tuning the classifier on 1,500 labelled snippets and three on 500. The two
#   language models are kept in the tutorial's work folder and reused by the next run with the
#   same settings.
# - **Build:** `python tutorials/build.py --only 04` (or `make tutorials` for all).
#
# ELMo (station 3) pretrained a language model and handed its *frozen* layers to a task model
# built for the task. Howard & Ruder (2018, "Universal Language Model Fine-tuning for Text
# Classification") fine-tuned the language model *itself* into the classifier, and made it work
# by method rather than by a new architecture: the model is Merity et al.'s AWD-LSTM, an LSTM
# language model with five kinds of dropout, and what is new is how it is trained — three
# stages, and three techniques that keep the fine-tuning from destroying what pretraining
# learned:
#
# 1. **general-domain LM pretraining** on WikiText-103 (here WikiText-2);
# 2. **target-task LM fine-tuning** on the task's own text, labels unused, with *discriminative
#    learning rates* and the *slanted triangular* schedule;
# 3. **classifier fine-tuning**: two linear blocks on *concat pooling* of the last layer,
#    trained with the same two techniques plus *gradual unfreezing*.
#
# This station draws the stages and the techniques from the library's own code, then measures
# them at a scale two CPU cores can run in twenty minutes. That scale matters for what to
# expect: the lab's first ULMFiT benchmark (`benchmarks/results/quality.md`, "ULMFiT") found that from a
# language model trained once over WikiText-2, the three techniques together *cost* 12.5 points
# of Rotten Tomatoes accuracy against plain fine-tuning of all layers. So the classifier part
# below is a test, not a demonstration: does the paper's ordering (techniques > full
# fine-tuning > from scratch) appear at this scale, with a lighter-regularised language model?

# %%
import _common

tutorial = _common.start("04_ulmfit", data=["wikitext2", "rotten_tomatoes"])

# %%
import json
import math
import pathlib
import shutil
import time

import keras
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from keras_bert_lab.data.labelled import load_dataset
from keras_bert_lab.data.labels import LabelVocabulary
from keras_bert_lab.models.awd_lstm.layers import ConcatPooling
from keras_bert_lab.models.awd_lstm.backbone import AwdLstmBackbone
from keras_bert_lab.models.awd_lstm.config import DROPOUT_FIELDS, AwdLstmConfig
from keras_bert_lab.pipelines.batches import batches
from keras_bert_lab.presets.registry import read_preset
from keras_bert_lab.models.awd_lstm import pretrain as awd_pretrain
from keras_bert_lab.models.awd_lstm.finetune import pack_words
from keras_bert_lab.preprocessing.word_tokenizer import WordTokenizer
from keras_bert_lab.models.awd_lstm.language_model import AwdLstmLanguageModel
from keras_bert_lab.models.awd_lstm.ulmfit_classifier import UlmfitClassifier
from keras_bert_lab.training.finetune import fit_best_epoch, learning_rate_schedule
from keras_bert_lab.training.optimizers import adamw
from keras_bert_lab.training.run import read_rows
from keras_bert_lab.training.transfer import GradualUnfreezing, layer_groups

tutorial.eager_in_smoke()
SIZE = tutorial.size(
    smoke=dict(model="tiny", steps=4, batch=8, length=16, vocabulary=3000, eval_batches=1,
               train_documents=3, valid_documents=2, rt_lm_texts=300, target_steps=3,
               rt_train=32, rt_valid=32, rt_test=32, few_labels=16, epochs=2, task_batch=16,
               task_length=32),
    full=dict(model="mini", steps=360, batch=32, length=70, vocabulary=15000, eval_batches=20,
              train_documents=None, valid_documents=None, rt_lm_texts=None, target_steps=90,
              rt_train=1500, rt_valid=500, rt_test=None, few_labels=500, epochs=5,
              task_batch=32, task_length=48))
LEARNING_RATE = 3e-3        # every classifier's peak rate (benchmarks/ulmfit.py's default)
print(SIZE)

# %% [markdown]
# ## The three stages, as a picture
#
# One network goes through all three stages; only its top changes. In stages 1 and 2 the last
# LSTM's output goes through a decoder *tied* to the embedding table (the same matrix reads
# words in and scores them out) to predict the next word. In stage 3 the decoder is dropped and
# the last layer's states `H = (h_1 … h_T)` of a document are pooled three ways — the last state,
# the element-wise maximum and the mean, `h_c = [h_T, maxpool(H), meanpool(H)]` — and read by
# two blocks of batch normalisation, dropout and a dense layer (50 ReLU units, then the
# classes).

# %%
figure = Figure(figsize=(15, 5.2))
axes = figure.add_subplot()
axes.set_xlim(0, 15)
axes.set_ylim(0, 5.6)
axes.axis("off")


def box(x, y, w, h, text, colour, size=8.5):
    axes.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.04", facecolor=colour,
                                  edgecolor="grey"))
    axes.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)


def arrow(x0, y0, x1, y1, style="-|>"):
    axes.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle=style, mutation_scale=12,
                                   color="black"))


layers_shown = {"tiny": "2 LSTMs 16/32/16", "mini": "3 LSTMs 128/384/128"}[SIZE["model"]]
stages = [
    ("1. general-domain LM", "WikiText-2 (train)", f"{SIZE['steps']} steps × "
     f"{SIZE['batch']} × {SIZE['length']} words", "decoder tied to the\nembedding → next word"),
    ("2. target-task LM", "Rotten Tomatoes' snippets\n(text only, labels unused)",
     f"{SIZE['target_steps']} steps, discriminative\nrates + slanted triangular",
     "decoder tied to the\nembedding → next word"),
    ("3. classifier", "Rotten Tomatoes' labelled\nsnippets",
     "gradual unfreezing,\ndiscriminative rates,\nslanted triangular",
     "[h_T, maxpool(H), meanpool(H)]\n→ BN · dropout · Dense 50 · ReLU\n"
     "→ BN · dropout · Dense 2"),
]
for k, (title, text, how, top) in enumerate(stages):
    x = 0.3 + 5 * k
    axes.text(x + 2.1, 5.35, title, ha="center", fontsize=11, weight="bold")
    box(x + 0.4, 0.25, 3.4, 0.6, text, "#fff2cc", 8)
    box(x + 0.4, 1.15, 3.4, 0.5, "embedding (words)", "#cfe2f3")
    box(x + 0.4, 1.95, 3.4, 1.0, f"AWD-LSTM\n{layers_shown}\n(weight drop, locked dropout)",
        "#cfe2f3")
    box(x + 0.4, 3.3, 3.4, 1.1 if k == 2 else 0.8, top, "#ea9999" if k == 2 else "#d9ead3",
        7.5 if k == 2 else 8.5)
    axes.text(x + 2.1, 4.75 if k == 2 else 4.45, how, ha="center", va="bottom", fontsize=7.5,
              style="italic")
    for y0, y1 in ((0.85, 1.15), (1.65, 1.95), (2.95, 3.3)):
        arrow(x + 2.1, y0, x + 2.1, y1)
    if k:
        arrow(x - 1.1, 2.45, x + 0.35, 2.45)
        axes.text(x - 0.4, 2.6, "weights", ha="center", fontsize=7.5)
path = tutorial.save(figure, "three_stages.png")
tutorial.show(path, "ULMFiT's three stages: the same embedding and LSTMs throughout, a new top "
                    "in stage 3")

# %% [markdown]
# ## Stage 1: the general-domain language model
#
# `kbl pretrain --model awd-lstm` (the recipe `keras_bert_lab.models.awd_lstm.pretrain`) builds a
# word vocabulary on the training text, lays the text out for truncated back-propagation through
# time (the stream cut into `batch` contiguous rows; every batch continues the one before, the
# LSTM states carried across) and trains the AWD-LSTM to predict every next word: AdamW with
# ULMFiT's β = (0.7, 0.99), gradients clipped at global norm 0.25, the slanted triangular rate.
# ULMFiT pretrained the paper-sized model (3 LSTMs, 400/1150/400) on WikiText-103's 103M
# words; this run trains the `mini` size (a third of those widths) on WikiText-2 for a few
# minutes, so it sees less than half of WikiText-2's 2M training words, once.
#
# The AWD-LSTM's dropouts (embedding 0.1, input 0.65, hidden 0.3, output 0.4, weight drop 0.5)
# are tuned for hundreds of epochs; a run of a fraction of one epoch cannot overfit, and those
# rates only slow it down (the lab's first run with them ended above the count baseline,
# `benchmarks/results/quality.md`). So this run uses fastai's language-model set at half strength
# (`--dropouts fastai_lm --drop-mult 0.5`: `AwdLstmConfig.with_dropouts`). The recipe scores
# the model on held-out text read in order, next to an interpolated Kneser-Ney trigram model
# (counts, no network) on exactly the same targets.

# %%
def reusable(folder, settings):
    """Whether ``tutorial.pretrained`` will reuse the run in ``folder`` (same settings)."""
    folder = pathlib.Path(folder)
    return (folder / "metrics.json").is_file() and (folder / "preset").is_dir() and \
        json.loads((folder / "settings.json").read_text()) == settings.to_dict()


general_work, target_work = tutorial.work / "general_lm", tutorial.work / "target_lm"
corpus, eval_corpus = tutorial.corpora(SIZE["train_documents"], SIZE["valid_documents"])
general = awd_pretrain.AwdPretrainSettings(
    corpus=corpus, eval_corpus=eval_corpus, size=SIZE["model"], steps=SIZE["steps"],
    batch_size=SIZE["batch"], sequence_length=SIZE["length"], max_vocabulary=SIZE["vocabulary"],
    min_count=2, learning_rate=3e-3, dropouts="fastai_lm", drop_mult=0.5,
    eval_batches=SIZE["eval_batches"], eval_every=SIZE["steps"],
    log_every=max(1, SIZE["steps"] // 24), checkpoint_every=10_000)
if not reusable(general_work, general):
    shutil.rmtree(target_work, ignore_errors=True)   # stage 2 continued an older stage 1
general_metrics = tutorial.pretrained(awd_pretrain.run, general, general_work,
                                      "general-domain language model")
general_preset = str(general_work / "preset")
config = AwdLstmConfig.from_dict(read_preset(general_preset).config)
print(f"AWD-LSTM '{general.size}': {config.layer_dims()} (input → output width of each LSTM), "
      f"{config.num_parameters():,} weights, {config.vocabulary_size:,} words; dropouts "
      + ", ".join(f"{f.removesuffix('_dropout')} {getattr(config, f)}" for f in DROPOUT_FIELDS))
print(f"{general_metrics['steps']} steps of {general.batch_size} × {general.sequence_length} "
      f"words = {general_metrics['tokens_seen']:,} words seen of "
      f"{general_metrics['train_tokens']:,} ({general_metrics['text_passes']} passes)")

# %% [markdown]
# ## Stage 2: fine-tuning the language model on the target task's text
#
# The same recipe with `--init-preset` (the stage-1 preset) and `--corpus rotten_tomatoes`
# continues the language model on the text of the task's 8,454 training snippets — their words
# only; the labels are not read. Words of the task that the general vocabulary lacks (at least
# twice in the text) are added, their rows started at the mean embedding. The layer groups learn
# at discriminative rates (`η/2.6` per group down, the recipe's default with `--init-preset`)
# under the slanted triangular schedule. Held-out perplexity on Rotten Tomatoes' validation
# snippets is measured before the first step and after the last.

# %%
if tutorial.smoke:   # the first few hundred snippets' text, so that the smoke run takes seconds
    texts = load_dataset("rotten_tomatoes")["train"].texts[:SIZE["rt_lm_texts"]]
    target_corpus = tutorial.work / f"rotten_tomatoes_{len(texts)}.txt"
    target_corpus.write_text("\n\n".join(texts) + "\n", encoding="utf-8")
    target_corpus = str(target_corpus)
else:
    target_corpus = "rotten_tomatoes"
target = awd_pretrain.AwdPretrainSettings(
    corpus=(target_corpus,), eval_corpus="rotten_tomatoes", init_preset=general_preset,
    steps=SIZE["target_steps"], batch_size=SIZE["batch"], sequence_length=SIZE["length"],
    max_vocabulary=5000, min_count=2, learning_rate=3e-3, eval_batches=SIZE["eval_batches"],
    eval_every=SIZE["target_steps"], log_every=max(1, SIZE["target_steps"] // 15),
    checkpoint_every=10_000)
target_metrics = tutorial.pretrained(awd_pretrain.run, target, target_work,
                                     "target-task language model")
preset = str(target_work / "preset")
print(f"{target_metrics['new_words']:,} Rotten Tomatoes words added → "
      f"{target_metrics['vocabulary_size']:,} words; {target_metrics['steps']} steps "
      f"({target_metrics['text_passes']} passes over {target_metrics['train_tokens']:,} words)")
tutorial.table(
    "lm_perplexity", ["held-out text", "language model", "perplexity", "Kneser-Ney trigram"],
    [("WikiText-2 valid", f"stage 1 ({general_metrics['steps']} steps)",
      general_metrics["heldout_perplexity"], general_metrics["kneser_ney_trigram_perplexity"]),
     ("Rotten Tomatoes valid", "stage 1, before stage 2 (new words at the mean row)",
      target_metrics["heldout_perplexity_before"], ""),
     ("Rotten Tomatoes valid", f"stage 2 ({target_metrics['steps']} steps on RT's text)",
      target_metrics["heldout_perplexity"], target_metrics["kneser_ney_trigram_perplexity"])],
    f"Per word, {general_metrics['heldout_tokens']:,} / {target_metrics['heldout_tokens']:,} "
    "held-out targets; the trigram is fit on the same stage's training words")

figure = Figure(figsize=(12, 4))
figure.subplots_adjust(wspace=0.3)
for column, (folder, metrics, title) in enumerate((
        (general_work, general_metrics, "stage 1: WikiText-2"),
        (target_work, target_metrics, "stage 2: Rotten Tomatoes' text"))):
    rows = [r for r in read_rows(folder / "log.csv")
            if r.get("split", "train") == "train" and r.get("perplexity")]
    axes = figure.add_subplot(1, 2, column + 1)
    axes.plot([int(r["step"]) for r in rows], [float(r["perplexity"]) for r in rows], "o-",
              markersize=3, label="training perplexity (dropouts on)")
    axes.axhline(metrics["heldout_perplexity"], color="C1", label="held-out, after")
    if "heldout_perplexity_before" in metrics:
        axes.axhline(metrics["heldout_perplexity_before"], color="C1", linestyle=":",
                     label="held-out, before stage 2")
    axes.axhline(metrics["kneser_ney_trigram_perplexity"], color="grey", linestyle="--",
                 label="Kneser-Ney trigram, held-out")
    axes.set_yscale("log")
    axes.set_xlabel("step")
    axes.set_ylabel("perplexity per word")
    axes.set_title(title)
    axes.legend(fontsize=8)
path = tutorial.save(figure, "lm_curves.png")
tutorial.show(path, "The two language-model stages: training perplexity, held-out before and "
                    "after, the count baseline")

# %% [markdown]
# ## Stage 3's model: concat pooling over the fine-tuned LSTM
#
# `UlmfitClassifier.from_preset(preset, num_classes=2)` puts the head on the stage-2 encoder
# (the decoder is left behind). Its pooling is a layer of its own (`layers.awd.ConcatPooling`);
# below it is checked against the formula computed by hand in NumPy on two real snippets of
# different lengths, padded into one batch. Documents longer than the last `max_len` words
# (1,440, fastai's 72 × 20) are read whole but back-propagated only over their end — the paper's
# BPT3C; Rotten Tomatoes' snippets (19 words on average) never reach it. The last row checks
# that padding changes nothing: the shorter snippet pooled alone, unpadded, gives the same
# `h_c` as in the padded batch.
#
# For the classifier the encoder is rebuilt with heavier dropouts than the language model's
# (ULMFiT's classifier set at half strength, `AwdLstmConfig.with_dropouts("ulmfit", 0.5)`):
# dropout rates change no weight, so `from_preset(..., config={...})` accepts them.

# %%
rotten = load_dataset("rotten_tomatoes")
tokenizer = WordTokenizer.from_preset(preset)
classifier_dropouts = {f: getattr(AwdLstmConfig().with_dropouts("ulmfit", drop_mult=0.5), f)
                       for f in DROPOUT_FIELDS}
print("classifier dropouts:", classifier_dropouts)
model = UlmfitClassifier.from_preset(preset, num_classes=2, config=classifier_dropouts)
pair = pack_words(tokenizer, [rotten["train"].texts[0], rotten["train"].texts[3]],
                  SIZE["task_length"])
real = pair["padding_mask"].sum(axis=1)
states = keras.ops.convert_to_numpy(
    model.backbone.predict_on_batch(pair)["hidden_states"][-1])                 # (2, T, E)
pooled = keras.ops.convert_to_numpy(model.pooling(states, pair["padding_mask"]))  # (2, 3E)
width = states.shape[-1]
by_hand = {"h_T (state at the last real word)": [s[n - 1] for s, n in zip(states, real)],
           "maxpool(H) over the real words": [s[:n].max(0) for s, n in zip(states, real)],
           "meanpool(H) over the real words": [s[:n].mean(0) for s, n in zip(states, real)]}
rows = []
for k, (part, reference) in enumerate(by_hand.items()):
    layer = pooled[:, k * width:(k + 1) * width]
    rows.append((part, f"{k * width} … {(k + 1) * width - 1}",
                 f"{np.abs(layer - np.stack(reference)).max():.1e}"))
alone = pack_words(tokenizer, [rotten["train"].texts[3]], int(real[1]))   # no padding at all
alone_states = model.backbone.predict_on_batch(alone)["hidden_states"][-1]
alone_pooled = keras.ops.convert_to_numpy(model.pooling(alone_states, alone["padding_mask"]))
rows.append((f"all of h_c: the {real[1]}-word snippet alone vs padded to "
             f"{pair['padding_mask'].shape[1]}", f"0 … {3 * width - 1}",
             f"{np.abs(alone_pooled[0] - pooled[1]).max():.1e}"))
tutorial.table("concat_pooling", ["part of h_c", "positions in h_c",
                                  "largest difference (layer vs NumPy; last: alone vs padded)"],
               rows,
               f"ConcatPooling on two snippets: h_c has 3 × {width} = {3 * width} values; the "
               f"head then maps it to {model.hidden_dim} and to {model.num_classes} logits")

# %% [markdown]
# ## Technique 1: slanted triangular learning rates
#
# ULMFiT's eq. 3: over `T` steps the rate rises linearly for the first `cut = ⌊T · cut_frac⌋`
# steps and falls linearly for the rest,
#
# `p = t / cut` if `t < cut`, else `1 − (t − cut) / (cut · (1/cut_frac − 1))`;
# `η_t = η_max · (1 + p · (ratio − 1)) / ratio`,
#
# with `cut_frac = 0.1` and `ratio = 32` (the lowest rate is `η_max / 32`). The idea: get
# quickly to a good region of the weights, then refine for long. Below, the library's schedule
# (`training.schedules.SlantedTriangular`, through `training.finetune.learning_rate_schedule`,
# as the fine-tuning loop builds it) over this tutorial's classifier run, next to the warm-up +
# linear decay that BERT uses and the `full` configuration below uses, and checked against the
# formula written out in NumPy.

# %%
steps_per_epoch = math.ceil(SIZE["rt_train"] / SIZE["task_batch"])
total = steps_per_epoch * SIZE["epochs"]
t = np.arange(total + 1)
slanted = learning_rate_schedule("slanted", LEARNING_RATE, total, cut_fraction=0.1, ratio=32)
linear = learning_rate_schedule("linear", LEARNING_RATE, total, warmup_ratio=0.1)
eta_slanted = np.array([float(slanted(s)) for s in t])
eta_linear = np.array([float(linear(s)) for s in t])
cut = max(math.floor(total * 0.1), 1)   # the library keeps at least one step of increase
p = np.where(t < cut, t / cut, 1 - (t - cut) / (cut * (1 / 0.1 - 1)))
formula = LEARNING_RATE * (1 + np.maximum(p, 0) * 31) / 32
print(f"{total} steps ({SIZE['epochs']} epochs of {steps_per_epoch}); cut = {cut}; "
      f"largest |library − eq. 3| = {np.abs(eta_slanted - formula).max():.1e}; "
      f"η at t = 0, cut, T: {eta_slanted[0]:.2e}, {eta_slanted[cut]:.2e}, {eta_slanted[-1]:.2e}")

figure = Figure(figsize=(10, 4))
axes = figure.add_subplot()
axes.plot(t, eta_slanted, label="slanted triangular (ULMFiT eq. 3): cut_frac 0.1, ratio 32")
axes.plot(t, eta_linear, "--", label="warm-up 10 % + linear decay to 0 (BERT)")
axes.axvline(cut, color="grey", linewidth=0.8)
axes.annotate(f"cut = ⌊0.1 · T⌋ = {cut}", (cut, LEARNING_RATE), xytext=(cut + total * 0.04,
              LEARNING_RATE * 0.95), fontsize=9)
axes.annotate(f"η_max / 32 = {LEARNING_RATE / 32:.1e}", (total, LEARNING_RATE / 32),
              xytext=(total * 0.7, LEARNING_RATE * 0.2), fontsize=9,
              arrowprops=dict(arrowstyle="->"))
for epoch in range(1, SIZE["epochs"]):
    axes.axvline(epoch * steps_per_epoch, color="lightgrey", linewidth=0.6, linestyle=":")
axes.set_xlabel(f"step t (dotted: epoch boundaries, {steps_per_epoch} steps each)")
axes.set_ylabel("learning rate η_t")
axes.set_title(f"The classifier's schedules, η_max = {LEARNING_RATE}, T = {total} steps")
axes.legend(fontsize=9)
path = tutorial.save(figure, "slanted_triangular.png")
tutorial.show(path, "Slanted triangular learning rate vs BERT's warm-up and linear decay")

# %% [markdown]
# ## Technique 2: discriminative fine-tuning
#
# Different layers hold different kinds of information (the embeddings the most general, the
# top the most task-specific), so ULMFiT gives each *layer group* its own rate (eq. 2):
# `θ^l ← θ^l − η^l · ∇_θ^l J(θ)`, with `η^{l−1} = η^l / 2.6` — the top group at `η`, the one below
# at `η/2.6`, and so on down. In the library, `training.transfer.layer_groups` lists a model's
# groups bottom-up (a model may define its own: the AWD-LSTM tasks do) and
# `optimizers.adamw(model, layer_decay=1/2.6)` turns them into one rate factor per weight. The
# language model's groups (stage 2) put the embedding *on top* — it is also the tied output
# layer; the classifier's put it at the bottom, under the three LSTMs, with the new head on top.
# Below, the rates read back from the optimizers the library builds for the two models.

# %%
def group_name(group):
    names = [layer.name for layer in group]
    return "head (2 blocks)" if any(n.startswith("head_") for n in names) else " + ".join(names)


def group_rates(task, eta):
    """``[(group name, weights, rate)]`` of ``task``'s groups, bottom-up, from the optimizer."""
    optimizer = adamw(task, learning_rate=eta, layer_decay=1 / 2.6)
    variables = layer_groups(task)
    return [(group_name(layers), sum(int(np.prod(v.shape)) for v in group),
             eta * optimizer.lr_multipliers[group[0].path])
            for layers, group in zip(task.layer_groups(), variables)]


lm_config = AwdLstmConfig.from_dict(read_preset(preset).config)
language_model = AwdLstmLanguageModel(AwdLstmBackbone(lm_config))
classifier_rates = group_rates(model, LEARNING_RATE)
rates = {f"stage 2: the language model (η = {target.learning_rate})":
         group_rates(language_model, target.learning_rate),
         f"stage 3: the classifier (η = {LEARNING_RATE})": classifier_rates}
rows = [(stage.split(":")[0], name, weights, f"η / 2.6^{len(groups) - 1 - depth}", rate)
        for stage, groups in rates.items() for depth, (name, weights, rate) in enumerate(groups)]
tutorial.table("layer_groups", ["model", "layer group (bottom-up)", "weights", "rate",
                                "value"], rows,
               "Discriminative fine-tuning: each group learns 2.6 times slower than the one above")

figure = Figure(figsize=(12, 4))
figure.subplots_adjust(wspace=0.35)
for column, (stage, groups) in enumerate(rates.items()):
    axes = figure.add_subplot(1, 2, column + 1)
    values = [rate for _, _, rate in groups]
    axes.bar(range(len(groups)), values, color="C0" if column else "C2")
    for k, value in enumerate(values):
        axes.text(k, value * 1.15, f"{value:.1e}", ha="center", fontsize=8)
    axes.set_yscale("log")
    axes.set_ylim(min(values) / 3, max(values) * 4)
    axes.set_xticks(range(len(groups)), [name.replace(" + ", "\n+ ") for name, _, _ in groups],
                    fontsize=8)
    axes.set_ylabel("learning rate (log scale)")
    axes.set_title(stage, fontsize=10)
path = tutorial.save(figure, "discriminative_rates.png")
tutorial.show(path, "Discriminative learning rates, η^{l−1} = η^l / 2.6, read from the "
                    "library's optimizers")

# %% [markdown]
# ## Technique 3: gradual unfreezing
#
# Fine-tuning all layers at once on a few thousand labelled examples risks *catastrophic
# forgetting*: the large gradients of a freshly initialised head run through the whole network.
# ULMFiT (§3.3) first trains only the top group for one epoch, then unfreezes the next group
# down and trains all unfrozen groups for an epoch, and so on until every group trains.
# `training.transfer.GradualUnfreezing` is that rule as a Keras callback: at the start of each
# epoch it sets `trainable` on the groups and rebuilds the optimizer for the new set (keeping
# Adam's moments and the step counter). The grid below is read from the callback on this
# classifier: it is stepped through the epochs and, after each step, the trainable weights of
# every group are counted. Right: what each group's rate is at every step when all three
# techniques run together (the `all` configuration below) — the slanted triangle, divided by
# 2.6 per group, and zero while the group is frozen.

# %%
model.compile()
unfreezing = GradualUnfreezing()
unfreezing.set_model(model)
groups, names = layer_groups(model), [group_name(g) for g in model.layer_groups()]
epochs_shown = len(groups)
grid = np.zeros((len(groups), epochs_shown))
for epoch in range(epochs_shown):
    unfreezing.on_epoch_begin(epoch)
    grid[:, epoch] = [sum(int(np.prod(v.shape)) for v in group if v.trainable)
                      for group in groups]
print("trainable variables in each epoch (the callback's own record):",
      unfreezing.trainable_counts)
factors = np.array([rate for _, _, rate in classifier_rates]) / LEARNING_RATE

figure = Figure(figsize=(14, 4.5))
figure.subplots_adjust(wspace=0.3)
axes = figure.add_subplot(1, 2, 1)
axes.imshow(grid > 0, cmap="Blues", vmin=0, vmax=1.6, origin="lower", aspect="auto")
for g in range(len(groups)):
    for e in range(epochs_shown):
        axes.text(e, g, f"{int(grid[g, e]):,}" if grid[g, e] else "frozen", ha="center",
                  va="center", fontsize=8, color="black" if grid[g, e] else "grey")
axes.set_xticks(range(epochs_shown), [f"epoch {e + 1}" for e in range(epochs_shown)])
axes.set_yticks(range(len(groups)), names)
axes.set_title("trainable weights per layer group (GradualUnfreezing on the classifier)",
               fontsize=10)
axes = figure.add_subplot(1, 2, 2)
epoch_of_step = np.minimum(t // steps_per_epoch, min(SIZE["epochs"], epochs_shown) - 1)
for g in reversed(range(len(groups))):
    trains = grid[g, epoch_of_step] > 0          # read from the callback's grid
    axes.plot(t, np.where(trains, eta_slanted * factors[g], np.nan), label=names[g])
axes.set_yscale("log")
axes.set_xlabel(f"step ({SIZE['epochs']} epochs of {steps_per_epoch})")
axes.set_ylabel("learning rate of the group")
axes.set_title("all three techniques: the rate of each group at each step", fontsize=10)
axes.legend(fontsize=8)
path = tutorial.save(figure, "gradual_unfreezing.png")
tutorial.show(path, "Gradual unfreezing read from the library's callback, and every group's "
                    "rate under all three techniques")

# %% [markdown]
# ## The measured part: ULMFiT's Table 7 at this scale
#
# The paper's Table 7 compares ways of fine-tuning the classifier on top of the same target-task
# language model (validation error, IMDb / AG): training from scratch 9.93 / 6.81, fine-tuning
# the full model 6.87 / 5.81, and gradual unfreezing with discriminative rates and the slanted
# triangular schedule 5.00 / 5.38. Here, on Rotten Tomatoes, each configuration of
# `benchmarks/ulmfit.py` starts from the same stage-2 language model (or, for `scratch`, the same
# architecture and vocabulary at random), with the same head initialisation, the same labelled
# snippets (1,500 in full mode) and epochs, AdamW at the same peak rate, the epoch with
# the best validation accuracy kept (`training.finetune.fit_best_epoch`), and is scored on the
# test split:
#
# - `scratch`: no pretraining, all layers, slanted triangular;
# - `full`: all layers from the language model at one rate, warm-up and linear decay;
# - `last`: only the head trains; the language model stays frozen (its features, pooled);
# - `all`: gradual unfreezing + discriminative rates + slanted triangular — ULMFiT.
#
# With five epochs and five layer groups, gradual unfreezing reaches the embedding in the last
# epoch only, at `η/2.6⁴`. The classifier's 1,500 snippets are a sixth of Rotten Tomatoes'
# training set; the language model of stage 2 read the text of all 8,454.

# %%
CONFIGS = {   # name: (pretrained, unfreeze, schedule, layer_decay, what trains)
    "scratch": (False, "all", "slanted", 1.0, "random start, all layers, slanted triangular"),
    "full": (True, "all", "linear", 1.0, "all layers, one rate, warm-up + linear decay"),
    "last": (True, "top", "linear", 1.0, "the head only, the LM frozen"),
    "all": (True, "gradual", "slanted", 1 / 2.6,
            "gradual unfreezing + η/2.6 per group + slanted triangular"),
}
labels = LabelVocabulary.fit(rotten["train"].labels)


def split(part, limit):
    texts = rotten[part] if limit is None else rotten[part].subset(range(limit))
    return pack_words(tokenizer, texts.texts, SIZE["task_length"]), labels.encode(texts.labels)


train, valid, test = (split("train", SIZE["rt_train"]), split("valid", SIZE["rt_valid"]),
                      split("test", SIZE["rt_test"]))
print(f"{len(train[1])} training / {len(valid[1])} validation / {len(test[1])} test snippets; "
      f"{train[0]['padding_mask'].sum(1).mean():.1f} words on average (with <eos>); "
      f"{(train[0]['token_ids'] == 1).mean() / train[0]['padding_mask'].mean():.1%} <unk>")


def accuracy(task, data):
    return float((task.predict_packed(data[0], batch_size=128).argmax(-1) == data[1]).mean())


def fine_tune(name, train_part):
    """One configuration from the same start; its validation curve and test accuracy."""
    pretrained, unfreeze, schedule, decay, _ = CONFIGS[name]
    keras.utils.set_random_seed(0)
    if pretrained:
        task = UlmfitClassifier.from_preset(preset, num_classes=2, config=classifier_dropouts)
    else:
        task = UlmfitClassifier(AwdLstmBackbone(AwdLstmConfig.from_dict(
            {**read_preset(preset).config, **classifier_dropouts})), num_classes=2)
    began = time.time()
    report = fit_best_epoch(
        task, batches(*train_part, batch_size=SIZE["task_batch"], shuffle=True, seed=0),
        lambda m: {"accuracy": accuracy(m, valid)}, "accuracy",
        tutorial.work / "classifiers" / f"{name}_{len(train_part[1])}", epochs=SIZE["epochs"],
        learning_rate=LEARNING_RATE, schedule=schedule, unfreeze=unfreeze, layer_decay=decay,
        patience=SIZE["epochs"], verbose=0)
    result = dict(valid=[r["accuracy"] for r in report["epochs"]],
                  best_valid=report["best"]["accuracy"], best_epoch=report["best_epoch"],
                  test=accuracy(task, test), seconds=time.time() - began)
    print(f"{name:>7} on {len(train_part[1])} labels: validation " +
          " ".join(f"{a:.3f}" for a in result["valid"]) +
          f" → test {result['test']:.4f} ({result['seconds']:.0f} s)")
    return result


results = {name: fine_tune(name, train) for name in CONFIGS}
majority = max(np.mean(test[1]), 1 - np.mean(test[1]))
paper = {"scratch": "9.93 / 6.81", "full": "6.87 / 5.81", "all": "5.00 / 5.38"}
rows = [(name, CONFIGS[name][4], r["best_valid"], r["best_epoch"], r["test"],
         f"{100 * (1 - r['test']):.1f}", paper.get(name, "—"), f"{r['seconds']:.0f} s")
        for name, r in results.items()]
rows.append(("majority class", "", "", "", majority, f"{100 * (1 - majority):.1f}", "", ""))
tutorial.table("table7", ["config", "what trains", "best validation accuracy", "epoch",
                          "test accuracy", "test error %",
                          "paper: IMDb / AG validation error %", "time"], rows,
               f"Rotten Tomatoes, {len(train[1])} labels, {SIZE['epochs']} epochs, η = "
               f"{LEARNING_RATE} (KERAS_BACKEND={keras.backend.backend()}); the last column is "
               "the paper's Table 7")

figure = Figure(figsize=(12, 4))
figure.subplots_adjust(wspace=0.3)
axes = figure.add_subplot(1, 2, 1)
for name, r in results.items():
    axes.plot(range(1, len(r["valid"]) + 1), r["valid"], "o-", label=name)
axes.axhline(max(np.mean(valid[1]), 1 - np.mean(valid[1])), color="grey", linestyle=":",
             label="majority class")
axes.set_xlabel("epoch")
axes.set_ylabel("validation accuracy")
axes.set_title(f"{len(train[1])} labels: validation accuracy after each epoch", fontsize=10)
axes.legend(fontsize=8)
axes = figure.add_subplot(1, 2, 2)
axes.bar(range(len(results)), [r["test"] for r in results.values()],
         color=[f"C{k}" for k in range(len(results))])
for k, r in enumerate(results.values()):
    axes.text(k, r["test"] + 0.005, f"{r['test']:.3f}", ha="center", fontsize=9)
axes.axhline(majority, color="grey", linestyle=":")
axes.set_xticks(range(len(results)), list(results))
axes.set_ylim(0.4, 1.0)
axes.set_ylabel("test accuracy (best validation epoch)")
axes.set_title("Rotten Tomatoes test accuracy", fontsize=10)
path = tutorial.save(figure, "fine_tuning.png")
tutorial.show(path, "Four ways to fine-tune the classifier: validation curves and test accuracy")

# %% [markdown]
# ## Few labels: what the language model is worth when labels are scarce
#
# The paper's strongest claim is about small labelled sets: "with only 100 labeled examples, it
# matches the performance of training from scratch on 100× more data" (the abstract; Figure 3,
# where the language model was fine-tuned on all of the task's unlabelled text — the
# *semi-supervised* setting). This is that setting here: the stage-2 language model read the text
# of all of Rotten Tomatoes' training snippets, and the classifier gets the labels of only the
# first 500 (16 in smoke mode) — from scratch, with full fine-tuning, and with all three
# techniques.

# %%
few = (({k: v[:SIZE["few_labels"]] for k, v in train[0].items()}), train[1][:SIZE["few_labels"]])
few_results = {name: fine_tune(name, few) for name in ("scratch", "full", "all")}
rows = [(f"{name} on {len(few[1])} labels", r["best_valid"], r["test"],
         f"{100 * (r['test'] - few_results['scratch']['test']):+.1f}",
         f"{r['seconds']:.0f} s") for name, r in few_results.items()]
rows += [(f"{name} on {len(train[1])} labels (above)", results[name]["best_valid"],
          results[name]["test"], "", "") for name in ("scratch", "full", "all")]
tutorial.table("few_labels", ["config", "best validation accuracy", "test accuracy",
                              "vs scratch (points)", "time"], rows,
               f"Rotten Tomatoes with {len(few[1])} labels: the language model read all "
               f"{len(rotten['train'].texts):,} training snippets' text, unlabelled")

# %%
tutorial.finish()

# %% [markdown]
# ## What the full run showed
#
# The full run: `KERAS_BACKEND=tensorflow`, 2 December 2026, on the 2-core AMD EPYC printed at the
# top (shared with other jobs), 807 s by the tutorial's own clock (812 s in `build.py`'s record).
#
# - **Stage 1.** The `mini` AWD-LSTM (4,151,808 weights, 15,000 words) saw 806,400 words of
#   WikiText-2 (0.38 passes) in 277 s; held-out perplexity 301.9 against the Kneser-Ney
#   trigram's 156.0 on the same 44,800 targets. At this budget the LSTM has not caught up with
#   counting.
# - **Stage 2.** 3,534 Rotten Tomatoes words were added; 90 steps over the snippets' text
#   (1.02 passes) took Rotten Tomatoes' validation perplexity from 543.1 to 297.4 (trigram
#   172.7) — the stage does what the paper says it does, the largest effect in this station.
# - **Concat pooling** matched the NumPy formula to 6.0e-08; the slanted triangular schedule
#   matched eq. 3 to 2.7e-10.
# - **Table 7 at this scale** (1,500 labels, test accuracy): scratch / full / last / all =
#   0.611 / 0.598 / 0.542 / 0.588; majority class 0.516.
# - **Few labels** (500): scratch / full / all = 0.624 / 0.526 / 0.488.
#
# The paper's ordering did not hold here: the randomly initialised classifier was best on both
# label counts, full fine-tuning second, all three techniques third (and below the majority
# class on 500 labels), with one seed each and validation curves that move by ±3 points from
# epoch to epoch — the gaps at 1,500 labels are inside that noise, the ones at 500 are not. The
# reason is the language model: the paper's AWD-LSTM read WikiText-103 for many epochs to a
# perplexity far below a trigram's; ours read 0.38 of a pass of WikiText-2 and stayed at twice
# the trigram's perplexity, so what the classifier inherits is close to word frequencies, and
# the techniques built to *protect* pretrained knowledge (small rates low down, frozen layers
# for the first epochs) mostly slow down learning from the labels. This is the same direction
# as the lab's first measurement (benchmarks/results/quality.md, ULMFiT: the three techniques cost 12.5
# points with a one-pass LM). What would change it is a stage 1 that beats the count baseline —
# hours rather than minutes of two CPU cores, outside a tutorial's budget.
