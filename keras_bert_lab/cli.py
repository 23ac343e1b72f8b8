"""``kbl``: the keras_bert_lab command line.

Each sub-command lives in one function; errors of ours are printed as one readable line
(``kbl: error: …``) with exit status 2, never a traceback.
"""

import argparse
import os
import sys
import time

from keras_bert_lab.distribution import launch
from keras_bert_lab.errors import KblError
from keras_bert_lab.recipes import (classify, demo, export, features, generate, ner,
                                    preset_commands, pretrain_cli, squad, use_commands,
                                    word2vec)


def _models(args):
    """Print each named BERT size with its parameter count; optionally build and run them."""
    from keras_bert_lab.models.bert_config import SIZES, BertConfig

    print(f"{'size':<8}{'layers':>7}{'hidden':>8}{'heads':>7}{'ffn':>7}{'parameters':>14}")
    for name in SIZES:
        c = BertConfig.from_size(name)
        print(f"{name:<8}{c.num_layers:>7}{c.hidden_size:>8}{c.num_heads:>7}"
              f"{c.intermediate_size:>7}{c.num_parameters():>14,}")
    if args.build:
        _forward_demo(args.build)


def _forward_demo(sizes):
    import keras
    import numpy as np

    from keras_bert_lab.models.bert import BertBackbone

    rng = np.random.default_rng(0)
    print(f"\nBuilding and running on KERAS_BACKEND={keras.backend.backend()} "
          "(a padded batch of 2 sentence pairs, 16 tokens):")
    for name in sizes:
        start = time.time()
        backbone = BertBackbone(name)
        token_ids = rng.integers(1000, 30000, size=(2, 16)).astype("int32")
        token_ids[:, 0] = 101
        segment_ids = np.zeros((2, 16), "int32")
        segment_ids[:, 8:] = 1
        padding_mask = np.ones((2, 16), "int32")
        padding_mask[1, 12:] = 0
        out = backbone({"token_ids": token_ids, "segment_ids": segment_ids,
                        "padding_mask": padding_mask})
        pooled = keras.ops.convert_to_numpy(out["pooled_output"])
        print(f"  {name:<7} {backbone.count_params():>12,} weights  "
              f"sequence_output {tuple(out['sequence_output'].shape)}  "
              f"{len(out['hidden_states'])} hidden states  pooled[0,:3]={np.round(pooled[0, :3], 3)}  "
              f"({time.time() - start:.1f}s)")
        if name == sizes[0]:
            backbone.summary(line_length=100)


def _pretrain(args):
    pretrain_cli.main(args)


def _demo(args):
    """What `make demo` runs (keras_bert_lab/recipes/demo.py): pretraining, then real weights
    fine-tuned, used and embedded, in about five minutes."""
    demo.run(args, kbl=main)


def _vocab(args):
    """Train a WordPiece vocabulary (vocab.txt) or, with --bpe, GPT-1 byte-pair merges (a
    directory with vocab.txt + merges.txt) on text files and/or registry corpora."""
    from keras_bert_lab.data import registry
    from keras_bert_lab.errors import ConfigError, DataError
    from keras_bert_lab.preprocessing.wordpiece_trainer import read_lines, train_vocabulary

    if args.bpe and (args.unused or args.limit_alphabet):
        raise ConfigError("--unused and --limit-alphabet are WordPiece options; leave them out "
                          "with --bpe.")
    if not args.bpe and args.merges is not None:
        raise ConfigError("--merges counts byte-pair merges; add --bpe, or use "
                          "--vocabulary-size for WordPiece.")
    if args.bpe and os.path.isfile(args.output):
        raise ConfigError(f"--output {args.output} is a file; with --bpe it is the directory "
                          "that gets vocab.txt and merges.txt.")
    if not args.bpe and os.path.isdir(args.output):
        raise ConfigError(f"--output {args.output} is a directory; give the vocab.txt file to "
                          f"write, e.g. --output {os.path.join(args.output, 'vocab.txt')}.")
    folder = args.output if args.bpe else os.path.dirname(os.path.abspath(args.output))
    try:  # the folder must be there before the (minutes-long) training, not after it
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        raise ConfigError(f"--output {args.output}: cannot create the folder {folder} "
                          f"({error.strerror}).") from None

    sources = []
    for item in args.corpus:  # check every source before the (minutes-long) training starts
        name, _, part = item.partition(":")
        if os.path.isfile(item):
            sources.append(("file", item, None))
        elif name in registry.names(kind="corpus"):
            registry.locate(name, part or None)  # MissingPackageError names the install command
            sources.append(("registry", name, part or None))
        else:
            raise DataError(f"--corpus {item!r} is neither a file nor a known corpus "
                            f"({', '.join(registry.names(kind='corpus'))}; e.g. "
                            "wikitext2:train).")

    def texts():
        for kind, name, part in sources:
            if kind == "file":
                yield from read_lines(name)
            else:
                yield from (line for line in registry.load(name, part) if line.strip())

    start = time.time()
    if args.bpe:
        from keras_bert_lab.preprocessing.bpe_trainer import train_bpe

        merges = args.merges if args.merges or args.vocabulary_size else 40000
        tokenizer = train_bpe(texts(), vocabulary_size=args.vocabulary_size, num_merges=merges,
                              min_frequency=args.min_frequency, lowercase=not args.cased,
                              progress=not args.quiet)
        tokenizer.save(args.output)
        print(f"wrote {tokenizer.vocabulary_size:,} tokens and {len(tokenizer.merges):,} merges "
              f"to {args.output}/ (vocab.txt, merges.txt) ({time.time() - start:.0f}s); use it "
              f"with BytePairTokenizer.from_directory({args.output!r})")
        return
    vocab = train_vocabulary(texts(), args.vocabulary_size or 30522, lowercase=not args.cased,
                             unused_tokens=args.unused, min_frequency=args.min_frequency,
                             limit_alphabet=args.limit_alphabet, progress=not args.quiet,
                             output=args.output)
    print(f"wrote {len(vocab):,} tokens to {args.output} ({time.time() - start:.0f}s); use it "
          f"with WordPieceTokenizer({args.output!r}{', lowercase=False' if args.cased else ''})")


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


def _add_vectors_command(sub):
    p = sub.add_parser("vectors", help="static word vectors: nearest, analogy, evaluate, plot")
    p.add_argument("action", choices=("nearest", "analogy", "evaluate", "plot"))
    p.add_argument("words", nargs="*", help="nearest/plot: words; analogy: A B C (A:B :: C:?)")
    p.add_argument("--vectors", default="glove",
                   help="'glove' (GloVe 6B 50d), a text-format file, or an embedding.keras")
    p.add_argument("-k", type=int, default=10, help="neighbours or answers to show")
    p.add_argument("--method", choices=("3cosadd", "3cosmul"), default="3cosadd")
    p.add_argument("--output", default=".", help="plot: the folder for the PNG files")
    p.set_defaults(func=_vectors_command)


def _shows_default(action):
    return bool(action.option_strings) and not (
        action.default is None or action.default is False or action.default == argparse.SUPPRESS
        or action.default == [])


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, unless its help text already names it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text.lower() or not _shows_default(action):
            return text
        return f"{text} (default: %(default)s)"


def _show_defaults(parser):
    """Give ``parser`` and every sub-command's parser the defaults formatter; an option without
    help text gets one, so that its default shows too."""
    parser.formatter_class = _DefaultsFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in {id(p): p for p in action.choices.values()}.values():
                _show_defaults(sub)
        elif action.help is None and _shows_default(action):
            action.help = "default: %(default)s"
    return parser


def build_parser():
    parser = argparse.ArgumentParser(prog="kbl", description="keras_bert_lab command line.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("models", help="list the named BERT sizes and their parameter counts")
    p.add_argument("--build", nargs="*", default=[], metavar="SIZE",
                   help="also build these sizes and run a forward pass")
    p.set_defaults(func=_models)
    p = sub.add_parser("demo", help="the built-in demo (what `make demo` runs)")
    demo.add_arguments(p)
    p.set_defaults(func=_demo)
    p = sub.add_parser("pretrain", help="pretrain a BERT (masked LM + next sentence) from text")
    pretrain_cli.add_arguments(p)
    p.set_defaults(func=_pretrain)
    p = sub.add_parser("launch", help="run a training command in N processes joined as one JAX "
                                      "job (simulated hosts): kbl launch --processes 2 -- "
                                      "pretrain --data-parallel …")
    launch.add_arguments(p)
    p.set_defaults(func=launch.main)
    p = sub.add_parser("finetune", help="fine-tune a preset: classify, pair, choice, squad, ner")
    tasks = p.add_subparsers(dest="task", required=True, metavar="TASK")
    for recipe in (classify, squad, ner):
        recipe.register(tasks)
    p.set_defaults(func=lambda args: args.run(args))
    preset_commands.register(sub)
    p = sub.add_parser("word2vec", help="train word2vec vectors (skip-gram or CBOW) on a corpus")
    word2vec.add_arguments(p)
    p.set_defaults(func=word2vec.main)
    _add_vectors_command(sub)
    features.register(sub)
    generate.register(sub)
    export.register(sub)
    use_commands.register(sub)
    p = sub.add_parser("vocab", help="train a WordPiece vocabulary (vocab.txt) or, with --bpe, "
                                     "GPT-1 byte-pair merges on a corpus")
    p.add_argument("--corpus", nargs="+", required=True, metavar="FILE|NAME[:PART]",
                   help="text files (one text per line, .gz read directly) and/or registry "
                        "corpora, e.g. wikitext2:train")
    p.add_argument("--vocabulary-size", type=int, default=None,
                   help="tokens in all (WordPiece default 30522)")
    p.add_argument("--output", required=True,
                   help="where to write vocab.txt (with --bpe: a directory)")
    p.add_argument("--bpe", action="store_true",
                   help="learn GPT-1 byte-pair merges (</w> word ends) instead of WordPiece")
    p.add_argument("--merges", type=int, default=None,
                   help="--bpe: merges to learn (GPT-1: 40000, the default without "
                        "--vocabulary-size)")
    p.add_argument("--cased", action="store_true", help="keep case and accents")
    p.add_argument("--unused", type=int, default=0, metavar="N",
                   help="[unused0..N-1] slots after the special tokens (default 0)")
    p.add_argument("--min-frequency", type=int, default=2)
    p.add_argument("--limit-alphabet", type=int, default=None, metavar="N",
                   help="keep at most N distinct characters (default: all)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_vocab)
    return _show_defaults(parser)


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except KblError as error:
        print(f"kbl: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kbl: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
