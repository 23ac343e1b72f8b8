"""The word2vec family (Mikolov et al. 2013): static word vectors, skip-gram or CBOW.

========================  ==================================================================
module                    what it holds
========================  ==================================================================
``model``                 :class:`Word2Vec`: two tables and the negative-sampling loss
``pipeline``              the ``tf.data`` examples: subsampling, dynamic windows, noise words
``pretrain``              the recipe behind ``kbl word2vec``
========================  ==================================================================

The vectors it writes are read, evaluated and plotted by :mod:`keras_bert_lab.vectors`, as
GloVe's are.
"""

from keras_bert_lab.models.word2vec.model import Word2Vec

__all__ = ["Word2Vec"]
