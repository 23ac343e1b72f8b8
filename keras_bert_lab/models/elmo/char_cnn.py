"""ELMo's token encoder: characters → convolutions → max-pool → highway layers → projection.

Peters et al. (2018, §3.4) represent each token context-free with the character CNN of Kim et al.
(2016): embed the token's 50 character ids, run convolutions of several widths over them, keep
each filter's maximum over the positions, apply the activation (the original max-pools *first*,
then applies ``relu``/``tanh``: ``activation(max_t conv)``), concatenate, pass through highway
layers (Srivastava et al. 2015) and project linearly to the LSTMs' width ``P``.

Shapes: ``B`` batch, ``T`` tokens, ``C`` characters per token, ``E`` character embedding,
``F`` filters in all, ``P`` projection.

Example:
>>> import numpy as np
>>> encoder = CharacterCNN(filters=[(1, 4), (2, 8)], num_highway=1, output_dim=6, name="char_cnn",
...                        character_dim=3)
>>> ids = np.random.default_rng(0).integers(1, 262, size=(2, 5, 50))
>>> tuple(encoder(ids).shape)
(2, 5, 6)
>>> sorted(v.path for v in encoder.weights)[:3]
['char_cnn/character_embedding/embeddings', 'char_cnn/conv_0/bias', 'char_cnn/conv_0/kernel']
"""

import keras
from keras import ops


@keras.saving.register_keras_serializable("keras_bert_lab")
class Highway(keras.layers.Layer):
    """One highway layer: ``y = g · act(x W_t + b_t) + (1 − g) · x``, ``g = σ(x W_g + b_g)``.

    The gate ``g`` weights the *transformed* input, the original biLM's convention; bilm-tf
    names the gate's weights ``W_carry``/``b_carry`` and the transform's ``W_transform``/
    ``b_transform`` (allennlp's ``Highway`` uses the opposite convention and negates the gate's
    weights on load). Here they are ``gate_kernel``/``gate_bias`` and ``transform_kernel``/
    ``transform_bias``, each ``(F, F)``/``(F,)``.

    Args:
        activation: of the transform (``"relu"`` in ELMo).

    Example:
    >>> import numpy as np
    >>> layer = Highway()
    >>> tuple(layer(np.ones((3, 4), "float32")).shape)
    (3, 4)
    """

    def __init__(self, activation="relu", **kwargs):
        super().__init__(**kwargs)
        self.activation = keras.activations.get(activation)
        self._activation_name = activation

    def build(self, input_shape):
        width = input_shape[-1]
        self.gate_kernel = self.add_weight(name="gate_kernel", shape=(width, width),
                                           initializer="glorot_uniform")
        self.gate_bias = self.add_weight(name="gate_bias", shape=(width,), initializer="zeros")
        self.transform_kernel = self.add_weight(name="transform_kernel", shape=(width, width),
                                                initializer="glorot_uniform")
        self.transform_bias = self.add_weight(name="transform_bias", shape=(width,),
                                              initializer="zeros")

    def call(self, x):  # (..., F) -> (..., F)
        gate = ops.sigmoid(ops.matmul(x, self.gate_kernel) + self.gate_bias)
        transformed = self.activation(ops.matmul(x, self.transform_kernel) + self.transform_bias)
        return gate * transformed + (1.0 - gate) * x

    def get_config(self):
        return {**super().get_config(), "activation": self._activation_name}


@keras.saving.register_keras_serializable("keras_bert_lab")
class CharacterCNN(keras.layers.Layer):
    """ELMo's character-CNN token encoder (see the module docstring).

    Input: character ids ``(B, T, C)`` int (0 = padding; see
    :mod:`keras_bert_lab.preprocessing.characters`). Output: ``(B, T, P)``. Padded tokens get
    the encoding of an all-zero token; the biLM masks them.

    Args:
        filters: ``(width, count)`` per convolution; valid (unpadded) convolutions with bias.
        num_highway: highway layers on the ``F = Σ count`` concatenated features.
        output_dim: ``P``, the projection's width.
        num_characters: rows of the character embedding (262: 261 ids + the padding row 0).
        character_dim: ``E``.
        activation: ``"relu"`` or ``"tanh"``, applied after the max over positions.
    """

    def __init__(self, filters, num_highway, output_dim, num_characters=262, character_dim=16,
                 activation="relu", **kwargs):
        super().__init__(**kwargs)
        self.filters = [(int(w), int(n)) for w, n in filters]
        self.num_highway, self.output_dim = int(num_highway), int(output_dim)
        self.num_characters, self.character_dim = int(num_characters), int(character_dim)
        self.activation = activation
        self.character_embedding = keras.layers.Embedding(
            self.num_characters, self.character_dim, dtype=self.dtype_policy,
            embeddings_initializer=keras.initializers.RandomUniform(-1.0, 1.0),
            name="character_embedding")
        self.convolutions = [
            keras.layers.Conv1D(count, width, padding="valid", dtype=self.dtype_policy,
                                name=f"conv_{i}")
            for i, (width, count) in enumerate(self.filters)]
        self.highways = [Highway("relu", dtype=self.dtype_policy, name=f"highway_{k}")
                         for k in range(self.num_highway)]
        self.projection = keras.layers.Dense(self.output_dim, dtype=self.dtype_policy,
                                             name="projection")

    def build(self, input_shape):
        characters = input_shape[-1]
        self.character_embedding.build((None, characters))
        for conv in self.convolutions:
            conv.build((None, characters, self.character_dim))
        width = sum(n for _, n in self.filters)
        for highway in self.highways:
            highway.build((None, width))
        self.projection.build((None, width))

    def call(self, character_ids):
        shape = ops.shape(character_ids)                              # (B, T, C)
        ids = ops.reshape(ops.cast(character_ids, "int32"), (-1, shape[-1]))  # (B·T, C)
        x = self.character_embedding(ids)                             # (B·T, C, E)
        activation = ops.relu if self.activation == "relu" else ops.tanh
        # each width: (B·T, C - w + 1, n) -> max over positions, then the activation: (B·T, n)
        x = ops.concatenate([activation(ops.max(conv(x), axis=1)) for conv in self.convolutions],
                            axis=-1)                                  # (B·T, F)
        for highway in self.highways:
            x = highway(x)
        x = self.projection(x)                                        # (B·T, P)
        return ops.reshape(x, (shape[0], shape[1], self.output_dim))  # (B, T, P)

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.output_dim)

    def get_config(self):
        return {**super().get_config(), "filters": [list(f) for f in self.filters],
                "num_highway": self.num_highway, "output_dim": self.output_dim,
                "num_characters": self.num_characters, "character_dim": self.character_dim,
                "activation": self.activation}
