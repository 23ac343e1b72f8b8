# %% [markdown]
# # 11. Left-to-right vs bidirectional: GPT and BERT on equal footing
#
# *Station 11 of 11 — [the map](README.md).* Runs on every Keras backend: set `KERAS_BACKEND`
# to `tensorflow`, `jax` or `torch` before starting; the code is the same.
#
# - **Needs:** WikiText-2 (`wikitext2`) and Rotten Tomatoes (`rotten_tomatoes`) — installed by
#   `make install`. The question-answering set is generated here (`tests/synthetic_squad.py`).
# - **Smoke mode** (`KBL_TUTORIAL_MODE=smoke`): a tiny GPT and a tiny BERT pretrained for a few
#   steps on a few WikiText-2 articles; every fine-tuning run on a handful of examples.
# - **Full mode** (the default): GPT-mini and BERT-mini (4 layers, 256 wide) pretrained on
#   WikiText-2 with one shape — the same steps, batch and sequence length, so the same number of
#   token positions — and vocabularies of one size learned there, then fine-tuned with one
#   recipe on Rotten Tomatoes and on a question-answering set in two phrasings, next to the same
#   networks trained from scratch, two seeds for the pretrained rows. About 20 minutes on two CPU
#   cores; the pretrained models are kept in the tutorial's work folder and reused by the next
#   run with the same settings.
# - **Build:** `python tutorials/build.py --only 11` (or `make tutorials` for all).
#
# Station 5 pretrained GPT, a left-to-right Transformer; stations 6–9 built BERT, whose masked
# language model lets every layer look both ways. The BERT paper (Devlin et al. 2019, §1) names
# what it holds against GPT: "in OpenAI GPT, the authors use a left-to-right architecture, where
# every token can only attend to previous tokens in the self-attention layers of the
# Transformer. Such restrictions are sub-optimal for sentence-level tasks, and could be very
# harmful when applying fine-tuning based approaches to token-level tasks such as question
# answering, where it is crucial to incorporate context from both directions." This last station
# runs both sides of that argument with the same budget for each:
#
# 1. the two attention patterns, and what one token of a real question can see under each;
# 2. GPT-mini and BERT-mini pretrained here with the same shape, through the library's own
#    recipes;
# 3. both fine-tuned with one recipe on a sentence task (Rotten Tomatoes) and a token-level task
#    built so that the right context matters, with each architecture from scratch as the floor;
# 4. a probe of *why*: change the words after a token and watch which model's state there moves.

# %%
import _common

tutorial = _common.start("11_left_to_right_vs_bidirectional",
                         data=["wikitext2", "rotten_tomatoes"])

# %%
import importlib.util
import json
import statistics
import time

import keras
import numpy as np
from matplotlib.figure import Figure

from keras_bert_lab import BertBackbone, BertClassifier, GPTBackbone, GPTClassifier
from keras_bert_lab.cli import main as kbl
from keras_bert_lab.data.labelled import load_dataset
from keras_bert_lab.data.squad import SquadExample, read_squad
from keras_bert_lab.metrics.classification import classification_scores
from keras_bert_lab.metrics.squad import squad_scores
from keras_bert_lab.pipelines.batches import batches
from keras_bert_lab.preprocessing.bert import BertTextPreprocessor
from keras_bert_lab.preprocessing.bpe import BytePairTokenizer
from keras_bert_lab.preprocessing.gpt import GPTTaskPacker
from keras_bert_lab.preprocessing.span_qa import SpanQAPreprocessor
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from keras_bert_lab.recipes import language_model, pretrain
from keras_bert_lab.recipes.squad import answer
from keras_bert_lab.tasks.gpt_classifier import GPTSpanQA
from keras_bert_lab.tasks.question_answering import BertSpanQA
from keras_bert_lab.training.finetune import fit_best_epoch
from keras_bert_lab.training.run import read_rows

# The templated SQuAD-format questions of the test suite (tests/ is not a package on the path
# of a notebook started in tutorials/, so the file is loaded by its path).
spec = importlib.util.spec_from_file_location(
    "synthetic_squad", _common.HERE.parent / "tests" / "synthetic_squad.py")
synthetic = importlib.util.module_from_spec(spec)
spec.loader.exec_module(synthetic)

tutorial.eager_in_smoke()
SIZE = tutorial.size(
    smoke=dict(model="tiny", vocab=600, steps=3, batch=8, length=32, eval_batches=1,
               train_documents=3, valid_documents=2, rt_train=32, rt_eval=32, qa_train=32,
               qa_eval=16, facts=3, filler=1, qa_length=64, epochs=1, learning_rate=5e-4,
               seeds=(0,), scratch_seeds=(0,)),
    full=dict(model="mini", vocab=8192, steps=300, batch=32, length=64, eval_batches=20,
              train_documents=None, valid_documents=None, rt_train=2048, rt_eval=1057,
              qa_train=2000, qa_eval=300, facts=3, filler=1, qa_length=64, epochs=3,
              learning_rate=5e-4, seeds=(0, 1), scratch_seeds=(0,)))
print(SIZE)

# %% [markdown]
# ## 1. Two attention patterns
#
# Both models are stacks of the same Transformer block; what differs is the mask on the
# attention scores. In GPT's decoder, position `i` may attend to positions `0 … i` only (the
# *causal* mask: the scores above the diagonal are −∞ before the softmax, their weights exactly
# 0). In BERT's encoder every position attends to every position. Below, the two masks on one
# context of the question-answering set of part 3, phrased with the answer first, and the
# answer's first word: under the causal mask it sees the question and the sentences before it,
# never the words after it that say *whose* favourite city it is.

# %%
question = "What is the favourite city of Peter?"
context = "Paris is the favourite city of Laura. Cape Town is the favourite city of Peter."
words = question.replace("?", " ?").split() + ["|"] + context.replace(".", " .").split()
n = len(words)
focus = words.index("Cape")
masks = {"GPT (causal: left-to-right)": np.tril(np.ones((n, n))),
         "BERT (bidirectional)": np.ones((n, n))}

figure = Figure(figsize=(13, 6.2))
for column, (name, mask) in enumerate(masks.items()):
    axes = figure.add_subplot(1, 2, column + 1)
    shown = mask.copy()
    shown[focus] *= 2                                   # the row of the answer's first word
    axes.imshow(shown, cmap="Blues", vmin=0, vmax=2.4)
    axes.set_xticks(range(n), words, rotation=90, fontsize=7)
    axes.set_yticks(range(n), words, fontsize=7)
    axes.set_xlabel("key j: the word looked at")
    axes.set_ylabel("query i: the position computed")
    axes.set_title(f"{name}: may i attend to j?\n(dark row: what \"Cape\" sees)", fontsize=10)
path = tutorial.save(figure, "attention_patterns.png")
tutorial.show(path, "The causal and the bidirectional mask on one question and its context")

seen = {name: [w for w, m in zip(words, mask[focus]) if m] for name, mask in masks.items()}
tutorial.table("what_one_token_sees", ["model", "words \"Cape\" attends to", "hidden from it"],
               [(name, len(seen[name]), " ".join(words[len(seen[name]):]) or "nothing")
                for name in masks],
               f"Position {focus} (\"Cape\" of \"Cape Town\") in one layer; stacking layers "
               "widens nothing under the causal mask")

# %% [markdown]
# ## 2. Pretraining both, with one shape
#
# Equal footing means the same data, the same model size and the same number of token positions
# seen. Each model gets a vocabulary of the same size learned on WikiText-2's training text with
# `kbl vocab`: WordPiece for BERT, GPT-1's byte pairs (`--bpe`) for GPT, so that their embedding
# tables match. Then each is pretrained by the library's own recipe, with the same size, steps,
# batch and sequence length:
#
# - **BERT** (`kbl pretrain`, `recipes.pretrain`): the masked language model (15 % of the tokens
#   selected, 80/10/10, station 6) plus next-sentence prediction, AdamW with warm-up and linear
#   decay;
# - **GPT** (`kbl pretrain --model gpt`, `recipes.language_model`): the next token at every
#   position of contiguous blocks, AdamW with warm-up and cosine decay (GPT-1, §4.1).
#
# The same token positions are not the same training signal: GPT is scored at every position,
# BERT only at the ~15 % it masked, and GPT's step costs more for that (its output layer scores
# the whole vocabulary at every position). Both recipes score their model on held-out
# WikiText-2 — BERT by masked-token accuracy, GPT by perplexity next to a Kneser-Ney trigram on
# the same tokens — so the two numbers are not comparable with each other; each says whether its
# model learned its own task.

# %%
corpus, eval_corpus = tutorial.corpora(SIZE["train_documents"], SIZE["valid_documents"])
vocabulary_corpus = "wikitext2:train" if corpus == "wikitext2" else corpus
wordpiece = tutorial.work / f"wordpiece_{SIZE['vocab']}" / "vocab.txt"
bpe = tutorial.work / f"bpe_{SIZE['vocab']}"
for output, extra in ((wordpiece, []), (bpe, ["--bpe"])):
    if not ((output / "merges.txt") if extra else output).is_file():   # else: learned before
        began = time.time()
        code = kbl(["vocab", *extra, "--corpus", vocabulary_corpus, "--vocabulary-size",
                    str(SIZE["vocab"]), "--output", str(output), "--quiet"])
        assert code == 0, f"kbl vocab exited with {code}"
        print(f"  ({time.time() - began:.0f} s)")
    else:
        print(f"reusing the vocabulary in {output}")
bert_tokenizer = WordPieceTokenizer(str(wordpiece))
gpt_tokenizer = BytePairTokenizer.from_directory(str(bpe))
print(f"WordPiece: {bert_tokenizer.vocabulary_size:,} tokens; BPE: "
      f"{gpt_tokenizer.vocabulary_size:,} tokens ({len(gpt_tokenizer.merges):,} merges)")

# %%
shape = dict(corpus=corpus, eval_corpus=eval_corpus, size=SIZE["model"], steps=SIZE["steps"],
             batch_size=SIZE["batch"], sequence_length=SIZE["length"], seed=0,
             eval_batches=SIZE["eval_batches"], eval_every=SIZE["steps"],
             log_every=max(1, SIZE["steps"] // 30), checkpoint_every=10_000)
runs = {"BERT": (pretrain.run, pretrain.PretrainSettings(vocabulary=str(wordpiece), **shape)),
        "GPT": (language_model.run, language_model.LanguageModelSettings(vocabulary=str(bpe),
                                                                         **shape))}
metrics, presets, backbones = {}, {}, {}
for name, (run, settings) in runs.items():
    folder = tutorial.work / f"pretrain_{name.lower()}"
    metrics[name] = tutorial.pretrained(run, settings, folder, f"{name}-{SIZE['model']}")
    presets[name] = str(folder / "preset")
backbones = {"BERT": BertBackbone.from_preset(presets["BERT"]),
             "GPT": GPTBackbone.from_preset(presets["GPT"])}
positions = SIZE["steps"] * SIZE["batch"] * SIZE["length"]
bert, gpt = metrics["BERT"], metrics["GPT"]
tutorial.table("pretraining", [
    "model", "objective", "weights (backbone)", "token positions seen", "held-out score",
    "baseline on the same targets", "wall time"], [
    (f"BERT-{SIZE['model']}", "masked LM + next sentence", backbones["BERT"].count_params(),
     positions, f"MLM accuracy {bert['heldout_mlm_accuracy']:.3f}, NSP accuracy "
     f"{bert['heldout_nsp_accuracy']:.3f}", f"always \"{bert['unigram_token']}\": "
     f"{bert['unigram_mlm_accuracy']:.3f}; NSP chance 0.5", f"{bert['seconds']:.0f} s"),
    (f"GPT-{SIZE['model']}", "next token", backbones["GPT"].count_params(), positions,
     f"perplexity {gpt['heldout_perplexity']:.1f}, next-token accuracy "
     f"{gpt['heldout_accuracy']:.3f}", f"Kneser-Ney trigram perplexity "
     f"{gpt['kneser_ney_trigram_perplexity']:.1f}", f"{gpt['seconds']:.0f} s")],
    f"{SIZE['steps']} steps × {SIZE['batch']} × {SIZE['length']} tokens each, vocabularies of "
    f"{SIZE['vocab']:,} learned on WikiText-2 (KERAS_BACKEND={keras.backend.backend()}; "
    "wall time includes reading and tokenizing the corpus)")

figure = Figure(figsize=(11, 3.8))
for column, (name, key) in enumerate((("BERT", "mlm_loss"), ("GPT", "loss"))):
    axes = figure.add_subplot(1, 2, column + 1)
    rows = read_rows(tutorial.work / f"pretrain_{name.lower()}" / "log.csv")
    for split, style in (("train", "-"), ("heldout", "o")):
        points = [(int(r["step"]), float(r[key])) for r in rows
                  if r.get("split") == split and r.get(key)]
        if points:
            axes.plot(*zip(*points), style, label=split)
    axes.set_xlabel("step")
    axes.set_ylabel(f"{key.replace('_', ' ')} (nats)")
    axes.set_title(f"{name}-{SIZE['model']}: " + ("masked-token loss" if name == "BERT"
                                                  else "next-token loss"), fontsize=10)
    axes.legend(fontsize=8)
path = tutorial.save(figure, "pretraining_curves.png")
tutorial.show(path, "Pretraining curves: BERT's masked-LM loss and GPT's next-token loss")

# %% [markdown]
# ## 3. Fine-tuning both with one recipe
#
# Every run below is the lab's fine-tuning recipe, `fit_best_epoch` (AdamW, 10 % warm-up then
# linear decay, batch 32, the best validation epoch kept, every epoch run), with the same
# epochs and learning rate for every model; the test split is scored once, with the best epoch.
# Each task model is the library's: BERT's heads read `[CLS] … [SEP]` rows (`BertClassifier`
# on the pooled `[CLS]`, `BertSpanQA`), GPT's read GPT-1's `[start] … [extract]` rows
# (`GPTClassifier` on the extract token, `GPTSpanQA` on `[start] question [delim] context
# [extract]`), without GPT-1's auxiliary LM loss, which BERT has no counterpart for. "From
# scratch" is the same architecture and vocabulary with random weights: what the task data alone
# teach.
#
# **The sentence task** is Rotten Tomatoes (positive or negative snippet): a label for the whole
# text, read where the model has seen all of it — GPT's extract token is last, so it sees
# everything too.
#
# **The token-level task** is extractive QA on templated contexts (`tests/synthetic_squad.py`):
# each context states three facts about three people, *all of the kind asked about* (so the
# kind of a value cannot pick the answer, only the person can), and the question asks for one
# of them. The same facts are phrased two ways:
#
# - **clue first** — "The favourite city of Laura is Paris.": the words that say whose value it
#   is come before the value, where a left-to-right model sees them;
# - **answer first** — "Paris is the favourite city of Laura.": they come after it. GPT's state
#   at "Paris", and so its start score there, cannot depend on "Laura".
#
# Picking one of the three stated values at random scores 33.3 exact match. GPT is not quite
# helpless on the answer-first phrasing: a span is chosen by the best score over *all*
# positions, and a later value's score may use everything before it — "the person asked about
# was not named before me" — so answering by elimination is open to it. That needs more than
# matching a name, and real text offers no such guarantee that exactly one fact answers.

# %%
def qa_data(count, seed, answer_first):
    return synthetic.synthetic_squad(count, facts=SIZE["facts"], filler=SIZE["filler"], seed=seed,
                                     same_kind=True, answer_first=answer_first)


PHRASINGS = {"QA, clue first": False, "QA, answer first": True}
qa = {phrasing: {split: read_squad(qa_data(count, seed, first))[0] for split, count, seed in (
    ("train", SIZE["qa_train"], 1), ("valid", SIZE["qa_eval"], 2), ("test", SIZE["qa_eval"], 3))}
    for phrasing, first in PHRASINGS.items()}
example = {phrasing: parts["train"][0] for phrasing, parts in qa.items()}
tutorial.table("qa_examples", ["phrasing", "question", "context", "answer"],
               [(phrasing, e.question, e.context, e.answers[0][0])
                for phrasing, e in example.items()],
               f"The first training question in both phrasings ({SIZE['qa_train']:,} training, "
               f"{SIZE['qa_eval']} validation and {SIZE['qa_eval']} test questions each)")

rotten = load_dataset("rotten_tomatoes")
labels = ["negative", "positive"]
rt = {split: rotten[split].subset(range(min(count, len(rotten[split])))) for split, count in (
    ("train", SIZE["rt_train"]), ("valid", SIZE["rt_eval"]), ("test", SIZE["rt_eval"]))}
y_rt = {split: np.array([labels.index(y) for y in part.labels]) for split, part in rt.items()}
tokenizers = {"BERT": bert_tokenizer, "GPT": gpt_tokenizer}
rt_inputs = {"BERT": {s: BertTextPreprocessor(bert_tokenizer, SIZE["length"])(p.texts)
                      for s, p in rt.items()},
             "GPT": {s: GPTTaskPacker(gpt_tokenizer, SIZE["length"]).single(p.texts)
                     for s, p in rt.items()}}
qa_inputs = {arch: {phrasing: {split: SpanQAPreprocessor(
    tokenizers[arch], sequence_length=SIZE["qa_length"], doc_stride=SIZE["qa_length"] // 2,
    max_query_length=24)(examples) for split, examples in parts.items()}
    for phrasing, parts in qa.items()} for arch in tokenizers}
windows = {arch: max(len(qa_inputs[arch][p][s]) / len(qa[p][s]) for p in qa for s in qa[p])
           for arch in tokenizers}
print(f"Rotten Tomatoes: {len(y_rt['train'])} training, {len(y_rt['valid'])} validation, "
      f"{len(y_rt['test'])} test snippets; QA windows per question (1 = every context fits in "
      f"{SIZE['qa_length']} tokens): " + ", ".join(f"{a} {w:.2f}" for a, w in windows.items()))

# %%
TASKS = ["Rotten Tomatoes", *PHRASINGS]


def task_model(arch, init, task):
    """A fresh task model: ``arch`` "BERT"/"GPT", ``init`` "pretrained"/"from scratch"."""
    if init == "pretrained":
        backbone = type(backbones[arch]).from_preset(presets[arch])
    else:
        backbone = type(backbones[arch])(backbones[arch].config)
    if task == "Rotten Tomatoes":
        return (BertClassifier if arch == "BERT" else GPTClassifier)(backbone, num_classes=2)
    return (BertSpanQA if arch == "BERT" else GPTSpanQA)(backbone)


def fine_tune(arch, init, task, seed):
    """One run of the recipe; returns ``(test score, validation score, model, seconds)``."""
    keras.utils.set_random_seed(seed)   # the head's (and a scratch backbone's) start, the order
    model = task_model(arch, init, task)
    if task == "Rotten Tomatoes":
        x = rt_inputs[arch]
        train = batches(x["train"], y_rt["train"], batch_size=32, shuffle=True, seed=seed)

        def score(m, split):
            return classification_scores(m.predict_packed(x[split], 64), y_rt[split],
                                         "single_label")
        monitor, metric = "accuracy", "accuracy"
    else:
        x, examples = qa_inputs[arch][task], qa[task]
        trainable = x["train"].select(x["train"].trainable)
        train = batches(trainable.inputs, trainable.labels(), batch_size=32, shuffle=True,
                        seed=seed)

        def score(m, split):
            predictions, _ = answer(m, examples[split], x[split], batch_size=64)
            return squad_scores(examples[split], predictions)
        monitor, metric = "f1", "exact_match"
    began = time.time()
    report = fit_best_epoch(
        model, train, lambda m: {k: v for k, v in score(m, "valid").items() if k != "total"},
        monitor, tutorial.work / "finetune" / f"{arch}_{init}_{task}_{seed}".replace(" ", "_")
        .replace(",", ""), epochs=SIZE["epochs"], learning_rate=SIZE["learning_rate"],
        patience=SIZE["epochs"], verbose=0)
    return score(model, "test")[metric], report["best"][metric], model, time.time() - began


results, kept = {}, {}
for seed in SIZE["seeds"]:   # seed by seed: a first complete table comes early
    for arch in ("BERT", "GPT"):
        for init in ("pretrained", "from scratch"):
            if init == "from scratch" and seed not in SIZE["scratch_seeds"]:
                continue
            for task in TASKS:
                test, valid, model, seconds = fine_tune(arch, init, task, seed)
                results.setdefault((arch, init, task), []).append(test)
                if seed == SIZE["seeds"][0] and init == "pretrained" and task != TASKS[0]:
                    kept[(arch, task)] = model   # the probe of part 4 reads these
                print(f"{arch} {init}, {task}, seed {seed}: test {test:.4g} (validation "
                      f"{valid:.4g}) in {seconds:.0f} s")


def spread(values):
    """``mean ± sd (n)``, the sample standard deviation over seeds."""
    if len(values) == 1:
        return f"{values[0]:.3f} (n=1)"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f} (n={len(values)})"


majority = max(np.mean(y_rt["test"]), 1 - np.mean(y_rt["test"]))
rows = [(f"{arch} {init}", *(spread(results[(arch, init, task)]) for task in TASKS))
        for arch in ("BERT", "GPT") for init in ("pretrained", "from scratch")]
rows.append(("chance: majority class / one of the three stated values", f"{majority:.3f}",
             f"{100 / SIZE['facts']:.3f}", f"{100 / SIZE['facts']:.3f}"))
tutorial.table("fine_tuning", ["model", "Rotten Tomatoes: test accuracy",
                               "QA clue first: test exact match (%)",
                               "QA answer first: test exact match (%)"], rows,
               f"One recipe for all: {SIZE['epochs']} epochs, AdamW {SIZE['learning_rate']:g}, "
               f"batch 32; mean ± standard deviation over seeds "
               f"(KERAS_BACKEND={keras.backend.backend()})")

figure = Figure(figsize=(13, 4.2))
colours = {("BERT", "pretrained"): "tab:blue", ("BERT", "from scratch"): "lightsteelblue",
           ("GPT", "pretrained"): "tab:orange", ("GPT", "from scratch"): "navajowhite"}
for column, task in enumerate(TASKS):
    axes = figure.add_subplot(1, 3, column + 1)
    for i, key in enumerate(colours):
        values = results[(*key, task)]
        axes.bar(i, np.mean(values), color=colours[key], edgecolor="grey")
        axes.plot([i] * len(values), values, "k.", markersize=6)
    chance = majority if task == TASKS[0] else 100 / SIZE["facts"]
    axes.axhline(chance, color="black", linestyle=":", label="chance")
    axes.set_xticks(range(len(colours)), [f"{a}\n{i}" for a, i in colours], fontsize=8)
    axes.set_ylabel("test accuracy" if task == TASKS[0] else "test exact match (%)")
    axes.set_ylim(0, 1 if task == TASKS[0] else 100)
    axes.set_title(task, fontsize=10)
    axes.legend(fontsize=8, loc="upper right")
path = tutorial.save(figure, "fine_tuning.png")
tutorial.show(path, "Fine-tuned GPT and BERT, pretrained and from scratch (bars: mean; dots: "
                    "seeds)")

# %% [markdown]
# For scale, the paper's own test of the argument (BERT §5.1, Table 5, BERT-base-sized models
# pretrained on the same data, Dev sets): a bidirectional masked LM without next-sentence
# prediction ("No NSP") against a left-to-right LM trained the same way ("LTR & No NSP",
# "directly comparable to OpenAI GPT"), with the left-only constraint kept at fine-tuning. The
# sentence tasks move little (SST-2 92.6 → 92.1); SQuAD loses ten points of F1, which a BiLSTM
# added on top of the left-to-right model wins back only in part: "For SQuAD it is intuitively
# clear that a LTR model will perform poorly at token predictions, since the token-level hidden
# states have no right-side context."

# %%
TABLE5 = [("BERT-base (MLM + NSP)", 84.4, 88.4, 86.7, 92.7, 88.5),
          ("No NSP (MLM only)", 83.9, 84.9, 86.5, 92.6, 87.9),
          ("LTR & No NSP (left-to-right LM)", 82.1, 84.3, 77.5, 92.1, 77.8),
          ("+ BiLSTM on top", 82.1, 84.1, 75.7, 91.6, 84.9)]
tutorial.table("paper_table5", ["paper: pretraining", "MNLI-m (acc)", "QNLI (acc)",
                                "MRPC (acc)", "SST-2 (acc)", "SQuAD 1.1 (F1)"],
               [(name, *(f"{v:.1f}" for v in values)) for name, *values in TABLE5],
               "The BERT paper's Table 5 (Devlin et al. 2019, §5.1), Dev sets — the paper's "
               "numbers, not ours")

# %% [markdown]
# ## 4. Why: what a state at one token can depend on
#
# The argument is about states, and states can be measured exactly. Take a sentence, change the
# words *after* one position, and compare each model's last-layer state at every position
# before the change. Under the causal mask the state at position `i` is a function of tokens
# `0 … i` alone, so GPT's states there must not move at all — not a little, not at all — while
# BERT's may move everywhere. Below, both pretrained backbones on an answer-first fact whose
# person is changed: "Cape Town is the favourite city of Peter" becomes "… of Laura".

# %%
original = "cape town is the favourite city of peter ."
edited = "cape town is the favourite city of laura ."


def last_layer(arch, text):
    """``(pieces, states (T, H))`` of one text through the pretrained backbone, as its task
    rows begin it (``[CLS] … [SEP]`` or ``[start] …``)."""
    if arch == "BERT":
        x = BertTextPreprocessor(bert_tokenizer, 32)([text])
    else:
        x = GPTTaskPacker(gpt_tokenizer, 32).single([text])
    length = int(x["padding_mask"][0].sum())
    x = {k: v[:, :length] for k, v in x.items()}
    states = keras.ops.convert_to_numpy(backbones[arch].predict_on_batch(x)["sequence_output"])[0]
    return [tokenizers[arch].id_to_token(int(i)) for i in x["token_ids"][0]], states


change = {}
for arch in ("BERT", "GPT"):
    (pieces, before), (edited_pieces, after) = last_layer(arch, original), \
        last_layer(arch, edited)
    same = next(i for i, (a, b) in enumerate(zip(pieces, edited_pieces)) if a != b)
    relative = np.linalg.norm(after[:same] - before[:same], axis=-1) / \
        np.linalg.norm(before[:same], axis=-1)
    change[arch] = (pieces[:same], relative, pieces[same:])
    print(f"{arch}: largest relative change of a state before the edit {relative.max():.2e} "
          f"(positions 0–{same - 1}, {' '.join(pieces[:same])!r}; edited from "
          f"{pieces[same]!r} on)")

figure = Figure(figsize=(12, 3.8))
for column, arch in enumerate(("BERT", "GPT")):
    pieces, relative, rest = change[arch]
    axes = figure.add_subplot(1, 2, column + 1)
    axes.bar(range(len(pieces)), relative, color="tab:blue" if arch == "BERT" else "tab:orange")
    for i, value in enumerate(relative):
        axes.text(i, value, f"{value:.1g}", ha="center", va="bottom", fontsize=7)
    axes.set_xticks(range(len(pieces)), pieces, rotation=60, fontsize=8)
    axes.set_ylabel("relative change of the state")
    axes.set_ylim(0, max(0.05, 1.25 * max(c[1].max() for c in change.values())))
    axes.set_title(f"{arch}: every state before the edited word (\"peter\" → \"laura\")",
                   fontsize=9)
path = tutorial.save(figure, "right_context_probe.png")
tutorial.show(path, "Change the words after a position: GPT's states there stay exactly the same")

# %% [markdown]
# The same holds for the fine-tuned question answerers. The two contexts below state the same
# two cities and differ only in who comes *after* each city; the question asks about Laura, so
# the answer is Paris in the first and Cape Town in the second. GPT's start score at "Paris" —
# the first value, before any name — is the same number in both contexts, so whatever it answers,
# it did not read "Laura" at "Paris". Its score at "Cape Town" may differ: that state has read
# the first sentence and its name, which is the elimination route of part 3. BERT's scores at
# both values may move.

# %%
probe = [SquadExample("laura-first", "What is the favourite city of Laura?",
                      "Paris is the favourite city of Laura. Cape Town is the favourite city of "
                      "Peter.", answers=(("Paris", 0),), gold_texts=("Paris",)),
         SquadExample("laura-second", "What is the favourite city of Laura?",
                      "Paris is the favourite city of Peter. Cape Town is the favourite city of "
                      "Laura.", answers=(("Cape Town", 38),), gold_texts=("Cape Town",))]
rows = []
for arch in ("BERT", "GPT"):
    model = kept[(arch, "QA, answer first")]
    features = SpanQAPreprocessor(tokenizers[arch], sequence_length=SIZE["qa_length"],
                                  doc_stride=SIZE["qa_length"] // 2,
                                  max_query_length=24)(probe)
    scores = keras.ops.convert_to_numpy(model.predict_on_batch(features.inputs)["start_logits"])
    predicted, _ = answer(model, probe, features)
    for index, example in enumerate(probe):
        at = {}   # the window and position whose context piece starts where the city does
        for city in ("Paris", "Cape Town"):
            window, position = np.argwhere(
                (features.example_index[:, None] == index) &
                (features.offsets[:, :, 0] == example.context.index(city)))[0]
            at[city] = float(scores[window, position])
        rows.append((f"{arch} (pretrained, fine-tuned answer first)",
                     example.context.split(". ")[0] + ". …", at["Paris"], at["Cape Town"],
                     predicted[example.id], example.gold_texts[0]))
tutorial.table("swap_probe", ["model", "context", "start score at \"Paris\"",
                              "start score at \"Cape Town\"", "answer given", "right answer"],
               rows, "\"What is the favourite city of Laura?\" on two contexts that differ only "
                     "in the names after the cities")
gpt_rows = [r for r in rows if r[0].startswith("GPT")]
print(f"GPT's start score at \"Paris\" in the two contexts: {gpt_rows[0][2]:.6f} and "
      f"{gpt_rows[1][2]:.6f} (difference {abs(gpt_rows[0][2] - gpt_rows[1][2]):.1e})")

# %%
tutorial.finish()

# %% [markdown]
# ## What the full run showed
#
# *The numbers below are placeholders until the full run has been made; each ⟨…⟩ is filled in
# from that run's printed output.*
#
# The full run (`KERAS_BACKEND=tensorflow`, wall time ⟨full run: wall time⟩ on the 2-core AMD
# EPYC printed above, ⟨full run: build.py record⟩ in `tutorials/build.py`'s record) printed:
#
# - **Pretraining, one shape.** Both models saw ⟨full run: token positions⟩ token positions
#   (300 steps × 32 × 64) with vocabularies of ⟨full run: WordPiece / BPE sizes⟩ tokens.
#   BERT-mini: held-out masked-token accuracy ⟨full run: BERT MLM accuracy⟩ (always "the":
#   ⟨full run: unigram⟩), NSP ⟨full run: NSP accuracy⟩, in ⟨full run: BERT seconds⟩ s.
#   GPT-mini: held-out perplexity ⟨full run: GPT perplexity⟩ against the trigram's
#   ⟨full run: Kneser-Ney perplexity⟩, in ⟨full run: GPT seconds⟩ s.
# - **Rotten Tomatoes.** Test accuracy GPT / BERT pretrained ⟨full run: RT accuracy GPT /
#   BERT⟩, from scratch ⟨full run: RT accuracy GPT / BERT from scratch⟩; majority class
#   ⟨full run: majority⟩. Seed spread ⟨full run: RT standard deviations⟩.
# - **QA, clue first.** Exact match GPT / BERT pretrained ⟨full run: QA clue-first EM GPT /
#   BERT⟩, from scratch ⟨full run: QA clue-first EM scratch GPT / BERT⟩; chance 33.3.
# - **QA, answer first.** Exact match GPT / BERT pretrained ⟨full run: QA answer-first EM GPT /
#   BERT⟩, from scratch ⟨full run: QA answer-first EM scratch GPT / BERT⟩; chance 33.3.
# - **The probes.** Changing "peter" to "laura" moved BERT's states before the edit by up to
#   ⟨full run: BERT largest change⟩ and GPT's by ⟨full run: GPT largest change, expected exactly
#   0⟩. GPT's fine-tuned start score at "Paris" was ⟨full run: the two GPT scores⟩ in the two
#   contexts; it answered ⟨full run: GPT's two answers⟩, BERT ⟨full run: BERT's two answers⟩.
#
# ⟨full run: the reading — which of the paper's predictions held at this scale (the sentence
# task level, a gap on answer-first QA, GPT level with BERT on clue-first QA), how large the
# seed spread is next to the gaps, and how this compares with benchmarks/RESULTS.md's
# "GPT-mini vs. BERT-mini" (4.5 M token positions; there neither model passed the QA format
# baseline and GPT was ahead on WNUT-16 and QA).⟩
#
# What holds at any scale is the measurement of part 4: under the causal mask a token's state is
# a function of the tokens up to it and nothing else — the changed name after "Cape Town" does
# not reach GPT's states before it, exactly, in every layer, pretrained or fine-tuned. Whether
# that costs accuracy on a task depends on whether the task needs the right context *at that
# token*, and on whether the model can get around it (the extract token that sees everything,
# elimination over positions); the paper's Table 5 puts the cost on SQuAD at ten points of F1 for
# BERT-base-sized models, and on SST-2 at half a point.
