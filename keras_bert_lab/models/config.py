"""``ModelConfig``: what every backbone's frozen config dataclass shares — built from a size name,
a dict of its fields (a preset's ``config.json``) or itself, and written back as a dict."""

import dataclasses

from keras_bert_lab.errors import ConfigError


class ModelConfig:
    """Mixin of the config dataclasses (``BertConfig``, ``GPTConfig``, ``ElmoConfig``); each
    defines ``from_size`` and may extend ``to_dict``. ``unknown_field_hint`` ends the error for an
    unknown field."""

    unknown_field_hint = ""

    @classmethod
    def from_dict(cls, data):
        """Build from a dict (e.g. a preset's ``config.json``); unknown keys are an error."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"Unknown {cls.__name__} field(s) {unknown}; known fields: "
                              f"{sorted(known)}.{cls.unknown_field_hint}")
        return cls(**data)

    @classmethod
    def coerce(cls, config):
        """Accept the config itself, a dict of its fields, or a size name."""
        if isinstance(config, cls):
            return config
        if isinstance(config, dict):
            return cls.from_dict(config)
        if isinstance(config, str):
            return cls.from_size(config)
        raise ConfigError(f"Expected a {cls.__name__}, a dict of its fields or a size name, got "
                          f"{type(config).__name__}.")

    def to_dict(self):
        return dataclasses.asdict(self)
