# %% [markdown]
# # 11. Left-to-right vs bidirectional: GPT and BERT on equal footing
#
# *Station 11 of 12 — [the map](README.md).* Runs on every Keras backend: set `KERAS_BACKEND`
# to `tensorflow`, `jax` or `torch` before starting; the code is the same.
#
# - **Needs:** WikiText-2 (`wikitext2`) and Rotten Tomatoes (`rotten_tomatoes`) — installed by
#   `make install`. The tagging set of part 3 is generated here.
# - **Smoke mode** (`KBL_TUTORIAL_MODE=smoke`): a tiny GPT and a tiny BERT pretrained for a few
#   steps on a few WikiText-2 articles; every fine-tuning run on a handful of examples.
# - **Full mode** (the default): GPT-mini and BERT-mini (4 layers, 256 wide) pretrained on
#   WikiText-2 with one shape — the same steps, batch and sequence length, so the same number of
#   token positions — and vocabularies of one size learned there, then fine-tuned with one
#   recipe on Rotten Tomatoes and on a tagging task in two phrasings, next to the same networks
#   trained from scratch; three seeds for the pretrained rows, one for the scratch rows. About
#   18 minutes on two CPU cores; the pretrained models are kept in the tutorial's work folder and
#   reused by the next run with the same settings.
# - **Build:** `python tutorials/build.py --only 11` (or `make tutorials` for all).
#
# Station 5 pretrained GPT, a left-to-right Transformer; stations 6–9 built BERT, whose masked
# language model lets every layer look both ways. The BERT paper (Devlin et al. 2019, §1) names
# what it holds against GPT: "in OpenAI GPT, the authors use a left-to-right architecture, where
# every token can only attend to previous tokens in the self-attention layers of the
# Transformer. Such restrictions are sub-optimal for sentence-level tasks, and could be very
# harmful when applying fine-tuning based approaches to token-level tasks such as question
# answering, where it is crucial to incorporate context from both directions." This station
# runs both sides of that argument with the same budget for each:
#
# 1. the two attention patterns, and what one token of a sentence can see under each;
# 2. GPT-mini and BERT-mini pretrained here with the same shape, through the library's own
#    recipes;
# 3. both fine-tuned with one recipe on a sentence task (Rotten Tomatoes) and a token-level task
#    built so that the right context matters, with each architecture from scratch as the floor;
# 4. a probe of *why*: change the words after a token — in a real WikiText-2 sentence and in the
#    tagging task — and watch which model's state there moves.

# %%
import _common

tutorial = _common.start("11_left_to_right_vs_bidirectional",
                         data=["wikitext2", "rotten_tomatoes"])

# %%
import time

import keras
import numpy as np
from matplotlib.figure import Figure

from keras_bert_lab import (BertBackbone, BertClassifier, BertTokenClassifier, GPTBackbone,
                            GPTClassifier, GPTTokenClassifier)
from keras_bert_lab.cli import main as kbl
from keras_bert_lab.data.conll import TaggedSentence
from keras_bert_lab.data.corpora import load_corpus
from keras_bert_lab.data.labelled import load_dataset
from keras_bert_lab.metrics.classification import classification_scores
from keras_bert_lab.pipelines.batches import batches
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
from keras_bert_lab.preprocessing.bpe import BytePairTokenizer
from keras_bert_lab.models.gpt.preprocessor import GPTTaggingPreprocessor, GPTTaskPacker
from keras_bert_lab.preprocessing.tagging import TaggingPreprocessor
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from keras_bert_lab.models.gpt import pretrain as language_model
from keras_bert_lab.models.bert import pretrain
from keras_bert_lab.training.finetune import fit_best_epoch
from keras_bert_lab.training.run import read_rows

tutorial.eager_in_smoke()
SIZE = tutorial.size(
    smoke=dict(model="tiny", vocab=600, steps=3, batch=8, length=32, eval_batches=1,
               train_documents=3, valid_documents=2, rt_train=32, rt_eval=32, tag_train=32,
               tag_eval=16, epochs=1, learning_rate=5e-4, seeds=(0,), scratch_seeds=(0,)),
    full=dict(model="mini", vocab=8192, steps=300, batch=32, length=64, eval_batches=20,
              train_documents=None, valid_documents=None, rt_train=2048, rt_eval=1057,
              tag_train=2000, tag_eval=300, epochs=3, learning_rate=5e-4, seeds=(0, 1, 2),
              scratch_seeds=(0,)))
print(SIZE)

# %% [markdown]
# ## 1. Two attention patterns
#
# Both models are stacks of the same Transformer block; what differs is the mask on the
# attention scores. In GPT's decoder, position `i` may attend to positions `0 … i` only (the
# *causal* mask: the scores above the diagonal are −∞ before the softmax, their weights exactly
# 0). In BERT's encoder every position attends to every position. Below, the two masks on two
# sentences of the tagging task of part 3, one word apart in what they say about "Paris": a
# person who sang, or a city with an airport. Under the causal mask the word "Paris" sees "last
# year Paris" in both, and nothing that tells the two apart.

# %%
sentences = ["last year Paris sang at the concert .", "last year Paris has a busy airport ."]
words = sentences[0].split()
n, focus = len(words), words.index("Paris")
masks = {"GPT (causal: left-to-right)": np.tril(np.ones((n, n))),
         "BERT (bidirectional)": np.ones((n, n))}
figure = Figure(figsize=(12, 5.4))
for column, (name, mask) in enumerate(masks.items()):
    shown = mask.copy()
    shown[focus] *= 2                                        # the row of "Paris"
    axes = figure.add_subplot(1, 2, column + 1)
    axes.imshow(shown, cmap="Blues", vmin=0, vmax=2.4)
    axes.set_xticks(range(n), words, rotation=90)
    axes.set_yticks(range(n), words)
    axes.set_xlabel("key j: the word looked at")
    axes.set_ylabel("query i: the position computed")
    axes.set_title(f"{name}: may i attend to j?\n(dark row: what \"Paris\" sees)", fontsize=10)
path = tutorial.save(figure, "attention_patterns.png")
tutorial.show(path, "The causal and the bidirectional mask, and the row of one word")

rows = []
for name, mask in masks.items():
    for sentence in sentences:
        seen = [w for w, m in zip(sentence.split(), mask[focus]) if m]
        rows.append((name, sentence, " ".join(seen),
                     " ".join(sentence.split()[len(seen):]) or "nothing"))
tutorial.table("what_one_token_sees", ["model", "sentence", "\"Paris\" attends to",
                                       "hidden from it"], rows,
               "What the word \"Paris\" may attend to in one layer (stacking layers widens "
               "nothing under the causal mask: every layer's states at or before \"Paris\" have "
               "seen only \"last year Paris\")")

# %% [markdown]
# ## 2. Pretraining both, with one shape
#
# Equal footing means the same data, the same model size and the same number of token positions
# seen. Each model gets a vocabulary of the same size learned on WikiText-2's training text with
# `kbl vocab`: WordPiece for BERT, GPT-1's byte pairs (`--bpe`) for GPT, so that their embedding
# tables match. Then each is pretrained by the library's own recipe, with the same size, steps,
# batch and sequence length:
#
# - **BERT** (`kbl pretrain`, `models.bert.pretrain`): the masked language model (15 % of the tokens
#   selected, 80/10/10, station 6) plus next-sentence prediction, AdamW with warm-up and linear
#   decay;
# - **GPT** (`kbl pretrain --model gpt`, `models.gpt.pretrain`): the next token at every
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
# on the pooled `[CLS]`, `BertTokenClassifier` on each word's first piece), GPT's read GPT-1's
# `[start] …` rows (`GPTClassifier` on the extract token at the end, `GPTTokenClassifier` on each
# word's *last* piece, the first state to have read the whole word), without GPT-1's auxiliary
# LM loss, which BERT has no counterpart for. "From scratch" is the same architecture and
# vocabulary with random weights: what the task data alone teach.
#
# **The sentence task** is Rotten Tomatoes (positive or negative snippet): one label for the
# whole text, read where the model has seen all of it — GPT's extract token is last, so it sees
# every word too.
#
# **The token-level task** is tagging, the shape of named-entity recognition: is a word a person
# or a place? Each sentence holds one name that can be either — Paris, Sydney, Florence,
# Jordan, Charlotte … — tagged `B-PER` or `B-LOC` (every other word `O`), and the words that
# decide it are placed in one of two ways:
#
# - **clue before** — "the singer Paris was in the news .", "the city of Paris was in the
#   news .": the deciding words come before the name, where a left-to-right model sees them;
# - **clue after** — "last year Paris sang at the concert .", "last year Paris has a busy
#   airport .": they come after it. GPT's state at "Paris" is the same in both sentences, so
#   its tag there cannot be better than a coin flip.
#
# Real text has both kinds ("Paris Hilton", "Washington said", "Jordan scored"); the two
# phrasings separate them so that the one thing that differs is on which side the evidence lies.
# The score is the accuracy of the tag at the name (a coin flip gets 50 %).
#
# Why not question answering, the paper's own example? Extractive QA needs the model to match
# the question's words with the context's, and at this budget neither model learns that: in
# `benchmarks/results/quality.md`'s "GPT-mini vs. BERT-mini" both stayed near the score of picking one
# stated value at random (28.3 and 35.2 exact match against about 33) on the templated
# questions of `tests/synthetic_squad.py`; in trial runs for this station, on contexts whose
# three facts were all about the asked attribute (so that only the person could pick the
# answer), BERT-mini after 190 steps and BERT-tiny after 1,000 steps, both from scratch, ended
# with a span loss of 1.14 and 1.10, about log 3: three candidates, no idea which. A task
# neither model can learn cannot show which one is held back. Span QA also leaves a
# left-to-right model a way around: the answer is the best score over all positions, and a later
# position has read the sentences before it, so it can answer by elimination ("the person asked
# about was not named before me"); a tag is decided at its own word, with no such way out.

# %%
NAMES = ("Paris", "Sydney", "Florence", "Jordan", "Austin", "Victoria", "Georgia", "Chelsea",
         "Lincoln", "Madison", "Charlotte", "Orlando", "Adelaide", "Dallas", "Sofia", "Phoenix",
         "Savannah", "Troy")
CLUES = {  # what makes a name a person or a place: (words before it, words after it)
    "PER": (("the singer", "my friend", "our neighbour", "the young pianist", "her cousin",
             "the tennis player"),
            ("sang at the concert", "wrote a letter to her brother", "laughed at the joke",
             "won the chess game", "smiled and waved at us", "forgot her keys again")),
    "LOC": (("the city of", "the town of", "the mayor of", "the port of", "the old centre of",
             "the airport of"),
            ("has a busy airport", "lies on a wide river", "was flooded last winter",
             "is famous for its bridges", "has many old churches", "hosted the games in summer"))}
NEUTRAL = (("last year", "everyone knows that", "as always ,", "we heard that", "once again",
            "in the end"),
           ("was in the news", "came up again", "was mentioned twice", "appeared on the radio",
            "was all we talked about", "was on every page"))
TAGS = ["O", "B-LOC", "B-PER"]


def tagged_names(count, seed, clue_after):
    """``count`` sentences, each with one ambiguous name tagged ``B-PER`` or ``B-LOC`` (half
    each on average) and the deciding words before it or, with ``clue_after``, after it."""
    rng = np.random.default_rng(seed)
    sentences = []
    for _ in range(count):
        name, kind = NAMES[rng.integers(len(NAMES))], ("PER", "LOC")[rng.integers(2)]
        before = (NEUTRAL if clue_after else CLUES[kind])[0]
        after = (CLUES[kind] if clue_after else NEUTRAL)[1]
        left = before[rng.integers(len(before))].split()
        right = after[rng.integers(len(after))].split()
        sentences.append(TaggedSentence([*left, name, *right, "."],
                                        ["O"] * len(left) + [f"B-{kind}"] +
                                        ["O"] * (len(right) + 1)))
    return sentences


PHRASINGS = {"tagging, clue before": False, "tagging, clue after": True}
tagging = {phrasing: {split: tagged_names(count, seed, after) for split, count, seed in (
    ("train", SIZE["tag_train"], 1), ("valid", SIZE["tag_eval"], 2), ("test", SIZE["tag_eval"], 3))}
    for phrasing, after in PHRASINGS.items()}
tutorial.table("tagging_examples", ["phrasing", "sentence", "tags"],
               [(phrasing, " ".join(s.words), " ".join(s.tags))
                for phrasing, parts in tagging.items() for s in parts["train"][:3]],
               f"The first training sentences of each phrasing ({SIZE['tag_train']:,} training, "
               f"{SIZE['tag_eval']} validation and {SIZE['tag_eval']} test sentences each)")

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
taggers = {"BERT": TaggingPreprocessor(bert_tokenizer, TAGS, 32),
           "GPT": GPTTaggingPreprocessor(gpt_tokenizer, TAGS, 32)}
tag_inputs = {arch: {phrasing: {split: taggers[arch](sentences)
                                for split, sentences in parts.items()}
                     for phrasing, parts in tagging.items()} for arch in taggers}
print(f"Rotten Tomatoes: {len(y_rt['train'])} training, {len(y_rt['valid'])} validation, "
      f"{len(y_rt['test'])} test snippets; tagging: words cut at 32 pieces " + ", ".join(
          f"{arch} {sum(x.truncated_words for p in tag_inputs[arch].values() for x in p.values())}"
          for arch in taggers))

# %%
TASKS = ["Rotten Tomatoes", *PHRASINGS]


def name_accuracy(predicted, sentences):
    """Share of the sentences whose ambiguous name got its right tag."""
    return float(np.mean([tags[i] == s.tags[i] for tags, s in zip(predicted, sentences)
                          for i, tag in enumerate(s.tags) if tag != "O"]))


def task_model(arch, init, task):
    """A fresh task model: ``arch`` "BERT"/"GPT", ``init`` "pretrained"/"from scratch"."""
    if init == "pretrained":
        backbone = type(backbones[arch]).from_preset(presets[arch])
    else:
        backbone = type(backbones[arch])(backbones[arch].config)
    if task == "Rotten Tomatoes":
        return (BertClassifier if arch == "BERT" else GPTClassifier)(backbone, num_classes=2)
    return (BertTokenClassifier if arch == "BERT" else GPTTokenClassifier)(backbone, labels=TAGS)


def fine_tune(arch, init, task, seed):
    """One run of the recipe; returns ``(test score, validation score, model, seconds)``."""
    keras.utils.set_random_seed(seed)   # the head's (and a scratch backbone's) start, the order
    model = task_model(arch, init, task)
    if task == "Rotten Tomatoes":
        x = rt_inputs[arch]
        train = batches(x["train"], y_rt["train"], batch_size=32, shuffle=True, seed=seed)

        def score(m, split):
            return classification_scores(m.predict_packed(x[split], 64), y_rt[split],
                                         "single_label")["accuracy"]
    else:
        x, sentences = tag_inputs[arch][task], tagging[task]
        train = batches(x["train"].features, x["train"].labels, x["train"].sample_weight,
                        batch_size=32, shuffle=True, seed=seed)

        def score(m, split):
            predicted = taggers[arch].decode(m.predict_packed(x[split].features, 64), x[split])
            return name_accuracy(predicted, sentences[split])
    began = time.time()
    report = fit_best_epoch(
        model, train, lambda m: {"accuracy": score(m, "valid")}, "accuracy",
        tutorial.work / "finetune" / f"{arch}_{init}_{task}_{seed}".replace(" ", "_")
        .replace(",", ""), epochs=SIZE["epochs"], learning_rate=SIZE["learning_rate"],
        patience=SIZE["epochs"], verbose=0)
    return score(model, "test"), report["best"]["accuracy"], model, time.time() - began


results, kept = {}, {}
for seed in SIZE["seeds"]:   # seed by seed: a first complete table comes early
    for arch in ("BERT", "GPT"):
        for init in ("pretrained", "from scratch"):
            if init == "from scratch" and seed not in SIZE["scratch_seeds"]:
                continue
            for task in TASKS:
                test, valid, model, seconds = fine_tune(arch, init, task, seed)
                results.setdefault((arch, init, task), []).append(test)
                if seed == SIZE["seeds"][0] and init == "pretrained" and task == TASKS[-1]:
                    kept[arch] = model   # the probe of part 4 reads these taggers
                print(f"{arch} {init}, {task}, seed {seed}: test accuracy {test:.4f} "
                      f"(validation {valid:.4f}) in {seconds:.0f} s")


majority = max(np.mean(y_rt["test"]), 1 - np.mean(y_rt["test"]))
coin = {phrasing: max(np.mean([("B-PER" in s.tags) for s in parts["test"]]),
                      np.mean([("B-LOC" in s.tags) for s in parts["test"]]))
        for phrasing, parts in tagging.items()}
rows = [(f"{arch} {init}", *(_common.spread(results[(arch, init, task)])
                               for task in TASKS))
        for arch in ("BERT", "GPT") for init in ("pretrained", "from scratch")]
rows.append(("majority class", f"{majority:.3f}", *(f"{coin[p]:.3f}" for p in PHRASINGS)))
tutorial.table("fine_tuning", ["model", "Rotten Tomatoes: test accuracy",
                               "tagging, clue before: test accuracy at the name",
                               "tagging, clue after: test accuracy at the name"], rows,
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
    axes.axhline(majority if task == TASKS[0] else coin[task], color="black", linestyle=":",
                 label="majority class")
    axes.set_xticks(range(len(colours)), [f"{a}\n{i}" for a, i in colours], fontsize=8)
    axes.set_ylabel("test accuracy" + ("" if task == TASKS[0] else " at the name"))
    axes.set_ylim(0, 1.05)
    axes.set_title(task, fontsize=10)
    axes.legend(fontsize=8, loc="lower right")
path = tutorial.save(figure, "fine_tuning.png")
tutorial.show(path, "Fine-tuned GPT and BERT, pretrained and from scratch (bars: mean; dots: "
                    "seeds)")

# %% [markdown]
# For scale, the paper's own test of the argument (BERT §5.1, Table 5, BERT-base-sized models
# pretrained on the same data, Dev sets): a bidirectional masked LM without next-sentence
# prediction ("No NSP") against a left-to-right LM trained the same way ("LTR & No NSP",
# "directly comparable to OpenAI GPT"), with the left-only constraint kept at fine-tuning. The
# sentence tasks move little (SST-2 92.6 → 92.1); MRPC loses nine points (86.5 → 77.5) and
# SQuAD ten points of F1 (87.9 → 77.8), which a BiLSTM added on top of the left-to-right model
# wins back only in part (84.9): "For SQuAD it is intuitively
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
# BERT's may move everywhere. Below, both pretrained backbones on a held-out WikiText-2 sentence
# whose second half is replaced by the second half of another. (Both versions are padded to the
# same length: run at two different lengths, a compiled backend such as JAX may add the same
# numbers in another order, and the states then differ in the seventh digit — rounding, not
# information.)

# %%
held_out = [s.split() for d in load_corpus(eval_corpus).documents for s in d]
held_out = [s for s in held_out if 12 <= len(s) <= 30 and "@" not in s]
first, other = held_out[0], held_out[1]
cut = len(first) // 2
original, edited = " ".join(first), " ".join(first[:cut] + other[len(other) // 2:])
print(f"original: {original}\nedited:   {edited}")


def last_layer(arch, text):
    """``(pieces, states (T, H))`` of one text through the pretrained backbone, in the rows its
    task models read (``[CLS] … [SEP]``, or ``[start] … [extract]``). Both texts are padded to
    the same 96 positions, so that the two runs have the same shapes and the same arithmetic."""
    if arch == "BERT":
        x = BertTextPreprocessor(bert_tokenizer, 96)([text])
    else:
        x = GPTTaskPacker(gpt_tokenizer, 96).single([text])
    length = int(x["padding_mask"][0].sum())
    states = keras.ops.convert_to_numpy(backbones[arch].predict_on_batch(x)["sequence_output"])[0]
    return ([tokenizers[arch].id_to_token(int(i)) for i in x["token_ids"][0][:length]],
            states[:length])


change = {}
for arch in ("BERT", "GPT"):
    (pieces, before), (edited_pieces, after) = last_layer(arch, original), \
        last_layer(arch, edited)
    same = next(i for i, (a, b) in enumerate(zip(pieces, edited_pieces)) if a != b)
    relative = np.linalg.norm(after[:same] - before[:same], axis=-1) / \
        np.linalg.norm(before[:same], axis=-1)
    change[arch] = (pieces[:same], relative)
    print(f"{arch}: largest relative change of a state before the edit {relative.max():.2e} "
          f"(the {same} pieces before {pieces[same]!r})")

figure = Figure(figsize=(13, 4.2))
for column, arch in enumerate(("BERT", "GPT")):
    pieces, relative = change[arch]
    axes = figure.add_subplot(1, 2, column + 1)
    axes.bar(range(len(pieces)), relative, color="tab:blue" if arch == "BERT" else "tab:orange")
    for i, value in enumerate(relative):
        axes.text(i, value, f"{value:.1g}", ha="center", va="bottom", fontsize=6, rotation=90)
    axes.set_xticks(range(len(pieces)), [p.replace("</w>", "") for p in pieces], rotation=90,
                    fontsize=7)
    axes.set_ylabel("relative change of the last-layer state")
    axes.set_ylim(0, max(0.05, 1.3 * max(c[1].max() for c in change.values())))
    axes.set_title(f"{arch}-{SIZE['model']} (pretrained): every state before the edited words",
                   fontsize=10)
path = tutorial.save(figure, "right_context_probe.png")
tutorial.show(path, "Change the words after a position: GPT's states before it stay exactly the "
                    "same, BERT's move")

# %% [markdown]
# The same holds for the fine-tuned taggers. The two sentences below differ only after the
# name. The tagger trained on the clue-after phrasing (pretrained, seed 0) gives "Paris" a
# probability of being a person; GPT's is the same number in both sentences — it cannot tag
# them differently, whatever it learned — while BERT's can follow the words after it.

# %%
probe = [TaggedSentence("last year Paris sang at the concert .".split(),
                        ["O", "O", "B-PER", "O", "O", "O", "O", "O"]),
         TaggedSentence("last year Paris has a busy airport .".split(),
                        ["O", "O", "B-LOC", "O", "O", "O", "O", "O"])]
rows = []
for arch in ("BERT", "GPT"):
    x = taggers[arch](probe)
    logits = keras.ops.convert_to_numpy(kept[arch].predict_on_batch(x.features))
    tags = taggers[arch].decode(logits, x)
    for row, sentence in enumerate(probe):
        at = int(np.flatnonzero(x.word_index[row] == 2)[0])   # the piece that tags "Paris"
        p = np.exp(logits[row, at] - logits[row, at].max())
        rows.append((f"{arch} (pretrained, fine-tuned clue after)", " ".join(sentence.words),
                     float(p[TAGS.index("B-PER")] / p.sum()), tags[row][2], sentence.tags[2]))
tutorial.table("tagging_probe", ["model", "sentence", "P(person) at \"Paris\"", "tag given",
                                 "right tag"], rows,
               "Two sentences that differ only after the name")
gpt = [r[2] for r in rows if r[0].startswith("GPT")]
print(f"GPT's P(person) at \"Paris\" in the two sentences: {gpt[0]:.6f} and {gpt[1]:.6f} "
      f"(difference {abs(gpt[0] - gpt[1]):.1e})")

# %%
tutorial.finish()

# %% [markdown]
# ## What the full run showed
#
# The full run (`KERAS_BACKEND=tensorflow`, 2 December 2026, wall time 1,415 s on the 2-core AMD
# EPYC printed above, 1,419 s in `tutorials/build.py`'s record; `make tutorials` from a fresh
# clone, the machine shared with light jobs) printed:
#
# - **Pretraining, one shape.** Both models saw 614,400 token positions (300 steps × 32 × 64)
#   with vocabularies of 8,192 tokens each (WordPiece and BPE, learned on WikiText-2).
#   BERT-mini: held-out masked-token accuracy 0.075 (always "the": 0.050), next-sentence
#   accuracy 0.480, in 153 s. GPT-mini: held-out perplexity 467.0 against the Kneser-Ney
#   trigram's 133.8, in 139 s.
# - **Rotten Tomatoes** (2,048 training snippets, 1,057 test). Test accuracy, pretrained,
#   GPT / BERT: 0.700 ± 0.009 / 0.712 ± 0.006 (3 seeds); from scratch 0.701 / 0.704 (1 seed);
#   majority class 0.516.
# - **Tagging, clue before.** Accuracy at the name, pretrained, GPT / BERT: 1.000 ± 0.000 /
#   0.999 ± 0.002; from scratch 1.000 / 1.000.
# - **Tagging, clue after.** Pretrained, GPT / BERT: 0.477 ± 0.023 / 1.000 ± 0.000; from
#   scratch 0.463 / 1.000; majority class 0.513.
# - **The probes.** The edited WikiText-2 sentence moved BERT's states before the edit by up to
#   2.60e-02 (relative) and GPT's by 0.00e+00. The fine-tuned GPT tagger gave "Paris"
#   P(person) 0.468849 in both sentences (difference 0.0e+00) and tagged both B-LOC, right
#   once; BERT gave 0.9957 and 0.0033 and tagged both right.
#
# The paper's predictions, at this scale: on the sentence task the two are level — GPT's
# 0.700 and BERT's 0.712 are 0.012 apart, one to two seed standard deviations, and neither pretrained model
# beats its own from-scratch run by more than the seed spread, because 300 steps of pretraining
# taught little (BERT's masked-token accuracy is 2.5 points above always guessing "the", its
# next-sentence accuracy below chance; GPT's perplexity is 3.5 times the trigram's). On tagging
# the prediction holds exactly and for the reason the paper gives: with the clue before the
# name both models are perfect; with the clue after it GPT stays at a coin flip (0.477, below
# the 0.513 of always answering the majority tag), pretrained or not, while BERT — even from
# scratch — is perfect. No amount of pretraining changes this for GPT: its state at "Paris"
# cannot depend on the words after it, as the probe shows to the last digit. The lab's
# benchmark (benchmarks/results/quality.md, "GPT-mini vs. BERT-mini", 4.5 M token positions) had GPT
# ahead on WNUT-16 and neither model passing the QA format baseline; the tagging task here
# isolates the one thing the causal mask takes away.
#
# What holds at any scale is the measurement of part 4: under the causal mask a token's state is
# a function of the tokens up to it and nothing else. Words changed after a position do not
# reach GPT's states before it — exactly, in every layer, pretrained or fine-tuned — so a
# left-to-right tagger gives a word the same tag whatever follows it. Whether that costs
# accuracy on a task depends on whether the task needs the right context *at that token*, and
# on whether the model has a way around it: a sentence label is read at the extract token,
# which has seen everything, and an answer span is picked by the best score over all positions,
# so a later position's score can stand in for what an earlier one could not see. The
# paper's Table 5 puts the cost at half a point on SST-2 and ten points of F1 on SQuAD for
# BERT-base-sized models.
