"""``Backbone``: what every backbone of the lab shares — one config, presets, serialisation.

A backbone is a functional ``keras.Model`` built from one frozen config dataclass
(``config_class``). Subclasses build their graph in ``__init__`` from ``self``'s config and call
``super().__init__(config, inputs=..., outputs=...)``; loading and saving presets, ``get_config``
and ``from_config`` live here once, so BERT, GPT or an ELMo biLM get them without copying.
"""

import keras
import numpy as np
from keras import ops

from keras_bert_lab import families
from keras_bert_lab.errors import ConfigError, InputError, PresetError
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
    # Token-axis inputs (B, T) that __call__ checks and passes on (validate_inputs); an empty
    # tuple: the subclass checks its own inputs.
    input_names = ()
    # Inputs that hold ids, each with the config field of its range [0, n).
    id_ranges = {"token_ids": "vocabulary_size"}

    def __init__(self, config, *, inputs, outputs, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.config = config

    def __call__(self, inputs, *args, **kwargs):
        if not self.input_names:
            return super().__call__(inputs, *args, **kwargs)
        self.validate_inputs(inputs)  # before Keras' own input checks, for clearer messages
        # Extra keys (e.g. a task's mask_positions) are dropped: Keras would otherwise match a dict
        # to the inputs by sorted position, not by name.
        return super().__call__({name: inputs[name] for name in self.input_names}, *args,
                                **kwargs)

    def max_length_error(self, length):
        """The message when a sequence of ``length`` tokens is too long for this backbone (an
        :meth:`validate_inputs` hook), or ``None``. Default: the learned position table."""
        limit = getattr(self.config, "max_positions", None)
        if limit is None or length <= limit:
            return None
        return (f"Sequence length {length} exceeds the position table ({limit} positions); "
                f"truncate to at most {limit} tokens (the packer's sequence_length) or use a "
                "config with larger max_positions.")

    def validate_inputs(self, inputs):
        """Raise ``InputError`` naming the problem and the fix: not a dict of
        :attr:`input_names`, a non-integer id input, not ``(batch, tokens)``, shapes that
        disagree, a sequence too long (:meth:`max_length_error`), an id outside its range
        (:attr:`id_ranges`; checked when the inputs hold values, i.e. eagerly)."""
        name, names = type(self).__name__, list(self.input_names)
        if not isinstance(inputs, dict):
            example = ", ".join(f"'{n}': ..." for n in names)
            raise InputError(f"{name} takes a dict with keys {names}, got "
                             f"{type(inputs).__name__}; build it with the family's packer, e.g. "
                             f"{{{example}}}.")
        missing = [n for n in names if n not in inputs]
        if missing:
            raise InputError(f"{name} inputs lack {missing}; expected keys {names} (got "
                             f"{sorted(inputs)}).")
        shape = None
        for key in names:
            x = inputs[key] if hasattr(inputs[key], "dtype") else np.asarray(inputs[key])
            dtype = keras.backend.standardize_dtype(x.dtype)
            if key in self.id_ranges and "int" not in dtype:
                raise InputError(f"{name} input '{key}' must hold integer ids (int32), got dtype "
                                 f"{dtype}; cast it with keras.ops.cast(x, 'int32').")
            x_shape = tuple(ops.shape(x))
            if len(x_shape) != 2:
                raise InputError(f"{name} input '{key}' must have shape (batch, tokens), got "
                                 f"{x_shape}.")
            static = tuple(d if isinstance(d, int) else None for d in x_shape)
            if shape is not None and any(a is not None and b is not None and a != b
                                         for a, b in zip(shape, static)):
                raise InputError(f"{name} inputs disagree in shape: '{names[0]}' is {shape} but "
                                 f"'{key}' is {static}; pack them together.")
            shape = shape or static
        message = shape[1] is not None and self.max_length_error(shape[1])
        if message:
            raise InputError(message)
        for key, field in self.id_ranges.items():
            values, upper = concrete_values(inputs[key]), getattr(self.config, field)
            if values is not None and values.size and (values.min() < 0 or values.max() >= upper):
                bad = values.max() if values.max() >= upper else values.min()
                raise InputError(f"{name} input '{key}' holds id {int(bad)} outside [0, {upper}); "
                                 "check that the tokenizer's vocabulary (special tokens included) "
                                 f"matches the model (vocabulary_size={self.config.vocabulary_size}).")

    @classmethod
    def family(cls):
        """This backbone's :class:`~keras_bert_lab.families.Family` (the folder it lives in)."""
        return families.family_of(cls)

    @classmethod
    def config_from_preset(cls, preset, config=None):
        """This class's config from a checked :class:`~keras_bert_lab.presets.format.Preset`.

        ``config`` (optional) replaces it: a config, or a dict of the fields to change. Only the
        config class's ``free_fields`` (e.g. dropout rates) may differ from the preset's; any
        other difference raises ``ConfigError`` naming the fields (see
        :meth:`~keras_bert_lab.models.config.ModelConfig.check_matches`). A preset of another
        family is a ``PresetError`` naming both and the class that loads it.
        """
        families.require(preset, cls, f"{cls.__name__} loads {cls.family().name} presets")
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
        Called on ``Backbone`` itself, it loads the backbone of whatever family the preset
        records (``Backbone.from_preset("minilm_l6_en_uncased")`` is a ``BertBackbone``). See
        :mod:`keras_bert_lab.presets`.
        """
        preset = registry.read_preset(preset, verify=verify)
        if cls is Backbone:
            cls = preset.family.backbone_class
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
        T = 128 (``benchmarks/results/speed.md``). Hugging Face's ``output_hidden_states=False``.
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


def concrete_values(x):
    """``x`` as a NumPy array when it holds values (eager), else ``None`` (symbolic or traced)."""
    if isinstance(x, (np.ndarray, list, tuple)):
        return np.asarray(x)
    if isinstance(x, keras.KerasTensor):
        return None
    try:
        return ops.convert_to_numpy(x)
    except Exception:  # a tf graph tensor or a jax tracer: no values to check.
        return None
