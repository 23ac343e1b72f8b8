"""``GPTClassifier``: GPT-1's linear layer on the extract state — classification, entailment,
similarity (Radford et al. 2018, §3.3). Shapes: ``B`` batch, ``T`` tokens, ``H`` hidden, ``K``
classes."""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.gpt.backbone import INPUT_NAMES, GPTBackbone  # noqa: F401 (examples)
from keras_bert_lab.models.gpt.heads import GPTTask, extract_states

@keras.saving.register_keras_serializable("keras_bert_lab")
class GPTClassifier(GPTTask):
    """A linear layer on the extract state: classification, entailment, or similarity.

    Inputs: ``token_ids`` and ``padding_mask``, ``(B, T)`` — or ``(B, 2, T)`` with
    ``num_sequences=2`` (similarity: both orders, extract states added). Output: ``(B, K)``
    float32 logits (``K = 1``: a regression score, e.g. STS-B).

    Args:
        backbone: a ``GPTBackbone``.
        num_classes: ``K``.
        num_sequences: 1, or 2 for the similarity transformation.
        lm_loss_weight: ``λ`` of the auxiliary language-model loss (GPT-1: 0.5; 0 = off).
        dropout: before the linear layer; default the backbone's dropout (GPT-1: 0.1).
        lm_output_bias: the auxiliary LM head adds an output bias; ``from_preset`` sets it, and
            fills it, for a ``GPTCausalLM`` preset pretrained with one.

    Example:
    >>> import numpy as np
    >>> model = GPTClassifier(GPTBackbone("tiny"), num_classes=3, lm_loss_weight=0.5)
    >>> model.compile()
    >>> x = {"token_ids": np.array([[1, 5, 9, 2, 0], [1, 7, 2, 0, 0]]),
    ...      "padding_mask": np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])}
    >>> history = model.fit(x, np.array([2, 0]), verbose=0)
    >>> tuple(model.predict(x, verbose=0).shape)
    (2, 3)
    """

    description = "a GPT-1 classifier (byte-pair tokenizer)"  # what messages call it

    def __init__(self, backbone, num_classes, num_sequences=1, lm_loss_weight=0.0, dropout=None,
                 lm_output_bias=False, **kwargs):
        if int(num_classes) < 1 or int(num_sequences) not in (1, 2):
            raise ConfigError(f"num_classes={num_classes} must be ≥ 1 and num_sequences="
                              f"{num_sequences} 1 (one sequence) or 2 (similarity: both orders).")
        shape = (None,) if num_sequences == 1 else (num_sequences, None)
        inputs = {name: keras.Input(shape=shape, dtype="int32", name=name) for name in INPUT_NAMES}
        states, layers = extract_states(backbone, inputs, lm_loss_weight, num_sequences > 1,
                                        lm_output_bias)
        if num_sequences > 1:   # (B·2, H) -> (B, H): the two orders' states added (Figure 1)
            states = ops.sum(ops.reshape(states, (-1, num_sequences, states.shape[-1])), axis=1)
        head_dropout, head = self._dense(backbone, int(num_classes), dropout)
        logits = ops.cast(head(head_dropout(states)), "float32")                 # (B, K)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        for name, layer in layers.items():
            setattr(self, name, layer)
        self.classifier_dropout, self.classifier = head_dropout, head
        self.num_classes, self.num_sequences = int(num_classes), int(num_sequences)
        self.lm_loss_weight, self.dropout = lm_loss_weight, dropout
        self.lm_output_bias = bool(lm_output_bias)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes,
                "num_sequences": self.num_sequences, "lm_loss_weight": self.lm_loss_weight,
                "dropout": self.dropout, "lm_output_bias": self.lm_output_bias}
