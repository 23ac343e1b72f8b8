"""``GPTMultipleChoice``: GPT-1's multiple-choice head, one score per ``[start] context [delim]
answer [extract]`` row. Shapes: ``B`` batch, ``C`` choices, ``T`` tokens, ``H`` hidden."""

import keras
from keras import ops

from keras_bert_lab.models.gpt.backbone import INPUT_NAMES, GPTBackbone  # noqa: F401 (examples)
from keras_bert_lab.models.gpt.heads import GPTTask, extract_states
from keras_bert_lab.tasks.heads import UnfoldChoices

@keras.saving.register_keras_serializable("keras_bert_lab")
class GPTMultipleChoice(GPTTask):
    """One score per ``[start] context [delim] answer [extract]`` row, softmaxed over answers.

    Inputs: ``token_ids`` and ``padding_mask``, ``(B, C, T)``. Output: ``(B, C)`` float32 logits
    — the multiple-choice head of transformers' ``OpenAIGPTDoubleHeadsModel`` (a ``Dense(1)`` on
    the extract state), which the same weights reproduce.

    Args:
        backbone: a ``GPTBackbone``. lm_loss_weight: ``λ`` (0 = off). dropout,
        lm_output_bias: as above.

    Example:
    >>> import numpy as np
    >>> model = GPTMultipleChoice(GPTBackbone("tiny"))
    >>> model.compile()
    >>> x = {"token_ids": np.array([[[1, 5, 3, 8, 2], [1, 5, 3, 9, 2]]]),
    ...      "padding_mask": np.ones((1, 2, 5), "int32")}
    >>> history = model.fit(x, np.array([1]), verbose=0)
    >>> tuple(model.predict(x, verbose=0).shape)
    (1, 2)
    """

    description = "a GPT-1 multiple-choice model"  # what messages call it

    def __init__(self, backbone, lm_loss_weight=0.0, dropout=None, lm_output_bias=False,
                 **kwargs):
        inputs = {name: keras.Input(shape=(None, None), dtype="int32", name=name)
                  for name in INPUT_NAMES}                                        # (B, C, T)
        states, layers = extract_states(backbone, inputs, lm_loss_weight, True,
                                        lm_output_bias)                           # (B·C, H)
        head_dropout, head = self._dense(backbone, 1, dropout)
        scores = ops.cast(head(head_dropout(states)), "float32")                 # (B·C, 1)
        unfold = UnfoldChoices(name="unfold_choices")
        logits = unfold(scores, inputs["token_ids"])                              # (B, C)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        for name, layer in layers.items():
            setattr(self, name, layer)
        self.unfold_choices = unfold
        self.classifier_dropout, self.classifier = head_dropout, head
        self.lm_loss_weight, self.dropout = lm_loss_weight, dropout
        self.lm_output_bias = bool(lm_output_bias)

    def get_config(self):
        return {**super().get_config(), "lm_loss_weight": self.lm_loss_weight,
                "dropout": self.dropout, "lm_output_bias": self.lm_output_bias}
