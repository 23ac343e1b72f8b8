"""An LSTM with a projected output and clipping — ELMo's biLM cell — over masked sequences.

The biLM of Peters et al. (2018) (following Jozefowicz et al. 2016) uses TensorFlow's
``LSTMCell(num_proj=P, cell_clip, proj_clip)``: with ``[x; h]`` the input and previous projected
output,

    i, j, f, o = split([x; h] · W + b, 4)              (TensorFlow's gate order)
    c = σ(f + 1) ⊙ c_prev + σ(i) ⊙ tanh(j),  clipped to ±cell_clip
    h = clip((σ(o) ⊙ tanh(c)) · W_P, ±proj_clip)

The forget gate's +1 (``forget_bias``) is added when the cell runs and is *not* part of the stored
bias, as in TensorFlow — so the original ``W_0``, ``B`` and ``W_P_0`` load unchanged as
``kernel``, ``bias`` and ``projection``.

The time loop is one ``keras.ops.scan`` (``lax.scan`` on JAX, a while loop on TensorFlow, a Python
loop on PyTorch); ``x · W_x + b`` for every step is one matmul before it. A padding mask keeps the
state unchanged at padded steps and zeroes their outputs, so a batch gives each row what it would
get alone. ``go_backwards`` reads each sequence back to front *within its length* (padding stays
at the end) and returns the outputs in the original order — the backward LM of the biLM.

Two options serve the AWD-LSTM (Merity et al. 2017) and leave the layer unchanged when unused:
``weight_drop`` applies DropConnect to the hidden-to-hidden part of ``kernel`` (``W_h``) in
training — one mask per call, shared by every time step and row, kept entries scaled by
``1/(1-p)`` as ``F.dropout`` in the original's ``WeightDrop`` — and ``gradient_cut`` (a call
argument) stops gradients from flowing back through the state into chosen steps, so one scan can
hold a document of which only the end is trained (ULMFiT's BPT3C).

Shapes: ``B`` batch, ``T`` time steps, ``D`` input width, ``U`` cells, ``P`` projection.

Example:
>>> import keras, numpy as np
>>> lstm = ProjectedLSTM(8, projection_dim=4, cell_clip=3.0, projection_clip=3.0)
>>> x = np.random.default_rng(0).normal(size=(2, 5, 3)).astype("float32")
>>> mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
>>> outputs, h, c = lstm(x, padding_mask=mask, return_state=True)
>>> tuple(outputs.shape), tuple(h.shape), tuple(c.shape)
((2, 5, 4), (2, 4), (2, 8))
>>> outputs = keras.ops.convert_to_numpy(outputs)
>>> alone = keras.ops.convert_to_numpy(lstm(x[1:, :3]))   # the short row without its padding
>>> bool(np.allclose(alone[0], outputs[1, :3], atol=1e-6)), float(np.abs(outputs[1, 3:]).max())
(True, 0.0)
"""

import functools
import random

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError


def reverse_within_length(x, padding_mask):
    """Reverse each row of ``x`` (B, T, ...) over its first ``sum(mask)`` steps; padding stays.

    The mask must mark a prefix (padding at the end). The permutation is its own inverse.
    """
    steps = ops.shape(x)[1]
    lengths = ops.sum(ops.cast(padding_mask, "int32"), axis=1, keepdims=True)   # (B, 1)
    positions = ops.arange(steps, dtype="int32")[None, :]                       # (1, T)
    index = ops.where(positions < lengths, lengths - 1 - positions, positions)  # (B, T)
    index = ops.reshape(index, (ops.shape(x)[0], steps) + (1,) * (len(x.shape) - 2))
    return ops.take_along_axis(x, index, axis=1)


def bidirectional_lstm(x, units, mask, name, return_sequences=True):
    """A forward and a backward ``keras.layers.LSTM`` over ``x`` (B, T, D) in a functional graph,
    outputs concatenated: (B, T, 2·units), or (B, 2·units) with ``return_sequences=False``.

    The same computation as ``keras.layers.Bidirectional(LSTM(units))`` (padded steps output
    zeros), built from two plain layers named ``{name}_forward`` / ``{name}_backward``:
    ``Bidirectional`` re-creates its layer by serializing it inside ``__init__``, and under
    ``load_model`` Keras' object-sharing scope can hand it back an unrelated object whose address
    was reused — an intermittent "different `go_backwards` value" error when a model is loaded in
    the process that saved it.
    """
    forward = keras.layers.LSTM(units, return_sequences=return_sequences,
                                zero_output_for_mask=return_sequences, name=f"{name}_forward")
    backward = keras.layers.LSTM(units, return_sequences=return_sequences, go_backwards=True,
                                 zero_output_for_mask=return_sequences, name=f"{name}_backward")
    back = backward(x, mask=mask)
    if return_sequences:
        back = ops.flip(back, axis=1)   # go_backwards returns the steps last-first
    return ops.concatenate([forward(x, mask=mask), back], axis=-1)


@keras.saving.register_keras_serializable("keras_bert_lab")
class ProjectedLSTM(keras.layers.Layer):
    """LSTM with output projection and clipping over a masked sequence (see the module docstring).

    Call: ``lstm(inputs, padding_mask=None, initial_state=None, return_state=False,
    gradient_cut=None)`` with ``inputs`` (B, T, D), ``padding_mask`` (B, T) (1 real, 0 padding;
    padding at the end), ``initial_state`` an ``(h, c)`` pair of (B, P) and (B, U) (zeros if
    omitted), ``gradient_cut`` (B, T): where 1, the state entering step ``t`` passes its value but
    no gradient (forward direction only). Returns the outputs (B, T, P) — zero at padded steps —
    or ``(outputs, h, c)`` with the final state: the state after a row's last real step (for
    ``go_backwards``, after its first).

    Args:
        units: ``U``, memory cells.
        projection_dim: ``P``; ``None``: no projection (``P = U``, a plain LSTM).
        cell_clip, projection_clip: clip ``c`` / the projected ``h`` to ``±value``; ``None``: no.
        forget_bias: added to the forget gate at run time (TensorFlow's 1.0).
        go_backwards: run each sequence back to front within its length.
        kernel_initializer, projection_initializer: for ``W`` (D + P, 4U) and ``W_P`` (U, P).
        weight_drop: DropConnect rate on ``W_h`` (the last ``P`` rows of ``kernel``) in training;
            0: none (no seed generator is made).
        seed: integer seed of the weight-drop masks; ``None``: drawn from Python's ``random``
            (which ``keras.utils.set_random_seed`` seeds), so masks live in the layer's
            seed-generator state on every backend.
    """

    def __init__(self, units, projection_dim=None, cell_clip=None, projection_clip=None,
                 forget_bias=1.0, go_backwards=False, kernel_initializer="glorot_uniform",
                 projection_initializer="glorot_uniform", weight_drop=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(weight_drop, bool) or not 0.0 <= weight_drop < 1.0:
            raise ConfigError(f"ProjectedLSTM weight_drop must be in [0, 1), got {weight_drop!r}.")
        self.weight_drop = float(weight_drop)
        self.seed = None
        if self.weight_drop:
            self.seed = random.randint(1, 2**31 - 1) if seed is None else int(seed)
            self.seed_generator = keras.random.SeedGenerator(self.seed, name="weight_drop_seed")
        self.units, self.projection_dim = int(units), projection_dim
        self.cell_clip, self.projection_clip = cell_clip, projection_clip
        self.forget_bias, self.go_backwards = float(forget_bias), bool(go_backwards)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.projection_initializer = keras.initializers.get(projection_initializer)
        self.output_dim = int(projection_dim) if projection_dim else self.units

    def build(self, input_shape, *args, **kwargs):
        self.input_dim = int(input_shape[-1])
        self.kernel = self.add_weight(name="kernel", initializer=self.kernel_initializer,
                                      shape=(self.input_dim + self.output_dim, 4 * self.units))
        self.bias = self.add_weight(name="bias", shape=(4 * self.units,), initializer="zeros")
        if self.projection_dim:
            self.projection = self.add_weight(name="projection", shape=(self.units,
                                                                        self.output_dim),
                                              initializer=self.projection_initializer)

    def recurrent_kernel(self, training=None):
        """``W_h`` (P, 4U) as a call uses it: weight-dropped (scaled) in training."""
        kernel = self.kernel[self.input_dim:]
        if training and self.weight_drop:
            kernel = keras.random.dropout(kernel, self.weight_drop, seed=self.seed_generator)
        return kernel

    def _step(self, recurrent_kernel, cut, state, step):
        h, c = state                                      # h (B, P), c (B, U)
        if cut:                                           # last column: stop the gradient here
            stop, step = step[:, -1:] > 0.5, step[:, :-1]
            h = ops.where(stop, ops.stop_gradient(h), h)
            c = ops.where(stop, ops.stop_gradient(c), c)
        z, keep = step[:, :-1], step[:, -1:] > 0.5        # (B, 4U) x·W_x + b; (B, 1) real step
        z = z + ops.matmul(h, recurrent_kernel)
        i, j, f, o = ops.split(z, 4, axis=-1)
        new_c = ops.sigmoid(f + self.forget_bias) * c + ops.sigmoid(i) * ops.tanh(j)
        if self.cell_clip:
            new_c = ops.clip(new_c, -self.cell_clip, self.cell_clip)
        new_h = ops.sigmoid(o) * ops.tanh(new_c)
        if self.projection_dim:
            new_h = ops.matmul(new_h, self.projection)
            if self.projection_clip:
                new_h = ops.clip(new_h, -self.projection_clip, self.projection_clip)
        h, c = ops.where(keep, new_h, h), ops.where(keep, new_c, c)
        # Per-step outputs mirror the carry's structure: Keras' TensorFlow scan (3.15) stores them
        # in arrays shaped like the carry. Only the first (the masked output) is used.
        return (h, c), (ops.where(keep, new_h, ops.zeros_like(new_h)), c)

    def call(self, inputs, padding_mask=None, initial_state=None, return_state=False,
             gradient_cut=None, training=None):
        batch, steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
        if padding_mask is None:
            padding_mask = ops.ones((batch, steps), "bool")
        mask = ops.cast(padding_mask, "bool")                                  # (B, T)
        if self.go_backwards:
            if gradient_cut is not None:
                raise ConfigError("gradient_cut is for forward LSTMs; go_backwards=True reads "
                                  "each row back to front.")
            inputs = reverse_within_length(inputs, mask)
        if initial_state is None:
            initial_state = (ops.zeros((batch, self.output_dim), self.compute_dtype),
                             ops.zeros((batch, self.units), self.compute_dtype))
        z = ops.matmul(inputs, self.kernel[:self.input_dim]) + self.bias       # (B, T, 4U)
        # One scanned tensor (T, B, 4U + 1), the mask as its last column: Keras' TensorFlow scan
        # (3.15) fails on several scanned tensors when T is unknown.
        columns = [z, ops.cast(mask, z.dtype)[:, :, None]]
        if gradient_cut is not None:
            columns.append(ops.cast(gradient_cut, z.dtype)[:, :, None])
        steps_first = ops.transpose(ops.concatenate(columns, axis=-1), (1, 0, 2))
        step = functools.partial(self._step, self.recurrent_kernel(training),
                                 gradient_cut is not None)
        (h, c), (outputs, _) = ops.scan(step, tuple(initial_state), steps_first)
        outputs = ops.transpose(outputs, (1, 0, 2))                            # (B, T, P)
        if self.go_backwards:
            outputs = reverse_within_length(outputs, mask)
        return (outputs, h, c) if return_state else outputs

    def compute_output_spec(self, inputs, padding_mask=None, initial_state=None,
                            return_state=False, gradient_cut=None, training=None):
        batch, steps = inputs.shape[0], inputs.shape[1]
        outputs = keras.KerasTensor((batch, steps, self.output_dim), self.compute_dtype)
        if not return_state:
            return outputs
        return (outputs, keras.KerasTensor((batch, self.output_dim), self.compute_dtype),
                keras.KerasTensor((batch, self.units), self.compute_dtype))

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "projection_dim": self.projection_dim, "cell_clip": self.cell_clip,
                "projection_clip": self.projection_clip, "forget_bias": self.forget_bias,
                "go_backwards": self.go_backwards,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "projection_initializer": keras.initializers.serialize(
                    self.projection_initializer),
                "weight_drop": self.weight_drop, "seed": self.seed}
