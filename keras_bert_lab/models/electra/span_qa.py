"""``ElectraSpanQA``: the shared encoder head (:mod:`keras_bert_lab.tasks.span_qa`) on ELECTRA's
discriminator — extractive question answering (SQuAD, as in the paper's §3.3).
(How ELECTRA fine-tunes: :mod:`keras_bert_lab.models.electra`.)
"""

import keras

from keras_bert_lab.models.electra.backbone import ElectraBackbone, require_discriminator
from keras_bert_lab.tasks.span_qa import EncoderSpanQA


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElectraSpanQA(EncoderSpanQA):
    """:class:`~keras_bert_lab.tasks.span_qa.EncoderSpanQA` on an ``ElectraBackbone``
    discriminator (a generator's backbone is refused).

    Example:
    >>> import numpy as np
    >>> model = ElectraSpanQA(ElectraBackbone("tiny"))
    >>> x = {"token_ids": np.array([[101, 7592, 2088, 102]] * 2),
    ...      "segment_ids": np.zeros((2, 4), "int32"), "padding_mask": np.ones((2, 4), "int32")}
    >>> sorted((k, tuple(v.shape)) for k, v in model.predict(x, verbose=0).items())
    [('end_logits', (2, 4)), ('start_logits', (2, 4))]
    """

    @classmethod
    def check_backbone(cls, backbone):
        require_discriminator(backbone, cls.__name__)
