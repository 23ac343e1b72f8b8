"""``Task``: what every task model shares — a backbone, presets, serialisation, batch prediction.

A task is a functional ``keras.Model`` built as ``backbone → head``: model inputs in, logits out.
Turning text into those inputs is the job of a preprocessor (:mod:`keras_bert_lab.preprocessing`),
which a task never imports. Subclasses build their graph in ``__init__`` and call
``super().__init__(backbone, inputs=..., outputs=...)``; they list their own constructor arguments
in ``get_config`` as ``{**super().get_config(), ...}``. The rest — ``from_preset`` (backbone and,
when the preset was saved from the same task, its head), ``save_to_preset``, ``from_config`` and
``predict_packed`` — lives here once.
"""

import inspect
import warnings

import keras
import numpy as np

from keras_bert_lab import families
from keras_bert_lab.errors import PresetError
from keras_bert_lab.models.backbone import check_array_inputs
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets import registry
from keras_bert_lab.presets.weights import load_weights


def backbone_inputs(backbone):
    """``{name: keras.Input}`` for the backbone's int32 inputs, each ``(B, T)``."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in backbone.input_names}


class Task(keras.Model):
    """Base class of the task models (see the module docstring).

    Args:
        backbone: the backbone (of the task's family: :meth:`family`).
        inputs, outputs, kwargs: passed to ``keras.Model`` (the functional constructor).
    """

    description = None  # how messages name the task ("a token classifier (…)"); None: its class
    # Tasks whose outputs have a token axis (B, T, ...) set the value that pads them back to the
    # input length in `predict_packed`; None: no token axis.
    token_output_fill = None

    def __init__(self, backbone, *, inputs, outputs, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.backbone = backbone

    @classmethod
    def family(cls):
        """This task's :class:`~keras_bert_lab.families.Family` (the folder it lives in), whose
        backbone it is built on."""
        return families.family_of(cls)

    @classmethod
    def check_backbone(cls, backbone):
        """Raise ``ConfigError`` for a backbone this task cannot be built on (called first by the
        heads that families share; ELECTRA's refuse a generator). Here: any backbone."""

    @classmethod
    def preset_defaults(cls, preset):
        """Constructor defaults a preset supplies beyond a stored task config (none here)."""
        return {}

    @classmethod
    def from_preset(cls, preset, allow_partial=False, dtype=None, verify=True, config=None,
                    **kwargs):
        """This task on a preset's backbone (a name or a directory).

        The head is loaded too when the preset was saved from this task class with the same head
        shapes; otherwise it starts freshly initialised (fine-tuning from a pretrained backbone).
        ``kwargs`` are the task's constructor arguments (e.g. ``num_classes``); a preset saved from
        this class supplies the defaults. ``config`` changes the backbone's config where the
        weights allow it (``Backbone.config_from_preset``), e.g. ``{"dropout": 0.2}``.
        Called on ``Task`` itself, it loads the task the preset was saved from, of whatever
        family (``Task.from_preset("out/finetune-classify/preset")``).
        """
        preset = registry.read_preset(preset, verify=verify)
        if cls is Task:
            family, stored = preset.family, (preset.task or {}).get("class_name")
            if stored is None:
                raise PresetError(f"Preset {preset.directory} holds a {preset.backbone_class} "
                                  "without a task head; load it with Backbone.from_preset, or "
                                  "with a task class to start a new head.")
            return family.task_named(stored).from_preset(
                preset, allow_partial=allow_partial, dtype=dtype, verify=verify, config=config,
                **kwargs)
        backbone_class = cls.family().backbone_class
        backbone = backbone_class(backbone_class.config_from_preset(preset, config), dtype=dtype)
        stored = preset.task or {}
        same_task = stored.get("class_name") == cls.__name__
        defaults = cls._known_arguments(stored.get("config", {})) if same_task \
            else cls.preset_defaults(preset)
        model = cls(backbone, **{**defaults, **kwargs})
        load_weights(model, preset.weights_path, allow_partial=allow_partial,
                                   load_heads=same_task)
        model.preset_info = backbone.preset_info = preset.info()
        return model

    @classmethod
    def _known_arguments(cls, stored):
        """The stored task arguments this class still takes (a preset written by an older
        version may hold one that was since removed; it is dropped with a warning)."""
        accepted = inspect.signature(cls.__init__).parameters
        dropped = sorted(set(stored) - set(accepted))
        if dropped:
            warnings.warn(f"{cls.__name__} no longer takes {dropped}; the preset's values are "
                          "ignored.", stacklevel=3)
        return {k: v for k, v in stored.items() if k in accepted}

    def save_to_preset(self, directory, **kwargs):
        """Save backbone and head as a preset; ``kwargs`` as in ``presets.save_preset``."""
        return preset_format.save_preset(self, directory, **kwargs)

    def predict(self, x, *args, **kwargs):
        check_array_inputs(self.backbone, x)
        return super().predict(x, *args, **kwargs)

    def predict_on_batch(self, x):
        check_array_inputs(self.backbone, x)
        return super().predict_on_batch(x)

    def predict_packed(self, features, batch_size=32, length_multiple=16):
        """Outputs (NumPy) for packed features, batch by batch, each cut to its longest row.

        ``features``: dict of NumPy arrays ``(N, L)`` (or ``(N, C, L)`` for multiple choice) with
        a ``padding_mask``. Each batch keeps ``max(real tokens)`` positions rounded up to
        ``length_multiple``: padding changes no output, and short texts padded to ``L`` stop
        paying for ``L`` (few distinct lengths keep compilations few). Token-level outputs come
        back padded to ``L`` with ``token_output_fill``.
        """
        mask = np.asarray(features["padding_mask"])
        n, full = len(mask), mask.shape[-1]
        lengths = mask.reshape(n, -1, full).sum(-1).max(-1)  # (N,) longest choice
        parts = []
        for start in range(0, n, batch_size):
            longest = int(lengths[start:start + batch_size].max())
            length = min(full, max(1, -(-longest // length_multiple) * length_multiple))
            batch = {k: np.asarray(v[start:start + batch_size])[..., :length]
                     for k, v in features.items()}
            out = keras.tree.map_structure(keras.ops.convert_to_numpy, self.predict_on_batch(batch))
            if self.token_output_fill is not None:
                out = keras.tree.map_structure(lambda v: np.pad(
                    v, [(0, 0), (0, full - length)] + [(0, 0)] * (v.ndim - 2),
                    constant_values=self.token_output_fill), out)
            parts.append(out)
        if not parts:
            return keras.tree.map_structure(
                lambda spec: np.zeros([0] + [full if d is None else d for d in spec.shape[1:]],
                                      spec.dtype), self.output)
        return keras.tree.map_structure(lambda *rows: np.concatenate(rows), *parts)

    def get_config(self):
        return {"backbone": keras.saving.serialize_keras_object(self.backbone),
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)
