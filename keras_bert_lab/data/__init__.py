"""Data as it is found: the registry of named data sets and the readers of their formats
(document corpora, labelled CSV/TSV/JSONL, SQuAD JSON, CoNLL columns). Pure Python and NumPy — no
TensorFlow; what turns these into model inputs is :mod:`keras_bert_lab.preprocessing`."""
