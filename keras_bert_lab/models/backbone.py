"""``Backbone``: what every backbone of the lab shares — one config, presets, serialisation.

A backbone is a functional ``keras.Model`` built from one frozen config dataclass
(``config_class``). Subclasses build their graph in ``__init__`` from ``self``'s config and call
``super().__init__(config, inputs=..., outputs=...)``; loading and saving presets, ``get_config``
and ``from_config`` live here once, so BERT, GPT or an ELMo biLM get them without copying.
"""

import keras

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
    def config_from_preset(cls, preset):
        """This class's config from a checked :class:`~keras_bert_lab.presets.format.Preset`."""
        if preset.backbone_class != cls.__name__:
            raise PresetError(f"Preset {preset.directory} holds a {preset.backbone_class}, not a "
                              f"{cls.__name__}; load it with {preset.backbone_class}.from_preset.")
        try:
            return cls.config_class.from_dict(preset.config)
        except (TypeError, ConfigError) as error:
            raise PresetError(f"{preset.directory / preset_format.CONFIG_FILE} has no valid "
                              f"{cls.config_class.__name__}: {error}") from None

    @classmethod
    def from_preset(cls, preset, allow_partial=False, dtype=None, verify=True):
        """A backbone from a preset directory or a registered name (``presets.list_presets()``).

        Weights are checked by name and shape (strict unless ``allow_partial=True``); file
        checksums are verified unless ``verify=False``. See :mod:`keras_bert_lab.presets`.
        """
        preset = registry.read_preset(preset, verify=verify)
        backbone = cls(cls.config_from_preset(preset), dtype=dtype)
        load_weights(backbone, preset.weights_path, allow_partial=allow_partial)
        backbone.preset_info = preset.info()
        return backbone

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
