"""The BERT family's ``kbl finetune`` adapters: BERT's recipes on the commands' flags and data.

The functions every family's ``finetune`` module may offer (``classify``, ``choice``, ``ner``,
``squad``, and ``FLAGS``) are described in :mod:`keras_bert_lab.models.gpt.finetune`. BERT's
(Devlin et al. 2019, §4): texts packed as ``[CLS] A [SEP] (B [SEP])`` by the preset's
:class:`~keras_bert_lab.models.bert.preprocessor.BertTextPreprocessor`, one new layer on the
pooled ``[CLS]`` state (or, with ``--pooling mean``, the mean of the last layer) for
classification and multiple choice; each word's tag on its first piece (``--label-all-pieces``:
on every piece in training) for NER; start and end scores over ``[CLS] question [SEP] window
[SEP]`` for SQuAD.
"""

from keras_bert_lab.models.bert.classifier import BertClassifier
from keras_bert_lab.models.bert.multiple_choice import BertMultipleChoice
from keras_bert_lab.models.bert.span_qa import BertSpanQA
from keras_bert_lab.models.bert.token_classifier import BertTokenClassifier

FLAGS = ("pooling", "label_all_pieces")


def _preprocessor(settings):
    from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor

    return BertTextPreprocessor.from_preset(settings.preset, settings.sequence_length)


def classify(settings, args, problem, labels, splits):
    """``(model, {split: features})`` for ``classify`` / ``pair``; the caller adds targets."""
    model = BertClassifier.from_preset(settings.preset, problem=problem, labels=labels,
                                       num_classes=len(labels) if labels else 1,
                                       dropout=args.dropout, pooling=args.pooling)
    preprocessor = _preprocessor(settings)
    return model, {name: preprocessor(part.texts, part.texts_pair)
                   for name, part in splits.items() if part is not None}


def choice(settings, args, splits):
    """``(model, {split: features})`` for ``choice``."""
    model = BertMultipleChoice.from_preset(settings.preset, dropout=args.dropout,
                                           pooling=args.pooling)
    preprocessor = _preprocessor(settings)
    return model, {name: preprocessor.pack_choices(part.contexts, part.choices)
                   for name, part in splits.items() if part is not None}


def ner(settings, args, labels):
    """``(model, preprocessor, training preprocessor)`` for ``ner``; the training one labels
    every piece of a word with ``--label-all-pieces``."""
    from keras_bert_lab.preprocessing.tagging import TaggingPreprocessor

    model = BertTokenClassifier.from_preset(settings.preset, labels=labels)
    preprocessor = TaggingPreprocessor.from_preset(settings.preset, labels=labels,
                                                   sequence_length=settings.sequence_length)
    train_preprocessor = TaggingPreprocessor(preprocessor.tokenizer, labels,
                                             settings.sequence_length, args.label_all_pieces)
    return model, preprocessor, train_preprocessor


def squad(settings, args):
    """``(model, preprocessor)`` for ``squad``."""
    from keras_bert_lab.preprocessing.span_qa import SpanQAPreprocessor

    return BertSpanQA.from_preset(settings.preset), SpanQAPreprocessor.from_preset(
        settings.preset, sequence_length=settings.sequence_length, doc_stride=args.doc_stride,
        max_query_length=args.max_query_length)
