"""Feature extraction: frozen per-word layers of any backbone, cached once, for small taggers.

The feature-based use of a pretrained model — ELMo's, and the BERT paper's §5.4 study — freezes
the model and feeds its layers to a small task model. :mod:`~keras_bert_lab.features.extract`
turns sentences into per-word layer stacks (static vectors; each family's own source — BERT
pieces pooled to words, ELMo's layers — lives in its folder and is named by the family registry),
:mod:`~keras_bert_lab.features.cache` stores them on disk and batches them for
:class:`~keras_bert_lab.tasks.feature_tagger.FeatureTagger`, whose combinations (a layer, the sum
or concatenation of the last four, a learned scalar mix) are the rows of the paper's table.

Example:
>>> from keras_bert_lab.vectors import WordVectors
>>> source = StaticWordFeatures(WordVectors(["stick"], [[0.5, -0.5]]))
>>> source([["stick", "stick"]])[0].shape     # (words, layers, width)
(2, 1, 2)
"""

from keras_bert_lab.features.cache import (FeatureCache, OnTheFly, TaggerBatches,  # noqa: F401
                                           write_cache)
from keras_bert_lab.features.extract import StaticWordFeatures  # noqa: F401
