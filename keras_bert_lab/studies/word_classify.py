"""Static word vectors in a model: Rotten Tomatoes with GloVe (frozen or trained) vs. random.

``run(settings)`` trains a :class:`~keras_bert_lab.tasks.word_vector_classifier.
WordVectorClassifier` on the Rotten Tomatoes sentences (the registry's 80/10/10 split) for a
fixed number of epochs and reports validation and test accuracy — the transfer baseline the
later stations of the story (ELMo, ULMFiT, GPT, BERT) are measured against. The vocabulary is
every word of the three parts' *texts* (no label is read from valid or test), so a test word
that never appears in training still has its pretrained vector; with ``vectors="random"`` such a
word keeps its random start.

Example (a minute on a laptop CPU):
>>> run(ClassifySettings(vectors="glove", encoder="mean", epochs=2))  # doctest: +SKIP
{'test_accuracy': 0.7…, …}
"""

import dataclasses
import time

import keras
import numpy as np

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.tasks.word_vector_classifier import ENCODERS, WordVectorClassifier

RESERVED = ("<pad>", "<unk>")


@dataclasses.dataclass
class ClassifySettings:
    """One Rotten Tomatoes run: which vectors, which encoder, how long."""

    vectors: str = "glove"        # "glove", "random", or a vectors file in the text format
    encoder: str = "mean"         # or "bilstm"
    trainable: bool | None = None  # train the vectors too (default: only random ones)
    dim: int = 50                 # for random vectors (GloVe 6B 50d has 50)
    epochs: int = 10
    batch_size: int = 32
    learning_rate: float = 3e-3
    sequence_length: int = 64
    seed: int = 0

    def __post_init__(self):
        if self.encoder not in ENCODERS:
            raise ConfigError(f"encoder={self.encoder!r}; choose one of {ENCODERS}.")


def run(settings, verbose=0):
    """Train and evaluate one classifier; returns accuracies, coverage and timing."""
    from keras_bert_lab.data.labelled import load_dataset
    from keras_bert_lab.preprocessing.words import WordVocabulary

    parts = load_dataset("rotten_tomatoes")
    labels = sorted(set(parts["train"].labels))
    vocabulary = WordVocabulary.build([parts[p].texts for p in ("train", "valid", "test")],
                                      min_count=1)
    ids = {p: vocabulary.pad_ids(parts[p].texts, settings.sequence_length) for p in parts}
    y = {p: np.array([labels.index(label) for label in parts[p].labels]) for p in parts}
    keras.utils.set_random_seed(settings.seed)
    result = {"vectors": settings.vectors, "encoder": settings.encoder}
    if settings.vectors == "random":
        model = WordVectorClassifier(None, len(labels), settings.encoder, settings.trainable,
                                     vocabulary_size=len(vocabulary) + 2, dim=settings.dim)
    else:
        from keras_bert_lab.vectors import load_vectors

        vectors = load_vectors(settings.vectors)
        layer, coverage = vectors.to_embedding(list(RESERVED) + vocabulary.words,
                                               seed=settings.seed, mask_zero=True)
        matrix = keras.ops.convert_to_numpy(layer.embeddings)
        model = WordVectorClassifier(matrix, len(labels), settings.encoder,
                                     bool(settings.trainable))
        result["coverage"] = coverage.fraction
    result["trainable_vectors"] = model.get_layer("word_vectors").trainable
    model.compile(keras.optimizers.Adam(settings.learning_rate),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    started = time.time()
    history = model.fit(ids["train"], y["train"], batch_size=settings.batch_size,
                        epochs=settings.epochs, validation_data=(ids["valid"], y["valid"]),
                        verbose=verbose)
    result.update(
        seconds=round(time.time() - started, 1),
        valid_accuracy=float(history.history["val_accuracy"][-1]),
        test_accuracy=float(model.evaluate(ids["test"], y["test"], verbose=0,
                                           return_dict=True)["accuracy"]))
    return result
