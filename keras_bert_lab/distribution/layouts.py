"""Layout maps: which weights of a backbone are split across the ``model`` axis of a device mesh.

Tensor parallelism as in Megatron-LM (Shoeybi et al. 2019, §3): in each block the query/key/value
projection is split by whole heads and the attention-output projection by the same heads (its
rows), so attention runs on each device's heads with no communication until the output sum; the
feed-forward's first kernel is split by columns and its second by rows, so the GELU in between
needs no communication either. Each sub-layer then ends in one all-reduce, which XLA inserts from
the shardings alone. Embedding tables are split along the hidden axis; LayerNorms, biases of the
row-split kernels, the pooler and every task head are replicated.

A rule is a regular expression matched (``re.fullmatch``) against ``variable.path`` — e.g.
``encoder_layer_0/attention/qkv/kernel`` — and the mesh axis each dimension is split over
(``None``: kept whole). Keras replicates a variable that no rule matches, silently: a misspelt rule
leaves the model whole on every device until it runs out of memory (keras-hub #2806). So
:func:`layout_map` checks its map against the model (:func:`check_layout`): every rule must match a
variable, and every large kernel or table must be matched by a rule — replicated on purpose, or
split.

Shapes: ``V`` vocabulary, ``P`` positions, ``H`` hidden, ``N`` heads, ``D`` head size, ``I``
feed-forward width.
"""

import math
import re

import keras

from keras_bert_lab import families
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.config import ModelConfig

BATCH, MODEL = "batch", "model"  # the mesh axis names: data parallel, tensor parallel
REPLICATED = ()  # a layout that keeps every dimension whole, whatever the variable's rank
# Kernels and tables of at least this many entries (2-D and up) must be matched by some rule.
MIN_SHARDED_SIZE = 1 << 14

# Keras also looks a layer's output up in the map as "<layer path>/output"; head rules must not
# match those, or each head's activations would be gathered onto every device.
_NOT_AN_OUTPUT = r"(?<!/output)"


def block_rules(block):
    """Megatron's split of one Transformer block; ``block`` is the regex of its layer names."""
    return [
        (f"{block}/attention/qkv/kernel", (None, None, MODEL, None)),  # (H, 3, N, D): by heads
        (f"{block}/attention/qkv/bias", (None, MODEL, None)),  # (3, N, D)
        (f"{block}/attention/output/kernel", (MODEL, None, None)),  # (N, D, H): by heads (rows)
        (f"{block}/ffn_in/kernel", (None, MODEL)),  # (H, I): by columns
        (f"{block}/ffn_in/bias", (MODEL,)),  # (I,)
        (f"{block}/ffn_out/kernel", (MODEL, None)),  # (I, H): by rows
    ]


def backbone_rules(config):
    """``[(path regex, axes)]`` for the backbone a config describes: its family's rules
    (``models/<family>/layout.py``, found through :mod:`keras_bert_lab.families`)."""
    return families.family_of(config).layout_rules(config)


def _backbone_of(model):
    backbone = model if hasattr(model, "config") else getattr(model, "backbone", None)
    if backbone is None or not hasattr(backbone, "config"):
        raise ConfigError(
            f"layout_map takes a backbone config, a backbone or a task holding one (.backbone), "
            f"got {type(model).__name__}.")
    if not model.weights:
        raise ConfigError(f"{type(model).__name__} has no weights yet; build it (call it once or "
                          "construct it with its inputs) before asking for its layout map.")
    return backbone


def model_axis_size(mesh):
    """How many devices the ``model`` axis of ``mesh`` spans (1 when it has none)."""
    names = list(mesh.axis_names)
    return mesh.shape[names.index(MODEL)] if MODEL in names else 1


def check_divisible(config, model_size):
    """``ConfigError`` unless ``model_size`` divides the heads, hidden and feed-forward widths."""
    for field, why in (("num_heads", "attention is split by whole heads"),
                       ("hidden_size", "embedding tables are split along the hidden axis"),
                       ("intermediate_size", "the feed-forward is split along its width")):
        value = getattr(config, field)
        if value % model_size:
            fits = [m for m in range(1, value + 1) if value % m == 0 and m <= 64]
            raise ConfigError(
                f"The mesh's model axis ({model_size} devices) does not divide "
                f"{type(config).__name__}.{field} ({value}): {why}. Use a model axis among "
                f"{fits}, or a config whose {field} is a multiple of {model_size}.")


def layout_map(model, mesh, check=True):
    """The ``keras.distribution.LayoutMap`` that shards ``model`` over ``mesh`` (Megatron-style).

    Backbone weights follow :func:`backbone_rules`. Given a model, every task head (a top-level
    layer outside the backbone, e.g. ``masked_lm_head``) also gets one rule that replicates it,
    so that :func:`check_layout` can tell a head left whole on purpose from a weight that no rule
    reached. Given a config, the map holds the backbone's rules only: enough to build the model
    under ``ModelParallel`` (heads are replicated by default); check the built model with
    ``check_layout(model, layout_map(model, mesh))``.

    Args:
        model: a backbone config (``BertConfig``, ``GPTConfig``), or a built ``BertBackbone`` /
            ``GPTBackbone`` or task over one (only variable paths and the config are read).
        mesh: a ``keras.distribution.DeviceMesh`` with axes ``("batch", "model")``.
        check: for a model, run :func:`check_layout` on the result (raises ``ConfigError``).

    Example:
    >>> import keras
    >>> from keras_bert_lab.models.bert.backbone import BertBackbone
    >>> mesh = keras.distribution.DeviceMesh((1, 2), ("batch", "model"), devices=["cpu:0", "cpu:1"])
    >>> rules = layout_map(BertBackbone("tiny"), mesh)
    >>> rules["encoder_layer_1/attention/qkv/kernel"].axes
    (None, None, 'model', None)
    """
    given_config = isinstance(model, ModelConfig)
    backbone = None if given_config else _backbone_of(model)
    config = model if given_config else backbone.config
    own_rules = backbone_rules(config)
    check_divisible(config, model_axis_size(mesh))
    rules = keras.distribution.LayoutMap(mesh)
    for pattern, axes in own_rules:
        rules[pattern] = keras.distribution.TensorLayout(axes)
    if given_config:
        return rules
    own = {v.path.split("/")[0] for v in backbone.weights}
    heads = sorted({v.path.split("/")[0] for v in model.weights} - own)
    for head in heads:
        pattern = re.escape(head) + "/.*" + _NOT_AN_OUTPUT
        rules[pattern] = keras.distribution.TensorLayout(REPLICATED)
    if check:
        check_layout(model, rules)
    return rules


def _describe(layout):
    return "replicated" if not any(layout.axes) else str(layout.axes)


def check_layout(model, rules, min_size=MIN_SHARDED_SIZE):
    """Raise ``ConfigError`` unless ``rules`` (a ``LayoutMap``) fits ``model``'s variables.

    Fails when a rule matches no variable (a misspelt or stale path), when a kernel or table with
    ≥ 2 dimensions and ≥ ``min_size`` entries matches no rule (it would be silently replicated),
    when a path matches two rules, when a rule's rank differs from its variable's, or when a mesh
    axis does not divide the dimension it splits. Returns ``{path: axes}`` for every variable
    (``()`` for replicated ones), what the variables' shardings should be.
    """
    paths = {v.path: tuple(v.shape) for v in model.weights}
    unused = [p for p in rules if not any(re.fullmatch(p, path) for path in paths)]
    if unused:
        raise ConfigError(
            f"Layout rule(s) {', '.join(unused)} match no variable of {model.name}, so what "
            f"they should split stays whole on every device. Variable paths look like "
            f"{sorted(paths)[:4]}…; print [v.path for v in model.weights] and fix the pattern.")
    sizes = dict(zip(rules.device_mesh.axis_names, rules.device_mesh.shape))
    expected = {}
    for path, shape in paths.items():
        try:
            layout = rules[path]
        except ValueError as error:  # Keras: a path matching several rules
            raise ConfigError(f"Variable {path}: {error}") from None
        if layout is None:
            if len(shape) >= 2 and math.prod(shape) >= min_size:
                raise ConfigError(
                    f"Variable {path} {shape} matches no layout rule, so it would be replicated "
                    f"on every device. Add a rule that splits it, or one that keeps it whole on "
                    f"purpose (axes {REPLICATED}).")
            expected[path] = REPLICATED
            continue
        axes = tuple(layout.axes)
        if axes and len(axes) != len(shape):
            raise ConfigError(f"Layout rule {_describe(layout)} for {path} has {len(axes)} axes "
                              f"but the variable has shape {shape}.")
        for dim, axis in zip(shape, axes):
            if axis is not None and dim % sizes[axis]:
                raise ConfigError(
                    f"Variable {path} {shape}: dimension {dim} cannot be split over the "
                    f"{sizes[axis]} devices of mesh axis '{axis}'; choose a mesh whose '{axis}' "
                    f"axis divides {dim}.")
        expected[path] = axes
    return expected
