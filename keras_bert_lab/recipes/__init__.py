"""The lab's recipes — what is trained on what — each the implementation of a ``kbl`` command:
:mod:`~.pretrain` (BERT pretraining: corpus → stream → ``BertPretrainer`` → preset; ``--model
gpt`` and ``--model elmo`` hand over to :mod:`~.language_model` and :mod:`~.elmo_pretrain`), the
fine-tuning tasks :mod:`~.classify` (classify, pair, choice; GPT presets through
:mod:`~.gpt_tasks`), :mod:`~.squad` and :mod:`~.ner` on :mod:`~.finetune`'s shared steps, and the
studies of the lineage: :mod:`~.word2vec`, :mod:`~.word_classify`, :mod:`~.features`,
:mod:`~.word_sense`, :mod:`~.generate`. Recipes are where data (``data``, ``preprocessing``,
``pipelines``) meets models (``tasks``) and training (``training``); nothing imports them but the
command line."""
