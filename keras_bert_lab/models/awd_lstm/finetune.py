"""The AWD-LSTM family's ``kbl finetune`` adapter: ``classify`` is ULMFiT's stage 3.

The functions every family's ``finetune`` module may offer are described in
:mod:`keras_bert_lab.models.gpt.finetune`; this family has ``classify`` only. The same command,
flags and data readers as BERT's; what changes is ULMFiT's classifier
(Howard & Ruder 2018, §3.3): each text becomes word ids (the preset's
:class:`~keras_bert_lab.preprocessing.word_tokenizer.WordTokenizer`, the text's end marked with
``<eos>``), and :class:`~keras_bert_lab.models.awd_lstm.ulmfit_classifier.UlmfitClassifier` reads them —
concat pooling of the last LSTM layer under two linear blocks. ULMFiT's techniques are flags of
every ``kbl finetune`` task: ``--unfreeze gradual --schedule slanted --layer-decay 0.385``.
"""

import numpy as np

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.awd_lstm.ulmfit_classifier import UlmfitClassifier
from keras_bert_lab.preprocessing.word_tokenizer import WordTokenizer

FLAGS = ()

def pack_words(tokenizer, texts, sequence_length):
    """``{"token_ids", "padding_mask"}`` (N, L) int32: each text's word ids, cut to ``L − 1``,
    then ``<eos>``, padded with 0 on the right.

    >>> tokenizer = WordTokenizer(["<pad>", "<unk>", "<eos>", "good", "film"])
    >>> pack_words(tokenizer, ["A good film !", ""], 4)["token_ids"].tolist()
    [[1, 3, 4, 2], [2, 0, 0, 0]]
    """
    from keras_bert_lab.preprocessing.word_tokenizer import EOS

    if sequence_length < 2:
        raise ConfigError(f"--sequence-length {sequence_length} leaves no room for a word and "
                          "<eos>; use 2 or more.")
    ids = np.zeros((len(texts), sequence_length), np.int32)
    for row, text in enumerate(texts):
        words = tokenizer.encode(text)[:sequence_length - 1] + [EOS]
        ids[row, :len(words)] = words
    return {"token_ids": ids, "padding_mask": (ids > 0).astype(np.int32)}


def classify(settings, args, problem, labels, splits):
    """``(model, {split: features})`` for ``classify`` with an AWD-LSTM preset; the caller adds
    the targets."""
    if problem != "single_label":
        raise ConfigError(f"{problem.replace('_', '-')} is not available for AWD-LSTM presets "
                          "(ULMFiT's head is one softmax); use a BERT preset.")
    if args.pair:
        raise ConfigError("kbl finetune pair needs a model that reads two texts; an AWD-LSTM "
                          "preset classifies one text (kbl finetune classify).")
    model = UlmfitClassifier.from_preset(settings.preset, num_classes=len(labels) if labels else 1,
                                         **({"dropout": args.dropout}
                                            if args.dropout is not None else {}))
    tokenizer = WordTokenizer.from_preset(settings.preset)
    return model, {name: pack_words(tokenizer, part.texts, settings.sequence_length)
                   for name, part in splits.items() if part is not None}
