"""Evaluation metrics in NumPy / pure Python, each checked against its reference implementation:
classification (GLUE: accuracy, macro-F1, Pearson, Spearman), SQuAD exact match and F1, and
entity-level NER scores (seqeval)."""
