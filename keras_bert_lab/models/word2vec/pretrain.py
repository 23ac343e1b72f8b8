"""The word2vec recipe: a corpus → word vectors, trained with ``model.fit`` on any backend.

``run(settings, output_dir)`` is what ``kbl word2vec`` calls: it reads the corpus, builds the
vocabulary (``min_count``), encodes the text once, streams skip-gram or CBOW examples with
subsampling, dynamic windows and unigram^0.75 noise words
(:mod:`keras_bert_lab.models.word2vec.pipeline`), and trains :class:`~keras_bert_lab.models.word2vec.model.
Word2Vec` with plain SGD whose rate decays linearly from ``learning_rate`` to
``min_learning_rate`` over the whole run, as word2vec.c and gensim do.

The output directory holds ``settings.json``, ``vocabulary.tsv`` (word, count),
``vectors.txt`` (the standard text format: a ``count dim`` header, then ``word v1 … vn``; gensim's
``KeyedVectors.load_word2vec_format`` reads it), ``embedding.keras`` (a Keras model holding the
vectors as an ``Embedding``, with its words beside it; see :mod:`keras_bert_lab.vectors`),
``log.csv`` (loss per epoch), ``metrics.json`` (throughput, and the analogy and word-similarity
evaluations when their data are installed) and ``checkpoints/`` (one per epoch; ``--resume``
continues from the newest: an interrupted run loses at most the epoch under way, and the
resumed run sees exactly the batches it would have seen).

Settings a gensim user knows map one to one: ``vector_size`` → ``dim``, ``window``,
``min_count``, ``negative`` → ``negatives``, ``sample``, ``epochs``, ``alpha`` →
``learning_rate``, ``min_alpha`` → ``min_learning_rate``, ``sg=0`` → ``architecture="cbow"``.
What differs: examples are trained in batches of ``batch_size`` (their gradients summed, not
averaged, so rates mean the same per example), and ``shared_pool > 0`` scores every example of a
batch against one shared pool of noise words (faster; see ``benchmarks/results/speed.md`` for what it
costs).
"""

import dataclasses
import logging
import math
import threading
import time

import keras

from keras_bert_lab.errors import ConfigError, KblError
from keras_bert_lab.models.word2vec.model import ARCHITECTURES, Word2Vec
from keras_bert_lab.training.checkpoints import TrainingCheckpoint, restore_checkpoint
from keras_bert_lab.training.run import (append_row, check_run_folder, guarded, prepare_output,
                                         write_json)
from keras_bert_lab.training.schedules import WarmupLinearDecay

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class Word2VecSettings:
    """Everything that defines a word2vec run (stored as ``settings.json``)."""

    corpus: tuple = ("wikitext2",)
    architecture: str = "skipgram"     # or "cbow"
    dim: int = 100
    window: int = 5
    min_count: int = 5
    max_vocabulary: int | None = None
    negatives: int = 5
    sample: float = 1e-5               # subsampling threshold t (0: off)
    subsampling: str = "paper"         # or "word2vec.c" (gensim's formula)
    epochs: int = 5
    learning_rate: float | None = None  # None: 0.025 for skip-gram, 0.05 for CBOW
    min_learning_rate: float = 1e-4
    batch_size: int = 2048
    shared_pool: int = 16              # 0: each example its own noise words (word2vec.c)
    steps_per_execution: int = 16      # SGD updates per compiled step (batches end to end)
    lowercase: bool = True
    seed: int = 0

    def __post_init__(self):
        self.corpus = (self.corpus,) if isinstance(self.corpus, str) else tuple(self.corpus)
        if self.architecture not in ARCHITECTURES:
            raise ConfigError(f"architecture={self.architecture!r}; choose one of "
                              f"{ARCHITECTURES}.")
        for name in ("dim", "window", "min_count", "negatives", "epochs", "batch_size",
                     "steps_per_execution"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}.")
        if self.learning_rate is None:
            self.learning_rate = 0.05 if self.architecture == "cbow" else 0.025
        if not 0 <= self.min_learning_rate <= self.learning_rate:
            raise ConfigError(f"Need 0 ≤ min_learning_rate ({self.min_learning_rate}) ≤ "
                              f"learning_rate ({self.learning_rate}).")

    def to_dict(self):
        values = dataclasses.asdict(self)
        values["corpus"] = list(self.corpus)
        return values


class WordRate(keras.callbacks.Callback):
    """A progress bar over the run's corpus words, showing words/s and the loss per example.

    Safe to run off the training thread (``async_safe``): Keras then hands it each step's logs
    from a worker thread instead of waiting for every step to finish before fetching the next
    batch."""

    async_safe = True

    def __init__(self, total_words, words_per_step, batch_size, steps_per_epoch, first_step=0,
                 verbose=1):
        super().__init__()
        self.batch_size, self.steps_per_epoch = batch_size, steps_per_epoch
        self.total, self.per_step = total_words, words_per_step
        self.first_step, self.verbose = first_step, verbose
        self.bar, self.epoch = None, 0
        self.lock = threading.Lock()

    def on_train_begin(self, logs=None):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total, unit="word", unit_scale=True, disable=not self.verbose,
                        initial=min(self.first_step * self.per_step, self.total),
                        desc="word2vec", smoothing=0.1)

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        done = (self.epoch * self.steps_per_epoch + batch + 1) * self.per_step
        with self.lock:
            self.bar.update(max(min(done, self.total) - self.bar.n, 0))
            if batch % 20 == 0 and logs and "loss" in logs:
                self.bar.set_postfix(loss=f"{float(logs['loss']) / self.batch_size:.3f}",
                                     refresh=False)

    def on_train_end(self, logs=None):
        self.bar.close()


class EpochCheckpoint(TrainingCheckpoint):
    """``TrainingCheckpoint`` that looks at the run at epoch ends only (saving when the step is
    a multiple of ``every_steps``, stopping on a non-finite loss). With no callback reading
    every step's logs, Keras does not wait for each step before fetching the next batch: the
    stream and the step overlap."""

    on_train_batch_end = keras.callbacks.Callback.on_train_batch_end

    def on_epoch_end(self, epoch, logs=None):
        TrainingCheckpoint.on_train_batch_end(self, None, logs)


def load_vocabulary_and_ids(settings):
    """``(vocabulary, ids, starts)`` of the settings' corpus (see ``WordVocabulary.encode``)."""
    from keras_bert_lab.data.corpora import load_corpus
    from keras_bert_lab.preprocessing.words import WordVocabulary

    sources = settings.corpus[0] if len(settings.corpus) == 1 else list(settings.corpus)
    corpus = load_corpus(sources, split=False)
    vocabulary = WordVocabulary.build(corpus, settings.min_count, settings.max_vocabulary,
                                      settings.lowercase)
    ids, starts = vocabulary.encode(corpus)
    return vocabulary, ids, starts


def evaluate(vectors):
    """Analogy accuracy and word-similarity ρ of ``vectors`` on the installed evaluation sets
    (``{}`` for a set whose package is missing)."""
    from keras_bert_lab.errors import MissingPackageError
    from keras_bert_lab.vectors import evaluate_analogies, evaluate_word_pairs

    metrics = {}
    try:
        analogies = evaluate_analogies(vectors)
    except MissingPackageError as error:   # the data set's package is not installed
        logger.warning("Analogies not evaluated: %s", error)
    else:
        metrics.update(analogy_accuracy=analogies.accuracy,
                       analogy_semantic=analogies.semantic.accuracy,
                       analogy_syntactic=analogies.syntactic.accuracy,
                       analogy_questions=analogies.total.used,
                       analogy_skipped=analogies.oov)
    for name in ("wordsim353", "simlex999"):
        try:
            pairs = evaluate_word_pairs(vectors, name)
        except KblError as error:   # package missing, or every pair out of the vocabulary
            logger.warning("%s not evaluated: %s", name, error)
        else:
            metrics.update({f"{name}_spearman": pairs.spearman, f"{name}_pairs": pairs.pairs})
    return metrics


@guarded()
def run(settings, output_dir, resume=False, overwrite=False, verbose=1):
    """Train word vectors per ``settings`` into ``output_dir``; returns the metrics dict.

    Example (a minute on a laptop CPU):
    >>> settings = Word2VecSettings(corpus="wikitext2:valid", epochs=1)   # doctest: +SKIP
    >>> run(settings, "/tmp/kbl-word2vec")["words_per_s"]                 # doctest: +SKIP
    """
    from keras_bert_lab.models.word2vec.pipeline import expected_examples, skipgram_dataset
    from keras_bert_lab.preprocessing.words import keep_probabilities, noise_distribution
    from keras_bert_lab.vectors import WordVectors

    check_run_folder(output_dir, settings.to_dict(), resume=resume, overwrite=overwrite)
    vocabulary, ids, starts = load_vocabulary_and_ids(settings)  # read before writing anything
    output = prepare_output(output_dir, settings.to_dict(), resume=resume, overwrite=overwrite)
    keras.utils.set_random_seed(settings.seed)
    keep = keep_probabilities(vocabulary.counts, settings.sample, settings.subsampling)
    expected = expected_examples(ids, starts, keep, settings.window, settings.architecture)
    # Several updates per compiled step: `per_call` batches laid end to end are applied in
    # order inside one step (`Word2Vec.compile(updates_per_batch=…)`, on every backend), and
    # epochs are a whole number of such steps (up to `per_call - 1` updates short of a pass).
    # Steps, checkpoints and the rate schedule count updates, as with one batch per step.
    steps_per_epoch = max(int(expected // settings.batch_size), 1)
    per_call = min(settings.steps_per_execution, steps_per_epoch)
    steps_per_epoch -= steps_per_epoch % per_call
    total_steps = steps_per_epoch * settings.epochs
    model = Word2Vec(len(vocabulary), settings.dim, settings.negatives, settings.architecture,
                     settings.window, settings.shared_pool)
    schedule = WarmupLinearDecay(settings.learning_rate, 0, total_steps,
                                 settings.min_learning_rate)
    model.compile(keras.optimizers.SGD(schedule), updates_per_batch=per_call)
    checkpoints = output / "checkpoints"
    step = 0
    if resume:
        meta = restore_checkpoint(model, str(checkpoints))
        step = meta["step"] if meta else 0
    data = skipgram_dataset(ids, starts, keep=keep, noise=noise_distribution(vocabulary.counts),
                            window=settings.window, negatives=settings.negatives,
                            batch_size=settings.batch_size, architecture=settings.architecture,
                            shared_pool=settings.shared_pool, seed=settings.seed,
                            batches_per_element=per_call).skip(step // per_call)
    logger.info("%d words in the vocabulary; %d of %d corpus words kept; ~%.0f examples per "
                "epoch, %d steps of %d.", len(vocabulary), len(ids), vocabulary.total_words,
                expected, total_steps, settings.batch_size)
    words_per_step = vocabulary.total_words / steps_per_epoch
    # One checkpoint per epoch and none on Ctrl-C, so a resumed run starts on an epoch boundary
    # (fit's `initial_epoch`) at the very batch where it stopped (`skip(step)` above).
    checkpoint = EpochCheckpoint(str(checkpoints), every_steps=steps_per_epoch, keep=2,
                                 handle_signals=False)
    rate = WordRate(vocabulary.total_words * settings.epochs, words_per_step * per_call,
                    settings.batch_size, steps_per_epoch // per_call, step // per_call, verbose)
    started = time.time()
    history = model.fit(data, steps_per_epoch=steps_per_epoch // per_call, epochs=settings.epochs,
                        initial_epoch=step // steps_per_epoch, verbose=0, shuffle=False,
                        callbacks=[checkpoint, rate])
    seconds = time.time() - started
    if checkpoint.stopped_because:
        raise KblError(f"word2vec stopped: {checkpoint.stopped_because}")
    first_epoch = step // steps_per_epoch
    for epoch, loss in enumerate(history.history.get("loss", []), start=first_epoch + 1):
        append_row(output / "log.csv", {"epoch": epoch, "loss": loss / settings.batch_size})
    vectors = WordVectors(vocabulary.words, model.vectors, counts=vocabulary.counts)
    vectors.write_text(output / "vectors.txt")
    vectors.save_keras(output / "embedding.keras")
    vocabulary.save(output / "vocabulary.tsv")
    trained_steps = total_steps - step
    metrics = {"backend": keras.backend.backend(), "vocabulary_size": len(vocabulary),
               "corpus_words": vocabulary.total_words, "train_seconds": round(seconds, 2),
               "words_per_s": round(trained_steps * words_per_step / max(seconds, 1e-9)),
               "examples_per_s": round(trained_steps * settings.batch_size / max(seconds, 1e-9)),
               "final_loss_per_example": (history.history["loss"][-1] / settings.batch_size
                                          if history.history.get("loss") else math.nan)}
    metrics.update(evaluate(vectors))
    write_json(output / "metrics.json", metrics)
    return metrics

