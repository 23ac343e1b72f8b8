"""``Backbone``: what every backbone of the lab shares — one config, presets, serialisation.

A backbone is a functional ``keras.Model`` built from one frozen config dataclass
(``config_class``). Subclasses build their graph in ``__init__`` from ``self``'s config and call
``super().__init__(config, inputs=..., outputs=...)``; loading and saving presets, ``get_config``
and ``from_config`` live here once, so BERT, GPT or an ELMo biLM get them without copying.
"""

import keras
import numpy as np

from keras_bert_lab.errors import ConfigError, PresetError
from keras_bert_lab.presets import format as preset_format
from keras_bert_lab.presets import registry
from keras_bert_lab.presets.weights import load_weights


class Backbone(keras.Model):
    """Base class of the backbones (see the module docstring).

    Args:
        config: the subclass's config (already coerced).
        inputs, outputs, kwargs: passed to ``keras.Model`` (the functional constructor).
    """

    config_class = None  # set by each subclass: the frozen dataclass of its hyper-parameters

    def __init__(self, config, *, inputs, outputs, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.config = config

    @classmethod
    def config_from_preset(cls, preset, config=None):
        """This class's config from a checked :class:`~keras_bert_lab.presets.format.Preset`.

        ``config`` (optional) replaces it: a config, or a dict of the fields to change. Only the
        config class's ``free_fields`` (e.g. dropout rates) may differ from the preset's; any
        other difference raises ``ConfigError`` naming the fields (see
        :meth:`~keras_bert_lab.models.config.ModelConfig.check_matches`).
        """
        if preset.backbone_class != cls.__name__:
            raise PresetError(f"Preset {preset.directory} holds a {preset.backbone_class}, not a "
                              f"{cls.__name__}; load it with {preset.backbone_class}.from_preset.")
        try:
            stored = cls.config_class.from_dict(preset.config)
        except (TypeError, ConfigError) as error:
            raise PresetError(f"{preset.directory / preset_format.CONFIG_FILE} has no valid "
                              f"{cls.config_class.__name__}: {error}") from None
        if config is None:
            return stored
        if isinstance(config, dict):
            config = cls.config_class.from_dict({**stored.to_dict(), **config})
        config = cls.config_class.coerce(config)
        config.check_matches(stored, where=f"preset {preset.directory}")
        return config

    @classmethod
    def from_preset(cls, preset, allow_partial=False, dtype=None, verify=True, config=None):
        """A backbone from a preset directory or a registered name (``presets.list_presets()``).

        Weights are checked by name and shape (strict unless ``allow_partial=True``); file
        checksums are verified unless ``verify=False``. ``config`` changes the preset's config
        where the weights allow it (see :meth:`config_from_preset`), e.g. ``{"dropout": 0.0}``.
        See :mod:`keras_bert_lab.presets`.
        """
        preset = registry.read_preset(preset, verify=verify)
        backbone = cls(cls.config_from_preset(preset, config), dtype=dtype)
        load_weights(backbone, preset.weights_path, allow_partial=allow_partial)
        backbone.preset_info = preset.info()
        return backbone

    def predict(self, x, *args, outputs=None, **kwargs):
        """``keras.Model.predict``, inputs checked first; ``outputs`` (names) returns only those
        outputs (see :meth:`output_model`), e.g. ``outputs=("sequence_output",
        "pooled_output")`` without BERT's every hidden state."""
        check_array_inputs(self, x)
        if outputs is not None:
            return self.output_model(outputs).predict(x, *args, **kwargs)
        return super().predict(x, *args, **kwargs)

    def predict_on_batch(self, x, outputs=None):
        """``keras.Model.predict_on_batch``, inputs checked first; ``outputs`` as in
        :meth:`predict`."""
        check_array_inputs(self, x)
        if outputs is not None:
            return self.output_model(outputs).predict_on_batch(x)
        return super().predict_on_batch(x)

    def output_model(self, names):
        """A functional model of this backbone's layers (the weights shared) that returns only
        the outputs ``names`` as a dict; built once per set of names.

        What a caller does not ask for is not copied out of the framework: BERT-base returns
        13 hidden states of (B, T, 768) by default, 7-13 % of a ``predict`` call's time at
        T = 128 (``benchmarks/RESULTS.md``). Hugging Face's ``output_hidden_states=False``.
        """
        names = (names,) if isinstance(names, str) else tuple(names)
        available = list(self.output) if isinstance(self.output, dict) else []
        unknown = [n for n in names if n not in available]
        if not names or unknown:
            raise ConfigError(f"outputs={list(names)}: {self.__class__.__name__} has the outputs "
                              f"{available}; name one or more of them.")
        cache = self.__dict__.setdefault("_output_models", {})   # plain dict: not tracked
        if names not in cache:
            cache[names] = keras.Model(self.input, {n: self.output[n] for n in names},
                                       name=f"{self.name}_outputs")
        return cache[names]

    def save_to_preset(self, directory, **kwargs):
        """Save as a preset directory; ``kwargs`` as in :func:`keras_bert_lab.presets.save_preset`."""
        return preset_format.save_preset(self, directory, **kwargs)

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name, "trainable": self.trainable,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "dtype" in config and isinstance(config["dtype"], dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)


def check_array_inputs(backbone, x):
    """Run ``backbone.validate_inputs`` on a dict of NumPy arrays (or lists) before Keras'
    ``predict`` machinery, which traces the model and so sees no values: an out-of-range id would
    otherwise fail deep inside TensorFlow, be clamped silently by JAX's gather, or come back from
    PyTorch wrapped in Keras' multi-line error. Extra leading axes (a task's choices) are folded
    into the batch; tensors and datasets are left to the model's own checks."""
    spec = backbone.input
    if not (isinstance(x, dict) and isinstance(spec, dict)
            and hasattr(backbone, "validate_inputs")
            and all(isinstance(x.get(name), (np.ndarray, list)) for name in spec)):
        return
    arrays = {}
    for name, tensor in spec.items():
        value = np.asarray(x[name])
        rank = len(tensor.shape)
        if value.ndim > rank:  # (N, C, L) choices → (N·C, L)
            value = value.reshape((-1,) + value.shape[value.ndim - rank + 1:])
        arrays[name] = value
    backbone.validate_inputs(arrays)
