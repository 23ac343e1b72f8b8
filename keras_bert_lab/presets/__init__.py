"""Presets: models on disk, by directory or by name, and the converters from other formats.

Three parts, in the order they depend on each other:

- :mod:`~keras_bert_lab.presets.format` — the preset directory (config, checksummed metadata),
  read and written atomically, with its :mod:`~keras_bert_lab.presets.weights` (by name) and
  :mod:`~keras_bert_lab.presets.vocabulary` files;
- :mod:`~keras_bert_lab.presets.convert` — Hugging Face, Google TF1 and keras-hub checkpoints to
  and from preset directories, with NumPy (no model is built);
- :mod:`~keras_bert_lab.presets.registry` — named presets that build from registry packages.

Models and tasks load themselves with ``from_preset`` on top of these; nothing here imports a
model class.
"""

from keras_bert_lab.presets.format import Preset, PresetInfo, save_preset, write_preset
from keras_bert_lab.presets.registry import (build_preset, list_presets, named_presets,
                                             preset_home, read_preset, resolve_preset)

__all__ = ["Preset", "PresetInfo", "build_preset", "list_presets", "preset_home", "read_preset",
           "named_presets", "resolve_preset", "save_preset", "write_preset"]
