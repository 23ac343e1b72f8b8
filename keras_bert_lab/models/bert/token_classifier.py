"""``BertTokenClassifier``: the shared token classifier (:mod:`keras_bert_lab.tasks.token_classifier`) on a
``BertBackbone`` — BERT's named-entity recognition head (Devlin et al. 2019, §5.3).
"""

import keras

from keras_bert_lab.models.bert.backbone import BertBackbone  # noqa: F401 (examples)
from keras_bert_lab.tasks.token_classifier import EncoderTokenClassifier


@keras.saving.register_keras_serializable("keras_bert_lab")
class BertTokenClassifier(EncoderTokenClassifier):
    """:class:`~keras_bert_lab.tasks.token_classifier.EncoderTokenClassifier` on a ``BertBackbone``.

    Example:
    >>> import numpy as np
    >>> model = BertTokenClassifier(BertBackbone("tiny"), labels=["O", "B-PER", "I-PER"])
    >>> model.compile()
    >>> x = {"token_ids": np.array([[101, 7592, 2088, 102]] * 2), "padding_mask": np.ones((2, 4)),
    ...      "segment_ids": np.zeros((2, 4), "int32")}
    >>> y = np.array([[0, 1, 2, 0]] * 2)
    >>> weights = np.array([[0, 1, 1, 0]] * 2)   # [CLS] and [SEP] carry no label
    >>> history = model.fit(x, y, sample_weight=weights, verbose=0)
    >>> sorted(history.history), tuple(model.predict(x, verbose=0).shape)
    (['accuracy', 'loss'], (2, 4, 3))
    """
