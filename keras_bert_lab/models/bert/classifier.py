"""``BertClassifier``: the shared encoder classifier (:mod:`keras_bert_lab.tasks.classifier`) on a
``BertBackbone`` — BERT's sentence and sentence-pair classification (Devlin et al. 2019, §4.1).
"""

import keras

from keras_bert_lab.models.bert.backbone import BertBackbone  # noqa: F401 (examples)
from keras_bert_lab.tasks.classifier import EncoderClassifier


@keras.saving.register_keras_serializable("keras_bert_lab")
class BertClassifier(EncoderClassifier):
    """Pooled ``[CLS]`` output → dropout → ``Dense(K)`` on a ``BertBackbone``; the arguments,
    problems and pooling are :class:`~keras_bert_lab.tasks.classifier.EncoderClassifier`'s.

    Example:
    >>> import numpy as np
    >>> model = BertClassifier(BertBackbone("tiny"), num_classes=3)
    >>> model.compile()
    >>> x = {"token_ids": np.array([[101, 7592, 102, 0], [101, 2088, 2003, 102]]),
    ...      "segment_ids": np.zeros((2, 4), "int32"),
    ...      "padding_mask": np.array([[1, 1, 1, 0], [1, 1, 1, 1]])}
    >>> tuple(model.predict(x, verbose=0).shape)
    (2, 3)
    >>> history = model.fit(x, np.array([0, 2]), epochs=2, verbose=0)
    >>> sorted(history.history)
    ['accuracy', 'loss']

    From raw text, with the preprocessor of the preset's tokenizer (here a tiny random model saved
    with the real vocabulary):

    >>> import tempfile
    >>> from keras_bert_lab.data.registry import locate
    >>> from keras_bert_lab.models.bert import BertTextPreprocessor
    >>> path = BertClassifier(BertBackbone("tiny"), labels=["neg", "pos"]).save_to_preset(
    ...     tempfile.mkdtemp() + "/clf", vocabulary=locate("bert_uncased_vocab"))
    >>> model = BertClassifier.from_preset(path)
    >>> preprocessor = BertTextPreprocessor.from_preset(path, sequence_length=32)
    >>> out = model.predict_labels(preprocessor(["A gripping, funny film.", "Dull."]))
    >>> out["probabilities"].shape, all(label in ("neg", "pos") for label in out["labels"])
    ((2, 2), True)
    """
