"""ULMFiT's fine-tuning techniques as Keras tools for every model of the lab.

Howard & Ruder (2018) fine-tune a pretrained model without making it forget what it learned by
treating its layers unequally, bottom to top: the embeddings hold the most general features, the
task head the most specific. All three techniques work on *layer groups*:

- **layer groups** (:func:`layer_groups`): lists of variables, bottom-up — the embeddings, each
  encoder/decoder block (``encoder_layer_i`` / ``decoder_layer_i``), then everything else (the
  pooler and the task head) as the top group. A model with a ``layer_groups()`` method (the
  AWD-LSTM tasks) defines its own.
- **discriminative fine-tuning** (§3.2, eq. 2): group ``l`` learns at ``η_l`` and the group below
  at ``η_{l-1} = η_l / 2.6`` — :func:`group_learning_rate_factors`, used by
  :func:`keras_bert_lab.training.optimizers.adamw` as ``layer_decay=1/2.6`` (ELECTRA's layer-wise
  decay is the same rule with 0.8–0.9).
- **slanted triangular learning rates** (§3.2, eq. 3):
  :class:`keras_bert_lab.training.schedules.SlantedTriangular`.
- **gradual unfreezing** (§3.3): first only the top group trains; each epoch one more group below
  it joins — :class:`GradualUnfreezing`. Freezing sets ``variable.trainable``, so frozen groups
  cost no gradient computation and take no update (nor weight decay). The optimizer keeps each
  variable's slots (Adam's moments) and its step counter across the change
  (:func:`rebuild_optimizer`).
"""

import re

import keras

from keras_bert_lab.errors import ConfigError

_BLOCK = re.compile(r"(?:^|/)(?:encoder|decoder)_layer_(\d+)/")
_EMBEDDINGS = re.compile(r"(?:^|/)embeddings/")


def _variables(group):
    out = []
    for item in group:
        out.extend([item] if isinstance(item, keras.Variable) else item.weights)
    return out


def layer_groups(model):
    """The model's variables as layer groups, bottom-up (see the module docstring).

    Returns a list of lists of ``keras.Variable`` covering every weight of ``model`` (trainable
    or not, ``model.weights``: no RNG seeds or metric state) exactly once. A model may define ``layer_groups()`` (lists of layers or variables,
    bottom-up); its groups must cover all its variables.

    Example:
    >>> from keras_bert_lab.models.bert.backbone import BertBackbone
    >>> from keras_bert_lab.models.bert.classifier import BertClassifier
    >>> groups = layer_groups(BertClassifier(BertBackbone("tiny"), num_classes=2))
    >>> len(groups)                     # embeddings, 2 blocks, pooler + classifier
    4
    >>> [v.path for v in groups[-1]]
    ['pooler/kernel', 'pooler/bias', 'classifier/kernel', 'classifier/bias']
    """
    variables = list(model.weights)
    if hasattr(model, "layer_groups"):
        groups = [_variables(group) for group in model.layer_groups()]
    else:
        embeddings, blocks, top = [], {}, []
        for variable in variables:
            block = _BLOCK.search(variable.path)
            if block:
                blocks.setdefault(int(block.group(1)), []).append(variable)
            elif _EMBEDDINGS.search(variable.path):
                embeddings.append(variable)
            else:
                top.append(variable)
        groups = [embeddings] + [blocks[i] for i in sorted(blocks)] + [top]
    groups = [g for g in groups if g]
    listed = [id(v) for g in groups for v in g]
    missing = [v.path for v in variables if id(v) not in set(listed)]
    if missing or len(listed) != len(set(listed)):
        raise ConfigError(f"The layer groups of {model.name} do not cover each variable exactly "
                          f"once (missing: {missing[:5]}); fix its layer_groups().")
    return groups


def group_learning_rate_factors(model, factor):
    """``{variable path: learning-rate factor}``: the top group 1, each group below ``factor``
    times the one above (ULMFiT: ``factor = 1/2.6``).

    Example:
    >>> from keras_bert_lab.models.bert.backbone import BertBackbone
    >>> factors = group_learning_rate_factors(BertBackbone("tiny"), 0.5)
    >>> [factors[p] for p in ("embeddings/position_embedding", "encoder_layer_0/ffn_in/kernel",
    ...                       "encoder_layer_1/ffn_in/kernel", "pooler/kernel")]
    [0.125, 0.25, 0.5, 1.0]
    """
    if not 0.0 < factor <= 1.0:
        raise ConfigError(f"A learning-rate factor between layer groups of {factor} is out of "
                          "range; use one in (0, 1] (ULMFiT: 1/2.6 ≈ 0.385; 1 = off).")
    groups = layer_groups(model)
    return {v.path: factor ** (len(groups) - 1 - depth)
            for depth, group in enumerate(groups) for v in group}


def freeze_below(model, trainable_groups, groups=None):
    """Make only the top ``trainable_groups`` layer groups trainable; returns the groups.

    Variables that were created non-trainable (BatchNormalization's moving statistics, say) stay
    non-trainable whatever the group.
    """
    groups = groups if groups is not None else layer_groups(model)
    if not 1 <= trainable_groups <= len(groups):
        raise ConfigError(f"Cannot train the top {trainable_groups} layer groups of "
                          f"{model.name}: it has {len(groups)}; use 1 … {len(groups)}.")
    if not hasattr(model, "_kbl_trainable"):
        model._kbl_trainable = {id(v): v.trainable for g in groups for v in g}
    for depth, group in enumerate(groups):
        for variable in group:
            variable.trainable = (depth >= len(groups) - trainable_groups
                                  and model._kbl_trainable[id(variable)])
    return groups


def rebuild_optimizer(model):
    """Give ``model`` a fresh optimizer of the same configuration for its current trainable set,
    carrying over the step counter and each still-trainable variable's slots.

    Keras optimizers are built once for a fixed list of variables (and JAX's stateless update
    requires exactly that list), so a change of the trainable set needs a new one. Slots are
    matched by name (Keras names them after their variable's path). Call it between ``fit``
    epochs; :class:`GradualUnfreezing` does.
    """
    old = model.optimizer
    if old is None:
        raise ConfigError("Compile the model before changing its trainable layer groups.")
    new = old.__class__.from_config(old.get_config())
    if hasattr(old, "_exclude_from_weight_decay"):   # AdamW's exclusions are not in its config
        new._exclude_from_weight_decay = set(getattr(old, "_exclude_from_weight_decay") or ())
        new._exclude_from_weight_decay_pattern = getattr(
            old, "_exclude_from_weight_decay_pattern", None)
    new.build(model.trainable_variables)
    if old.built:
        values = {v.path: v for v in old.variables}
        for variable in new.variables:
            if variable.path in values and variable.shape == values[variable.path].shape:
                variable.assign(values[variable.path])
    model.optimizer = new
    model.make_train_function(force=True)   # the compiled step held the old set and optimizer
    return new


class GradualUnfreezing(keras.callbacks.Callback):
    """Train only the top layer group in the first epoch, one more group below each epoch after.

    ULMFiT §3.3: "We first unfreeze the last layer and fine-tune all unfrozen layers for one
    epoch. We then unfreeze the next lower frozen layer and repeat, until we fine-tune all
    layers". In epoch ``e`` (0-based) the top ``min(start + e // every, len(groups))`` groups
    train. Works in one ``model.fit(epochs=N)`` and across ``fit`` calls with ``initial_epoch``,
    on every backend.

    Args:
        start: groups trainable in the first epoch (1: the head only).
        every: epochs between two unfreezing steps.
        groups: layer groups (default :func:`layer_groups` of the model).

    Example:
    >>> import numpy as np, keras
    >>> from keras_bert_lab.models.bert.backbone import BertBackbone
    >>> from keras_bert_lab.models.bert.classifier import BertClassifier
    >>> model = BertClassifier(BertBackbone("tiny"), num_classes=2)
    >>> model.compile(optimizer="adam")
    >>> x = {"token_ids": np.ones((4, 8), "int32"), "segment_ids": np.zeros((4, 8), "int32"),
    ...      "padding_mask": np.ones((4, 8), "int32")}
    >>> unfreezing = GradualUnfreezing()
    >>> _ = model.fit(x, np.array([0, 1, 0, 1]), epochs=2, verbose=0, callbacks=[unfreezing])
    >>> unfreezing.trainable_counts   # trainable variables in epoch 1 and 2
    [4, 16]
    """

    def __init__(self, start=1, every=1, groups=None):
        super().__init__()
        if start < 1 or every < 1:
            raise ConfigError(f"GradualUnfreezing(start={start}, every={every}): both must be "
                              "≥ 1.")
        self.start, self.every, self.groups = int(start), int(every), groups
        self.trainable_counts = []
        self._current = None

    def trainable_groups(self, epoch, num_groups):
        """Groups trainable in ``epoch`` (0-based) out of ``num_groups``."""
        return min(self.start + epoch // self.every, num_groups)

    def on_epoch_begin(self, epoch, logs=None):
        groups = self.groups if self.groups is not None else layer_groups(self.model)
        self.groups = groups
        if self.start > len(groups):
            raise ConfigError(f"GradualUnfreezing(start={self.start}) asks for more layer groups "
                              f"than {self.model.name} has ({len(groups)}).")
        wanted = self.trainable_groups(epoch, len(groups))
        if wanted != self._current:
            freeze_below(self.model, wanted, groups)
            rebuild_optimizer(self.model)
            self._current = wanted
        self.trainable_counts.append(len(self.model.trainable_variables))
