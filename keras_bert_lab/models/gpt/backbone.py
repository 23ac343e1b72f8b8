"""``GPTBackbone``: the GPT-1 decoder as a functional Keras model.

Shapes: ``B`` batch, ``T`` tokens, ``S`` cache length, ``H`` hidden, ``L`` layers, ``N`` heads,
``D`` head size.
"""

import keras
from keras import ops

from keras_bert_lab.layers.decoder import TokenAndPositionEmbedding, TransformerDecoderBlock
from keras_bert_lab.models.backbone import Backbone
from keras_bert_lab.models.gpt.config import GPTConfig

INPUT_NAMES = ("token_ids", "padding_mask")


@keras.saving.register_keras_serializable("keras_bert_lab")
class GPTBackbone(Backbone):
    """The GPT-1 decoder (Radford et al. 2018): token + position embedding and ``L`` blocks.

    Inputs (a dict): ``token_ids`` (B, T) int and ``padding_mask`` (B, T), 1 for real tokens and
    0 for padding, which goes at the *right* end of each row. Outputs (a dict):
    ``sequence_output`` (B, T, H), the last block's output (GPT-1 has no final LayerNorm: each
    post-LN block already ends with one); ``hidden_states``, ``L + 1`` tensors (B, T, H): the
    embedding output, then each block's — the same keys as ``BertBackbone`` minus the pooler.

    Every token attends to itself and the tokens before it, so with right padding the real
    positions never see a pad and their outputs do not depend on the padding; the mask only keeps
    padded positions from attending to one another. A classification head (GPT-1's fine-tuning,
    §3.2) reads the hidden state of the last real token (the ``_classify_`` / extract token) from
    ``sequence_output``.

    For generation, :meth:`call_with_cache` runs the same layers on a slice of tokens with a
    key/value cache per block; :meth:`empty_cache` makes one.

    Inputs are checked before any computation in eager calls, as ``BertBackbone`` does: names,
    integer dtypes, equal shapes, ``T ≤ max_positions`` and the id range.

    Args:
        config: a ``GPTConfig``, a dict of its fields, or a size name (``"tiny"`` … ``"base"``).
        dtype: optional dtype policy (e.g. ``"mixed_bfloat16"``); the global policy otherwise.

    Example:
    >>> import numpy as np
    >>> backbone = GPTBackbone("tiny")
    >>> outputs = backbone({"token_ids": np.array([[31, 7, 2, 0]]),
    ...                     "padding_mask": np.array([[1, 1, 1, 0]])})
    >>> tuple(outputs["sequence_output"].shape), len(outputs["hidden_states"])
    ((1, 4, 128), 3)
    """

    config_class = GPTConfig
    input_names = INPUT_NAMES

    def __init__(self, config="base", dtype=None, **kwargs):
        config = GPTConfig.coerce(config)
        embeddings = TokenAndPositionEmbedding(
            config.vocabulary_size, config.hidden_size, config.max_positions,
            dropout=config.embedding_dropout, initializer_range=config.initializer_range,
            dtype=dtype, name="embeddings")
        decoder_layers = [
            TransformerDecoderBlock(
                config.num_heads, config.intermediate_size, dropout=config.dropout,
                attention_dropout=config.attention_dropout,
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range, activation=config.activation,
                dtype=dtype, name=f"decoder_layer_{i}")
            for i in range(config.num_layers)
        ]
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
        x = embeddings(inputs["token_ids"])  # (B, T, H)
        hidden_states = [x]
        for block in decoder_layers:
            x = block(x, padding_mask=inputs["padding_mask"])
            hidden_states.append(x)
        super().__init__(config, inputs=inputs,
                         outputs={"sequence_output": x, "hidden_states": hidden_states},
                         dtype=dtype, **kwargs)
        # Layers are attributes only after Model.__init__ (the torch backend requires it).
        self.embeddings, self.decoder_layers = embeddings, decoder_layers

    @property
    def token_embedding(self):
        """The ``(V, H)`` token-embedding layer (tied to the language-model head)."""
        return self.embeddings.token_embedding

    def empty_cache(self, batch_size, length):
        """A zero key/value cache: a tuple of ``L`` tensors (B, 2, S, N, D), one per block."""
        c = self.config
        shape = (batch_size, 2, length, c.num_heads, c.head_size)
        return tuple(ops.zeros(shape, self.compute_dtype) for _ in range(c.num_layers))

    def call_with_cache(self, token_ids, cache, cache_index):
        """Run ``token_ids`` (B, T), the tokens at positions ``cache_index … cache_index+T-1``.

        Each block writes their keys and values into its cache at ``cache_index`` and attends
        over the cache up to each token's position. Returns ``(sequence_output (B, T, H),
        updated cache)``. No input validation (inner loop of generation); inference only.
        """
        x = self.embeddings(token_ids, start_index=cache_index, training=False)
        updated = []
        for block, block_cache in zip(self.decoder_layers, cache):
            x, block_cache = block(x, training=False, cache=block_cache, cache_index=cache_index)
            updated.append(block_cache)
        return x, tuple(updated)
