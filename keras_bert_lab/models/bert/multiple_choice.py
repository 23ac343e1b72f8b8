"""``BertMultipleChoice``: the shared multiple-choice head (:mod:`keras_bert_lab.tasks.multiple_choice`) on a
``BertBackbone`` — BERT's SWAG head (Devlin et al. 2019, §4.4).
"""

import keras

from keras_bert_lab.models.bert.backbone import BertBackbone  # noqa: F401 (examples)
from keras_bert_lab.tasks.multiple_choice import EncoderMultipleChoice


@keras.saving.register_keras_serializable("keras_bert_lab")
class BertMultipleChoice(EncoderMultipleChoice):
    """:class:`~keras_bert_lab.tasks.multiple_choice.EncoderMultipleChoice` on a ``BertBackbone``.

    Example:
    >>> import numpy as np
    >>> model = BertMultipleChoice(BertBackbone("tiny"))
    >>> model.compile()
    >>> ids = np.array([[[101, 7592, 102, 2088, 102], [101, 7592, 102, 2003, 102]]])  # B=1, C=2
    >>> x = {"token_ids": ids, "segment_ids": np.array([[[0, 0, 0, 1, 1]] * 2]),
    ...      "padding_mask": np.ones_like(ids)}
    >>> tuple(model.predict(x, verbose=0).shape)
    (1, 2)
    >>> history = model.fit(x, np.array([1]), epochs=2, verbose=0)
    >>> sorted(history.history)
    ['accuracy', 'loss']
    """
