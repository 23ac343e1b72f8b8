"""``BertSpanQA``: the shared span QA head (:mod:`keras_bert_lab.tasks.span_qa`) on a
``BertBackbone`` — BERT's SQuAD head (Devlin et al. 2019, §4.2).
"""

import keras

from keras_bert_lab.models.bert.backbone import BertBackbone  # noqa: F401 (examples)
from keras_bert_lab.tasks.span_qa import EncoderSpanQA


@keras.saving.register_keras_serializable("keras_bert_lab")
class BertSpanQA(EncoderSpanQA):
    """:class:`~keras_bert_lab.tasks.span_qa.EncoderSpanQA` on a ``BertBackbone``.

    Example:
    >>> import numpy as np
    >>> model = BertSpanQA(BertBackbone("tiny"))
    >>> model.compile()
    >>> x = {"token_ids": np.full((2, 8), 5), "segment_ids": np.zeros((2, 8), "int32"),
    ...      "padding_mask": np.ones((2, 8), "int32")}
    >>> y = {"start_logits": np.array([3, 0]), "end_logits": np.array([4, 0])}
    >>> history = model.fit(x, y, verbose=0)
    >>> sorted((k, tuple(v.shape)) for k, v in model.predict(x, verbose=0).items())
    [('end_logits', (2, 8)), ('start_logits', (2, 8))]
    """
