"""GPT-1's fine-tuning heads: one linear layer on the extract token, plus an auxiliary LM loss.

Radford et al. (2018, §3.2–3.3, Figure 1) fine-tune GPT by turning each task's input into one
token sequence (or several) that ends with an extract token ``_classify_`` and putting a linear
layer on that token's final hidden state — the only new weights. Classification reads
``[start] text [extract]``; entailment ``[start] premise [delim] hypothesis [extract]``;
similarity, having no natural order, runs both orders and *adds* the two extract states;
multiple choice runs ``[start] context [delim] answer_i [extract]`` for every answer and
softmaxes one score per answer. They also keep language modelling as an auxiliary objective,
``L3 = L2 + λ·L1`` with ``λ = 0.5``, which helped on the larger datasets. The rows come from
:mod:`keras_bert_lab.preprocessing.gpt`; the state of a row's last real token is its extract
token's, because rows are right-padded. Two heads GPT-1 did not have read every token instead:
tagging (:class:`GPTTokenClassifier`) and extractive QA (:class:`GPTSpanQA`).

Shapes: ``B`` batch, ``S`` sequences per example (2 for similarity, ``C`` choices), ``T``
tokens, ``H`` hidden, ``K`` classes.
"""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.common import truncated_normal
from keras_bert_lab.layers.decoder import TiedLMHead
from keras_bert_lab.models.gpt import INPUT_NAMES, GPTBackbone
from keras_bert_lab.tasks.base import Task
from keras_bert_lab.tasks.multiple_choice import FoldChoices, UnfoldChoices
from keras_bert_lab.tasks.question_answering import span_compile_defaults
from keras_bert_lab.tasks.token_classification import TokenClassificationLoss, check_label_arguments


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


class _GPTHead(Task):
    """What the GPT heads share: the backbone class, the linear layer, compile defaults."""

    backbone_class = GPTBackbone

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


@keras.saving.register_keras_serializable("keras_bert_lab")
class GPTClassifier(_GPTHead):
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


@keras.saving.register_keras_serializable("keras_bert_lab")
class GPTMultipleChoice(_GPTHead):
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


@keras.saving.register_keras_serializable("keras_bert_lab")
class GPTTokenClassifier(_GPTHead):
    """A label for every token of a ``[start] pieces`` row: tagging (NER) with a GPT backbone.

    GPT-1 defines no tagging head; this one is ``BertTokenClassifier``'s (dropout, one
    ``Dense(K)`` on every final state, float32 logits ``(B, T, K)``) on a left-to-right model, so
    each token's label is read from a state that saw only the tokens before it. Train it on
    :class:`~keras_bert_lab.preprocessing.gpt.GPTTaggingPreprocessor` rows, which put a word's
    tag on its last piece (the first state to have read the whole word).

    Args:
        backbone: a ``GPTBackbone``.
        num_labels: ``K``; may be left out when ``labels`` is given.
        labels: the label names (index = id), kept in the config and presets.
        dropout: before the linear layer; default the backbone's dropout.

    Example:
    >>> import numpy as np
    >>> model = GPTTokenClassifier(GPTBackbone("tiny"), labels=["O", "B-PER", "I-PER"])
    >>> model.compile()
    >>> x = {"token_ids": np.array([[1, 5, 9, 2]] * 2), "padding_mask": np.ones((2, 4), "int32")}
    >>> history = model.fit(x, np.array([[0, 1, 2, 0]] * 2),
    ...                     sample_weight=np.array([[0, 1, 1, 1]] * 2), verbose=0)
    >>> tuple(model.predict(x, verbose=0).shape)
    (2, 4, 3)
    """

    token_output_fill = 0.0

    @classmethod
    def preset_defaults(cls, preset):
        return {}   # no auxiliary LM loss here

    def __init__(self, backbone, num_labels=None, labels=None, dropout=None, **kwargs):
        num_labels, labels = check_label_arguments(num_labels, labels)
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        head_dropout, head = self._dense(backbone, num_labels, dropout)
        hidden = backbone(inputs)["sequence_output"]                             # (B, T, H)
        logits = ops.cast(head(head_dropout(hidden)), "float32")                 # (B, T, K)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        self.classifier_dropout, self.classifier = head_dropout, head
        self.num_labels, self.labels, self.dropout = num_labels, labels, dropout

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto",
                **kwargs):
        """Defaults: GPT-1's fine-tuning AdamW (as the other GPT heads), the masked
        cross-entropy over labelled tokens, accuracy weighted by the sample weights."""
        if loss == "auto":
            loss = TokenClassificationLoss()
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy("accuracy")]
        super().compile(optimizer=optimizer, loss=loss, metrics=None if metrics == "auto"
                        else metrics, weighted_metrics=weighted_metrics, **kwargs)

    def get_config(self):
        return {**super().get_config(), "num_labels": self.num_labels, "labels": self.labels,
                "dropout": self.dropout}


@keras.saving.register_keras_serializable("keras_bert_lab")
class GPTSpanQA(_GPTHead):
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
