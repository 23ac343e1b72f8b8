"""Static word vectors — GloVe, word2vec output — in NumPy: read and write the text format,
nearest neighbours and analogies, a Keras ``Embedding`` for a model's vocabulary (and a
``.keras`` file), the standard evaluations (Google analogies, WordSim-353, SimLex-999; equal to
gensim's), and plots.

Example:

>>> from keras_bert_lab.vectors import WordVectors
>>> vectors = WordVectors(["cold", "hot", "ice"], [[1, 0], [-1, 0.2], [0.9, 0.1]])
>>> vectors.nearest("cold", k=1)[0][0]
'ice'
"""

from keras_bert_lab.vectors.embedding import Coverage
from keras_bert_lab.vectors.evaluate import (AnalogyResult, Section, WordPairResult,
                                             evaluate_analogies, evaluate_word_pairs,
                                             format_analogies, format_word_pairs)
from keras_bert_lab.vectors.keyed import (UnknownWordError, WordVectors, load_glove, load_keras,
                                          load_vectors, read_text)
from keras_bert_lab.vectors.plots import plot_neighbourhood, plot_vector_cells

__all__ = ["AnalogyResult", "Coverage", "Section", "UnknownWordError", "WordPairResult",
           "WordVectors", "evaluate_analogies", "evaluate_word_pairs", "format_analogies",
           "format_word_pairs", "load_glove", "load_keras", "load_vectors", "plot_neighbourhood",
           "plot_vector_cells", "read_text"]
