# %% [markdown]
# # 5. GPT: a left-to-right Transformer, pretrained then fine-tuned
#
# *Station 5 of 12 — [the map](README.md).* Runs on every Keras backend: set `KERAS_BACKEND`
# to `tensorflow`, `jax` or `torch` before starting; the code is the same.
#
# - **Needs:** WikiText-2 (`wikitext2`) and Rotten Tomatoes (`rotten_tomatoes`) — installed by
#   `make install`.
# - **Smoke mode** (`KBL_TUTORIAL_MODE=smoke`): a tiny GPT trained for a few steps on a few
#   WikiText-2 articles; fine-tuning on a handful of snippets.
# - **Full mode** (the default): GPT-mini (4 layers, 256 wide) pretrained on all of WikiText-2 for
#   a few minutes, then fine-tuned on a thousand Rotten Tomatoes snippets next to the same
#   network trained from scratch. The pretrained model is kept in the tutorial's work folder and
#   reused by the next run with the same settings.
# - **Build:** `python tutorials/build.py --only 05` (or `make tutorials` for all).
#
# ELMo (station 3) trained language models and handed their frozen layers to a task model;
# ULMFiT (station 4) fine-tuned the language model itself. GPT (Radford et al. 2018, "Improving
# Language Understanding by Generative Pre-Training") keeps ULMFiT's plan — pretrain a language
# model, then fine-tune all of it — and swaps the LSTM for a Transformer *decoder*: a stack of
# self-attention blocks in which every token may look only at itself and the tokens before it.
# For the task, it changes the *input* rather than the model: every task's text is rearranged
# into one token sequence, and one linear layer reads the last token's state.

# %%
import _common

tutorial = _common.start("05_gpt", data=["wikitext2", "rotten_tomatoes"])

# %%
import shutil
import time

import keras
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from keras_bert_lab import GPTBackbone, GPTCausalLM, GPTClassifier, GPTMultipleChoice
from keras_bert_lab.data.labelled import load_dataset
from keras_bert_lab.metrics.classification import classification_scores
from keras_bert_lab.pipelines.batches import batches
from keras_bert_lab.preprocessing.bpe import BytePairTokenizer
from keras_bert_lab.models.gpt.preprocessor import GPTTaskPacker
from keras_bert_lab.models.gpt import pretrain as language_model
from keras_bert_lab.training.finetune import fit_best_epoch

tutorial.eager_in_smoke()
SIZE = tutorial.size(
    smoke=dict(model="tiny", steps=4, batch=8, length=32, merges=300, eval_batches=1,
               train_documents=3, valid_documents=2, generate=16, rt_train=32, rt_valid=32,
               epochs=1, task_length=32),
    full=dict(model="mini", steps=220, batch=32, length=64, merges=4000, eval_batches=20,
              train_documents=None, valid_documents=None, generate=32, rt_train=1024,
              rt_valid=500, epochs=3, task_length=64))
print(SIZE)

# %% [markdown]
# ## Pretraining GPT-mini on WikiText-2
#
# `kbl pretrain --model gpt` (the recipe `keras_bert_lab.models.gpt.pretrain`) learns a
# byte-pair vocabulary on the training text (GPT-1 used 40,000 merges on BooksCorpus; here a few
# thousand), cuts the text into blocks and trains the decoder to predict every next token —
# AdamW, a linear warm-up then a cosine decay, as §4.1 of the paper. GPT-1 trained for 100 epochs
# of 7,000 books on 8 GPUs for a month; this run gets a few minutes of two CPU cores and sees
# WikiText-2 a fraction of once. The recipe scores it on held-out WikiText-2 next to an
# interpolated Kneser-Ney trigram model (counts, no network) on the same BPE tokens.

# %%
work = tutorial.work / "gpt"
corpus, eval_corpus = tutorial.corpora(SIZE["train_documents"], SIZE["valid_documents"])
settings = language_model.LanguageModelSettings(
    corpus=corpus, eval_corpus=eval_corpus, size=SIZE["model"], steps=SIZE["steps"],
    batch_size=SIZE["batch"], sequence_length=SIZE["length"], bpe_merges=SIZE["merges"],
    learning_rate=1e-3, eval_batches=SIZE["eval_batches"], eval_every=SIZE["steps"],
    log_every=max(1, SIZE["steps"] // 20), checkpoint_every=10_000)
metrics = tutorial.pretrained(language_model.run, settings, work, "GPT")
preset = str(work / "preset")
lm = GPTCausalLM.from_preset(preset)
tokenizer = BytePairTokenizer.from_preset(preset)
config = lm.backbone.config
print(f"GPT-{settings.size}: {config.num_layers} layers, hidden {config.hidden_size}, "
      f"{config.num_heads} heads, {lm.count_params():,} weights ({config.vocabulary_size:,} BPE "
      f"tokens); {metrics['steps']} steps of {settings.batch_size} × "
      f"{settings.sequence_length} tokens = {metrics['tokens_seen']:,} tokens seen of "
      f"{metrics['train_tokens']:,}")
tutorial.table("gpt_perplexity", ["model", "held-out tokens", "perplexity", "next-token accuracy"],
               [(f"GPT-{settings.size}, {metrics['steps']} steps", metrics["heldout_tokens"],
                 metrics["heldout_perplexity"], metrics["heldout_accuracy"]),
                ("interpolated Kneser-Ney trigram (same tokens)", metrics["heldout_tokens"],
                 metrics["kneser_ney_trigram_perplexity"], "")],
               "Held-out WikiText-2, per BPE token")
if (work / "curves.png").is_file():
    shutil.copy(work / "curves.png", tutorial.figure_path("gpt_curves.png"))
tutorial.show(tutorial.figure_path("gpt_curves.png"), "GPT pretraining: loss and accuracy")

# %% [markdown]
# ## The causal mask
#
# In BERT (station 8) every token attends to every token. In GPT's decoder, token `i` attends
# only to tokens `0 … i`: the attention scores above the diagonal are set to −∞ before the
# softmax, so their weights are exactly zero. That is what makes it a language model — the
# state at position `i` is a function of the text up to `i`, so it can be trained to predict
# token `i + 1` at every position at once without seeing it.
#
# Left, the mask for a sentence. Right, the mask *measured* on the pretrained model: change
# token `j` (to another token) and record how much the last layer's state at position `i`
# moves. Nothing at `i < j` moves at all.

# %%
sentence = "let 's stick to the plan ."
ids = tokenizer.encode(sentence)
pieces = [tokenizer.id_to_token(i) for i in ids]
n = len(ids)
base = {"token_ids": np.array([ids], "int32"), "padding_mask": np.ones((1, n), "int32")}
reference = keras.ops.convert_to_numpy(lm.backbone.predict_on_batch(base)["sequence_output"])[0]
change = np.zeros((n, n))
for j in range(n):
    edited = np.array([ids], "int32")
    edited[0, j] = tokenizer.token_to_id("the</w>") if ids[j] != tokenizer.token_to_id(
        "the</w>") else tokenizer.token_to_id(",</w>")
    out = keras.ops.convert_to_numpy(lm.backbone.predict_on_batch(
        {"token_ids": edited, "padding_mask": base["padding_mask"]})["sequence_output"])[0]
    change[:, j] = np.linalg.norm(out - reference, axis=-1) / np.linalg.norm(reference, axis=-1)
above = change[np.triu_indices(n, 1)]
print(f"largest change above the diagonal (a later token edited): {above.max():.2e}; "
      f"on or below it: smallest {change[np.tril_indices(n)].min():.2e}, largest "
      f"{change[np.tril_indices(n)].max():.2e}")

figure = Figure(figsize=(12, 5))
figure.subplots_adjust(wspace=0.35)
mask = np.tril(np.ones((n, n)))
for column, (matrix, title, cmap) in enumerate((
        (mask, "the causal mask: may position i (row) attend to j?", "Greys"),
        (change, "measured: relative change of the state at i\nwhen token j is replaced",
         "viridis"))):
    axes = figure.add_subplot(1, 2, column + 1)
    image = axes.imshow(matrix, cmap=cmap, vmin=0)
    axes.set_xticks(range(n), pieces, rotation=90)
    axes.set_yticks(range(n), pieces)
    axes.set_xlabel("j (key: the token looked at / replaced)")
    axes.set_ylabel("i (query: the position computed)")
    axes.set_title(title, fontsize=10)
    if column:
        for i in range(n):
            for j in range(n):
                axes.text(j, i, f"{matrix[i, j]:.1g}", ha="center", va="center", fontsize=6,
                          color="white" if matrix[i, j] < matrix.max() / 2 else "black")
        figure.colorbar(image, ax=axes, fraction=0.046)
path = tutorial.save(figure, "causal_mask.png")
tutorial.show(path, "GPT's causal mask, drawn and measured on the pretrained model")

# %% [markdown]
# ## Generating text: greedy, top-k, top-p
#
# A left-to-right model writes by repeatedly scoring the next token and appending one:
# `GPTCausalLM.generate` does it with a key/value cache (each step computes only the new
# position). *Greedy* takes the most likely token every time; *top-k* samples among the `k`
# most likely; *top-p* (nucleus) samples among the fewest tokens whose probabilities add up to
# `p`. The samples use a fixed seed, so each run writes the same text.

# %%
prompts = ["let 's stick to", "the history of the", "in 1990 , the band"]
prompt_ids = [tokenizer.encode(p) for p in prompts]
strategies = {"greedy": dict(strategy="greedy"),
              "top-k (k = 40)": dict(strategy="top_k", top_k=40, seed=0),
              "top-p (p = 0.9)": dict(strategy="top_p", top_p=0.9, seed=0)}
rows = []
for name, options in strategies.items():
    out = lm.generate(prompt_ids, max_length=max(map(len, prompt_ids)) + SIZE["generate"],
                      **options)
    for prompt, given, row, row_mask in zip(prompts, prompt_ids, out["token_ids"],
                                            out["padding_mask"]):
        new = row[len(given):][row_mask[len(given):] > 0]   # the generated tokens only
        rows.append((name, prompt, "… " + tokenizer.decode(new.tolist())))
tutorial.table("generations", ["decoding", "prompt", "continuation"], rows,
               f"GPT-{settings.size} after {metrics['steps']} steps, "
               f"{SIZE['generate']} new tokens, seed 0")

# %% [markdown]
# ## Four tasks, one input format
#
# GPT-1's Figure 1: instead of a task-specific architecture, each task's text is packed into
# token sequences with three added tokens — `_start_`, `_delimiter_` between two texts, and the
# *extract* token `_classify_` at the end, whose last-layer state a linear layer reads
# (`preprocessing.gpt.GPTTaskPacker`):
#
# - **classification**: `_start_ text _classify_`;
# - **entailment**: `_start_ premise _delimiter_ hypothesis _classify_`;
# - **similarity**: there is no natural order, so *both* orders are packed and their extract
#   states added before the linear layer (`GPTClassifier(num_sequences=2)`);
# - **multiple choice**: one sequence per answer, `_start_ context _delimiter_ answer
#   _classify_`, each scored by one linear unit and the scores softmaxed over the answers
#   (`GPTMultipleChoice`).
#
# Below, the sequences the library builds with this tokenizer, and each run once through its
# model on the pretrained backbone (heads still untrained: the shapes, not the answers, are the
# point here).

# %%
rotten = load_dataset("rotten_tomatoes")
packer = GPTTaskPacker(tokenizer, sequence_length=SIZE["task_length"])
snippet = rotten["train"].texts[1]
premise, hypothesis = "A man is playing a guitar on stage .", "A musician is performing ."
first, second = "A dog runs through the snow .", "A dog is running in the snow ."
context = "Karen baked cookies for her class . The children loved them ."
answers = ["Karen was proud .", "Karen hated baking ."]
packed = {"classification": packer.single([snippet]),
          "entailment": packer.pair([premise], [hypothesis]),
          "similarity": packer.similarity([first], [second]),
          "multiple choice": packer.choices([context], [answers])}
heads = {"classification": GPTClassifier(lm.backbone, num_classes=2),
         "entailment": GPTClassifier(lm.backbone, num_classes=3),
         "similarity": GPTClassifier(lm.backbone, num_classes=1, num_sequences=2),
         "multiple choice": GPTMultipleChoice(lm.backbone)}


def rows_of(x):
    """Each packed sequence of one example as token strings (padding dropped)."""
    ids, keep = x["token_ids"].reshape(-1, x["token_ids"].shape[-1]), \
        x["padding_mask"].reshape(-1, x["padding_mask"].shape[-1])
    return [[tokenizer.id_to_token(int(i)) for i in row[m > 0]] for row, m in zip(ids, keep)]


def spelled(tokens):
    """Pieces joined by spaces, a word's end (``</w>``) shown as ``_``."""
    return " ".join(t.replace("</w>", "_") for t in tokens)


table = []
for task, x in packed.items():
    out = keras.ops.convert_to_numpy(heads[task].predict_on_batch(x))
    sequences = rows_of(x)
    table.append((task, type(heads[task]).__name__, len(sequences),
                  " | ".join(spelled(s) for s in sequences), str(tuple(x["token_ids"].shape)),
                  str(tuple(out.shape))))
tutorial.table("task_inputs", ["task", "model", "sequences",
                               "BPE pieces (_ ends a word; | between sequences)",
                               "input shape", "output shape"], table,
               "GPT-1's input transformations, as GPTTaskPacker builds them")

colours = {"_start_": "#b6d7a8", "_delimiter_": "#f9cb9c", "_classify_": "#ea9999"}
figure = Figure(figsize=(14, 9))
axes = figure.add_subplot()
y, longest = 0.0, 0
for task, x in packed.items():
    sequences = rows_of(x)
    axes.text(-0.6, y + 0.2, task, ha="right", va="center", fontsize=10, weight="bold")
    for row in sequences:
        shown = row if len(row) <= 22 else row[:10] + ["…"] + row[-11:]
        longest = max(longest, len(shown))
        for k, token in enumerate(shown):
            axes.add_patch(Rectangle((k - 0.45, y - 0.3), 0.9, 0.6,
                                     facecolor=colours.get(token, "#cfe2f3"),
                                     edgecolor="grey" if token != "…" else "white"))
            axes.text(k, y, token.replace("</w>", ""), ha="center", va="center", fontsize=6,
                      rotation=0 if len(token) <= 8 else 30)
        axes.annotate("", xy=(len(shown) + 0.8, y), xytext=(len(shown) - 0.45, y),
                      arrowprops=dict(arrowstyle="->"))
        y -= 0.8
    head = {"classification": "Linear → 2 classes", "entailment": "Linear → 3 classes",
            "similarity": "states of both orders added → Linear → score",
            "multiple choice": "Linear → 1 score per answer → softmax"}[task]
    axes.text(longest + 1.2, y + 0.8 * len(sequences) / 2 + 0.4, "GPT → " + head, fontsize=9,
              va="center")
    y -= 0.6
axes.set_xlim(-7, longest + 12)
axes.set_ylim(y, 1)
axes.axis("off")
axes.set_title("green: _start_ · orange: _delimiter_ · red: _classify_ (the extract token the "
               "head reads) · blue: text (BPE pieces)", fontsize=9)
path = tutorial.save(figure, "four_transformations.png")
tutorial.show(path, "The four task input transformations of GPT-1, built by the library")

# %% [markdown]
# ## Fine-tuning on Rotten Tomatoes: pretrained vs from scratch
#
# The claim of the paper is that generative pretraining gives a task a better start. We
# fine-tune the whole pretrained GPT on a thousand-odd Rotten Tomatoes snippets with GPT-1's
# auxiliary language-modelling loss (λ = 0.5, §3.2: the task loss plus half the LM loss on the
# same text), and train the same network from a random start the same way. The recipe is the
# lab's `fit_best_epoch` (AdamW, warm-up then linear decay, the best validation epoch kept);
# the rate is higher than GPT-1's 6.25e-5 because a few dozen steps at that rate barely move a
# fresh head.

# %%
labels = ["negative", "positive"]
train = rotten["train"].subset(range(SIZE["rt_train"]))
valid = rotten["valid"].subset(range(SIZE["rt_valid"]))
x_train, y_train = packer.single(train.texts), np.array([labels.index(y) for y in train.labels])
x_valid, y_valid = packer.single(valid.texts), np.array([labels.index(y) for y in valid.labels])
print(f"{len(y_train)} training / {len(y_valid)} validation snippets, "
      f"{int(x_train['padding_mask'].sum(1).mean())} tokens on average")
results = {}
for name in ("pretrained on WikiText-2", "from scratch"):
    keras.utils.set_random_seed(0)
    if name == "from scratch":
        model = GPTClassifier(GPTBackbone(config), num_classes=2, lm_loss_weight=0.5)
    else:
        model = GPTClassifier.from_preset(preset, num_classes=2, lm_loss_weight=0.5)
    began = time.time()
    report = fit_best_epoch(
        model, batches(x_train, y_train, batch_size=32, shuffle=True),
        lambda m: classification_scores(m.predict_packed(x_valid, 64), y_valid, "single_label"),
        "accuracy", tutorial.work / name.split()[0], epochs=SIZE["epochs"], learning_rate=2e-4,
        patience=SIZE["epochs"], verbose=0)
    results[name] = dict(report=report, seconds=time.time() - began)
    print(f"{name}: validation accuracy after each epoch "
          + ", ".join(f"{r['accuracy']:.4f}" for r in report["epochs"])
          + f" ({time.time() - began:.0f} s)")
majority = max(np.mean(y_valid), 1 - np.mean(y_valid))
rows = [(name, len(r["report"]["epochs"]) * int(np.ceil(len(y_train) / 32)),
         r["report"]["best"]["accuracy"], r["report"]["best"]["macro_f1"], r["report"]["best_epoch"],
         f"{r['seconds']:.0f} s") for name, r in results.items()]
rows.append(("majority class", 0, majority, "", "", ""))
tutorial.table("fine_tuning", ["GPT-" + settings.size, "steps", "validation accuracy",
                               "macro-F1", "best epoch", "wall time"], rows,
               f"Rotten Tomatoes, [start] text [extract], λ = 0.5 "
               f"(KERAS_BACKEND={keras.backend.backend()})")

# %%
tutorial.finish()

# %% [markdown]
# ## What the full run showed
#
# The full run (`KERAS_BACKEND=tensorflow`, wall time 344 s on the 2-core AMD EPYC printed above,
# 348 s in `tutorials/build.py`'s record, the machine otherwise idle; 2026-12-01) printed:
#
# - **Pretraining.** GPT-mini (4 layers, 256 wide, 4,722,630 weights with a 5,574-token BPE of
#   4,000 merges, the LM head's output bias included) trained for 220 steps of 32 × 64 tokens in
#   175 s: 450,560 tokens, about a sixth of WikiText-2's 2,881,013. Held-out perplexity 308.1 per
#   BPE token (next-token accuracy 0.143), against 90.4 for the Kneser-Ney trigram on the same
#   40,960 tokens.
# - **The causal mask, measured.** Replacing a later token changed no earlier state at all
#   (largest change above the diagonal 0.00e+00, exactly zero), while on and below the diagonal
#   every state moved (relative changes from 1.6e-2 to 1.5): the last layer now depends on the
#   text it may see, and only on that.
# - **Generation.** Greedy decoding falls into a loop ("… the first first first first , and the
#   first first …") after every prompt, the usual fate of greedy search on a weak model; top-k
#   (k = 40) writes locally plausible runs of words ("the first season of the time", "in the
#   united united states"); top-p (0.9) reaches into rarer pieces and glues fragments into
#   non-words ("canenore", "proyoung").
# - **The four transformations** build 1, 1, 2 and 2 sequences of 64 tokens and give outputs
#   (1, 2), (1, 3), (1, 1) and (1, 2), as GPT-1's Figure 1 draws them.
# - **Fine-tuning on Rotten Tomatoes** (1,024 snippets, 96 steps, λ = 0.5, 500 validation
#   snippets): pretrained 0.5120 (best epoch), from scratch 0.5220, the majority class 0.5040 —
#   both at chance.
#
# What this scale shows, and what it does not. The left-to-right language model learns: in 175 s
# it went from the unigram (where a GPT-1 head without an output bias stays: perplexity 914 at
# these settings, `benchmarks/results/quality.md`, "the output bias that stops the collapse") to 308,
# and the measured mask shows states that depend on their left context and never on the right.
# It is still far behind the count-based trigram (90.4): 450,560 tokens are a sixth of one
# pass over WikiText-2. And what it learnt does not yet transfer: 96 fine-tuning steps on 1,024
# snippets leave both the pretrained and the fresh network at chance. GPT-1's pretraining saw over
# 100,000 times more tokens (100 epochs of BooksCorpus, ~800M words) with a 12-layer, 768-wide
# model, and its fine-tuned SST-2 accuracy was 91.3 (the paper's Table 4). What holds at any
# scale is the machinery: the mask keeps the future out exactly, the cache-based generator, and
# one network serving four task formats by rearranging the input. The Transformer-vs-LSTM
# comparison (GPT-mini against an AWD-LSTM on the same wall-clock budget) is not in this station:
# the AWD-LSTM recipe reads words and GPT reads BPE pieces, so a fair perplexity comparison needs
# both scored per word on the same text.
