"""``WordVectorClassifier``: a text classifier over static word vectors — the transfer baseline.

Before contextual models, "pretraining" in NLP meant initialising a model's word embedding with
vectors trained on a large corpus (word2vec, GloVe) and training the rest on the labelled task.
This is that model: an embedding of the task's word ids (padding id 0), an encoder — the mean of
the word vectors through one ReLU layer (a deep averaging network, Iyyer et al. 2015) or a
one-layer BiLSTM whose last states are concatenated — then dropout and a softmax layer. Give it
pretrained vectors (frozen or trainable) or let it start from random vectors, and the difference
is what the pretrained vectors transfer.

Example:
>>> import numpy as np
>>> vectors = np.random.default_rng(0).normal(size=(10, 4)).astype("float32")
>>> model = WordVectorClassifier(vectors, num_classes=2, encoder="mean")
>>> model.predict(np.array([[3, 4, 0, 0]]), verbose=0).shape
(1, 2)
>>> model.get_layer("word_vectors").trainable
False
"""

import keras
import numpy as np
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.lstm import bidirectional_lstm
from keras_bert_lab.layers.pooling import mean_pool

ENCODERS = ("mean", "bilstm")


@keras.saving.register_keras_serializable("keras_bert_lab")
class WordVectorClassifier(keras.Model):
    """Word ids (B, T; 0 = padding) → class probabilities (B, K).

    Args:
        vectors: the initial ``(vocabulary_size, dim)`` embedding (row 0 is padding), or ``None``
            with ``vocabulary_size`` and ``dim`` for a random start (uniform ±0.05, Keras'
            default). num_classes: K. encoder: ``"mean"`` or ``"bilstm"``. trainable_vectors:
            train the embedding too (default: only when it starts random). hidden: BiLSTM units
            per direction (the mean encoder's hidden layer width). dropout: before the softmax
            layer.
    """

    def __init__(self, vectors=None, num_classes=2, encoder="mean", trainable_vectors=None,
                 vocabulary_size=None, dim=None, hidden=64, dropout=0.2, **kwargs):
        if encoder not in ENCODERS:
            raise ConfigError(f"encoder={encoder!r}; choose one of {ENCODERS}.")
        if vectors is None and not (vocabulary_size and dim):
            raise ConfigError("Give the initial vectors, or vocabulary_size and dim for a "
                              "random start.")
        if vectors is not None:
            vectors = np.asarray(vectors, "float32")
            vocabulary_size, dim = vectors.shape
        if trainable_vectors is None:
            trainable_vectors = vectors is None
        initializer = (keras.initializers.Constant(vectors) if vectors is not None
                       else "uniform")
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        embedding = keras.layers.Embedding(vocabulary_size, dim, name="word_vectors",
                                           embeddings_initializer=initializer,
                                           trainable=trainable_vectors)
        words = embedding(token_ids)
        mask = ops.cast(token_ids > 0, "int32")
        if encoder == "mean":   # a deep averaging network (Iyyer et al. 2015): mean, then MLP
            features = keras.layers.Dense(hidden, activation="relu", name="hidden")(
                mean_pool(words, mask))
        else:
            features = bidirectional_lstm(words, hidden, token_ids > 0, "bilstm",
                                          return_sequences=False)
        features = keras.layers.Dropout(dropout)(features)
        probabilities = keras.layers.Dense(num_classes, activation="softmax",
                                           name="classifier")(features)
        super().__init__(inputs=token_ids, outputs=probabilities, **kwargs)
        self.settings = {"num_classes": num_classes, "encoder": encoder,
                         "trainable_vectors": bool(trainable_vectors),
                         "vocabulary_size": int(vocabulary_size), "dim": int(dim),
                         "hidden": hidden, "dropout": dropout}

    def get_config(self):
        return {**self.settings, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
