"""``AwdLstmBackbone``: the AWD-LSTM (Merity et al. 2017) as a functional Keras model.

A token embedding (word types dropped together, §4.3) feeds ``L`` stacked LSTMs — E → H, H → H,
…, H → E, the last as wide as the embedding so a decoder can be tied to it (§4.5) — with locked
(variational) dropout on the embeddings, between the layers and on the last output (§4.2) and
DropConnect on every hidden-to-hidden matrix (§2). Each LSTM is a
:class:`~keras_bert_lab.layers.lstm.ProjectedLSTM` without projection and with the forget-gate
bias stored, not added at run time (``forget_bias=0``), i.e. the cell of ``torch.nn.LSTM`` (and
cuDNN) whose two biases are summed into one. Its gates are in TensorFlow's order ``(i, j, f, o)``
where PyTorch has ``(i, f, g, o)``: :func:`torch_lstm_to_kernel` and :func:`kernel_to_torch_lstm`
convert the weights (NumPy only).

Truncated back-propagation through time over contiguous text (§4.4, and ULMFiT's LM
fine-tuning) starts each batch from the states the previous one ended with:
:meth:`AwdLstmBackbone.stateful_model` — or ``AwdLstmLanguageModel(stateful_batch_size=B)`` for
training — runs the same layers from states kept in non-trainable variables
(:class:`~keras_bert_lab.models.awd_lstm.layers.CarriedState`), updated by every call, ``fit`` included.

Shapes: ``B`` batch, ``T`` tokens, ``E`` embedding width, ``H`` hidden width, ``L`` layers,
``V`` vocabulary, ``U`` cells of one layer, ``D`` its input width.

Example:
>>> import numpy as np
>>> backbone = AwdLstmBackbone(AwdLstmConfig.from_size("tiny", vocabulary_size=50))
>>> out = backbone({"token_ids": np.array([[3, 4, 5, 0]]),
...                 "padding_mask": np.array([[1, 1, 1, 0]])})
>>> tuple(out["sequence_output"].shape), [tuple(h.shape) for h in out["hidden_states"]]
((1, 4, 16), [(1, 4, 16), (1, 4, 32), (1, 4, 16)])
>>> [[layer.name for layer in group] for group in backbone.layer_groups()]
[['token_embedding'], ['lstm_0'], ['lstm_1']]
"""

import math

import keras
import numpy as np

from keras_bert_lab.errors import InputError
from keras_bert_lab.models.awd_lstm.layers import CarriedState, EmbeddingDropout, LockedDropout
from keras_bert_lab.layers.lstm import ProjectedLSTM
from keras_bert_lab.models.awd_lstm.config import AwdLstmConfig
from keras_bert_lab.models.backbone import Backbone

INPUT_NAMES = ("token_ids", "padding_mask")


def _swap_middle_gates(w):
    """(i, f, g, o) ↔ (i, g, f, o) along axis 0 — its own inverse."""
    i, a, b, o = np.split(np.asarray(w), 4, axis=0)
    return np.concatenate([i, b, a, o], axis=0)


def torch_lstm_to_kernel(weight_ih, weight_hh, bias_ih=None, bias_hh=None):
    """``(kernel (D + U, 4U), bias (4U,))`` of a ``ProjectedLSTM(U, forget_bias=0)`` from one
    layer of ``torch.nn.LSTM``: ``weight_ih`` (4U, D), ``weight_hh`` (4U, U), the two biases
    (4U,) summed. NumPy arrays in and out (``tensor.detach().numpy()`` on the torch side)."""
    weight_ih, weight_hh = np.asarray(weight_ih, "float32"), np.asarray(weight_hh, "float32")
    units = weight_hh.shape[1]
    if weight_ih.shape[0] != 4 * units or weight_hh.shape != (4 * units, units):
        raise InputError(f"torch.nn.LSTM weights must be weight_ih (4U, D) and weight_hh (4U, U),"
                         f" got {weight_ih.shape} and {weight_hh.shape}.")
    bias = np.zeros(4 * units, "float32")
    for b in (bias_ih, bias_hh):
        bias = bias + (0.0 if b is None else np.asarray(b, "float32"))
    kernel = np.concatenate([_swap_middle_gates(weight_ih).T, _swap_middle_gates(weight_hh).T])
    return kernel.astype("float32"), _swap_middle_gates(bias).astype("float32")


def kernel_to_torch_lstm(kernel, bias, input_dim):
    """The inverse of :func:`torch_lstm_to_kernel`: ``{"weight_ih_l0", "weight_hh_l0",
    "bias_ih_l0", "bias_hh_l0"}`` (the whole bias in ``bias_ih_l0``, ``bias_hh_l0`` zero)."""
    kernel, bias = np.asarray(kernel, "float32"), np.asarray(bias, "float32")
    return {"weight_ih_l0": _swap_middle_gates(kernel[:input_dim].T),
            "weight_hh_l0": _swap_middle_gates(kernel[input_dim:].T),
            "bias_ih_l0": _swap_middle_gates(bias), "bias_hh_l0": np.zeros_like(bias)}


def _encode(parts, token_ids, padding_mask, carriers=None, gradient_cut=None):
    """The backbone's computation, shared by its graph, :meth:`AwdLstmBackbone.stateful_model`
    and the tasks (see :meth:`AwdLstmBackbone.encode`)."""
    x = parts.token_embedding(token_ids, padding_mask=padding_mask)              # (B, T, E)
    hidden_states = [x]
    x = parts.input_dropout(x)
    last = len(parts.lstm_layers) - 1
    for i, lstm in enumerate(parts.lstm_layers):
        if carriers:
            x = carriers[i](x, padding_mask=padding_mask)
        elif gradient_cut is not None:
            x = lstm(x, padding_mask=padding_mask, gradient_cut=gradient_cut)
        else:
            x = lstm(x, padding_mask=padding_mask)                               # (B, T, H|E)
        hidden_states.append(x)
        x = (parts.output_dropout if i == last else parts.hidden_dropouts[i])(x)
    return {"sequence_output": x, "hidden_states": hidden_states}


def reset_states(model):
    """Zero the carried LSTM states of every stateful layer in ``model`` (new text starts)."""
    for layer in model._flatten_layers(include_self=False):
        if isinstance(layer, CarriedState):
            layer.reset_states()


@keras.saving.register_keras_serializable("keras_bert_lab")
class AwdLstmBackbone(Backbone):
    """The AWD-LSTM encoder (see the module docstring): token ids in, every layer's states out.

    Inputs (a dict): ``token_ids`` (B, T) int and ``padding_mask`` (B, T), 1 for real tokens,
    0 for padding at the right end of each row. Outputs (a dict): ``sequence_output`` (B, T, E),
    the last layer's output after its locked dropout (what the language model's decoder reads);
    ``hidden_states``, ``L + 1`` tensors: the embeddings (after embedding dropout, before the
    input's locked dropout), then each LSTM layer's raw output before any dropout (B, T, H), the
    last (B, T, E) — the states AR/TAR and ULMFiT's pooling read. Padded steps keep the state and
    output zeros, so each row's outputs are what it gets alone. Every dropout is the identity at
    inference.

    Weights start as in the original: the table uniform on ±0.1, each LSTM's matrices uniform on
    ±1/√U as ``torch.nn.LSTM`` (the bias at zero, where PyTorch draws it too).

    Args:
        config: an ``AwdLstmConfig``, a dict of its fields, or a size name (``"tiny"`` …
            ``"paper"``).
        dtype: optional dtype policy.
    """

    config_class = AwdLstmConfig
    input_names = INPUT_NAMES

    def __init__(self, config="paper", dtype=None, **kwargs):
        config = AwdLstmConfig.coerce(config)
        layers = len(config.layer_dims())
        parts = _Parts(
            config=config,
            token_embedding=EmbeddingDropout(config.vocabulary_size, config.embedding_dim,
                                             rate=config.embedding_dropout, dtype=dtype,
                                             name="token_embedding"),
            input_dropout=LockedDropout(config.input_dropout, dtype=dtype, name="input_dropout"),
            lstm_layers=[ProjectedLSTM(out, forget_bias=0.0, weight_drop=config.weight_dropout,
                                       kernel_initializer=keras.initializers.RandomUniform(
                                           -1 / math.sqrt(out), 1 / math.sqrt(out)),
                                       dtype=dtype, name=f"lstm_{i}")
                         for i, (_, out) in enumerate(config.layer_dims())],
            hidden_dropouts=[LockedDropout(config.hidden_dropout, dtype=dtype,
                                           name=f"hidden_dropout_{i}")
                             for i in range(layers - 1)],
            output_dropout=LockedDropout(config.output_dropout, dtype=dtype,
                                         name="output_dropout"))
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        outputs = _encode(parts, inputs["token_ids"], inputs["padding_mask"])
        super().__init__(config, inputs=inputs, outputs=outputs, dtype=dtype, **kwargs)
        # Layers are attributes only after Model.__init__ (the torch backend requires it).
        self.token_embedding, self.input_dropout = parts.token_embedding, parts.input_dropout
        self.lstm_layers, self.hidden_dropouts = parts.lstm_layers, parts.hidden_dropouts
        self.output_dropout = parts.output_dropout

    def layer_groups(self):
        """The weighted layers bottom-up, one group each: the embedding, then every LSTM."""
        return [[self.token_embedding]] + [[lstm] for lstm in self.lstm_layers]

    def encode(self, token_ids, padding_mask, carriers=None, gradient_cut=None):
        """This backbone's outputs dict for (symbolic or real) ``token_ids``/``padding_mask``,
        for a task's graph: from states kept by ``carriers`` (:meth:`carriers`) or with
        gradients stopped at the steps ``gradient_cut`` (B, T) marks (see ``ProjectedLSTM``)."""
        return _encode(self, token_ids, padding_mask, carriers, gradient_cut)

    def carriers(self, batch_size, prefix=""):
        """One :class:`~keras_bert_lab.models.awd_lstm.layers.CarriedState` per LSTM layer, ``batch_size``
        rows, named ``{prefix}lstm_{i}_state``."""
        return [CarriedState(lstm, batch_size, dtype=self.dtype_policy,
                             name=f"{prefix}lstm_{i}_state")
                for i, lstm in enumerate(self.lstm_layers)]

    def stateful_model(self, batch_size):
        """A functional model on the same layers whose LSTMs carry their states between calls.

        Same inputs and outputs as the backbone; every batch must have ``batch_size`` rows, row
        ``b`` continuing row ``b`` of the previous batch. :func:`reset_states` (or
        ``reset_states(model)``) zeros the states. Run it with ``predict_on_batch`` (compiled) or
        call it; the language model's ``stateful_batch_size`` trains the same way.
        """
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        outputs = self.encode(inputs["token_ids"], inputs["padding_mask"],
                              carriers=self.carriers(batch_size))
        return keras.Model(inputs, outputs, name=f"{self.name}_stateful")


class _Parts:
    """The layers of an ``AwdLstmBackbone`` before the model exists (see its ``__init__``)."""

    def __init__(self, **parts):
        self.__dict__.update(parts)
