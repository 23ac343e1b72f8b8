"""``BertBackbone``: the BERT encoder as a functional Keras model.

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden, ``L`` layers.
"""

import keras

from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.layers.embeddings import BertEmbedding
from keras_bert_lab.layers.encoder import TransformerEncoderBlock
from keras_bert_lab.models.backbone import Backbone
from keras_bert_lab.models.bert.config import BertConfig

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable("keras_bert_lab")
class BertBackbone(Backbone):
    """The BERT encoder (Devlin et al. 2019): embeddings, ``L`` post-LN blocks and the pooler.

    Inputs (a dict): ``token_ids`` (B, T) int, ``segment_ids`` (B, T) int in ``[0, 2)``,
    ``padding_mask`` (B, T), 1 for real tokens and 0 for padding. Outputs (a dict):
    ``sequence_output`` (B, T, H), the last layer; ``pooled_output`` (B, H), ``tanh(W·h_[CLS] + b)``,
    which BERT trains on next-sentence prediction; ``hidden_states``, a list of ``L + 1`` tensors
    (B, T, H) — the embedding output, then each block's output — for feature extraction (the
    BERT paper's NER feature-based study sums or concatenates the last four).

    With ``config.norm_first`` (pre-LN) the blocks' outputs are not normalised; the last one goes
    through ``final_norm``, and ``hidden_states[-1]`` is that normalised ``sequence_output`` — as
    Hugging Face's ``ModernBertModel`` returns them — while the entries before it are the raw
    block outputs. The config's other modern options (``use_bias``, ``feedforward``,
    ``position_embedding="rotary"``) change the blocks and the embedding, not the outputs.

    Inputs are checked before any computation in eager calls, and for NumPy inputs of ``predict``
    / ``predict_on_batch`` (of the backbone or a task on it): names, integer dtypes, equal shapes,
    ``T ≤ max_positions`` and id ranges. Inside a compiled graph fed with tensors or a dataset
    (``fit``, ``predict`` on TensorFlow and JAX) only names, dtypes and static shapes can be
    checked; there an out-of-range id is an ``InvalidArgumentError`` from TensorFlow's gather,
    while JAX's gather raises nothing and fills the row with NaN. PyTorch runs eagerly, so the
    range check always applies.

    Args:
        config: a ``BertConfig``, a dict of its fields, or a size name (``"tiny"`` … ``"large"``).
        dtype: optional dtype policy (e.g. ``"mixed_bfloat16"``); the global policy otherwise.

    ``BertBackbone.from_preset("minilm_l6_en_uncased")`` loads real weights (see
    :class:`~keras_bert_lab.models.backbone.Backbone`).

    Example:
    >>> import numpy as np
    >>> backbone = BertBackbone("tiny")
    >>> outputs = backbone({"token_ids": np.array([[101, 7592, 102, 0]]),
    ...                     "segment_ids": np.zeros((1, 4), "int32"),
    ...                     "padding_mask": np.array([[1, 1, 1, 0]])})
    >>> [tuple(outputs[k].shape) for k in ("sequence_output", "pooled_output")]
    [(1, 4, 128), (1, 128)]
    >>> len(outputs["hidden_states"])
    3
    """

    config_class = BertConfig
    input_names = INPUT_NAMES
    id_ranges = {"token_ids": "vocabulary_size", "segment_ids": "type_vocab_size"}

    def __init__(self, config="base", dtype=None, **kwargs):
        config = BertConfig.coerce(config)
        learned = config.position_embedding == "learned"
        embeddings = BertEmbedding(
            config.vocabulary_size, config.hidden_size, config.max_positions, config.type_vocab_size,
            dropout=config.dropout, layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range, learned_positions=learned,
            use_bias=config.use_bias, dtype=dtype, name="embeddings")
        encoder_layers = [
            TransformerEncoderBlock(
                config.num_heads, config.intermediate_size, dropout=config.dropout,
                attention_dropout=config.attention_dropout,
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range, norm_first=config.norm_first,
                use_bias=config.use_bias, feedforward=config.feedforward,
                rotary_base=None if learned else config.rotary_base,
                # pre-LN: the embedding's LayerNorm already normalises the first block's input
                normalize_input=not (config.norm_first and i == 0),
                dtype=dtype, name=f"encoder_layer_{i}")
            for i in range(config.num_layers)
        ]
        final_norm = keras.layers.LayerNormalization(
            epsilon=config.layer_norm_epsilon, center=config.use_bias, dtype=dtype,
            name="final_norm") if config.norm_first else None
        pooler = keras.layers.Dense(
            config.hidden_size, activation="tanh", dtype=dtype, name="pooler",
            kernel_initializer=truncated_normal(config.initializer_range))
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
        x = embeddings(inputs["token_ids"], inputs["segment_ids"])  # (B, T, H)
        hidden_states = [x]
        for block in encoder_layers:
            x = block(x, padding_mask=inputs["padding_mask"])
            hidden_states.append(x)
        if final_norm is not None:
            x = hidden_states[-1] = final_norm(x)
        pooled = pooler(x[:, 0, :])  # (B, H)
        super().__init__(
            config, inputs=inputs,
            outputs={"sequence_output": x, "pooled_output": pooled, "hidden_states": hidden_states},
            dtype=dtype, **kwargs)
        # Layers are attributes only after Model.__init__ (the torch backend requires it).
        self.embeddings, self.encoder_layers, self.pooler = embeddings, encoder_layers, pooler
        self.final_norm = final_norm

    @property
    def token_embedding(self):
        """The ``(V, H)`` token-embedding layer (tied to the masked-LM decoder)."""
        return self.embeddings.token_embedding

    def max_length_error(self, length):
        limit = self.config.max_positions
        if length > limit and self.config.position_embedding == "rotary":
            return (f"Sequence length {length} exceeds max_positions ({limit}); truncate to at "
                    f"most {limit} tokens or raise max_positions (rotary positions have no "
                    "table: any value builds the same weights).")
        return super().max_length_error(length)
