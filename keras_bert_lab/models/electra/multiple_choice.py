"""``ElectraMultipleChoice``: the shared encoder head (:mod:`keras_bert_lab.tasks.multiple_choice`) on ELECTRA's
discriminator — the right continuation among C candidates (SWAG, RACE).
(How ELECTRA fine-tunes: :mod:`keras_bert_lab.models.electra`.)
"""

import keras

from keras_bert_lab.models.electra.backbone import ElectraBackbone, require_discriminator
from keras_bert_lab.tasks.multiple_choice import EncoderMultipleChoice


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElectraMultipleChoice(EncoderMultipleChoice):
    """:class:`~keras_bert_lab.tasks.multiple_choice.EncoderMultipleChoice` on an ``ElectraBackbone``
    discriminator (a generator's backbone is refused).

    Example:
    >>> import numpy as np
    >>> model = ElectraMultipleChoice(ElectraBackbone("tiny"))
    >>> ids = np.array([[[101, 7592, 102, 2088, 102], [101, 7592, 102, 2003, 102]]])  # B=1, C=2
    >>> x = {"token_ids": ids, "segment_ids": np.array([[[0, 0, 0, 1, 1]] * 2]),
    ...      "padding_mask": np.ones_like(ids)}
    >>> tuple(model.predict(x, verbose=0).shape)
    (1, 2)
    """

    @classmethod
    def check_backbone(cls, backbone):
        require_discriminator(backbone, cls.__name__)
