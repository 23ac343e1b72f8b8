"""``Task``: what every BERT task model shares — a backbone, presets, serialisation, a tokenizer.

A task is a functional ``keras.Model`` built as ``backbone → head``. Subclasses build their
graph in ``__init__`` and call ``super().__init__(backbone, inputs=..., outputs=...)``; they list
their own constructor arguments in ``get_config`` as ``{**super().get_config(), ...}``. The rest
— ``from_preset`` (backbone and, when the preset was saved from the same task, its head),
``save_to_preset``, ``from_config`` and the preset's tokenizer — lives here once.
"""

import keras
import numpy as np

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.bert import INPUT_NAMES


def backbone_inputs():
    """``{name: keras.Input}`` for the backbone's three int32 inputs, each ``(B, T)``."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


class Task(keras.Model):
    """Base class of the task models (see the module docstring).

    Args:
        backbone: a ``BertBackbone``.
        inputs, outputs, kwargs: passed to ``keras.Model`` (the functional constructor).
    """

    # Tasks whose outputs have a token axis (B, T, ...) set the value that pads them back to the
    # input length in `predict_packed`; None: no token axis.
    token_output_fill = None

    def __init__(self, backbone, *, inputs, outputs, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.backbone = backbone
        self._tokenizer = None

    @classmethod
    def from_preset(cls, preset, allow_partial=False, dtype=None, verify=True, **kwargs):
        """This task on a preset's backbone (a name or a directory).

        The head is loaded too when the preset was saved from this task class with the same head
        shapes; otherwise it starts freshly initialised (fine-tuning from a pretrained backbone).
        ``kwargs`` are the task's constructor arguments (e.g. ``num_classes``); a preset saved from
        this class supplies the defaults.
        """
        from keras_bert_lab import presets

        return presets.load_task(cls, preset, allow_partial=allow_partial, dtype=dtype,
                                 verify=verify, **kwargs)

    def save_to_preset(self, directory, **kwargs):
        """Save backbone and head as a preset; ``kwargs`` as in ``presets.save_preset``."""
        from keras_bert_lab import presets

        return presets.save_preset(self, directory, **kwargs)

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

    @property
    def tokenizer(self):
        """The ``WordPieceTokenizer`` of the preset this model was loaded from (or the one set)."""
        if self._tokenizer is None:
            info = getattr(self.backbone, "preset_info", None)
            if info is None:
                raise ConfigError(f"This {type(self).__name__} was not loaded from a preset; set "
                                 "`model.tokenizer = WordPieceTokenizer(vocab)` first.")
            from keras_bert_lab.text.tokenizer import WordPieceTokenizer

            options = {k: v for k, v in info.tokenizer.items()
                       if k in ("lowercase", "strip_accents", "chinese_chars")}
            self._tokenizer = WordPieceTokenizer(list(info.vocabulary), **options)
        return self._tokenizer

    def __setattr__(self, name, value):
        # `model.tokenizer = ...` goes straight to the private slot: TensorFlow's attribute
        # tracking would first read the property, which raises while no tokenizer is set.
        if name == "tokenizer":
            name = "_tokenizer"
        super().__setattr__(name, value)

    def get_config(self):
        return {"backbone": keras.saving.serialize_keras_object(self.backbone),
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)
