"""The ``kbl finetune`` adapters of the BERT-style encoder families (BERT, ELECTRA): BERT's recipes
on the commands' flags and data, with the preset's family's task classes and preprocessors.

The functions every family's ``finetune`` module may offer (``classify``, ``choice``, ``ner``,
``squad``, and ``FLAGS``) are described in :mod:`keras_bert_lab.models.gpt.finetune`. BERT's (Devlin
et al. 2019, §4), which ELECTRA fine-tunes with too (Clark et al. 2020, §3.1: "simple linear
classifiers on top"): texts packed as ``[CLS] A [SEP] (B [SEP])`` by the family's ``classify``
preprocessor (an :class:`~keras_bert_lab.preprocessing.encoder_text.EncoderTextPreprocessor`), one
new layer on the pooled ``[CLS]`` state (or, with ``--pooling mean``, the mean of the last layer)
for classification and multiple choice; each word's tag on its first piece (``--label-all-pieces``:
on every piece in training) for NER; start and end scores over ``[CLS] question [SEP] window [SEP]``
for SQuAD. A family points its registry entry's ``finetune`` here; the classes come from its
``tasks`` and ``preprocessors`` (:mod:`keras_bert_lab.families`).
"""

from keras_bert_lab.presets.registry import read_preset

FLAGS = ("pooling", "label_all_pieces")


def _family(settings):
    return read_preset(settings.preset, verify=False).family


def _preprocessor(settings, kind):
    return _family(settings).preprocessor(kind).from_preset(settings.preset,
                                                            settings.sequence_length)


def classify(settings, args, problem, labels, splits):
    """``(model, {split: features})`` for ``classify`` / ``pair``; the caller adds targets."""
    model = _family(settings).task("classify").from_preset(
        settings.preset, problem=problem, labels=labels,
        num_classes=len(labels) if labels else 1, dropout=args.dropout, pooling=args.pooling)
    preprocessor = _preprocessor(settings, "classify")
    return model, {name: preprocessor(part.texts, part.texts_pair)
                   for name, part in splits.items() if part is not None}


def choice(settings, args, splits):
    """``(model, {split: features})`` for ``choice``."""
    model = _family(settings).task("choice").from_preset(settings.preset, dropout=args.dropout,
                                                         pooling=args.pooling)
    preprocessor = _preprocessor(settings, "choice")
    return model, {name: preprocessor.pack_choices(part.contexts, part.choices)
                   for name, part in splits.items() if part is not None}


def ner(settings, args, labels):
    """``(model, preprocessor, training preprocessor)`` for ``ner``; the training one labels
    every piece of a word with ``--label-all-pieces``."""
    family = _family(settings)
    model = family.task("ner").from_preset(settings.preset, labels=labels)
    tagger = family.preprocessor("ner")
    preprocessor = tagger.from_preset(settings.preset, labels=labels,
                                      sequence_length=settings.sequence_length)
    train_preprocessor = tagger(preprocessor.tokenizer, labels, settings.sequence_length,
                                args.label_all_pieces)
    return model, preprocessor, train_preprocessor


def squad(settings, args):
    """``(model, preprocessor)`` for ``squad``."""
    family = _family(settings)
    return family.task("squad").from_preset(settings.preset), family.preprocessor(
        "squad").from_preset(settings.preset, sequence_length=settings.sequence_length,
                             doc_stride=args.doc_stride, max_query_length=args.max_query_length)
