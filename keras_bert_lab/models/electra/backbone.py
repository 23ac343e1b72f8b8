"""``ElectraBackbone``: BERT's encoder over embeddings of their own width (Clark et al. 2020).

Shapes: ``B`` batch, ``T`` tokens, ``E`` embedding width, ``H`` hidden.
"""

import keras

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.layers.embeddings import BertEmbedding
from keras_bert_lab.layers.encoder import TransformerEncoderBlock
from keras_bert_lab.models.backbone import Backbone
from keras_bert_lab.models.electra.config import ElectraConfig

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElectraBackbone(Backbone):
    """The ELECTRA encoder: token + position + segment embeddings of width ``E`` (LayerNorm,
    dropout), a ``Dense(E → H)`` projection when ``E ≠ H`` (``embedding_projection``), ``L``
    post-LN blocks, and (a discriminator's) a ``tanh`` pooler on ``[CLS]``.

    The same backbone is the discriminator (the model ELECTRA keeps for fine-tuning) and the
    generator (a smaller masked LM used only in pretraining); ``config.role`` says which. The
    paper ties the two models' embeddings: a generator is built with ``embeddings=`` the
    discriminator's :class:`~keras_bert_lab.layers.embeddings.BertEmbedding` layer, so one table
    trains from both losses. Hugging Face's ``ElectraModel`` computes the same (the pooler
    aside: ELECTRA's pretraining never uses it, the original code builds it and leaves it at its
    initialisation, and ``transformers`` drops it; fine-tuning heads on the pooled ``[CLS]`` train
    it, as in the original code, or use mean pooling).

    Inputs (a dict): ``token_ids``, ``segment_ids``, ``padding_mask`` (B, T). Outputs (a dict):
    ``sequence_output`` (B, T, H); ``pooled_output`` (B, H), a discriminator's only (a generator
    is never fine-tuned); ``hidden_states``, ``L + 1`` tensors (B, T, H): the projected
    embeddings, then each block's output (``transformers``' order).

    Args:
        config: an ``ElectraConfig``, a dict of its fields, or a size name (``"small"``).
        dtype: optional dtype policy (e.g. ``"mixed_bfloat16"``).
        embeddings: a ``BertEmbedding`` layer to share (the discriminator's, for a generator);
            its sizes must be the config's.

    Example:
    >>> import numpy as np
    >>> backbone = ElectraBackbone("tiny")
    >>> outputs = backbone({"token_ids": np.array([[101, 7592, 102, 0]]),
    ...                     "segment_ids": np.zeros((1, 4), "int32"),
    ...                     "padding_mask": np.array([[1, 1, 1, 0]])})
    >>> [tuple(outputs[k].shape) for k in ("sequence_output", "pooled_output")]
    [(1, 4, 128), (1, 128)]
    >>> backbone.embeddings.token_embedding.output_dim     # E = 64, projected to H = 128
    64
    >>> generator = ElectraBackbone(backbone.config.generator(), embeddings=backbone.embeddings)
    >>> generator.embeddings is backbone.embeddings, generator.config.hidden_size
    (True, 32)
    """

    config_class = ElectraConfig
    input_names = INPUT_NAMES
    id_ranges = {"token_ids": "vocabulary_size", "segment_ids": "type_vocab_size"}

    def __init__(self, config="small", dtype=None, embeddings=None, **kwargs):
        config = ElectraConfig.coerce(config)
        if embeddings is None:
            embeddings = BertEmbedding(
                config.vocabulary_size, config.embedding_size, config.max_positions,
                config.type_vocab_size, dropout=config.dropout,
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range, dtype=dtype, name="embeddings")
        else:
            check_shared_embeddings(embeddings, config)
        projection = keras.layers.Dense(
            config.hidden_size, kernel_initializer=truncated_normal(config.initializer_range),
            dtype=dtype, name="embedding_projection") if config.projects_embeddings else None
        encoder_layers = [
            TransformerEncoderBlock(
                config.num_heads, config.intermediate_size, dropout=config.dropout,
                attention_dropout=config.attention_dropout,
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range, dtype=dtype,
                name=f"encoder_layer_{i}")
            for i in range(config.num_layers)
        ]
        pooler = keras.layers.Dense(
            config.hidden_size, activation="tanh", dtype=dtype, name="pooler",
            kernel_initializer=truncated_normal(config.initializer_range)
        ) if config.role == "discriminator" else None
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
        x = embeddings(inputs["token_ids"], inputs["segment_ids"])   # (B, T, E)
        if projection is not None:
            x = projection(x)                                          # (B, T, H)
        hidden_states = [x]
        for block in encoder_layers:
            x = block(x, padding_mask=inputs["padding_mask"])
            hidden_states.append(x)
        outputs = {"sequence_output": x, "hidden_states": hidden_states}
        if pooler is not None:
            outputs["pooled_output"] = pooler(x[:, 0, :])              # (B, H)
        super().__init__(config, inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        self.embeddings, self.embedding_projection = embeddings, projection
        self.encoder_layers, self.pooler = encoder_layers, pooler

    @property
    def token_embedding(self):
        """The ``(V, E)`` token-embedding layer (tied to the generator's masked-LM decoder)."""
        return self.embeddings.token_embedding


def check_shared_embeddings(embeddings, config):
    """``ConfigError`` unless ``embeddings`` (a layer to share) has ``config``'s sizes."""
    if not isinstance(embeddings, BertEmbedding):
        raise ConfigError(f"embeddings= must be a BertEmbedding layer (another ELECTRA "
                          f"backbone's .embeddings), got {type(embeddings).__name__}.")
    theirs = {"vocabulary_size": embeddings.vocabulary_size,
              "embedding_size": embeddings.hidden_size,
              "max_positions": embeddings.max_positions,
              "type_vocab_size": embeddings.type_vocab_size}
    differing = [f"{name} {value} there but {getattr(config, name)} here"
                 for name, value in theirs.items() if getattr(config, name) != value]
    if differing:
        raise ConfigError(f"The shared embeddings do not fit this ELECTRA config: "
                          f"{'; '.join(differing)}. A generator shares the discriminator's "
                          "embeddings, so build it with config.generator() (same vocabulary, "
                          "embedding_size and positions).")


def require_discriminator(backbone, task):
    """``ConfigError`` unless ``backbone`` is a discriminator: what ELECTRA fine-tunes (``task``:
    the class name, for the message)."""
    if backbone.config.role != "discriminator":
        raise ConfigError(
            f"{task} fine-tunes ELECTRA's discriminator, but this backbone's config has "
            "role='generator' (a generator preset); load the discriminator's preset, or the "
            "pretrainer's (kbl pretrain --model electra), whose backbone is the discriminator.")
