"""Training on several devices with ``keras.distribution``: data parallel, and Megatron-style
model parallel through a checked layout map (:mod:`.layouts`), chosen by a flag value
(:mod:`.strategies`).
"""

from keras_bert_lab.distribution.layouts import (  # noqa: F401
    BATCH, MODEL, REPLICATED, backbone_rules, check_layout, layout_map)
from keras_bert_lab.distribution.strategies import (  # noqa: F401
    check_backend, check_batch_size, check_model, data_parallel_size, device_mesh,
    distribution_for, parse_kind)
