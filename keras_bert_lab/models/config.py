"""``ModelConfig``: what every backbone's frozen config dataclass shares — built from a size name,
a dict of its fields (a preset's ``config.json``) or itself, and written back as a dict."""

import dataclasses

from keras_bert_lab.errors import ConfigError, renamed


class _RenamedFields(type):
    """Lets ``BertConfig(vocab_size=...)`` (an old field name) build the config, with a warning."""

    def __call__(cls, *args, **fields):
        return super().__call__(*args, **renamed(fields, warn=True))


class ModelConfig(metaclass=_RenamedFields):
    """Mixin of the config dataclasses (``BertConfig``, ``GPTConfig``, ``ElmoConfig``,
    ``AwdLstmConfig``); each may extend ``to_dict``. ``sizes`` maps a size name to the values of
    ``size_fields`` (see :meth:`from_size`; ``label`` names the model in its error).
    ``unknown_field_hint`` ends the error for an unknown field; ``free_fields`` are those a model
    may change from its preset's config (see :meth:`check_matches`)."""

    label = "model"
    sizes = {}
    size_fields = ()
    unknown_field_hint = ""
    free_fields = ()

    @classmethod
    def from_size(cls, name, **overrides):
        """The named size (one of ``sizes``), with any field overridden."""
        if name not in cls.sizes:
            raise ConfigError(f"Unknown {cls.label} size {name!r}; choose one of "
                              f"{list(cls.sizes)}.")
        overrides = renamed(overrides, warn=True)
        return cls(**{**dict(zip(cls.size_fields, cls.sizes[name])), **overrides})

    @classmethod
    def from_dict(cls, data):
        """Build from a dict (e.g. a preset's ``config.json``); unknown keys are an error, old
        field names (:data:`keras_bert_lab.errors.RENAMED`) are read as the new ones."""
        data = renamed(data, warn=False)
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

    def check_matches(self, stored, where="the preset"):
        """Raise ``ConfigError`` unless this config agrees with ``stored`` (the config, or its
        dict, that a preset's weights were trained with) in every field but ``free_fields``.

        A preset's weights compute what they learned only in the architecture they were trained
        in: a model built with another config would fail to load them with a list of tensors, or
        worse, load them and compute something else (e.g. rotary positions over weights trained
        with a learned table, with the table dropped). The error names each differing field with
        both values. A field that an older preset's config lacks takes its default.
        """
        if not isinstance(stored, type(self)):
            stored = type(self).from_dict(stored)
        free = [name for name in self.free_fields if name in stored.free_fields]
        differing = [(f.name, getattr(self, f.name), getattr(stored, f.name))
                     for f in dataclasses.fields(self) if f.name not in free
                     and getattr(self, f.name) != getattr(stored, f.name)]
        if differing:
            listed = "; ".join(f"{name}={mine!r} here but {theirs!r} there"
                               for name, mine, theirs in differing)
            fix = ", ".join(f"{name}={theirs!r}" for name, _, theirs in differing)
            raise ConfigError(
                f"{type(self).__name__} does not match the config of {where}: {listed}. Its "
                f"weights need {fix}; only {free} may differ.")


class TransformerConfig(ModelConfig):
    """:class:`ModelConfig` of a Transformer (``hidden_size`` split over ``num_heads``)."""

    @property
    def head_size(self):
        """Width ``D`` of one attention head."""
        return self.hidden_size // self.num_heads
