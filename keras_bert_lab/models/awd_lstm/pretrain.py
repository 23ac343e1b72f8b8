"""``kbl pretrain --model awd-lstm``: ULMFiT's language-model stages, from raw text to a preset.

ULMFiT (Howard & Ruder 2018) trains one AWD-LSTM language model twice:

1. **general-domain pretraining** (§3.1) on WikiText — here WikiText-2 — from scratch;
2. **target-task LM fine-tuning** (§3.2) on the task's own text, labels unused: the same run with
   ``--init-preset`` (the stage-1 preset) and ``--corpus`` the task's text (a file, or a registry
   labelled set such as ``rotten_tomatoes``, whose training texts are read). Words of the task
   that the general vocabulary lacks are added (``--min-count`` occurrences) with rows at the mean
   embedding; the layer groups learn at rates ``η/2.6^k`` (``--layer-decay``, default 1/2.6 for
   this stage) under the slanted triangular schedule.

Both stages train by truncated back-propagation through time over contiguous text
(:func:`keras_bert_lab.pipelines.language_model.tbptt_blocks`; every batch continues the last, the
LSTM states carried, §4.4 of Merity et al. 2017), through the machinery of every pretraining recipe
(:mod:`keras_bert_lab.training.pretrain`: checkpoints that hold the carried states too, so resume is
exact; a CSV log; curves). Held-out perplexity is measured by a model that shares every weight but
carries its own states, over the held-out text in the same layout, next to interpolated Kneser-Ney
trigrams on exactly the same targets; in stage 2 also before any fine-tuning, so the gain is
visible. The third stage — the classifier — is ``kbl finetune classify --preset OUT/preset`` with
``--unfreeze gradual --schedule slanted --layer-decay 0.385``.
"""

import dataclasses
import os
import types

import keras
import numpy as np

from keras_bert_lab import families
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.models.awd_lstm.backbone import AwdLstmBackbone, reset_states
from keras_bert_lab.models.awd_lstm.config import AwdLstmConfig
from keras_bert_lab.preprocessing.word_tokenizer import WordTokenizer, resize_rows
from keras_bert_lab.presets.weights import named_variables
from keras_bert_lab.training.recipe import PretrainRecipe
from keras_bert_lab.training.run_settings import RunSettings
from keras_bert_lab.models.awd_lstm.language_model import AwdLstmLanguageModel
from keras_bert_lab.training.optimizers import adamw
from keras_bert_lab.training.pretrain import Phase
from keras_bert_lab.training.schedules import SlantedTriangular

# What `kbl finetune classify` uses with this preset unless a flag says otherwise: all layers at
# one rate with warm-up and linear decay. In benchmarks/results/quality.md ("AWD-LSTM: Table 7's rows on
# TREC-6 and RT") it is the best row on RT and 0.4 test points above the best-on-valid row on
# TREC-6; gradual unfreezing and η/2.6 rates cost 5-9 points at 4 epochs there. Pass
# --unfreeze gradual --schedule slanted --layer-decay 0.385 for the paper's recipe.
FINETUNE = {"learning_rate": 3e-3, "epochs": 4, "schedule": "linear", "unfreeze": "all",
            "layer_decay": 1.0}
LOG_COLUMNS = ("step", "split", "loss", "perplexity", "accuracy", "learning_rate",
               "tokens_per_s", "elapsed_s")


@dataclasses.dataclass
class AwdPretrainSettings(RunSettings):
    """What defines an AWD-LSTM language-model run (stored as ``settings.json``)."""

    MODEL = "awd-lstm"
    AT_LEAST_ONE = ("max_vocabulary", "min_count")
    LATER = ("dropouts", "drop_mult")

    model: str = "awd-lstm"
    init_preset: str | None = None     # stage 2: continue this AWD-LSTM preset on --corpus
    vocabulary: str | None = None      # a directory with vocab.txt; None: built on the corpus
    max_vocabulary: int = 30000        # with --init-preset: words added at most
    min_count: int = 2
    size: str = "small"
    sequence_length: int = 70          # the BPTT window
    learning_rate: float = 3e-3
    layer_decay: float | None = None   # None: 1 from scratch, 1/2.6 with --init-preset
    dropouts: str | None = None        # a published set (AwdLstmConfig.with_dropouts); None:
    drop_mult: float = 1.0             # the size's (Merity's) or the --init-preset's rates

    def __post_init__(self):
        super().__post_init__()
        if self.dropouts is not None:
            AwdLstmConfig().with_dropouts(self.dropouts, self.drop_mult)   # ConfigError if bad
        elif self.drop_mult != 1.0:
            raise ConfigError(f"--drop-mult {self.drop_mult} scales a dropout set: give "
                              "--dropouts too (awd_lstm, ulmfit or fastai_lm).")
        if self.sequence_length < 2:
            raise ConfigError(f"--sequence-length (the BPTT window) {self.sequence_length} must "
                              "be at least 2; the AWD-LSTM uses 70.")
        if self.layer_decay is not None and not 0 < self.layer_decay <= 1:
            raise ConfigError(f"--layer-decay {self.layer_decay} must be in (0, 1].")


def read_lines(source, part="train"):
    """Sentences of a corpus (``load_corpus``), or the texts of a registry labelled set's
    ``part`` (a target task's own text, labels unused)."""
    from keras_bert_lab.data import registry
    from keras_bert_lab.data.corpora import load_corpus
    from keras_bert_lab.data.labelled import load_dataset

    name, _, named_part = source.partition(":")
    sets = registry.names(kind="labelled")
    if name in sets:
        return list(load_dataset(name)[named_part or part].texts)
    try:
        return [s for document in load_corpus(source).documents for s in document]
    except DataError as error:
        raise DataError(f"{error} A target task's text can also come from a labelled set: "
                        f"{', '.join(sets)}.") from None


def _tokenizer(settings, output_dir, lines, preset):
    """The run's words: a resumed run's, ``--vocabulary``, the preset's (+ the corpus' new
    words), or built on the corpus. Returns ``(tokenizer, rows)`` (rows: see ``extend``)."""
    saved = os.path.join(output_dir, "tokenizer")
    if os.path.isfile(os.path.join(saved, "vocab.txt")):
        tokenizer = WordTokenizer.from_directory(saved)
        rows = np.arange(len(preset.vocabulary())) if preset else None
        if rows is not None:
            rows = np.concatenate([rows, np.full(tokenizer.vocabulary_size - len(rows), -1)])
        return tokenizer, rows
    if preset is not None:
        base = WordTokenizer(preset.vocabulary())
        return base.extend(lines, min_count=settings.min_count,
                           max_new=settings.max_vocabulary)
    if settings.vocabulary:
        return WordTokenizer.from_directory(settings.vocabulary), None
    return WordTokenizer.build(lines, max_size=settings.max_vocabulary,
                               min_count=settings.min_count), None


def build_model(settings, vocabulary_size, steps, preset=None, rows=None):
    """A compiled stateful ``AwdLstmLanguageModel``: AdamW (ULMFiT's β 0.7/0.99, the AWD-LSTM's
    clipping at global norm 0.25) under the slanted triangular rate; from ``preset`` with its
    embedding and decoder bias re-indexed by ``rows`` when given; with the dropout set
    ``settings.dropouts`` (times ``drop_mult``) when one is named."""
    if preset is not None:
        config = AwdLstmConfig.from_dict({**preset.config, "vocabulary_size": vocabulary_size})
    else:
        config = AwdLstmConfig.from_size(settings.size, vocabulary_size=vocabulary_size)
    if settings.dropouts is not None:
        config = config.with_dropouts(settings.dropouts, settings.drop_mult)
    model = AwdLstmLanguageModel(AwdLstmBackbone(config),
                                 stateful_batch_size=settings.batch_size)
    if preset is not None:
        stored = preset.weights()
        for name, variable in named_variables(model):   # the carried states are not weights
            if name not in stored:
                raise ConfigError(f"The preset {preset.directory} has no weight {name!r}; stage 2 "
                                  "continues a preset that stage 1 (kbl pretrain --model "
                                  "awd-lstm) wrote.")
            value = stored[name]
            if tuple(value.shape) != tuple(variable.shape):
                value = resize_rows(value, rows)
            variable.assign(value)
    decay = settings.layer_decay if settings.layer_decay is not None else (
        1 / 2.6 if preset is not None else 1.0)
    schedule = SlantedTriangular(settings.learning_rate, steps)
    model.compile(optimizer=adamw(model, learning_rate=schedule, beta_1=0.7, beta_2=0.99,
                                  epsilon=1e-8, weight_decay=settings.weight_decay,
                                  global_clipnorm=0.25, layer_decay=decay))
    return model


def heldout_perplexity(model, blocks, batch_size):
    """Perplexity of ``model``'s weights on ``blocks`` (a :func:`tbptt_blocks` layout) read in
    order with states carried, by a model that shares every weight but has its own states."""
    from keras_bert_lab.pipelines.language_model import lm_dataset

    inputs = {name: keras.Input((None,), dtype="int32", name=name)
              for name in ("token_ids", "padding_mask")}
    encoded = model.backbone.encode(inputs["token_ids"], inputs["padding_mask"],
                                    carriers=model.backbone.carriers(batch_size, "heldout_"))
    reader = keras.Model(inputs, model.decoder(encoded["sequence_output"]))
    reader.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                   jit_compile=keras.backend.backend() == "jax")
    reset_states(reader)
    data = lm_dataset(blocks, batch_size, shuffle=False)
    return float(np.exp(reader.evaluate(data, verbose=0)))


def kneser_ney_baseline(train_ids, blocks, batch_size):
    """Interpolated Kneser-Ney trigram perplexity on the targets of ``blocks``, each from the two
    tokens before it in its part of the text."""
    from keras_bert_lab.metrics.ngram import kneser_ney_perplexity

    rows = blocks.reshape(-1, batch_size, blocks.shape[1]).transpose(1, 0, 2)   # (B, W, T+1)
    parts = [np.concatenate([row[0]] + [w[1:] for w in row[1:]]) for row in rows]
    stream = np.concatenate(parts).tolist()
    starts = np.cumsum([0] + [len(p) for p in parts[:-1]])
    positions = [s + i for s, p in zip(starts, parts) for i in range(1, len(p))]
    return kneser_ney_perplexity(train_ids.tolist(), stream, positions)


class AwdLstmRecipe(PretrainRecipe):
    """One ULMFiT language-model stage (see the module docstring) in :class:`PretrainRecipe`'s
    skeleton."""

    name = "awd-lstm"
    log_columns = LOG_COLUMNS
    curves = (("loss", "training loss (with AR/TAR)"), ("perplexity", "training perplexity"))
    curve_groups = None

    def read_inputs(self, settings, output_dir, resume):
        from keras_bert_lab.pipelines.language_model import tbptt_blocks
        from keras_bert_lab.presets.registry import read_preset

        lines = [line for source in settings.corpus for line in read_lines(source)]
        preset = read_preset(settings.init_preset) if settings.init_preset else None
        if preset is not None:
            families.require(preset, "awd_lstm", f"--init-preset {settings.init_preset}: stage "
                                                 "2 continues an AWD-LSTM preset")
        tokenizer, rows = _tokenizer(settings, output_dir if resume else "", lines, preset)
        train_ids = tokenizer.encode_lines(lines)
        heldout = None
        if settings.eval_corpus:
            valid_ids = tokenizer.encode_lines(read_lines(settings.eval_corpus, part="valid"))
            heldout = tbptt_blocks(valid_ids, settings.batch_size, settings.sequence_length)
            heldout = heldout[:settings.eval_batches * settings.batch_size]
        return types.SimpleNamespace(
            preset=preset, tokenizer=tokenizer, rows=rows, train_ids=train_ids, heldout=heldout,
            blocks=tbptt_blocks(train_ids, settings.batch_size, settings.sequence_length))

    def build(self, settings, inputs):
        return build_model(settings, inputs.tokenizer.vocabulary_size, settings.steps,
                           inputs.preset, inputs.rows)

    def phases(self, settings, inputs):
        from keras_bert_lab.pipelines.language_model import lm_dataset

        epochs = -(-settings.steps // self.windows(settings, inputs)) + 1
        return [Phase(0, settings.steps, heldout=None, batch_size=settings.batch_size,
                      sequence_length=settings.sequence_length,
                      stream=lambda skip: lm_dataset(inputs.blocks, settings.batch_size,
                                                     shuffle=False, epochs=epochs,
                                                     skip_batches=skip))]

    @staticmethod
    def windows(settings, inputs):
        """BPTT windows in one pass over the training text."""
        return len(inputs.blocks) // settings.batch_size

    def start(self, model, settings, inputs, output_dir, resume):
        inputs.tokenizer.save(os.path.join(output_dir, "tokenizer"))
        rows = inputs.rows
        metrics = {"train_tokens": int(inputs.train_ids.size),
                   "vocabulary_size": inputs.tokenizer.vocabulary_size,
                   "new_words": int((rows < 0).sum()) if rows is not None else 0}
        if inputs.heldout is not None and inputs.preset is not None and not resume:
            metrics["heldout_perplexity_before"] = heldout_perplexity(model, inputs.heldout,
                                                                      settings.batch_size)
        return metrics

    def finish(self, model, settings, inputs):
        metrics = dict(steps=settings.steps,
                       text_passes=round(settings.steps / self.windows(settings, inputs), 2),
                       tokens_seen=settings.steps * settings.batch_size * settings.sequence_length)
        if inputs.heldout is not None:
            metrics.update(
                heldout_perplexity=heldout_perplexity(model, inputs.heldout, settings.batch_size),
                heldout_tokens=int(inputs.heldout[:, 1:].size),
                kneser_ney_trigram_perplexity=kneser_ney_baseline(inputs.train_ids, inputs.heldout,
                                                                  settings.batch_size))
        return metrics

    def source(self, settings):
        stage = (f"fine-tuned from {settings.init_preset} on" if settings.init_preset
                 else "pretrained on")
        return (f"kbl pretrain --model awd-lstm: {stage} {'+'.join(settings.corpus)} "
                f"({settings.steps} steps, seed {settings.seed})")

    def preset_files(self, settings, inputs):
        return dict(vocabulary=inputs.tokenizer.vocabulary, lowercase=True,
                    preprocessor={"tokenizer": "words",
                                  "sequence_length": settings.sequence_length,
                                  "finetune": FINETUNE},
                    license="as the training text")


run = AwdLstmRecipe().run


# What `kbl pretrain --model` builds from its flags (families.Family.recipe).
SETTINGS = AwdPretrainSettings
