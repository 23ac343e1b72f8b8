"""``GPTSpanQA``: a start and an end score for every token — extractive QA with a GPT backbone.
Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden."""

import keras
from keras import ops

from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.models.gpt.backbone import INPUT_NAMES, GPTBackbone  # noqa: F401 (examples)
from keras_bert_lab.models.gpt.heads import GPTTask, with_auxiliary_lm
from keras_bert_lab.tasks.losses import span_compile_defaults

@keras.saving.register_keras_serializable("keras_bert_lab")
class GPTSpanQA(GPTTask):
    """A start and an end score for every token: extractive QA (SQuAD) with a GPT backbone.

    ``BertSpanQA``'s head (one ``Dense(2)`` on every final state, float32 outputs
    ``{"start_logits": (B, T), "end_logits": (B, T)}``, the mean of the two cross-entropies) on
    ``[start] question [delim] context [extract]`` rows from
    :class:`~keras_bert_lab.preprocessing.span_qa.SpanQAPreprocessor`. Under the causal mask a
    token's start score comes from a state that has read the question and the context up to that
    token, never what follows it — the left-to-right limit the BERT paper names for token-level
    tasks. "No answer" (SQuAD 2.0, and windows without the answer) is the extract token, whose
    state has read the whole window. GPT-1 reported no SQuAD; this is the head BERT used, so
    the two compare on one footing.

    Args:
        backbone: a ``GPTBackbone``.
        lm_loss_weight: ``λ`` of the auxiliary language-model loss (0 = off).
        lm_output_bias: as in ``GPTClassifier``.

    Example:
    >>> import numpy as np
    >>> model = GPTSpanQA(GPTBackbone("tiny"))
    >>> model.compile()
    >>> x = {"token_ids": np.array([[1, 5, 9, 4, 2, 0]] * 2), "padding_mask":
    ...      np.array([[1, 1, 1, 1, 1, 0]] * 2)}
    >>> history = model.fit(x, {"start_logits": np.array([3, 4]), "end_logits": np.array([3, 4])},
    ...                     verbose=0)
    >>> sorted((k, tuple(v.shape)) for k, v in model.predict(x, verbose=0).items())
    [('end_logits', (2, 6)), ('start_logits', (2, 6))]
    """

    description = "a GPT-1 extractive question-answering model"  # what messages call it

    token_output_fill = -1e4  # as BertSpanQA: padding scores far below any real position

    def __init__(self, backbone, lm_loss_weight=0.0, lm_output_bias=False, **kwargs):
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        hidden = backbone(inputs)["sequence_output"]                              # (B, T, H)
        hidden, auxiliary = with_auxiliary_lm(backbone, hidden, inputs, lm_loss_weight,
                                              lm_output_bias)
        span_head = keras.layers.Dense(
            2, kernel_initializer=truncated_normal(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="span_head")
        logits = ops.cast(span_head(hidden), "float32")                           # (B, T, 2)
        outputs = {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}
        super().__init__(backbone, inputs=inputs, outputs=outputs, **kwargs)
        self.auxiliary_lm, self.span_head = auxiliary, span_head
        self.lm_loss_weight, self.lm_output_bias = lm_loss_weight, bool(lm_output_bias)

    def compile(self, optimizer="auto", loss="auto", metrics="auto", loss_weights="auto",
                **kwargs):
        """Defaults: GPT-1's fine-tuning AdamW (as the other GPT heads) and BertSpanQA's loss
        and metrics (the mean of the start and end cross-entropies; start/end accuracy)."""
        loss, metrics, loss_weights = span_compile_defaults(loss, metrics, loss_weights)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        loss_weights=loss_weights, **kwargs)

    def get_config(self):
        return {**super().get_config(), "lm_loss_weight": self.lm_loss_weight,
                "lm_output_bias": self.lm_output_bias}
