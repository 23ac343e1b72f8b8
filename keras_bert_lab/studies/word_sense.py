"""Static vs contextual word senses: nearest-neighbour sense accuracy, per layer.

A static vector (GloVe, word2vec) gives "stick" one vector whether it is a branch, a verb of
adhering or "stick to the plan"; a contextual model (ELMo, every BERT layer) gives each
occurrence its own. The experiment here (after Peters et al. 2018 §5.3 and Devlin et al. 2019
§5.4's layer study) measures that difference without training anything: each *occurrence* of an
ambiguous word is represented by its feature vector in its sentence, and is assigned the sense of
its nearest other occurrence of the same word (cosine, 1-NN, leave-one-out). A static vector can
only tell occurrences apart by their word form ("stuck" vs "stick"); a contextual one can tell
the senses apart when its layer encodes them.

The data are real sense-annotated sentences: the example sentences of Princeton WordNet 3.0,
each written to illustrate one synset (:func:`read_wordnet_examples`). A sense is either the
synset (fine) or its lexicographer file, the *supersense* (coarse: ``noun.artifact`` for a
stick of wood, ``verb.contact`` for sticking a stamp on). :func:`select` keeps the words with at
least two senses of at least ``min_per_sense`` examples each.

A feature source is any object with ``num_layers``, ``dim`` and ``__call__(sentences)``
returning one ``(W, K, H)`` array per word-split sentence
(:class:`~keras_bert_lab.features.BertWordFeatures`,
:class:`~keras_bert_lab.features.StaticWordFeatures`, an ELMo source the same way).

Shapes: ``N`` occurrences, ``W`` words, ``K`` layers, ``H`` width.

Example:

>>> import numpy as np
>>> class Toy:   # layer 0 knows the sense (the second word), layer 1 does not
...     num_layers, dim = 2, 2
...     def __call__(self, sentences):
...         return [np.array([[[1.0, 0.0], [1.0, 1.0]]] * len(s)) if s[1] == "bank" else
...                 np.array([[[0.0, 1.0], [1.0, 1.0]]] * len(s)) for s in sentences]
>>> examples = [SenseExample("x", ("x", sense), 0, sense, sense) for sense in
...             ["bank", "bank", "river", "river", "river", "river"]]
>>> for row in run(examples, {"toy": Toy()}, sense="synset"):
...     print(row["method"], row["layer"], row["accuracy"])
majority (LOO) None 0.6667
most frequent sense None 0.6667
toy 0 1.0
toy 1 0.6667
"""

import collections
import dataclasses
import re

import numpy as np

from keras_bert_lab.data import registry
from keras_bert_lab.errors import ConfigError, DataError

SENSES = ("supersense", "synset")
POS_NAMES = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
# WordNet's morphological rules ("morphy"): suffix -> replacement, tried on an inflected form.
DETACH = {
    "noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
             ("men", "man"), ("ies", "y")),
    "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
             ("ing", "e"), ("ing", "")),
    "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "adv": (),
}
TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-'][A-Za-z0-9]+)*|[^\sA-Za-z0-9]")
LEMMA = re.compile(r"[a-z]+(?:-[a-z]+)*")


@dataclasses.dataclass(frozen=True)
class SenseExample:
    """One occurrence of ``word``: the sentence's ``words``, the target's ``index`` in them, its
    sense at both granularities, and the sense's definition (for people)."""

    word: str
    words: tuple
    index: int
    synset: str          # e.g. "01528069-v" (WordNet 3.0 offset and part of speech)
    supersense: str      # e.g. "verb.contact" (the synset's lexicographer file)
    definition: str = ""

    def sense(self, granularity):
        return getattr(self, granularity)


def tokenize(text):
    """Words and punctuation of an example sentence (hyphenated words and "don't" stay whole)."""
    return TOKEN.findall(text)


def base_forms(token, pos, exceptions):
    """The forms ``token`` may be an inflection of, by WordNet's rules: itself, its entries in
    the exception list of ``pos`` ("stuck" -> "stick") and its detached suffixes."""
    token = token.lower()
    forms = {token} | set(exceptions.get(pos, {}).get(token, ()))
    forms |= {token[:-len(old)] + new for old, new in DETACH[pos]
              if token.endswith(old) and len(token) > len(old)}
    return forms


def wordnet_folder():
    """The WordNet 3.0 database folder of the data registry (``wordnet``)."""
    return registry.locate("wordnet", "folder")


def read_wordnet_examples(folder=None):
    """Every (example sentence, lemma) pair of a WordNet database folder in the original release
    layout (``data.{noun,verb,adj,adv}``, ``lexnames``, ``{pos}.exc``) where the lemma — a
    lower-case single word — occurs in its synset's example, as :class:`SenseExample`\\ s.

    The target is the first token whose base form (:func:`base_forms`) is the lemma; examples
    whose target is missing (they illustrate another lemma of the synset) are skipped."""
    import pathlib

    folder = pathlib.Path(wordnet_folder() if folder is None else folder)
    if not (folder / "lexnames").exists():
        raise DataError(f"{folder} is not a WordNet database folder (no 'lexnames' file); pass "
                        "the folder holding data.noun, data.verb, lexnames and *.exc.")
    lexnames = {int(line.split()[0]): line.split()[1]
                for line in (folder / "lexnames").read_text().splitlines() if line.strip()}
    exceptions = {}
    for pos in ("noun", "verb", "adj", "adv"):
        table = exceptions.setdefault(pos, {})
        path = folder / f"{pos}.exc"
        for line in (path.read_text().splitlines() if path.exists() else ()):
            fields = line.split()
            table.setdefault(fields[0], []).extend(fields[1:])
    examples = []
    for pos in ("noun", "verb", "adj", "adv"):
        path = folder / f"data.{pos}"
        if not path.exists():
            continue
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                examples.extend(_synset_examples(line, lexnames, exceptions))
    return examples


def _synset_examples(line, lexnames, exceptions):
    if line.startswith("  ") or " | " not in line:      # the license header
        return []
    head, gloss = line.rstrip("\n").split(" | ", 1)
    fields = head.split()
    offset, lexname, ss_type = fields[0], lexnames[int(fields[1])], fields[2]
    pos = POS_NAMES[ss_type]
    lemmas = [re.sub(r"\(.*\)$", "", fields[4 + 2 * i]) for i in range(int(fields[3], 16))]
    lemmas = [lemma for lemma in lemmas if LEMMA.fullmatch(lemma)]
    definition = gloss.split(";")[0].split('"')[0].strip()
    out = []
    for sentence in re.findall(r'"([^"]+)"', gloss):
        words = tuple(tokenize(sentence))
        for lemma in lemmas:
            index = next((i for i, w in enumerate(words)
                          if lemma in base_forms(w, pos, exceptions)), None)
            if index is not None:
                out.append(SenseExample(lemma, words, index, f"{offset}-{ss_type}", lexname,
                                        definition))
    return out


def select(examples, sense="supersense", min_per_sense=3, min_senses=2, words=None,
           max_words=None):
    """The examples of the words (``words``, or every word) with at least ``min_senses`` senses of
    at least ``min_per_sense`` examples each, without the examples of rarer senses; the
    ``max_words`` words with most examples when given (ties by word)."""
    if sense not in SENSES:
        raise ConfigError(f"sense={sense!r}; choose one of {SENSES}.")
    by_word = collections.defaultdict(list)
    for example in examples:
        if words is None or example.word in words:
            by_word[example.word].append(example)
    kept = {}
    for word, group in by_word.items():
        counts = collections.Counter(e.sense(sense) for e in group)
        group = [e for e in group if counts[e.sense(sense)] >= min_per_sense]
        if len({e.sense(sense) for e in group}) >= min_senses:
            kept[word] = group
    order = sorted(kept, key=lambda w: (-len(kept[w]), w))[:max_words]
    return [e for word in sorted(order) for e in kept[word]]


def describe(examples, sense="supersense"):
    """Counts of a selection: words, examples, senses, and the senses per word."""
    senses = collections.defaultdict(set)
    for example in examples:
        senses[example.word].add(example.sense(sense))
    return {"words": len(senses), "examples": len(examples),
            "senses": sum(len(s) for s in senses.values()),
            "sentences": len({e.words for e in examples})}


def target_vectors(source, examples):
    """``(N, K, H)``: every layer of each example's target word, from ``source`` (each distinct
    sentence computed once, shortest first so that batches pad little)."""
    sentences = sorted(dict.fromkeys(e.words for e in examples), key=len)
    position = {words: i for i, words in enumerate(sentences)}
    features = source([list(words) for words in sentences])
    return np.stack([features[position[e.words]][e.index] for e in examples]).astype("float32")


def _pick(candidates, prior):
    """The most common label of ``candidates``; ties by ``prior`` count, then by name."""
    counts = collections.Counter(candidates)
    return min(counts, key=lambda s: (-counts[s], -prior.get(s, 0), s))


def nearest_neighbour(vectors, senses, tolerance=1e-6):
    """Leave-one-out 1-NN predictions: each row gets the sense of its most cosine-similar other
    row. Rows equally similar (within ``tolerance``, e.g. the identical static vectors of one
    word form) vote, and a tied vote goes to the sense most frequent among the other rows — so
    a source that cannot tell occurrences apart scores the majority baseline. Zero vectors
    (unknown words) are similar to nothing and so tie with everything."""
    unit = np.asarray(vectors, "float64")
    norms = np.linalg.norm(unit, axis=1, keepdims=True)
    unit = np.divide(unit, norms, out=np.zeros_like(unit), where=norms > 0)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -np.inf)
    totals = collections.Counter(senses)
    predictions = []
    for i, row in enumerate(similarity):
        tied = np.nonzero(row >= row.max() - tolerance)[0]
        others = totals - collections.Counter([senses[i]])
        predictions.append(_pick([senses[j] for j in tied], others))
    return predictions


def majority(senses):
    """Leave-one-out majority predictions: each row gets the sense most frequent among the other
    rows (ties by name)."""
    totals = collections.Counter(senses)
    return [_pick((totals - collections.Counter([s])).elements(), {}) for s in senses]


def _score(examples, predictions, sense):
    """Accuracy averaged over words (each word counts once), and over all examples."""
    per_word = collections.defaultdict(list)
    for example, predicted in zip(examples, predictions):
        per_word[example.word].append(predicted == example.sense(sense))
    hits = [h for word_hits in per_word.values() for h in word_hits]
    return {"accuracy": round(float(np.mean([np.mean(h) for h in per_word.values()])), 4),
            "micro_accuracy": round(float(np.mean(hits)), 4)}


def run(examples, sources, sense="supersense", vectors=None):
    """Nearest-neighbour sense accuracy of every layer of every feature source, and the
    baselines, on ``examples`` (grouped by word; each word's occurrences are classified among
    themselves).

    Args:
        examples: :class:`SenseExample`\\ s (e.g. from :func:`select`).
        sources: ``{name: feature source}``.
        sense: ``"supersense"`` or ``"synset"``.
        vectors: optional ``{name: (N, K, H) array}`` already computed (the targets of
            ``examples``, in order); filled in for the sources computed here.

    Returns one dict per row — ``method``, ``layer`` (``None`` for the baselines), ``accuracy``
    (mean over words), ``micro_accuracy`` (over examples), ``words``, ``examples`` — the two
    baselines first ("majority (LOO)": the most frequent sense of the word's other examples;
    "most frequent sense": of all its examples, an optimistic reference), then each source's
    layers in order.
    """
    if sense not in SENSES:
        raise ConfigError(f"sense={sense!r}; choose one of {SENSES}.")
    if not examples:
        raise DataError("No examples to classify; check the selection (min_per_sense, words).")
    vectors = {} if vectors is None else vectors
    groups = collections.defaultdict(list)
    for i, example in enumerate(examples):
        groups[example.word].append(i)
    order = [i for word in sorted(groups) for i in groups[word]]
    ordered = [examples[i] for i in order]
    size = {"words": len(groups), "examples": len(examples)}

    def rows_for(method, layer, predict):
        predictions = []
        for word in sorted(groups):
            predictions.extend(predict(word, [examples[i].sense(sense) for i in groups[word]]))
        return {"method": method, "layer": layer, **_score(ordered, predictions, sense), **size}

    rows = [rows_for("majority (LOO)", None, lambda word, senses: majority(senses)),
            rows_for("most frequent sense", None,
                     lambda word, senses: [_pick(senses, {})] * len(senses))]
    for name, source in sources.items():
        if name not in vectors:
            vectors[name] = target_vectors(source, examples)
        stack = vectors[name]
        for layer in range(stack.shape[1]):
            rows.append(rows_for(name, layer, lambda word, senses: nearest_neighbour(
                stack[groups[word], layer], senses)))
    return rows


def format_table(rows, title=None):
    """The rows of :func:`run` as a Markdown table."""
    lines = [f"### {title}", ""] if title else []
    lines += ["| method | layer | accuracy (mean over words) | accuracy (all examples) | words "
              "| examples |", "|---|---|---|---|---|---|"]
    for row in rows:
        layer = "" if row["layer"] is None else row["layer"]
        lines.append(f"| {row['method']} | {layer} | {row['accuracy']:.4f} | "
                     f"{row['micro_accuracy']:.4f} | {row['words']} | {row['examples']} |")
    return "\n".join(lines) + "\n"


def plot_senses(examples, panels, words, path, sense="supersense", jitter=0.02, seed=0):
    """Occurrences of ``words`` (one row each) projected to 2-D by PCA, coloured by sense, one
    column per panel, saved as a PNG at ``path``; returns the path.

    Args:
        examples: the :class:`SenseExample`\\ s the vectors belong to.
        panels: ``[(title, (N, H) array)]``, e.g. GloVe and the best BERT layer.
        jitter: noise added to the projected points, as a fraction of each panel's spread, so
            that identical vectors (a static word form) show as a cloud rather than one dot; a
            panel of at most 10 distinct points names the word forms beside them.
    """
    import os
    import pathlib

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from keras_bert_lab.vectors.plots import project_2d

    words = list(words)
    figure = Figure(figsize=(5.2 * len(panels), 4.2 * len(words)))
    rng = np.random.default_rng(seed)
    for row, word in enumerate(words):
        chosen = [i for i, e in enumerate(examples) if e.word == word]
        if not chosen:
            raise DataError(f"No examples of {word!r} to plot; pick a word of the selection.")
        labels = [examples[i].sense(sense) for i in chosen]
        for column, (title, matrix) in enumerate(panels):
            axes = figure.add_subplot(len(words), len(panels), row * len(panels) + column + 1)
            points = project_2d(np.asarray(matrix)[chosen])
            spread = np.ptp(points, axis=0).max() or 1.0
            few = len(np.unique(np.round(points / spread, 6), axis=0)) <= 10
            points = points + rng.normal(0, jitter * spread, points.shape)
            for label in sorted(set(labels), key=lambda s: -labels.count(s)):
                mask = np.array([s == label for s in labels])
                axes.scatter(points[mask, 0], points[mask, 1], s=22, alpha=0.75,
                             label=f"{label} ({int(mask.sum())})")
            forms = [examples[i].words[examples[i].index].lower() for i in chosen]
            for form in sorted(set(forms)) if few else ():   # a static source: name its forms
                at = points[[f == form for f in forms]].mean(axis=0)
                axes.annotate(form, at, xytext=(6, 6), textcoords="offset points", fontsize=9)
            axes.set_title(f"'{word}' — {title}", fontsize=10)
            axes.set_xticks([])
            axes.set_yticks([])
            axes.legend(fontsize=7, loc="best")
    path = pathlib.Path(os.fspath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=100, bbox_inches="tight")
    return path
