"""``kbl word2vec``: train word2vec vectors (skip-gram or CBOW) on a corpus.

One flag per :class:`~keras_bert_lab.models.word2vec.pretrain.Word2VecSettings` field; the run is
the word2vec family's recipe (:func:`keras_bert_lab.models.word2vec.pretrain.run`).
"""

import dataclasses

from keras_bert_lab.commands.pretrain import parse_bool
from keras_bert_lab.models.word2vec.pretrain import Word2VecSettings, run


def register(subparsers):
    """Add ``kbl word2vec``."""
    p = subparsers.add_parser("word2vec", help="train word2vec vectors (skip-gram or CBOW) on a "
                                               "corpus")
    add_arguments(p)
    p.set_defaults(func=main)
    return p
def add_arguments(parser):
    """``kbl word2vec`` options: one per ``Word2VecSettings`` field, plus the run controls."""
    defaults = Word2VecSettings()
    parser.add_argument("--corpus", nargs="+", default=list(defaults.corpus),
                        help="named corpora (wikitext2, news; NAME:PART for a part) or "
                             "files/globs/directories")
    parser.add_argument("--output", required=True, help="output directory of the run")
    parser.add_argument("--resume", action="store_true", help="continue the run in --output")
    parser.add_argument("--overwrite", action="store_true", help="replace the run in --output")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--cbow", dest="architecture", action="store_const", const="cbow",
                        default="skipgram", help="CBOW instead of skip-gram")
    for field in dataclasses.fields(Word2VecSettings):
        if field.name in ("corpus", "architecture"):
            continue
        value = getattr(defaults, field.name)
        flag = "--" + field.name.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(flag, type=parse_bool, default=value, metavar="true|false")
        elif field.name == "subsampling":
            parser.add_argument(flag, choices=("paper", "word2vec.c"), default=value)
        else:
            kind = {"max_vocabulary": int, "learning_rate": float}.get(field.name, type(value))
            parser.add_argument(flag, type=kind, default=value)


def main(args):
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(Word2VecSettings)}
    settings = Word2VecSettings(**values)
    metrics = run(settings, args.output, resume=args.resume, overwrite=args.overwrite,
                  verbose=0 if args.quiet else 1)
    shown = {k: v for k, v in metrics.items() if k.startswith(("analogy_accuracy", "wordsim",
                                                               "simlex", "words_per_s"))}
    print(f"Vectors in {args.output}/vectors.txt; " +
          ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in shown.items()))
