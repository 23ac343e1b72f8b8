"""``UlmfitClassifier``: ULMFiT's text classifier — AWD-LSTM, concat pooling, two linear blocks.

Howard & Ruder (2018, §3.3) put two linear blocks on the fine-tuned language model's encoder,
each "batch normalization and dropout, with ReLU activations for the intermediate layer and a
softmax" at the end, fed with concat pooling of the last layer's states ``H``:
``h_c = [h_T, maxpool(H), meanpool(H)]``. As fastai's ``PoolingLinearClassifier``: the first
block's dropout is the encoder's output dropout (0.4), the second 0.1, the hidden width 50, and
each ``Dense`` has no bias (the batch normalisation before it has one). Pooling reads the raw
last-layer output (fastai's encoder output), so the encoder's own output dropout is unused here.

**BPT3C** (§3.3) — back-propagation through time for text classification: a document is read in
windows that each start from the state the previous one ended with, states are pooled, and
gradients reach only the windows that feed the prediction. fastai (``SentenceEncoder``) keeps
the outputs of the windows within the last ``max_len`` tokens (72 × 20) and detaches the state
between windows. Here the whole padded document runs in *one* scan per layer — the state is
carried exactly, so the values equal any windowing — and the gradient is stopped on the state
entering each row's last ``max_len`` real tokens (``ProjectedLSTM``'s ``gradient_cut``);
pooling reads those tokens only. So, as in fastai, the loss trains the encoder on the last
``max_len`` tokens of each document and earlier tokens only set the state; unlike fastai, the
windows inside that span are not cut from one another (the paper's "back-propagated to the
batches whose hidden states contributed to the final prediction"), and the scan keeps every
step for the backward pass, so memory grows with the document's length: cut very long
documents in the pipeline. ``max_len=None`` pools and trains over every real token.

Rows are right-padded (``padding_mask`` a prefix); each row's logits equal what it gets alone.

Shapes: ``B`` batch, ``T`` tokens, ``E`` embedding width, ``K`` classes.

Example:
>>> import numpy as np
>>> from keras_bert_lab.models.awd_lstm.config import AwdLstmConfig
>>> model = UlmfitClassifier(AwdLstmBackbone(AwdLstmConfig.from_size("tiny", vocabulary_size=60)),
...                          num_classes=3)
>>> x = {"token_ids": np.array([[5, 6, 7, 8], [9, 10, 0, 0]]),
...      "padding_mask": np.array([[1, 1, 1, 1], [1, 1, 0, 0]])}
>>> tuple(model.predict_on_batch(x).shape)
(2, 3)
>>> [len(group) for group in model.layer_groups()]     # embedding, 2 LSTMs, the head
[1, 1, 1, 4]
"""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.awd_lstm.layers import ConcatPooling
from keras_bert_lab.layers.common import dropout as seeded_dropout
from keras_bert_lab.models.awd_lstm.backbone import INPUT_NAMES, AwdLstmBackbone
from keras_bert_lab.tasks.base import Task


@keras.saving.register_keras_serializable("keras_bert_lab")
class TrainedSpan(keras.layers.Layer):
    """From ``padding_mask`` (B, T): ``(pool_mask, gradient_cut)`` (B, T) int32 — each row's
    last ``max_len`` real tokens, and a 1 at the first of them when earlier tokens exist."""

    def __init__(self, max_len, **kwargs):
        super().__init__(**kwargs)
        self.max_len = int(max_len)
        self.built = True

    def call(self, padding_mask):
        real = ops.cast(padding_mask, "int32")
        start = ops.maximum(ops.sum(real, axis=1, keepdims=True) - self.max_len, 0)   # (B, 1)
        positions = ops.arange(ops.shape(real)[1], dtype="int32")[None, :]
        pool = real * ops.cast(positions >= start, "int32")
        cut = ops.cast(ops.logical_and(positions == start, start > 0), "int32")
        return pool, cut

    def compute_output_spec(self, padding_mask):
        spec = keras.KerasTensor(padding_mask.shape, "int32")
        return spec, keras.KerasTensor(padding_mask.shape, "int32")

    def get_config(self):
        return {**super().get_config(), "max_len": self.max_len}


@keras.saving.register_keras_serializable("keras_bert_lab")
class UlmfitClassifier(Task):
    """Concat-pooled AWD-LSTM classifier (see the module docstring).

    Inputs: ``token_ids`` and ``padding_mask`` (B, T). Output: logits (B, K) in float32.

    Args:
        backbone: an ``AwdLstmBackbone`` (the fine-tuned language model's).
        num_classes: ``K``.
        hidden_dim: width of the intermediate block (the paper's 50).
        dropout: the two blocks' dropout rates; ``None``: ``(backbone output dropout, 0.1)`` as
            fastai.
        max_len: pool and train over each row's last ``max_len`` real tokens (BPT3C; fastai's
            72 × 20); ``None``: all of them.
    """

    description = "a ULMFiT classifier (word tokenizer, AWD-LSTM)"  # what messages call it


    def __init__(self, backbone, num_classes=2, hidden_dim=50, dropout=None, max_len=1440,
                 **kwargs):
        dropout = (backbone.config.output_dropout, 0.1) if dropout is None else \
            tuple(float(d) for d in dropout)
        if len(dropout) != 2 or not all(0.0 <= d < 1.0 for d in dropout):
            raise ConfigError(f"dropout must be two rates in [0, 1), got {dropout!r}.")
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise ConfigError(f"num_classes must be a positive integer, got {num_classes!r}.")
        if max_len is not None and (isinstance(max_len, bool) or int(max_len) < 1):
            raise ConfigError(f"max_len must be a positive integer or None, got {max_len!r}.")
        policy = backbone.dtype_policy
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        mask = inputs["padding_mask"]
        span = TrainedSpan(max_len, name="trained_span") if max_len else None
        pool_mask, cut = span(mask) if span else (None, None)
        hidden = backbone.encode(inputs["token_ids"], mask, gradient_cut=cut)["hidden_states"][-1]
        pooling = ConcatPooling(dtype=policy, name="concat_pooling")
        x = pooling(hidden, mask) if pool_mask is None else pooling(hidden, mask, pool_mask)
        head = []
        for i, (units, rate) in enumerate(zip((hidden_dim, num_classes), dropout)):
            head += [keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5, dtype=policy,
                                                     name=f"head_norm_{i}"),
                     seeded_dropout(rate, policy, f"head_dropout_{i}"),
                     keras.layers.Dense(units, use_bias=False, dtype=policy,
                                        name=f"head_dense_{i}")]
            for layer in head[-3:]:
                x = layer(x)                                                   # (B, 50 | K)
            if i == 0:
                x = keras.layers.ReLU(dtype=policy, name="head_relu")(x)
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(x)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        self.span, self.pooling, self.head = span, pooling, head
        self.num_classes, self.hidden_dim = num_classes, int(hidden_dim)
        self.dropout, self.max_len = dropout, None if max_len is None else int(max_len)

    def layer_groups(self):
        """Bottom-up: the embedding, each LSTM, then the head (batch norms and dense layers) —
        fastai's ``awd_lstm_clas_split``."""
        return self.backbone.layer_groups() + [
            [layer for layer in self.head if layer.weights]]

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Defaults: ULMFiT's Adam for the classifier (learning rate 0.01, β1 0.7, β2 0.99),
        cross-entropy, accuracy; no XLA on TensorFlow (the scan's gradient)."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(learning_rate=1e-2, beta_1=0.7, beta_2=0.99)
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if metrics == "auto":
            metrics = [keras.metrics.SparseCategoricalAccuracy("accuracy")]
        if keras.backend.backend() == "tensorflow":
            kwargs.setdefault("jit_compile", False)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes,
                "hidden_dim": self.hidden_dim, "dropout": list(self.dropout),
                "max_len": self.max_len}
