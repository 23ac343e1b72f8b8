"""BERT's model-parallel layout: which weights split over the ``model`` mesh axis (Megatron-LM's
split of each encoder block, :func:`~keras_bert_lab.distribution.layouts.block_rules`).

Shapes: ``V`` vocabulary, ``P`` positions, ``H`` hidden.

Example:
>>> from keras_bert_lab.models.bert.config import BertConfig
>>> dict(backbone_rules(BertConfig.from_size("tiny")))["pooler/(?:kernel|bias)"]
()
"""

from keras_bert_lab.distribution.layouts import MODEL, REPLICATED, block_rules


def backbone_rules(config):
    """``[(path regex, axes)]`` of a ``BertBackbone`` built from ``config``."""
    return [
        ("embeddings/token_embedding/embeddings", (None, MODEL)),  # (V, H): by hidden
        ("embeddings/segment_embedding/embeddings", (None, MODEL)),  # (2, H)
        ("embeddings/position_embedding", (None, MODEL)),  # (P, H)
        *block_rules(r"encoder_layer_\d+"),
        ("pooler/(?:kernel|bias)", REPLICATED),  # (H, H): [CLS] only, cheap to replicate
    ]
