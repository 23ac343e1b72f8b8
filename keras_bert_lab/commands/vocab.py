"""``kbl vocab``: train a WordPiece vocabulary (vocab.txt) or, with ``--bpe``, GPT-1 byte-pair
merges (a directory with vocab.txt + merges.txt) on text files and/or registry corpora."""

import os
import time


def register(subparsers):
    """Add ``kbl vocab``."""
    p = subparsers.add_parser("vocab", help="train a WordPiece vocabulary (vocab.txt) or, with "
                                            "--bpe, GPT-1 byte-pair merges on a corpus")
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
    return p


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
