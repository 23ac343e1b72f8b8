"""``kbl vectors nearest | analogy | evaluate | plot``: static word vectors (GloVe, word2vec)."""

import os
import sys


def _known(vectors, words):
    """The words the vectors hold; each missing one is reported (and skipped), not fatal."""
    missing = [w for w in words if w not in vectors]
    for word in missing:
        hint = f" (try {word.lower()!r})" if word.lower() in vectors else ""
        print(f"skipped {word!r}: not in the vocabulary{hint}", file=sys.stderr)
    return [w for w in words if w in vectors]


def _vectors_command(args):
    from keras_bert_lab.errors import ConfigError
    from keras_bert_lab.vectors import (evaluate_analogies, evaluate_word_pairs,
                                        format_word_pairs, load_vectors,
                                        plot_neighbourhood, plot_vector_cells)

    vectors = load_vectors(args.vectors)
    if args.action == "nearest":
        for word in _known(vectors, args.words):
            pairs = vectors.nearest(word, k=args.k)
            print(f"{word}: " + ", ".join(f"{w} {score:.3f}" for w, score in pairs))
    elif args.action == "analogy":
        if len(args.words) != 3:
            raise ConfigError("kbl vectors analogy takes three words: A B C for A : B :: C : ?")
        if len(_known(vectors, args.words)) == 3:
            a, b, c = args.words
            found = vectors.analogy(a, b, c, k=args.k, method=args.method)
            print(f"{a} : {b} :: {c} : " + ", ".join(f"{w} {s:.3f}" for w, s in found))
    elif args.action == "evaluate":
        print(evaluate_analogies(vectors, method=args.method))
        print(format_word_pairs([evaluate_word_pairs(vectors, name)
                                 for name in ("wordsim353", "simlex999")]))
    else:
        words = _known(vectors, args.words)
        if not words:
            raise ConfigError("None of the words is in the vocabulary; nothing to plot.")
        cells = plot_vector_cells(vectors, words, os.path.join(args.output, "cells.png"))
        near = plot_neighbourhood(vectors, words[0],
                                  os.path.join(args.output, "neighbourhood.png"), k=args.k)
        print(f"wrote {cells} and {near}")


def register(sub):
    """Add ``kbl vectors``."""
    p = sub.add_parser("vectors", help="static word vectors: nearest, analogy, evaluate, plot")
    p.add_argument("action", choices=("nearest", "analogy", "evaluate", "plot"))
    p.add_argument("words", nargs="*", help="nearest/plot: words; analogy: A B C (A:B :: C:?)")
    p.add_argument("--vectors", default="glove",
                   help="'glove' (GloVe 6B 50d), a text-format file, or an embedding.keras")
    p.add_argument("-k", type=int, default=10, help="neighbours or answers to show")
    p.add_argument("--method", choices=("3cosadd", "3cosmul"), default="3cosadd")
    p.add_argument("--output", default=".", help="plot: the folder for the PNG files")
    p.set_defaults(func=_vectors_command)
    return p
