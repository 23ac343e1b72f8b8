"""The vocabulary cross-entropy equals Keras' sparse cross-entropy: values, weighted reduction and
gradients, at a language model's shapes (B, P, V) and at 2-D shapes."""

import keras
import numpy as np
import pytest

from keras_bert_lab.tasks.losses import VocabularyCrossEntropy, vocabulary_cross_entropy


def _gradient(fn, logits):
    """d fn(logits) / d logits on the running backend."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax
        return np.asarray(jax.grad(fn)(logits))
    if backend == "tensorflow":
        import tensorflow as tf
        x = tf.Variable(logits)
        with tf.GradientTape() as tape:
            value = fn(x)
        return tape.gradient(value, x).numpy()
    import torch
    x = torch.tensor(logits, requires_grad=True)
    fn(x).backward()
    return x.grad.numpy()


@pytest.mark.parametrize("shape", [(3, 5, 97), (4, 11)])
def test_equals_keras_sparse_cross_entropy(shape):
    rng = np.random.default_rng(0)
    logits = (3 * rng.standard_normal(shape)).astype("float32")
    labels = rng.integers(0, shape[-1], size=shape[:-1]).astype("int32")
    weights = rng.integers(0, 2, size=shape[:-1]).astype("float32")
    weights.flat[0] = 1.0
    ours = keras.ops.convert_to_numpy(vocabulary_cross_entropy(labels, logits))
    theirs = keras.ops.convert_to_numpy(
        keras.ops.sparse_categorical_crossentropy(labels, logits, from_logits=True))
    assert ours.shape == labels.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
    # by hand: logsumexp − the label's logit
    by_hand = np.log(np.exp(logits.astype("float64")).sum(-1)) - np.take_along_axis(
        logits, labels[..., None], -1)[..., 0]
    np.testing.assert_allclose(ours, by_hand, rtol=1e-5, atol=1e-5)

    loss = VocabularyCrossEntropy(reduction="mean_with_sample_weight")
    reference = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight")
    np.testing.assert_allclose(
        float(keras.ops.convert_to_numpy(loss(labels, logits, sample_weight=weights))),
        float(keras.ops.convert_to_numpy(reference(labels, logits, sample_weight=weights))),
        rtol=1e-5)
    def weighted(fn):
        return lambda x: keras.ops.sum(keras.ops.multiply(fn(x), weights))

    ours_grad = _gradient(weighted(lambda x: vocabulary_cross_entropy(labels, x)), logits)
    theirs_grad = _gradient(weighted(lambda x: keras.ops.sparse_categorical_crossentropy(
        labels, x, from_logits=True)), logits)
    np.testing.assert_allclose(ours_grad, theirs_grad, rtol=1e-5, atol=1e-6)
    assert VocabularyCrossEntropy.from_config(loss.get_config()).reduction == \
        "mean_with_sample_weight"
