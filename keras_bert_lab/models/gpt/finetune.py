"""The GPT family's ``kbl finetune`` adapters: GPT-1's recipe on the commands' flags and data.

Every family's ``finetune`` module offers the same functions (each optional), which the
commands find through the family registry (:mod:`keras_bert_lab.families`): ``classify``
(``kbl finetune classify | pair``), ``choice``, ``ner`` and ``squad``, each returning the task
model and what turns the task's data into its inputs; ``FLAGS`` names the task flags only this
family takes (the commands refuse them for the others).

What changes from BERT is GPT-1's recipe (Radford et al. 2018, §3.3): texts become
:class:`~keras_bert_lab.models.gpt.preprocessor.GPTTaskPacker` rows (``classify``: ``[start]
text [extract]``; ``pair``: ``[start] a [delim] b [extract]``, or both orders for a similarity
score with ``--regression``; ``choice``: one row per option), the heads read the extract token,
and ``--lm-loss-weight`` adds GPT-1's auxiliary language-modelling loss (λ = 0.5 in the paper).
Tagging puts each word's tag on its last piece; extractive QA reads ``[start] question [delim]
context [extract]`` windows.
"""

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.gpt.classifier import GPTClassifier
from keras_bert_lab.models.gpt.multiple_choice import GPTMultipleChoice
from keras_bert_lab.models.gpt.span_qa import GPTSpanQA
from keras_bert_lab.models.gpt.token_classifier import GPTTokenClassifier

FLAGS = ("lm_loss_weight",)


def _packer(settings):
    from keras_bert_lab.models.gpt.preprocessor import GPTTaskPacker
    from keras_bert_lab.preprocessing.bpe import BytePairTokenizer

    return GPTTaskPacker(BytePairTokenizer.from_preset(settings.preset), settings.sequence_length)


def classify(settings, args, problem, labels, splits):
    """``(model, {split: features})`` for ``classify`` / ``pair``; the caller adds targets."""
    if problem == "multi_label":
        raise ConfigError("--multi-label is not available for GPT presets (GPT-1's head is one "
                          "softmax); use a BERT preset.")
    similarity = args.pair and problem == "regression"
    model = GPTClassifier.from_preset(settings.preset, num_classes=len(labels) if labels else 1,
                                      num_sequences=2 if similarity else 1,
                                      lm_loss_weight=args.lm_loss_weight, dropout=args.dropout)
    packer = _packer(settings)

    def pack(part):
        if not args.pair:
            return packer.single(part.texts)
        return (packer.similarity if similarity else packer.pair)(part.texts, part.texts_pair)

    return model, {name: pack(part) for name, part in splits.items() if part is not None}


def choice(settings, args, splits):
    """``(model, {split: features})`` for ``choice``."""
    model = GPTMultipleChoice.from_preset(settings.preset, lm_loss_weight=args.lm_loss_weight,
                                          dropout=args.dropout)
    packer = _packer(settings)
    return model, {name: packer.choices(part.contexts, part.choices)
                   for name, part in splits.items() if part is not None}


def ner(settings, args, labels):
    """``(model, preprocessor, training preprocessor)`` for ``ner``: ``[start] pieces`` rows,
    each word's tag on its last piece."""
    from keras_bert_lab.models.gpt.preprocessor import GPTTaggingPreprocessor
    from keras_bert_lab.preprocessing.bpe import BytePairTokenizer

    model = GPTTokenClassifier.from_preset(settings.preset, labels=labels)
    preprocessor = GPTTaggingPreprocessor(BytePairTokenizer.from_preset(settings.preset), labels,
                                          settings.sequence_length)
    return model, preprocessor, preprocessor


def squad(settings, args):
    """``(model, preprocessor)`` for ``squad``."""
    from keras_bert_lab.models.gpt.preprocessor import GPTSpanQAPreprocessor

    model = GPTSpanQA.from_preset(settings.preset, lm_loss_weight=args.lm_loss_weight)
    return model, GPTSpanQAPreprocessor.from_preset(
        settings.preset, sequence_length=settings.sequence_length, doc_stride=args.doc_stride,
        max_query_length=args.max_query_length)
