"""Studies: library code behind the tutorials' and benchmarks' measurements of the story.

Each module is a study with an API (settings in, numbers and plots out) that a tutorial
station, a benchmark and a ``kbl`` command may call: :mod:`~.word_sense` (one vector per word
vs. one per use), :mod:`~.word_classify` (static vectors inside a classifier),
:mod:`~.feature_tables` (the BERT paper's feature-based NER table).
"""
