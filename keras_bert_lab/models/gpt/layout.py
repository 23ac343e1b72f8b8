"""GPT's model-parallel layout: which weights split over the ``model`` mesh axis (Megatron-LM's
split of each decoder block, :func:`~keras_bert_lab.distribution.layouts.block_rules`).

Shapes: ``V`` vocabulary, ``P`` positions, ``H`` hidden.

Example:
>>> from keras_bert_lab.models.gpt.config import GPTConfig
>>> dict(backbone_rules(GPTConfig.from_size("tiny")))["embeddings/position_embedding"]
(None, 'model')
"""

from keras_bert_lab.distribution.layouts import MODEL, block_rules


def backbone_rules(config):
    """``[(path regex, axes)]`` of a ``GPTBackbone`` built from ``config``."""
    return [
        ("embeddings/token_embedding/embeddings", (None, MODEL)),  # (V, H), tied to the head
        ("embeddings/position_embedding", (None, MODEL)),  # (P, H)
        *block_rules(r"decoder_layer_\d+"),
    ]
