"""``ScalarMix``: a learned, softmax-weighted sum of a model's layers (ELMo's task-specific mix).

ELMo (Peters et al. 2018, eq. 1) gives a downstream model one vector per token from all ``L + 1``
layers of the biLM: ``γ · Σ_k s_k h_k`` with ``s = softmax(w)``, where the scalars ``w`` and the
scale ``γ`` are learned with the task and the biLM stays frozen. The BERT paper's feature-based
NER study (§5.4) uses the same idea on a Transformer ("weighted sum of the last four hidden",
"of all 12 layers"). Optionally each layer is first layer-normalised without learned parameters,
over its real positions only (the mask), which the ELMo paper found helps when layers differ in
scale.

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden, ``K`` mixed layers.
"""

import keras
from keras import ops


@keras.saving.register_keras_serializable("keras_bert_lab")
class ScalarMix(keras.layers.Layer):
    """``γ · Σ_k softmax(w)_k · norm(h_k)`` over a list of ``K`` tensors of shape ``(B, T, H)``.

    The weights ``w`` start at zero (an equal average) and ``γ`` at one. With
    ``layer_norm=True`` each ``h_k`` is normalised to zero mean and unit variance over its
    ``T × H`` values at real positions (``padding_mask``, ``(B, T)``, 1 for real tokens), per
    example — allennlp's ``ScalarMix`` pools these statistics over the whole batch instead, which
    makes a sentence's features depend on its batch-mates; ours do not.

    Args:
        layer_norm: normalise each layer before mixing.
        epsilon: added to the variance when normalising.
        trainable_weights_only_gamma: keep ``w`` fixed at an equal average, learn only ``γ``.

    Example:
    >>> import numpy as np
    >>> mix = ScalarMix()
    >>> layers = [np.full((1, 2, 3), v, "float32") for v in (1.0, 2.0, 6.0)]
    >>> keras.ops.convert_to_numpy(mix(layers))[0, 0].tolist()   # equal weights at the start
    [3.0, 3.0, 3.0]
    >>> [round(float(s), 3) for s in keras.ops.convert_to_numpy(mix.layer_weights())]
    [0.333, 0.333, 0.333]
    """

    def __init__(self, layer_norm=False, epsilon=1e-12, trainable_weights_only_gamma=False,
                 **kwargs):
        super().__init__(**kwargs)
        self.layer_norm = layer_norm
        self.epsilon = epsilon
        self.trainable_weights_only_gamma = trainable_weights_only_gamma

    def build(self, layers_shape, padding_mask_shape=None):
        self.num_layers = len(layers_shape)
        self.scalars = self.add_weight(
            shape=(self.num_layers,), initializer="zeros", name="scalars",
            trainable=not self.trainable_weights_only_gamma)
        self.gamma = self.add_weight(shape=(), initializer="ones", name="gamma")

    def layer_weights(self):
        """The normalised weights ``s = softmax(w)`` (K,)."""
        return ops.softmax(self.scalars)

    def call(self, layers, padding_mask=None):  # layers: K × (B, T, H)
        weights = ops.cast(self.layer_weights(), self.compute_dtype)
        if self.layer_norm:
            layers = [self._normalise(h, padding_mask) for h in layers]
        mixed = weights[0] * layers[0]
        for k in range(1, self.num_layers):
            mixed = mixed + weights[k] * layers[k]
        return ops.cast(self.gamma, self.compute_dtype) * mixed  # (B, T, H)

    def _normalise(self, h, mask):
        h = ops.cast(h, "float32")
        if mask is None:
            mask = ops.ones(ops.shape(h)[:2], "float32")
        m = ops.cast(mask, "float32")[:, :, None]  # (B, T, 1)
        count = ops.maximum(ops.sum(m, axis=(1, 2)) * ops.cast(ops.shape(h)[-1], "float32"), 1.0)
        mean = ops.sum(h * m, axis=(1, 2)) / count  # (B,)
        centred = h - mean[:, None, None]
        variance = ops.sum(ops.square(centred * m), axis=(1, 2)) / count
        out = centred / ops.sqrt(variance + self.epsilon)[:, None, None]
        return ops.cast(out, self.compute_dtype)

    def compute_output_shape(self, layers_shape, padding_mask_shape=None):
        return layers_shape[0]

    def get_config(self):
        config = super().get_config()
        config.update(layer_norm=self.layer_norm, epsilon=self.epsilon,
                      trainable_weights_only_gamma=self.trainable_weights_only_gamma)
        return config
