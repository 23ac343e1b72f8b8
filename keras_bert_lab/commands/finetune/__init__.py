"""``kbl finetune TASK``: the fine-tuning commands over :mod:`~.common`'s shared steps.

:mod:`~.classify` (``classify``, ``pair`` and ``choice``), :mod:`~.squad`, :mod:`~.ner`. Each reads
its data, asks the preset's family for its adapter (``models/<family>/finetune.py``, or
:mod:`~.encoder` for the BERT-style encoders: the task model and its inputs) and runs the same
steps: start, fine-tune with the best validation epoch kept, write the metrics and the fine-tuned
preset.
"""

from keras_bert_lab.commands.finetune import classify, ner, squad


def register(subparsers):
    """Add ``kbl finetune`` and its tasks."""
    p = subparsers.add_parser("finetune", help="fine-tune a preset: classify, pair, choice, "
                                               "squad, ner")
    tasks = p.add_subparsers(dest="task", required=True, metavar="TASK")
    for command in (classify, squad, ner):
        command.register(tasks)
    p.set_defaults(func=lambda args: args.run(args))
    return p
