"""``ElmoBackbone``: the bidirectional LM of ELMo (Peters et al. 2018) as a functional model.

Each token is encoded from its characters (:class:`~keras_bert_lab.models.elmo.char_cnn.CharacterCNN`),
then two independent stacks of projected LSTMs
(:class:`~keras_bert_lab.layers.lstm.ProjectedLSTM`) read the sentence: the forward stack left to
right (it predicts the next token), the backward stack right to left within each sentence's length
(it predicts the previous token). From the second layer on each LSTM's input is added to its output
(``use_skip_connections``). ELMo's representations are the ``L + 1`` layers of activations, laid
out as the original ``lm_embeddings``: layer 0 is the token representation concatenated with
itself, layer ``i`` the forward and backward outputs of LSTM layer ``i`` side by side.

Statefulness: the original biLM (bilm-tf, and allennlp's ``_ElmoBiLm``) does not start each batch
from zero LSTM states — every row starts from the final states the same row left in the previous
batch. A call of the backbone starts from zeros (each sentence on its own);
:meth:`ElmoBackbone.stateful_model` takes and returns the states, to reproduce the original's outputs
batch after batch.

Shapes: ``B`` batch, ``T`` tokens (``<S>`` and ``</S>`` included when added), ``C`` characters
per token, ``P`` projection, ``U`` LSTM cells, ``L`` LSTM layers.

Example:
>>> import numpy as np
>>> ids = np.zeros((2, 6, 50), "int32")   # made by preprocessing.characters.character_ids
>>> ids[0, :6], ids[1, :4] = 261, 261     # two sentences of 6 and 4 (padding-character) tokens
>>> bilm = ElmoBackbone("tiny")
>>> out = bilm(ids)
>>> [tuple(h.shape) for h in out["hidden_states"]], len(out["forward"])
([(2, 6, 32), (2, 6, 32), (2, 6, 32)], 2)
>>> keras.ops.convert_to_numpy(out["padding_mask"]).tolist()
[[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]
"""

import warnings

import keras
import numpy as np
from keras import ops

from keras_bert_lab.errors import InputError
from keras_bert_lab.models.elmo.char_cnn import CharacterCNN
from keras_bert_lab.layers.common import dropout
from keras_bert_lab.layers.lstm import ProjectedLSTM
from keras_bert_lab.models.backbone import Backbone
from keras_bert_lab.models.elmo.config import ElmoConfig

INPUT_NAME = "character_ids"


def _run(bilm, character_ids, states=None, training=None):
    """The biLM's computation, shared by the backbone's graph and :meth:`ElmoBackbone.stateful_model`.

    ``states``: ``None`` (zeros) or (B, S) — per layer, forward then backward, ``[h (P), c (U)]``.
    Returns the outputs dict, with the final ``states`` (B, S) added when ``states`` is given.
    """
    config = bilm.config
    mask = ops.any(ops.greater(character_ids, 0), axis=-1)                  # (B, T)
    tokens = bilm.char_cnn(character_ids)                                    # (B, T, P)
    tokens = tokens * ops.cast(mask, tokens.dtype)[:, :, None]
    outputs = {"forward": [], "backward": []}
    width, final = config.projection_dim + config.lstm_dim, {}
    for d, (direction, layers) in enumerate((("forward", bilm.forward_layers),
                                             ("backward", bilm.backward_layers))):
        x = tokens
        for i, layer in enumerate(layers):
            if bilm.dropouts:
                x = bilm.dropouts[i](x, training=training)
            state = None
            if states is not None:
                start = (2 * i + d) * width
                state = (states[:, start:start + config.projection_dim],
                         states[:, start + config.projection_dim:start + width])
            y, h, c = layer(x, padding_mask=mask, initial_state=state, return_state=True)
            x = y + x if (config.use_skip_connections and i > 0) else y    # (B, T, P)
            outputs[direction].append(x)
            final[2 * i + d] = (h, c)
    outputs["token_embeddings"] = tokens
    outputs["hidden_states"] = [ops.concatenate([tokens, tokens], axis=-1)] + [
        ops.concatenate([f, b], axis=-1)
        for f, b in zip(outputs["forward"], outputs["backward"])]         # L + 1 × (B, T, 2P)
    outputs["padding_mask"] = ops.cast(mask, "int32")
    if states is not None:
        outputs["states"] = ops.concatenate([t for k in sorted(final) for t in final[k]], axis=-1)
    return outputs


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElmoBackbone(Backbone):
    """ELMo's biLM (see the module docstring): character ids in, every layer's activations out.

    Input: ``character_ids`` (B, T, C) int — a tensor, or a dict with that key — made by
    :mod:`keras_bert_lab.preprocessing.characters` (a padded token is ``C`` zeros). Outputs (a
    dict): ``token_embeddings`` (B, T, P), zero at padding; ``forward`` and ``backward``, lists of
    ``L`` tensors (B, T, P), each LSTM layer's output (skip connection included), zero at
    padding; ``hidden_states``, ``L + 1`` tensors (B, T, 2P) in the layout of the original
    ``lm_embeddings``; ``padding_mask`` (B, T) int32.

    Args:
        config: an ``ElmoConfig``, a dict of its fields, or a size name (``"tiny"`` …
            ``"original"``).
        dtype: optional dtype policy.

    ``ElmoBackbone.from_original(options_json, lm_weights_hdf5)`` loads a released biLM;
    ``from_preset``/``save_to_preset`` work as for every backbone (the preset's vocabulary is the
    language model's word vocabulary, ``vocabulary_size`` words).
    """

    config_class = ElmoConfig

    def __init__(self, config="original", dtype=None, **kwargs):
        config = ElmoConfig.coerce(config)
        lstm = dict(units=config.lstm_dim, projection_dim=config.projection_dim,
                    cell_clip=config.cell_clip, projection_clip=config.projection_clip,
                    dtype=dtype)
        # Layers are attributes only after Model.__init__ (the torch backend requires it), so
        # the graph is built from this stand-in first.
        parts = _Parts(
            config=config,
            char_cnn=CharacterCNN(config.filters, config.num_highway, config.projection_dim,
                                  num_characters=config.num_characters,
                                  character_dim=config.character_dim,
                                  activation=config.activation, dtype=dtype, name="char_cnn"),
            forward_layers=[ProjectedLSTM(**lstm, name=f"forward_lstm_{i}")
                            for i in range(config.num_layers)],
            backward_layers=[ProjectedLSTM(**lstm, go_backwards=True, name=f"backward_lstm_{i}")
                             for i in range(config.num_layers)],
            dropouts=[dropout(config.dropout, dtype, f"lstm_input_dropout_{i}")
                      for i in range(config.num_layers)] if config.dropout else [])
        inputs = {INPUT_NAME: keras.Input((None, config.max_characters), dtype="int32",
                                          name=INPUT_NAME)}
        outputs = _run(parts, inputs[INPUT_NAME])
        super().__init__(config, inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        self.char_cnn, self.dropouts = parts.char_cnn, parts.dropouts
        self.forward_layers, self.backward_layers = parts.forward_layers, parts.backward_layers

    @classmethod
    def from_original(cls, options, weights, dtype=None):
        """A released biLM: ``options.json`` (path or dict) and ``lm_weights.hdf5`` (path).

        Everything is checked before any weight is assigned (see
        :func:`keras_bert_lab.models.elmo.convert.read_original`); weights are assigned by name.
        """
        from keras_bert_lab.models.elmo.convert import read_original
        from keras_bert_lab.presets.weights import load_weights

        config, named = read_original(options, weights)
        bilm = cls(config, dtype=dtype)
        load_weights(bilm, named, where=str(weights))
        return bilm

    def __call__(self, inputs, *args, **kwargs):
        inputs = self.validate_inputs(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, training=None, mask=None):
        # fit/predict call this directly: a bare tensor becomes the one named input here too.
        if not isinstance(inputs, dict):
            inputs = {INPUT_NAME: inputs}
        return super().call(inputs, training=training, mask=mask)

    @property
    def state_size(self):
        """``S``: the width of one row's LSTM states, ``2 L (P + U)`` (:meth:`stateful_model`)."""
        return 2 * self.config.num_layers * (self.config.projection_dim + self.config.lstm_dim)

    def stateful_model(self):
        """A functional model on the same layers that takes and returns the LSTM states.

        Inputs: ``character_ids`` and ``states`` (B, S) (zeros to start; see :attr:`state_size`).
        Outputs: this backbone's, plus ``states`` (B, S): where each row's LSTMs stopped — after
        its last token forward, after its first backward. Feeding them to the next batch runs the
        biLM statefully, as the original does (see the module docstring); rows are matched by
        position. Call it with ``predict_on_batch`` to run compiled.
        """
        inputs = {INPUT_NAME: keras.Input((None, self.config.max_characters), dtype="int32",
                                          name=INPUT_NAME),
                  "states": keras.Input((self.state_size,), name="states")}
        return keras.Model(inputs, _run(self, inputs[INPUT_NAME], inputs["states"]),
                           name=f"{self.name}_stateful")

    def validate_inputs(self, inputs):
        """``{"character_ids": ...}`` checked, or ``InputError`` naming the problem and fix."""
        if isinstance(inputs, dict):
            if INPUT_NAME not in inputs:
                raise InputError(f"ElmoBackbone takes '{INPUT_NAME}' (B, T, "
                                 f"{self.config.max_characters}), got keys {sorted(inputs)}.")
            inputs = {INPUT_NAME: inputs[INPUT_NAME]}
        else:
            inputs = {INPUT_NAME: inputs}
        x = inputs[INPUT_NAME]
        x = x if hasattr(x, "dtype") else np.asarray(x)
        dtype = keras.backend.standardize_dtype(x.dtype)
        shape = tuple(x.shape)
        if "int" not in dtype:
            raise InputError(f"ElmoBackbone '{INPUT_NAME}' must hold integer character ids, got "
                             f"dtype {dtype}; make them with preprocessing.characters.character_ids.")
        if len(shape) != 3 or shape[-1] not in (None, self.config.max_characters):
            raise InputError(f"ElmoBackbone '{INPUT_NAME}' must be (batch, tokens, "
                             f"{self.config.max_characters}), got {shape}.")
        if not isinstance(x, keras.KerasTensor):
            try:
                values = ops.convert_to_numpy(x)
            except Exception:  # a traced tensor inside a compiled function: no values
                values = None
            if values is not None and values.size and (
                    values.min() < 0 or values.max() >= self.config.num_characters):
                raise InputError(f"ElmoBackbone '{INPUT_NAME}' holds id {int(values.max())} or "
                                 f"{int(values.min())} outside [0, {self.config.num_characters})"
                                 "; character ids are UTF-8 bytes + 1 and markers up to 261.")
        return inputs


class _Parts:
    """The layers of an ``ElmoBackbone`` before the model exists (see ``ElmoBackbone.__init__``)."""

    def __init__(self, **parts):
        self.__dict__.update(parts)


@keras.saving.register_keras_serializable("keras_bert_lab")
class ElmoBiLM(ElmoBackbone):
    """The old name of :class:`ElmoBackbone` (until the next release); warns when built."""

    def __init__(self, *args, **kwargs):
        warnings.warn("ElmoBiLM is now ElmoBackbone (keras_bert_lab.models.elmo); the old name "
                      "goes in the next release.", DeprecationWarning, stacklevel=2)
        super().__init__(*args, **kwargs)
