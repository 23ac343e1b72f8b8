"""What GPT-1's fine-tuning heads share: the extract state, the auxiliary LM loss, ``GPTTask``.

Radford et al. (2018, §3.2–3.3, Figure 1) fine-tune GPT by turning each task's input into one
token sequence (or several) that ends with an extract token ``_classify_`` and putting a linear
layer on that token's final hidden state — the only new weights. Classification reads
``[start] text [extract]``; entailment ``[start] premise [delim] hypothesis [extract]``;
similarity, having no natural order, runs both orders and *adds* the two extract states;
multiple choice runs ``[start] context [delim] answer_i [extract]`` for every answer and
softmaxes one score per answer. They also keep language modelling as an auxiliary objective,
``L3 = L2 + λ·L1`` with ``λ = 0.5``, which helped on the larger datasets. The rows come from
:mod:`keras_bert_lab.models.gpt.preprocessor`; the state of a row's last real token is its extract
token's, because rows are right-padded. Two heads GPT-1 did not have read every token instead:
tagging (:class:`~keras_bert_lab.models.gpt.token_classifier.GPTTokenClassifier`) and extractive
QA (:class:`~keras_bert_lab.models.gpt.span_qa.GPTSpanQA`). The heads:
:mod:`~keras_bert_lab.models.gpt.classifier`, :mod:`~keras_bert_lab.models.gpt.multiple_choice`,
:mod:`~keras_bert_lab.models.gpt.token_classifier`, :mod:`~keras_bert_lab.models.gpt.span_qa`.

Shapes: ``B`` batch, ``S`` sequences per example (2 for similarity, ``C`` choices), ``T``
tokens, ``H`` hidden, ``K`` classes.
"""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.layers.decoder import TiedLMHead
from keras_bert_lab.models.gpt.backbone import INPUT_NAMES, GPTBackbone
from keras_bert_lab.tasks.base import Task
from keras_bert_lab.tasks.heads import FoldChoices


@keras.saving.register_keras_serializable("keras_bert_lab")
class LastTokenState(keras.layers.Layer):
    """``(B, T, H)`` → ``(B, H)``: the state at each row's last real position (mask sum − 1)."""

    def call(self, hidden, padding_mask):
        last = ops.sum(ops.cast(padding_mask, "int32"), axis=1) - 1           # (B,)
        positions = ops.arange(ops.shape(hidden)[1], dtype="int32")           # (T,)
        select = ops.cast(positions[None, :] == last[:, None], hidden.dtype)  # (B, T)
        return ops.einsum("bt,bth->bh", select, hidden)

    def compute_output_shape(self, hidden_shape, padding_mask_shape):
        return (hidden_shape[0], hidden_shape[2])


@keras.saving.register_keras_serializable("keras_bert_lab")
class AuxiliaryLMLoss(keras.layers.Layer):
    """Adds ``weight ×`` the next-token cross-entropy of the rows to the model's losses in
    training (GPT-1's ``λ·L1``), through the tied embedding; returns ``hidden`` unchanged.
    ``use_bias``: the LM head has an output bias (a backbone pretrained with one, see
    ``GPTCausalLM(output_bias=True)``, predicts through it)."""

    def __init__(self, token_embedding, weight=0.5, use_bias=False, **kwargs):
        super().__init__(**kwargs)
        self.weight, self.use_bias = weight, bool(use_bias)
        self.lm_head = TiedLMHead(token_embedding, use_bias=use_bias, dtype=self.dtype_policy,
                                  name="lm_head")

    def build(self, hidden_shape, *shapes):
        self.lm_head.build(hidden_shape)   # the bias, if any; the kernel is the tied embedding
        self.built = True

    def call(self, hidden, token_ids, padding_mask, training=None):
        if training and self.weight > 0:
            logits = self.lm_head(hidden[:, :-1])                                # (B, T-1, V)
            labels, weights = token_ids[:, 1:], ops.cast(padding_mask[:, 1:], "float32")
            losses = keras.losses.sparse_categorical_crossentropy(labels, logits,
                                                                  from_logits=True)
            loss = ops.sum(losses * weights) / ops.maximum(ops.sum(weights), 1.0)
            self.add_loss(self.weight * loss)
        return hidden

    def compute_output_shape(self, hidden_shape, *args):
        return hidden_shape

    def get_config(self):  # the embedding: from the task
        return {**super().get_config(), "weight": self.weight, "use_bias": self.use_bias}


def with_auxiliary_lm(backbone, hidden, rows, lm_loss_weight, lm_output_bias=False):
    """``(hidden, layer)``: ``hidden`` passed through an ``AuxiliaryLMLoss`` on ``rows``'
    tokens when ``lm_loss_weight`` (``layer`` is then that layer, else ``None``)."""
    if not lm_loss_weight:
        return hidden, None
    layer = AuxiliaryLMLoss(backbone.token_embedding, lm_loss_weight, use_bias=lm_output_bias,
                            dtype=backbone.dtype_policy, name="auxiliary_lm")
    return layer(hidden, rows["token_ids"], rows["padding_mask"]), layer


def extract_states(backbone, inputs, lm_loss_weight, sequences, lm_output_bias=False):
    """``(states (B·S, H), layers)``: fold ``S`` sequences into rows, run the backbone (adding
    the auxiliary LM loss when ``lm_loss_weight``), take each row's extract state. ``layers`` are
    the new layers by attribute name (set on the task after ``Model.__init__``, as torch needs)."""
    layers = {"fold": FoldChoices(name="fold_sequences") if sequences else None,
              "last_token": LastTokenState(name="extract_state")}
    rows = {name: layers["fold"](inputs[name]) if sequences else inputs[name]
            for name in INPUT_NAMES}                                              # (B·S, T)
    hidden = backbone(rows)["sequence_output"]                                    # (B·S, T, H)
    hidden, layers["auxiliary_lm"] = with_auxiliary_lm(backbone, hidden, rows, lm_loss_weight,
                                                       lm_output_bias)
    return layers["last_token"](hidden, rows["padding_mask"]), layers                 # (B·S, H)


class GPTTask(Task):
    """What the GPT task heads share: the backbone class, the linear layer, compile defaults."""


    @classmethod
    def preset_defaults(cls, preset):
        """A ``GPTCausalLM`` preset pretrained with an output bias gives the auxiliary LM head
        one (filled from the preset by :meth:`from_preset`)."""
        stored = preset.task or {}
        return {"lm_output_bias": stored.get("class_name") == "GPTCausalLM"
                and bool(stored.get("config", {}).get("output_bias"))}

    @classmethod
    def from_preset(cls, preset, *args, **kwargs):
        """As ``Task.from_preset``; from a ``GPTCausalLM`` preset with an output bias, the
        auxiliary LM head starts from that pretrained bias (not from zeros, which would score
        the LM loss as if the model had never learned the unigram)."""
        from keras_bert_lab.presets import registry
        from keras_bert_lab.presets.weights import read_weights

        model = super().from_preset(preset, *args, **kwargs)
        auxiliary = getattr(model, "auxiliary_lm", None)
        head = auxiliary.lm_head if auxiliary is not None else None
        info = registry.read_preset(preset, verify=False)
        if head is not None and head.bias is not None and \
                (info.task or {}).get("class_name") == "GPTCausalLM":
            bias = read_weights(info.weights_path).get("task/lm_head/bias")
            if bias is not None:
                head.bias.assign(bias)
        return model

    def _dense(self, backbone, units, dropout):
        rate = backbone.config.dropout if dropout is None else float(dropout)
        if not 0.0 <= rate < 1.0:
            raise ConfigError(f"dropout={dropout} must be in [0, 1).")
        return (keras.layers.Dropout(rate, dtype=backbone.dtype_policy, name="classifier_dropout"),
                keras.layers.Dense(units, dtype=backbone.dtype_policy, name="classifier",
                                   kernel_initializer=truncated_normal(
                                       backbone.config.initializer_range)))

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Defaults: GPT-1's fine-tuning AdamW (lr 6.25e-5, decay 0.01 on ≥2-D weights, clip
        1.0), cross-entropy (mean squared error for a one-output regression), accuracy."""
        from keras_bert_lab.training.optimizers import adamw

        regression = getattr(self, "num_classes", 0) == 1
        if optimizer == "auto":
            optimizer = adamw(self, learning_rate=6.25e-5)
        if loss == "auto":
            loss = keras.losses.MeanSquaredError() if regression else \
                keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if metrics == "auto":
            metrics = None if regression else [keras.metrics.SparseCategoricalAccuracy("accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
