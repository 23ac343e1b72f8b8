# %% [markdown]
# # 12. After BERT: learning from every token (ELECTRA)
#
# *Station 12 of 12, the epilogue — [the map](README.md).* Runs on every Keras backend: set
# `KERAS_BACKEND` to `tensorflow`, `jax` or `torch` before starting; the code is the same.
#
# - **Needs:** WikiText-2 (`wikitext2`) and Rotten Tomatoes (`rotten_tomatoes`) — installed by
#   `make install`.
# - **Smoke mode** (`KBL_TUTORIAL_MODE=smoke`): a tiny BERT and a tiny ELECTRA pretrained for a
#   few steps on a few WikiText-2 articles; every fine-tuning run on a handful of examples.
# - **Full mode** (the default): BERT-mini and ELECTRA-mini (the same 4 × 256 encoder, 11 M
#   weights) each pretrained on WikiText-2 for the same wall-clock budget (8 minutes), then
#   fine-tuned with one recipe on Rotten Tomatoes, three seeds each, next to the same encoder
#   trained from scratch. About 30 minutes on two CPU cores; the pretrained models are kept in
#   the tutorial's work folder and reused by the next run with the same settings.
# - **Build:** `python tutorials/build.py --only 12` (or `make tutorials` for all).
#
# Stations 6–9 built BERT's masked language model: hide 15 % of the tokens, predict them. The
# training signal comes from those 15 % only; the other 85 % are read but never scored. ELECTRA
# (Clark et al. 2020, "Pre-training Text Encoders as Discriminators Rather Than Generators")
# asks the encoder a question about *every* token instead: a small generator — itself a masked
# LM — fills the masked positions with plausible words, and the encoder, now a
# *discriminator*, says for each token whether it is the original or a replacement. The paper's
# claim is about compute: "the model learns from all input tokens instead of just the small
# masked-out subset, making it more computationally efficient" (§1), and its headline is the
# small model — ELECTRA-Small (14 M weights, 4 days on one V100) scores 79.9 on GLUE dev
# against 75.1 for a BERT-Small trained with the same compute. This station:
#
# 1. sets out the two objectives on the same masking step;
# 2. pretrains BERT-mini (masked LM) and ELECTRA-mini (replaced-token detection) on the same
#    text for the same wall time, with the library's own recipes, and runs the trained ELECTRA's
#    corruption on held-out text to show where each objective takes its signal from;
# 3. fine-tunes both encoders with one recipe on Rotten Tomatoes, next to the encoder from
#    scratch, and sets the result beside the paper's.

# %%
import _common

tutorial = _common.start("12_learning_from_every_token", data=["wikitext2", "rotten_tomatoes"])

# %%
import statistics
import time

import keras
import numpy as np
from matplotlib.figure import Figure

from keras_bert_lab import BertBackbone, BertClassifier, ElectraBackbone, ElectraClassifier
from keras_bert_lab.cli import main as kbl
from keras_bert_lab.data.labelled import load_dataset
from keras_bert_lab.metrics.classification import classification_scores
from keras_bert_lab.models.bert import pretrain as bert_pretrain
from keras_bert_lab.models.electra import pretrain as electra_pretrain
from keras_bert_lab.models.electra.pretrainer import ElectraPretrainer
from keras_bert_lab.pipelines.batches import batches
from keras_bert_lab.pipelines.pretraining import pretraining_dataset
from keras_bert_lab.preprocessing.encoder_text import EncoderTextPreprocessor
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from keras_bert_lab.training.finetune import fit_best_epoch
from keras_bert_lab.training.run import read_rows

tutorial.eager_in_smoke()
SIZE = tutorial.size(
    smoke=dict(model="tiny", vocab=600, steps=3, budget=None, batch=8, length=32,
               eval_batches=1, train_documents=3, valid_documents=2, rt_train=32, rt_eval=32,
               epochs=1, learning_rate=3e-4, seeds=(0,)),
    full=dict(model="mini", vocab=8192, steps=1_000_000, budget="8m", batch=32, length=64,
              eval_batches=20, train_documents=None, valid_documents=None, rt_train=2048,
              rt_eval=1057, epochs=3, learning_rate=3e-4, seeds=(0, 1, 2)))
print(SIZE)

# %% [markdown]
# ## 1. One sentence, two objectives
#
# Both recipes start from the same masking step (station 6): about 15 % of the positions are
# selected. BERT puts `[MASK]` at 80 % of them, a random token at 10 % and keeps 10 %, and is
# scored on predicting the originals there. ELECTRA puts `[MASK]` at 85 % and keeps 15 % (no
# random tokens: the generator supplies the replacements), lets its generator — a masked LM a
# quarter of the discriminator's width, sharing its embeddings — *sample* a word at each selected
# position, and asks the discriminator about every token of the result: original or replaced?
# A sampled word that happens to equal the original counts as original, so the labels say what
# is really in the input.
#
# The vocabulary first: one WordPiece vocabulary learned on WikiText-2's training text
# (`kbl vocab`), for both models.

# %%
corpus, eval_corpus = tutorial.corpora(SIZE["train_documents"], SIZE["valid_documents"])
vocabulary_corpus = "wikitext2:train" if corpus == "wikitext2" else corpus
wordpiece = tutorial.work / f"wordpiece_{SIZE['vocab']}" / "vocab.txt"
if not wordpiece.is_file():
    began = time.time()
    code = kbl(["vocab", "--corpus", vocabulary_corpus, "--vocabulary-size", str(SIZE["vocab"]),
                "--output", str(wordpiece), "--quiet"])
    assert code == 0, f"kbl vocab exited with {code}"
    print(f"  ({time.time() - began:.0f} s)")
else:
    print(f"reusing the vocabulary in {wordpiece}")
tokenizer = WordPieceTokenizer(str(wordpiece))
print(f"WordPiece: {tokenizer.vocabulary_size:,} tokens")

# %% [markdown]
# ## 2. Pretraining both for the same wall time
#
# Same text (WikiText-2's training split in blocks of 64 tokens across sentence and document
# ends), same batch, same encoder (4 layers, 256 wide; ELECTRA-mini's discriminator *is*
# BERT-mini's encoder), same budget of wall time — the paper's comparison is at equal compute,
# not equal steps — each with its own recipe:
#
# - **BERT** (`kbl pretrain --next-sentence false --packing true`): the masked LM alone, so that
#   the objective is the one thing that differs (ELECTRA has no next-sentence task either);
# - **ELECTRA** (`kbl pretrain --model electra`, `models.electra.pretrain`): generator MLM loss +
#   50 × the discriminator's loss (the paper's λ; the binary loss per token is much smaller than
#   the vocabulary-wide one), AdamW at 5e-4 as for ELECTRA-Small.
#
# ELECTRA's step costs more — a second, smaller encoder runs before the discriminator, and
# sampling reads the generator's whole output distribution — so within one budget it takes fewer
# steps. Each recipe sizes its steps to the budget by timing a few first (`--time-budget`).

# %%
shape = dict(corpus=corpus, eval_corpus=eval_corpus, vocabulary=str(wordpiece),
             size=SIZE["model"], steps=SIZE["steps"], time_budget=SIZE["budget"],
             batch_size=SIZE["batch"], sequence_length=SIZE["length"], seed=0,
             eval_batches=SIZE["eval_batches"], eval_every=10_000_000, log_every=10,
             checkpoint_every=10_000_000, next_sentence=False, packing=True)
runs = {"BERT": (bert_pretrain.run, bert_pretrain.PretrainSettings(**shape)),
        "ELECTRA": (electra_pretrain.run, electra_pretrain.ElectraPretrainSettings(**shape))}
metrics, presets = {}, {}
for name, (run, settings) in runs.items():
    folder = tutorial.work / f"pretrain_{name.lower()}"
    metrics[name] = tutorial.pretrained(run, settings, folder, f"{name}-{SIZE['model']}")
    presets[name] = str(folder / "preset")
backbones = {"BERT": BertBackbone.from_preset(presets["BERT"]),
             "ELECTRA": ElectraBackbone.from_preset(presets["ELECTRA"])}
bert, electra = metrics["BERT"], metrics["ELECTRA"]
scored = SIZE["batch"] * SIZE["length"]
masked = round(0.15 * scored)
tutorial.table("pretraining", [
    "model", "objective", "encoder weights", "steps", "tokens scored per step",
    "held-out score", "baseline on the same targets", "wall time"], [
    (f"BERT-{SIZE['model']}", "masked LM", backbones["BERT"].count_params(), bert["steps"],
     f"≈ {masked:,} (the masked 15 %)", f"MLM accuracy {bert['heldout_mlm_accuracy']:.3f}",
     f"always \"{bert['unigram_token']}\": {bert['unigram_mlm_accuracy']:.3f}",
     f"{bert['seconds']:.0f} s"),
    (f"ELECTRA-{SIZE['model']}", "replaced-token detection (+ generator MLM)",
     backbones["ELECTRA"].count_params(), electra["steps"], f"{scored:,} (every token)",
     f"discriminator accuracy {electra['heldout_rtd_accuracy']:.3f}, AUC "
     f"{electra['heldout_rtd_auc']:.3f}; generator MLM accuracy "
     f"{electra['heldout_mlm_accuracy']:.3f}",
     f"always \"original\": {electra['all_original_accuracy']:.3f}; AUC 0.5",
     f"{electra['seconds']:.0f} s")],
    f"Batches of {SIZE['batch']} × {SIZE['length']} tokens, budget "
    f"{SIZE['budget'] or str(SIZE['steps']) + ' steps'} each (KERAS_BACKEND="
    f"{keras.backend.backend()}; wall time includes reading the corpus, compiling and timing "
    "the step)")

figure = Figure(figsize=(13, 3.8))
logs = {name: read_rows(tutorial.work / f"pretrain_{name.lower()}" / "log.csv") for name in runs}
for column, (name, key, label) in enumerate((
        ("BERT", "mlm_accuracy", "BERT: masked-token accuracy"),
        ("ELECTRA", "rtd_accuracy", "ELECTRA: discriminator accuracy"),
        ("ELECTRA", "rtd_auc", "ELECTRA: replaced-vs-original AUC"))):
    axes = figure.add_subplot(1, 3, column + 1)
    points = [(int(r["step"]), float(r[key])) for r in logs[name]
              if r.get("split") == "train" and r.get(key)]
    if points:
        axes.plot(*zip(*points), "-", label="training batches")
    baseline = {"mlm_accuracy": bert["unigram_mlm_accuracy"],
                "rtd_accuracy": electra["all_original_accuracy"], "rtd_auc": 0.5}[key]
    axes.axhline(baseline, color="black", linestyle=":",
                 label={"mlm_accuracy": f"always \"{bert['unigram_token']}\"",
                        "rtd_accuracy": "always \"original\"", "rtd_auc": "chance"}[key])
    axes.set_xlabel("step")
    axes.set_title(label, fontsize=10)
    axes.legend(fontsize=8)
path = tutorial.save(figure, "pretraining_curves.png")
tutorial.show(path, "Pretraining within one budget: each objective against its own baseline")

# %% [markdown]
# The discriminator's accuracy has a high floor: most tokens are original, so answering
# "original" everywhere is right about 85 % of the time. What it learned shows in the AUC — how
# well it ranks replaced tokens above original ones — and, in the end, in fine-tuning.
#
# Below, one held-out block through the trained ELECTRA: the tokens the generator wrote, and the
# discriminator's probability that each token was replaced. Every one of these tokens is a
# training target for the discriminator; BERT would have been scored at the selected ones only.

# %%
held_out = pretraining_dataset(eval_corpus, tokenizer, batch_size=4,
                               sequence_length=SIZE["length"], mask_token_rate=0.85,
                               random_token_rate=0.0, next_sentence=False, pack=True, seed=7,
                               output="dict", num_epochs=1)
x = {k: v.numpy() for k, v in next(iter(held_out)).items()}
pretrainer = ElectraPretrainer.from_preset(presets["ELECTRA"])   # generator and discriminator
corrupt = keras.Model(pretrainer.input, pretrainer.replace_tokens.output[0])   # what it reads
features = {k: x[k] for k in pretrainer.input}
outputs = pretrainer.predict_on_batch(features)
corrupted = keras.ops.convert_to_numpy(corrupt.predict_on_batch(features))
probability = 1 / (1 + np.exp(-keras.ops.convert_to_numpy(outputs["rtd"])))
replaced = keras.ops.convert_to_numpy(outputs["replaced"])
selected = np.zeros_like(replaced)
for row in range(len(selected)):
    selected[row, x["mask_positions"][row][x["mask_weights"][row] > 0]] = 1
real = x["padding_mask"].astype(bool)
tutorial.table("signal_per_block", ["held-out blocks", "real tokens", "selected (BERT's targets)",
                                    "replaced by the generator", "ELECTRA's targets"],
               [(len(real), int(real.sum()), int(selected[real].sum()),
                 int(replaced[real].sum()), int(real.sum()))],
               "Where each objective takes its training signal from, on four held-out blocks "
               "(a selected token the generator sampled back unchanged counts as original)")

row, shown = 0, min(SIZE["length"], 32)
original = [tokenizer.id_to_token(int(i)) for i in
            np.where(selected[row] > 0, 0, x["token_ids"][row])[:shown]]
for position, token, weight in zip(x["mask_positions"][row], x["mask_ids"][row],
                                   x["mask_weights"][row]):
    if weight > 0 and position < shown:
        original[position] = tokenizer.id_to_token(int(token))
written = [tokenizer.id_to_token(int(i)) for i in corrupted[row][:shown]]
figure = Figure(figsize=(13, 4.4))
axes = figure.add_subplot(1, 1, 1)
colours = ["tab:red" if replaced[row, i] else ("tab:orange" if selected[row, i] else "tab:blue")
           for i in range(shown)]
axes.bar(range(shown), probability[row, :shown], color=colours)
axes.set_xticks(range(shown), [w if w == o else f"{w}\n(was {o})"
                               for w, o in zip(written, original)], rotation=90, fontsize=7)
axes.set_ylim(0, 1)
axes.set_ylabel("discriminator: P(replaced)")
axes.set_title("One held-out block after the generator (red: replaced, orange: selected but "
               "sampled back unchanged, blue: never selected)", fontsize=10)
path = tutorial.save(figure, "every_token.png")
tutorial.show(path, "Every token is a question for the discriminator")

# %% [markdown]
# ## 3. Fine-tuning both encoders with one recipe
#
# Each pretrained encoder gets the same classifier and recipe on Rotten Tomatoes: the mean of
# the last layer (neither model trained the `[CLS]` pooler: BERT here has no next-sentence task
# and ELECTRA never reads it), `fit_best_epoch` (AdamW at 3e-4 — ELECTRA-Small's fine-tuning
# rate — with 10 % warm-up and linear decay, batch 32, the best validation epoch kept), three
# seeds. "From scratch" is the same encoder with random weights: what the task data alone teach.

# %%
rotten = load_dataset("rotten_tomatoes")
labels = ["negative", "positive"]
rt = {split: rotten[split].subset(range(min(count, len(rotten[split])))) for split, count in (
    ("train", SIZE["rt_train"]), ("valid", SIZE["rt_eval"]), ("test", SIZE["rt_eval"]))}
y = {split: np.array([labels.index(t) for t in part.labels]) for split, part in rt.items()}
preprocess = EncoderTextPreprocessor(tokenizer, 64)
inputs = {split: preprocess(part.texts) for split, part in rt.items()}
ROWS = {f"BERT-{SIZE['model']} (masked LM)": ("BERT", "pretrained"),
        f"ELECTRA-{SIZE['model']} (replaced-token detection)": ("ELECTRA", "pretrained"),
        "the same encoder from scratch": ("BERT", "from scratch")}


def task_model(arch, init):
    backbone = backbones[arch]
    backbone = type(backbone).from_preset(presets[arch]) if init == "pretrained" else \
        type(backbone)(backbone.config)
    head = BertClassifier if arch == "BERT" else ElectraClassifier
    return head(backbone, num_classes=2, pooling="mean")


def accuracy(model, split):
    return classification_scores(model.predict_packed(inputs[split], 64), y[split],
                                 "single_label")["accuracy"]


results = {}
for seed in SIZE["seeds"]:   # seed by seed: a first complete table comes early
    for row_name, (arch, init) in ROWS.items():
        keras.utils.set_random_seed(seed)
        model = task_model(arch, init)
        began = time.time()
        report = fit_best_epoch(
            model, batches(inputs["train"], y["train"], batch_size=32, shuffle=True, seed=seed),
            lambda m: {"accuracy": accuracy(m, "valid")}, "accuracy",
            tutorial.work / "finetune" / f"{arch}_{init.replace(' ', '_')}_{seed}",
            epochs=SIZE["epochs"], learning_rate=SIZE["learning_rate"],
            patience=SIZE["epochs"], verbose=0)
        results.setdefault(row_name, []).append(accuracy(model, "test"))
        print(f"{row_name}, seed {seed}: test accuracy {results[row_name][-1]:.4f} "
              f"(validation {report['best']['accuracy']:.4f}) in {time.time() - began:.0f} s")


majority = max(np.mean(y["test"]), 1 - np.mean(y["test"]))
tutorial.table("fine_tuning", ["encoder", "Rotten Tomatoes: test accuracy"],
               [*((name, _common.spread(values)) for name, values in results.items()),
                ("majority class", f"{majority:.3f}")],
               f"One recipe: {SIZE['epochs']} epochs, AdamW {SIZE['learning_rate']:g}, batch "
               f"32, mean pooling; mean ± standard deviation over seeds "
               f"(KERAS_BACKEND={keras.backend.backend()})")

figure = Figure(figsize=(7, 4.2))
axes = figure.add_subplot(1, 1, 1)
for i, (name, values) in enumerate(results.items()):
    axes.bar(i, np.mean(values), color=("tab:blue", "tab:green", "lightgrey")[i],
             edgecolor="grey")
    axes.plot([i] * len(values), values, "k.", markersize=6)
axes.axhline(majority, color="black", linestyle=":", label="majority class")
axes.set_xticks(range(len(results)), [n.replace(" (", "\n(") for n in results], fontsize=8)
axes.set_ylabel("test accuracy")
axes.set_ylim(0, 1.05)
axes.legend(fontsize=8, loc="lower right")
path = tutorial.save(figure, "fine_tuning.png")
tutorial.show(path, "Rotten Tomatoes after one budget of pretraining (bars: mean; dots: seeds)")

# %% [markdown]
# For scale, the paper's numbers (Clark et al. 2020, GLUE dev). Table 1 compares small models at
# their training compute; Table 5 takes ELECTRA apart at the Base size to ask where its gain
# comes from. "ELECTRA 15 %" computes the discriminator's loss over the 15 % of masked
# positions only, and loses most of the gain; "All-Tokens MLM" is a masked LM that predicts
# every token, and wins most of it back: learning from every token is the larger part of why
# ELECTRA is efficient, the smaller part is that it never sees `[MASK]`, which fine-tuning text
# does not contain.

# %%
tutorial.table("paper", ["paper: model", "train FLOPs", "GLUE dev"], [
    ("ELECTRA-Small (14 M, 4 days on one V100)", "1.4e18", "79.9"),
    ("BERT-Small (14 M, the same compute)", "1.4e18", "75.1"),
    ("GPT (117 M)", "4.0e19", "78.8"),
    ("Base size: BERT", "", "82.2"), ("Base size: ELECTRA 15 %", "", "82.4"),
    ("Base size: All-Tokens MLM", "", "84.3"), ("Base size: ELECTRA", "", "85.0")],
    "The ELECTRA paper's Tables 1 and 5 (Clark et al. 2020) — the paper's numbers, not ours")

# %%
means = {name: statistics.mean(values) for name, values in results.items()}
names = list(ROWS)
gap = means[names[1]] - means[names[0]]
noise = max((statistics.stdev(v) for v in results.values() if len(v) > 1), default=0.0)
verdict = ("ELECTRA ahead" if gap > 2 * noise and noise > 0 else
           "BERT ahead" if -gap > 2 * noise and noise > 0 else "level within the seeds' spread")
print(f"ELECTRA − BERT on Rotten Tomatoes: {gap:+.3f} (largest seed sd {noise:.3f}): {verdict}; "
      f"steps in the budget: BERT {bert['steps']}, ELECTRA {electra['steps']}; discriminator "
      f"AUC {electra['heldout_rtd_auc']:.3f}")

# %%
tutorial.finish()
