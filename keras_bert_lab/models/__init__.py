"""The model families, one folder each (``models/<family>/``), over what every backbone shares.

- :mod:`~keras_bert_lab.models.backbone` (``Backbone``: presets, serialisation, input checks,
  selective outputs) and :mod:`~keras_bert_lab.models.config` (``ModelConfig``: named sizes,
  dict round trips, the check against a preset's config) — the shared floor;
- :mod:`~keras_bert_lab.models.bert`, :mod:`~keras_bert_lab.models.gpt`,
  :mod:`~keras_bert_lab.models.elmo`, :mod:`~keras_bert_lab.models.awd_lstm`,
  :mod:`~keras_bert_lab.models.word2vec` — the families, each declared once in
  :mod:`keras_bert_lab.families`. A family imports the shared floors, never another family.
"""
