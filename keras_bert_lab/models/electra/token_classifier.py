"""``ElectraTokenClassifier``: the shared encoder head (:mod:`keras_bert_lab.tasks.token_classifier`) on ELECTRA's
discriminator — a tag for every token (named entities).
(How ELECTRA fine-tunes: :mod:`keras_bert_lab.models.electra`.)
"""

import keras

from keras_bert_lab.models.electra.backbone import ElectraBackbone, require_discriminator
from keras_bert_lab.tasks.token_classifier import EncoderTokenClassifier


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElectraTokenClassifier(EncoderTokenClassifier):
    """:class:`~keras_bert_lab.tasks.token_classifier.EncoderTokenClassifier` on an ``ElectraBackbone``
    discriminator (a generator's backbone is refused).

    Example:
    >>> import numpy as np
    >>> model = ElectraTokenClassifier(ElectraBackbone("tiny"), labels=["O", "B-PER", "I-PER"])
    >>> x = {"token_ids": np.array([[101, 7592, 2088, 102]] * 2),
    ...      "segment_ids": np.zeros((2, 4), "int32"), "padding_mask": np.ones((2, 4), "int32")}
    >>> tuple(model.predict(x, verbose=0).shape)
    (2, 4, 3)
    """

    @classmethod
    def check_backbone(cls, backbone):
        require_discriminator(backbone, cls.__name__)
