"""``kbl finetune``: the BERT paper's fine-tuning tasks from a preset, one subcommand each.

The shared recipe (AdamW, warm-up + linear decay, optional layer-wise decay, best-epoch restore,
metrics report, fine-tuned preset) lives in :mod:`keras_bert_lab.finetune.common`; each task module
registers its subcommand(s) with ``register(subparsers)``.
"""

import importlib

TASK_MODULES = ("classify", "squad", "ner")


def add_arguments(parser):
    """Add the task subcommands (each sets ``run``) to the ``kbl finetune`` parser."""
    subparsers = parser.add_subparsers(dest="task", required=True, metavar="TASK")
    for name in TASK_MODULES:
        importlib.import_module(f"keras_bert_lab.finetune.{name}").register(subparsers)
    return subparsers
