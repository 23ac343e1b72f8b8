"""``ElectraTokenClassifier``: the shared encoder head (:mod:`keras_bert_lab.tasks.token_classifier`) on ELECTRA's
discriminator — a tag for every token (named entities).

ELECTRA fine-tunes as BERT does (Clark et al. 2020, §3.1): the discriminator with BERT's head on
top; the generator is thrown away after pretraining. The pooler (for ``pooling="cls"``) was never
trained by replaced-token detection and starts from its initialisation, as in the released code.
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
