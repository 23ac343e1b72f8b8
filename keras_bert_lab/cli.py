"""``kbl``: the keras_bert_lab command line.

Each sub-command lives in one module of :mod:`keras_bert_lab.commands` with
``register(subparsers)``; errors of ours are printed as one readable line
(``kbl: error: …``) with exit status 2, never a traceback.
"""

import argparse
import os
import sys

from keras_bert_lab.commands import (demo, embed, export, features, finetune, generate, launch,
                                     fill_mask, models, predict, preset, pretrain, vectors, vocab,
                                     word2vec)
from keras_bert_lab.errors import KblError

# The sub-commands in the order `kbl --help` lists them; each module has register(subparsers).
COMMANDS = (models, demo, pretrain, launch, finetune, preset, word2vec, vectors, features,
            generate, export, predict, embed, fill_mask, vocab)


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
    for command in COMMANDS:
        if command is demo:
            command.register(sub, kbl=main)
        else:
            command.register(sub)
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
