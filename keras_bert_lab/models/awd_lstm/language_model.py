"""``AwdLstmLanguageModel``: the AWD-LSTM with its tied decoder, AR/TAR and stateful training.

Merity et al. (2017) train the model to predict the next word of contiguous text cut into
windows of ~70 tokens, each window starting from the LSTM states the previous one ended with
(§4.4); the decoder's weight is the embedding table (§4.5) and its bias its own; the loss adds
activation regularisation on the dropped last-layer output and temporal activation
regularisation on the raw one (§4.6, α = 2, β = 1). ULMFiT (Howard & Ruder 2018, §3.2)
fine-tunes the same model the same way on the target task's text.

Batch format (the same as ``GPTCausalLM``'s): ``x = {"token_ids", "padding_mask"}`` (B, T),
``y`` (B, T) the next token of each position, ``sample_weight`` (B, T) the targets' padding mask —
:func:`keras_bert_lab.pipelines.language_model.next_token_batch` makes them from rows of ``T + 1`` tokens.
For stateful training (``stateful_batch_size=B``) row ``b`` of each batch must continue row
``b`` of the previous one, every batch has ``B`` rows, and :meth:`reset_states` starts new text.

Shapes: ``B`` batch, ``T`` tokens, ``E`` embedding width, ``V`` vocabulary.

Example:
>>> import numpy as np
>>> from keras_bert_lab.models.awd_lstm.config import AwdLstmConfig
>>> from keras_bert_lab.pipelines.language_model import next_token_batch
>>> model = AwdLstmLanguageModel(AwdLstmBackbone(AwdLstmConfig.from_size("tiny", vocabulary_size=60)),
...                              stateful_batch_size=2)
>>> model.compile()
>>> rows = np.random.default_rng(0).integers(0, 60, (2, 9)).astype("int32")
>>> x, y, w = next_token_batch(rows, np.ones_like(rows))
>>> history = model.fit(x, y, sample_weight=w, batch_size=2, verbose=0)
>>> sorted(history.history)
['accuracy', 'loss', 'perplexity']
>>> model.reset_states()
"""

import keras

from keras_bert_lab.models.awd_lstm.layers import ActivationRegularization, TiedDecoder
from keras_bert_lab.models.awd_lstm.backbone import INPUT_NAMES, AwdLstmBackbone, reset_states
from keras_bert_lab.tasks.base import Task
from keras_bert_lab.tasks.losses import VocabularyCrossEntropy


@keras.saving.register_keras_serializable("keras_bert_lab")
class Perplexity(keras.metrics.SparseCategoricalCrossentropy):
    """``exp`` of the mean cross-entropy over the weighted (real) targets: the language model's
    perplexity, free of the AR/TAR terms that the training loss includes."""

    def __init__(self, name="perplexity", dtype=None, from_logits=True, **kwargs):
        super().__init__(name=name, dtype=dtype, from_logits=from_logits, **kwargs)

    def result(self):
        return keras.ops.exp(super().result())


@keras.saving.register_keras_serializable("keras_bert_lab")
class AwdLstmLanguageModel(Task):
    """Next-token language model over an ``AwdLstmBackbone`` (see the module docstring).

    Inputs: ``token_ids`` and ``padding_mask`` (B, T). Output: logits (B, T, V) in float32 —
    position ``t`` scores token ``t + 1`` — from the dropped last-layer output through the tied
    table plus a bias. In training, ``α·AR + β·TAR`` is added to the model's losses.

    Args:
        backbone: an ``AwdLstmBackbone``.
        alpha, beta: AR and TAR weights (the paper's 2 and 1; 0 turns one off).
        stateful_batch_size: ``None``: every batch starts from zero states. An integer ``B``:
            the LSTMs start each batch from the states the previous one ended with (gradients
            stop between batches), for truncated BPTT over contiguous text in batches of exactly
            ``B`` rows.
    """

    description = "an AWD-LSTM language model"  # what messages call it

    token_output_fill = 0.0

    def __init__(self, backbone, alpha=2.0, beta=1.0, stateful_batch_size=None, **kwargs):
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        carriers = backbone.carriers(stateful_batch_size) if stateful_batch_size else []
        if carriers:
            outputs = backbone.encode(inputs["token_ids"], inputs["padding_mask"],
                                      carriers=carriers)
        else:
            outputs = backbone(inputs)
        regularization = ActivationRegularization(alpha, beta, dtype=backbone.dtype_policy,
                                                  name="activation_regularization")
        decoder = TiedDecoder(backbone.token_embedding, dtype=backbone.dtype_policy,
                              name="decoder")
        dropped = regularization(outputs["sequence_output"], outputs["hidden_states"][-1],
                                 inputs["padding_mask"])
        logits = decoder(dropped)                                                 # (B, T, V)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        self.decoder, self.regularization, self.carriers = decoder, regularization, carriers
        self.alpha, self.beta = float(alpha), float(beta)
        self.stateful_batch_size = int(stateful_batch_size) if stateful_batch_size else None

    def layer_groups(self):
        """Bottom-up: each LSTM, then the embedding table with the decoder tied to it on top —
        fastai's ``awd_lstm_lm_split``: the table is also the output layer."""
        return [[lstm] for lstm in self.backbone.lstm_layers] + [
            [self.backbone.token_embedding, self.decoder]]

    def reset_states(self):
        """Zero the carried LSTM states (stateful models; a no-op otherwise)."""
        reset_states(self)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto",
                **kwargs):
        """Defaults: ULMFiT's Adam (learning rate 0.004, β1 0.7, β2 0.99) with the AWD-LSTM's
        gradient clipping (global norm 0.25); cross-entropy averaged over the weighted targets
        (plus AR/TAR in training); weighted perplexity and next-token accuracy. On TensorFlow,
        no XLA (``jit_compile=False``: XLA cannot compile the gradient of Keras' TensorFlow
        scan)."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(learning_rate=4e-3, beta_1=0.7, beta_2=0.99,
                                              global_clipnorm=0.25)
        if loss == "auto":
            loss = VocabularyCrossEntropy(reduction="mean_with_sample_weight")
        if weighted_metrics == "auto":
            weighted_metrics = [Perplexity(), keras.metrics.SparseCategoricalAccuracy("accuracy")]
        if metrics == "auto":
            metrics = None
        if keras.backend.backend() == "tensorflow":
            kwargs.setdefault("jit_compile", False)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha, "beta": self.beta,
                "stateful_batch_size": self.stateful_batch_size}
