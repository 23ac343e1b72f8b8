"""``EncoderSpanQA``: extractive question answering (SQuAD) — a start and an end score per token,
on any BERT-style encoder (``BertSpanQA``, ``ElectraSpanQA`` derive it).

Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden.
"""

import keras
from keras import ops

from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.tasks.base import Task, backbone_inputs
from keras_bert_lab.tasks.losses import span_compile_defaults
from keras_bert_lab.training.optimizers import adamw


class EncoderSpanQA(Task):
    """Span prediction over a BERT-style encoder (Devlin et al. 2019, §4.2, SQuAD).

    BERT's SQuAD head is two learned vectors, a start vector ``S`` and an end vector ``E`` (one
    ``Dense(2)`` on the last layer, Hugging Face's ``qa_outputs``): the score of token ``i`` as
    the answer's start is ``S·h_i``, as its end ``E·h_i``, and a span ``i..j`` scores
    ``S·h_i + E·h_j``. Inputs are the backbone's three (``[CLS] question [SEP] context [SEP]``);
    outputs are ``{"start_logits": (B, T), "end_logits": (B, T)}`` in float32.

    The outputs are the raw scores of every position, padding included — exactly what
    ``transformers.BertForQuestionAnswering`` returns and what its loss normalises over. Positions
    that cannot hold an answer (padding, the question, special tokens) are masked out where the
    answer is chosen, in :func:`keras_bert_lab.preprocessing.span_qa.postprocess`, which only
    considers context tokens; [CLS] (position 0) stands for "no answer" (SQuAD 2.0).

    Training labels are ``{"start_logits": start_positions, "end_logits": end_positions}``
    (token indices, ``(B,)``); the loss is the mean of the two cross-entropies, as in BERT's
    ``run_squad.py`` and HF (see :class:`SpanCrossEntropy` for out-of-range positions).

    Args:
        backbone: a backbone of the subclass' family (``BertBackbone``, ``ElectraBackbone``).
    """

    description = "an extractive question-answering model"  # what messages call it

    token_output_fill = -1e4  # predict_packed: padding scores far below any real position

    def __init__(self, backbone, **kwargs):
        self.check_backbone(backbone)
        span_head = keras.layers.Dense(
            2, kernel_initializer=truncated_normal(backbone.config.initializer_range),
            dtype=backbone.dtype_policy, name="span_head")
        inputs = backbone_inputs(backbone)
        sequence = backbone(inputs)["sequence_output"]
        logits = ops.cast(span_head(sequence), "float32")                             # (B, T, 2)
        outputs = {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}      # (B, T) each
        super().__init__(backbone, inputs=inputs, outputs=outputs, **kwargs)
        # The pooler feeds nothing here (HF's BertForQuestionAnswering has none): keep it out of
        # training so it neither warns of missing gradients nor takes weight decay.
        backbone.pooler.trainable = False
        self.span_head = span_head

    def compile(self, optimizer="auto", loss="auto", metrics="auto", loss_weights="auto",
                **kwargs):
        """Defaults: AdamW (lr 3e-5, decay 0.01 on ≥2-D weights, clip 1.0), the mean of the start
        and end cross-entropies, and start/end accuracy."""
        if optimizer == "auto":
            optimizer = adamw(self, learning_rate=3e-5)
        loss, metrics, loss_weights = span_compile_defaults(loss, metrics, loss_weights)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        loss_weights=loss_weights, **kwargs)

