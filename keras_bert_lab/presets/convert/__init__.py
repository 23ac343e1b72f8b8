"""Converters between preset directories and the checkpoint formats of other projects.

Each reads or writes files with NumPy (TensorFlow only to read a Google TF1 checkpoint, keras-hub
only for its own presets, both imported when used) and maps tensors by name through one table per
format, so that import and export cannot drift apart:

- :mod:`~.huggingface` — the Hugging Face BERT tensor table; :mod:`~.hf_checkpoint` — its
  directories (``config.json``, safetensors or ``pytorch_model.bin``, ``vocab.txt``, a
  sentence-transformers pooling recipe), both ways;
- :mod:`~.modernbert` — Hugging Face ``ModernBert*`` configs and state dicts (every layer
  global) and a ``BertBackbone`` with the modern options on, both ways;
- :mod:`~.google` — google-research/bert's TF1 checkpoints, in;
- :mod:`~.keras_hub` — keras-hub ``BertBackbone`` presets, both ways;
- :mod:`~.openai_gpt` — GPT-1: Hugging Face ``OpenAIGPT*`` state dicts and directories, both
  ways, and OpenAI's original release (``params_shapes.json`` + ``params_*.npy``), in;
- :mod:`~.elmo` — the original ELMo biLM (``options.json`` + ``lm_weights.hdf5``), both ways;
- :mod:`~.tensor_files` — safetensors and PyTorch ``.bin`` files, read and written with checks.
"""
