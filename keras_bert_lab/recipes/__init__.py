"""The lab's recipes — what is trained on what — each the implementation of a ``kbl`` command:
:mod:`~.pretrain` (BERT pretraining: corpus → stream → ``BertPretrainer`` → preset) and the
fine-tuning tasks :mod:`~.classify` (classify, pair, choice), :mod:`~.squad` and :mod:`~.ner`
on :mod:`~.finetune`'s shared steps. Recipes are where data (``data``, ``preprocessing``,
``pipelines``) meets models (``tasks``) and training (``training``); nothing imports them but the
command line."""
