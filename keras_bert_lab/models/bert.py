"""``BertBackbone``: the BERT encoder as a functional Keras model.

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden, ``L`` layers.
"""

import keras
import numpy as np
from keras import ops

from keras_bert_lab.errors import InputError
from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.layers.embeddings import BertEmbedding
from keras_bert_lab.layers.encoder import TransformerEncoderBlock
from keras_bert_lab.models.backbone import Backbone
from keras_bert_lab.models.bert_config import BertConfig

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


def _concrete(x):
    """``x`` as a NumPy array when it holds values (eager), else ``None`` (symbolic or traced)."""
    if isinstance(x, (np.ndarray, list, tuple)):
        return np.asarray(x)
    if isinstance(x, keras.KerasTensor):
        return None
    try:
        return ops.convert_to_numpy(x)
    except Exception:  # a tf graph tensor or a jax tracer: no values to check.
        return None


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

    def __init__(self, config="base", dtype=None, **kwargs):
        config = BertConfig.coerce(config)
        learned = config.position_embedding == "learned"
        embeddings = BertEmbedding(
            config.vocab_size, config.hidden_size, config.max_positions, config.type_vocab_size,
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

    def __call__(self, inputs, *args, **kwargs):
        self.validate_inputs(inputs)  # before Keras' own input checks, for clearer messages
        # Extra keys (e.g. a task's mask_positions) are dropped: Keras would otherwise match a dict
        # to the inputs by sorted position, not by name.
        return super().__call__({name: inputs[name] for name in INPUT_NAMES}, *args, **kwargs)

    def validate_inputs(self, inputs):
        """Raise ``InputError`` naming the problem and the fix; see the class docstring."""
        if not isinstance(inputs, dict):
            raise InputError(
                f"BertBackbone takes a dict with keys {list(INPUT_NAMES)}, got "
                f"{type(inputs).__name__}. Build it with the packer, e.g. "
                "{'token_ids': ids, 'segment_ids': segments, 'padding_mask': mask}.")
        missing = [name for name in INPUT_NAMES if name not in inputs]
        if missing:
            raise InputError(f"BertBackbone inputs lack {missing}; expected keys {list(INPUT_NAMES)} "
                             f"(got {sorted(inputs)}).")
        shape = None
        for name in INPUT_NAMES:
            x = inputs[name]
            if not hasattr(x, "dtype"):
                x = np.asarray(x)
            dtype = keras.backend.standardize_dtype(x.dtype)
            if name != "padding_mask" and not ("int" in dtype):
                raise InputError(f"BertBackbone input '{name}' must hold integer ids (int32), got "
                                 f"dtype {dtype}; cast it with keras.ops.cast(x, 'int32').")
            x_shape = tuple(ops.shape(x))
            if len(x_shape) != 2:
                raise InputError(f"BertBackbone input '{name}' must have shape (batch, tokens), got "
                                 f"{x_shape}.")
            static = tuple(d if isinstance(d, int) else None for d in x_shape)
            if shape is not None and any(a is not None and b is not None and a != b
                                         for a, b in zip(shape, static)):
                raise InputError(f"BertBackbone inputs disagree in shape: '{INPUT_NAMES[0]}' is "
                                 f"{shape} but '{name}' is {static}; pack them together.")
            shape = shape or static
        length = shape[1]
        if (length is not None and length > self.config.max_positions
                and self.config.position_embedding == "rotary"):
            raise InputError(
                f"Sequence length {length} exceeds max_positions ({self.config.max_positions}); "
                f"truncate to at most {self.config.max_positions} tokens or raise max_positions "
                "(rotary positions have no table: any value builds the same weights).")
        if length is not None and length > self.config.max_positions:
            raise InputError(
                f"Sequence length {length} exceeds the position table ({self.config.max_positions} "
                f"positions); truncate to at most {self.config.max_positions} tokens (the packer's "
                f"sequence_length) or use a config with larger max_positions.")
        for name, upper in (("token_ids", self.config.vocab_size),
                            ("segment_ids", self.config.type_vocab_size)):
            values = _concrete(inputs[name])
            if values is not None and values.size and (values.min() < 0 or values.max() >= upper):
                bad = values.max() if values.max() >= upper else values.min()
                raise InputError(f"BertBackbone input '{name}' holds id {int(bad)} outside "
                                 f"[0, {upper}); check that the tokenizer's vocabulary matches the "
                                 f"model (vocab_size={self.config.vocab_size}).")
