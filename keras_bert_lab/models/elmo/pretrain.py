"""``kbl pretrain --model elmo``: ELMo's bidirectional language model from raw text to a preset.

Peters et al. (2018, §3.1, §3.4) pretrain the biLM on tokenized sentences as two language
models at once — forward (predict the next word) and backward (predict the previous one) — that
share the character encoder and the softmax; bilm-tf trains it with Adagrad (rate 0.2, gradients
clipped to norm 10) on blocks of 20 words. This recipe does the same at laptop scale through the
machinery of the other pretraining recipes (:mod:`keras_bert_lab.training.pretrain`: checkpoints,
exact resume, a CSV log and curves): the corpus as words, each sentence between ``<S>`` and
``</S>``, cut into contiguous blocks (:func:`keras_bert_lab.pipelines.language_model.word_stream`
and :func:`~keras_bert_lab.pipelines.language_model.elmo_dataset`); a word vocabulary built on the
training text (``--min-count``; rarer words are ``<UNK>`` to the softmax but keep their spelling
for the character CNN) or given (``--vocabulary vocab.txt``); an
:class:`~keras_bert_lab.models.elmo.language_model.ElmoLanguageModel`; and at the end held-out forward *and*
backward perplexity, each next to interpolated Kneser-Ney trigrams
(:mod:`keras_bert_lab.metrics.ngram`) on exactly the targets the network predicts — the
backward baseline fit on the reversed training stream — plus each direction's guesses for the
blank in a few probe sentences, and the preset.

Defaults (about 7 minutes on 2 CPU cores): the ``mini`` biLM (3.0M weights without the softmax),
words seen 3+ times in the training text (33k softmax words on WikiText-2, about its standard
vocabulary), blocks of 32 words, batches of 32, 700 steps of AdamW (peak 1e-3, 5 % warm-up then
cosine) — at this scale it learns faster than bilm-tf's Adagrad (``--optimizer adagrad``, constant
rate 0.2): after 70 steps, held-out forward perplexity 712 against 886. The softmax bias starts
at the training words' log frequencies (``unigram_bias``), so that the first steps learn from
context rather than spend hundreds of updates on word frequencies (after 70 steps, 712 against
1,096 from a zero bias). With ``--sampled-softmax 2048`` (bilm-tf's sampled softmax) a step costs
0.33 s instead of 0.60 s on TensorFlow; the run in benchmarks/results/quality.md — 4,000 such steps, two
passes over WikiText-2, 34 minutes — ends at held-out perplexity 182.7 forward and 178.7 backward,
against 209.3 and 209.8 for the Kneser-Ney trigrams on the same targets.

The output directory holds what ``kbl pretrain`` writes (``settings.json``, ``checkpoints/``,
``log.csv`` with both directions' losses, ``curves.png``, ``metrics.json``, ``preset/``) plus
``vocab.txt``, the softmax words (reused on ``--resume``).

Example:
>>> settings = ElmoPretrainSettings(optimizer="adagrad")
>>> settings.size, settings.sequence_length, settings.peak_learning_rate
('mini', 32, 0.2)
"""

import dataclasses
import os
import types

import keras
import numpy as np

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.elmo.backbone import ElmoBackbone
from keras_bert_lab.models.elmo.config import ElmoConfig
from keras_bert_lab.pipelines.language_model import heldout_blocks
from keras_bert_lab.metrics.ngram import kneser_ney_perplexity
from keras_bert_lab.presets.vocabulary import write_vocabulary
from keras_bert_lab.training.recipe import PretrainRecipe
from keras_bert_lab.training.run_settings import RunSettings
from keras_bert_lab.models.elmo.language_model import DIRECTIONS, ElmoLanguageModel
from keras_bert_lab.training.optimizers import adamw
from keras_bert_lab.training.pretrain import Phase
from keras_bert_lab.training.schedules import WarmupCosineDecay

LOG_COLUMNS = ("step", "split", "loss", "forward_loss", "backward_loss", "learning_rate",
               "tokens_per_s", "elapsed_s")
OPTIMIZERS = {"adamw": 1e-3, "adagrad": 0.2}   # name: default peak learning rate
# Each direction guesses the blank from its own side: the forward LM from the words before it,
# the backward LM from the words after it.
PROBES = ("let 's stick to the ___ of the game .",
          "the river flows into the ___ near the town .",
          "in 1990 , the band released their ___ album .",
          "he was born in ___ , the son of a farmer .",
          "the ___ of the United States lives in the White House .")
BLANK = "___"


@dataclasses.dataclass
class ElmoPretrainSettings(RunSettings):
    """What defines a biLM pretraining run (stored as ``settings.json``)."""

    MODEL = "elmo"
    AT_LEAST_ONE = ("min_count",)
    LATER = ("sampled_softmax",)

    model: str = "elmo"
    vocabulary: str | None = None      # a vocab.txt (<S>, </S>, <UNK>, words); None: built
    min_count: int = 3
    sequence_length: int = 32
    steps: int = 700
    optimizer: str = "adamw"           # or "adagrad" (bilm-tf's)
    learning_rate: float | None = None  # None: OPTIMIZERS[optimizer]
    warmup_steps: int | None = None    # adamw; None: 5 % of the steps
    weight_decay: float = 0.01         # adamw
    dropout: float = 0.0
    unigram_bias: bool = True          # softmax bias starts at log word frequencies
    sampled_softmax: int = 0           # words sampled per training batch; 0: the full softmax
    precision: str = "float32"

    def __post_init__(self):
        super().__post_init__()
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"--optimizer {self.optimizer!r}: --model elmo trains with "
                              f"{' or '.join(OPTIMIZERS)}.")
        if self.optimizer == "adagrad" and self.warmup_steps:
            raise ConfigError("--warmup-steps applies to adamw; bilm-tf's Adagrad runs at a "
                              "constant rate (leave --warmup-steps out).")
        if int(self.sampled_softmax) < 0:
            raise ConfigError(f"--sampled-softmax must be 0 (the full softmax) or a number of "
                              f"words to sample, got {self.sampled_softmax}.")
        if self.precision != "float32":
            raise ConfigError(f"--precision {self.precision!r}: the biLM recipe trains in "
                              "float32 (its clipped LSTM states are untested in lower precision).")

    @property
    def peak_learning_rate(self):
        return OPTIMIZERS[self.optimizer] if self.learning_rate is None else self.learning_rate


@dataclasses.dataclass
class WordData:
    """The run's words: type tables, softmax vocabulary and the two streams."""

    types: list             # type id -> word (training types first, then held-out-only ones)
    words: list             # softmax id -> word (vocab.txt)
    word_ids: np.ndarray    # type id -> softmax id
    characters: np.ndarray  # type id -> character ids (C,)
    train: np.ndarray       # training stream of type ids
    heldout: np.ndarray | None

    @property
    def bos_id(self):
        return self.words.index("<S>")

    @property
    def eos_id(self):
        return self.words.index("</S>")


def load_words(settings, output_dir, resume):
    """Corpora as word streams and the vocabulary: ``output_dir/vocab.txt`` on resume, else
    ``--vocabulary``, else built with ``--min-count``."""
    from keras_bert_lab.data.corpora import load_corpus
    from keras_bert_lab.pipelines.language_model import (type_characters, word_stream,
                                                         word_vocabulary)
    from keras_bert_lab.presets.vocabulary import read_vocabulary

    source = settings.corpus[0] if len(settings.corpus) == 1 else list(settings.corpus)
    types, train = word_stream(load_corpus(source).documents)
    heldout = word_stream(load_corpus(settings.eval_corpus).documents, types)[1] \
        if settings.eval_corpus else None
    saved = os.path.join(output_dir, "vocab.txt")
    given = saved if resume and os.path.isfile(saved) else settings.vocabulary
    words, word_ids = word_vocabulary(types, train, settings.min_count,
                                      words=read_vocabulary(given) if given else None)
    return WordData(types, words, word_ids, type_characters(types), train, heldout)


def build_model(settings, vocabulary_size):
    """A compiled ``ElmoLanguageModel``: AdamW (warm-up, cosine) or bilm-tf's Adagrad."""
    keras.config.set_dtype_policy(settings.precision)
    config = ElmoConfig.from_size(settings.size, vocabulary_size=vocabulary_size, dropout=settings.dropout)
    model = ElmoLanguageModel(ElmoBackbone(config), num_sampled=settings.sampled_softmax)
    rate = settings.peak_learning_rate
    if settings.optimizer == "adagrad":
        optimizer = keras.optimizers.Adagrad(learning_rate=rate, initial_accumulator_value=1.0,
                                             global_clipnorm=10.0)
    else:
        warmup = settings.warmup_steps if settings.warmup_steps is not None \
            else max(1, settings.steps // 20)
        schedule = WarmupCosineDecay(rate, min(warmup, settings.steps), settings.steps)
        optimizer = adamw(model, learning_rate=schedule, weight_decay=settings.weight_decay,
                          global_clipnorm=10.0)
    model.compile(optimizer=optimizer)
    return model


def unigram_log_frequencies(data):
    """``(V,)`` float32 log relative frequency of each softmax word in the training stream
    (add-one smoothed): the softmax bias of a model that ignores context."""
    counts = np.bincount(data.word_ids[data.train], minlength=len(data.words)) + 1.0
    return np.log(counts / counts.sum()).astype("float32")


def heldout_scores(model, dataset):
    """Exact per-direction held-out loss (mean negative log-likelihood over the weighted
    targets), perplexity, accuracy and target count."""
    sums = {d: np.zeros(3) for d in DIRECTIONS}   # nll, correct, targets
    for x, y, w in dataset.as_numpy_iterator():
        logits = model.predict_on_batch(x)
        for d in DIRECTIONS:
            z = keras.ops.convert_to_numpy(logits[d]).astype("float32")      # (B, T, V)
            top = z.max(-1)
            log_norm = top + np.log(np.exp(z - top[..., None]).sum(-1, dtype="float64"))
            nll = log_norm - np.take_along_axis(z, y[d][..., None], -1)[..., 0]   # (B, T)
            correct = z.argmax(-1) == y[d]
            sums[d] += [(nll * w[d]).sum(), (correct * w[d]).sum(), w[d].sum()]
    out = {}
    for d, (nll, correct, count) in sums.items():
        out.update({f"heldout_{d}_loss": nll / count,
                    f"heldout_{d}_perplexity": np.exp(nll / count),
                    f"heldout_{d}_accuracy": correct / count, f"heldout_{d}_targets": int(count)})
    return {k: v if isinstance(v, int) else float(v) for k, v in out.items()}


def baseline_targets(data, blocks):
    """Where each direction's targets lie in the held-out stream, for the count baselines.

    ``blocks``: the first ``K`` of ``lm_blocks(data.heldout, T, context=2)``, which cover
    stream positions ``0 … K·T + 1``. The network's forward targets are positions
    ``2 … K·T + 1`` but ``<S>``, its backward targets ``0 … K·T − 1`` but ``</S>``. Returns
    ``{direction: (training tokens, held-out tokens, positions)}`` in softmax ids — backward,
    all three reversed, so that each target is predicted from the words after it.
    """
    length = blocks.shape[1] - 2
    train = data.word_ids[data.train].tolist()
    stream = data.word_ids[data.heldout[:len(blocks) * length + 2]].tolist()
    n = len(stream)
    forward = [i for i in range(2, n) if stream[i] != data.bos_id]
    backward = [n - 1 - i for i in range(0, n - 2) if stream[i] != data.eos_id]
    return {"forward": (train, stream, forward),
            "backward": (train[::-1], stream[::-1], backward[::-1])}


def count_baselines(data, blocks, order=3):
    """``{direction: (perplexity, targets)}`` of interpolated Kneser-Ney ``order``-grams on the
    targets the network predicts (:func:`baseline_targets`)."""
    return {d: (kneser_ney_perplexity(train, stream, positions, order), len(positions))
            for d, (train, stream, positions) in baseline_targets(data, blocks).items()}


def guess_blanks(model, words, probes=PROBES, top_k=5):
    """Each direction's top ``top_k`` words for the blank (``___``) of each probe sentence: the
    forward LM reads ``<S>`` and the words before it, the backward LM the words after it and
    ``</S>``. The sentence markers are left out (the blank is inside a sentence)."""
    from keras_bert_lab.preprocessing.characters import character_ids

    sides = [probe.split(BLANK) for probe in probes]
    if any(len(parts) != 2 for parts in sides):
        raise ConfigError(f"Each probe sentence needs one blank ({BLANK!r}), got {probes!r}.")
    rows = [["<S>"] + left.split() for left, _ in sides] + \
           [right.split() + ["</S>"] for _, right in sides]
    logits = model.predict_on_batch({"character_ids": character_ids(rows, add_boundaries=False)})
    forward, backward = (keras.ops.convert_to_numpy(logits[d]) for d in DIRECTIONS)
    markers = {words.index("<S>"), words.index("</S>")}
    out = []
    for i, probe in enumerate(probes):
        guesses = {}
        for d, scores in (("forward", forward[i, len(rows[i]) - 1]),
                          ("backward", backward[len(probes) + i, 0])):
            ranked = [int(j) for j in np.argsort(-scores) if j not in markers]
            guesses[d] = [words[j] for j in ranked[:top_k]]
        out.append({"text": probe, **guesses})
    return out


class ElmoRecipe(PretrainRecipe):
    """The biLM run (see the module docstring) in :class:`PretrainRecipe`'s skeleton.

    Example (the test corpus of a few hundred words, seconds on a laptop CPU):
    >>> settings = ElmoPretrainSettings(  # doctest: +SKIP
    ...     corpus="corpus.txt", eval_corpus="corpus.txt", size="tiny", steps=20, batch_size=4,
    ...     sequence_length=8)
    >>> run(settings, "/tmp/kbl-elmo")["heldout_forward_perplexity"]  # doctest: +SKIP
    """

    name = "elmo"
    log_columns = LOG_COLUMNS
    curves = (("loss", "mean of both directions"), ("forward_loss", "forward LM loss"),
              ("backward_loss", "backward LM loss"))

    def read_inputs(self, settings, output_dir, resume):
        from keras_bert_lab.pipelines.language_model import lm_blocks

        data = load_words(settings, output_dir, resume)
        length = settings.sequence_length
        heldout = heldout_blocks(settings, lm_blocks(data.heldout, length, context=2)) \
            if data.heldout is not None else None
        inputs = types.SimpleNamespace(data=data, heldout=heldout, heldout_data=None,
                                       blocks=lm_blocks(data.train, length, context=2))
        if heldout is not None:
            inputs.heldout_data = self.stream(inputs, settings, heldout, shuffle=False)
        return inputs

    @staticmethod
    def stream(inputs, settings, chosen, **options):
        from keras_bert_lab.pipelines.language_model import elmo_dataset

        data = inputs.data
        return elmo_dataset(chosen, data.characters, data.word_ids, settings.batch_size,
                            bos_id=data.bos_id, eos_id=data.eos_id, **options)

    def build(self, settings, inputs):
        return build_model(settings, len(inputs.data.words))

    def phases(self, settings, inputs):
        epochs = -(-settings.steps * settings.batch_size // len(inputs.blocks)) + 1
        return [Phase(0, settings.steps, heldout=inputs.heldout_data,
                      batch_size=settings.batch_size, sequence_length=settings.sequence_length,
                      stream=lambda skip: self.stream(inputs, settings, inputs.blocks,
                                                      seed=settings.seed, epochs=epochs,
                                                      skip_batches=skip))]

    def start(self, model, settings, inputs, output_dir, resume):
        write_vocabulary(os.path.join(output_dir, "vocab.txt"), inputs.data.words)
        if settings.unigram_bias:
            model.softmax.bias.assign(unigram_log_frequencies(inputs.data))
        return {}

    def finish(self, model, settings, inputs):
        data = inputs.data
        unk = data.words.index("<UNK>")
        metrics = {"steps": settings.steps, "train_words": int(len(data.train)),
                   "train_unk_rate": float(np.mean(data.word_ids[data.train] == unk)),
                   "vocabulary_size": len(data.words), "word_types": len(data.types),
                   "tokens_seen": settings.steps * settings.batch_size * settings.sequence_length}
        if inputs.heldout_data is not None:
            metrics.update(heldout_scores(model, inputs.heldout_data))
            for d, (perplexity, count) in count_baselines(data, inputs.heldout).items():
                metrics[f"kneser_ney_trigram_{d}_perplexity"] = perplexity
                metrics[f"kneser_ney_trigram_{d}_targets"] = count
        metrics["blanks"] = guess_blanks(model, data.words)
        return metrics

    def preset_files(self, settings, inputs):
        return dict(vocabulary=inputs.data.words, lowercase=False,
                    license="as the pretraining corpus")


run = ElmoRecipe().run


# What `kbl pretrain --model` builds from its flags (families.Family.recipe).
SETTINGS = ElmoPretrainSettings
