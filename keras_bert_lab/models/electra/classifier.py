"""``ElectraClassifier``: the shared encoder head (:mod:`keras_bert_lab.tasks.classifier`) on ELECTRA's
discriminator — sentence and sentence-pair classification and regression (GLUE's tasks in the paper).
(How ELECTRA fine-tunes: :mod:`keras_bert_lab.models.electra`.)
"""

import keras

from keras_bert_lab.models.electra.backbone import ElectraBackbone, require_discriminator
from keras_bert_lab.tasks.classifier import EncoderClassifier


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElectraClassifier(EncoderClassifier):
    """:class:`~keras_bert_lab.tasks.classifier.EncoderClassifier` on an ``ElectraBackbone``
    discriminator (a generator's backbone is refused).

    Example:
    >>> import numpy as np
    >>> model = ElectraClassifier(ElectraBackbone("tiny"), num_classes=3)
    >>> model.compile()
    >>> x = {"token_ids": np.array([[101, 7592, 2088, 102]] * 2),
    ...      "segment_ids": np.zeros((2, 4), "int32"), "padding_mask": np.ones((2, 4), "int32")}
    >>> history = model.fit(x, np.array([0, 2]), verbose=0)
    >>> tuple(model.predict(x, verbose=0).shape)
    (2, 3)
    """

    @classmethod
    def check_backbone(cls, backbone):
        require_discriminator(backbone, cls.__name__)
