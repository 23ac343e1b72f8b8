"""The masked-LM pretraining run the encoder families share: raw text → masked batches → preset.

BERT's recipe (masked LM + next sentence, ``models/bert/pretrain.py``) and ELECTRA's (a small
generator's masked LM + replaced-token detection, ``models/electra/pretrain.py``) read text the
same way: a WordPiece vocabulary, the document-level corpus tokenized once, the stream of
:func:`~keras_bert_lab.pipelines.pretraining.pretraining_dataset` (new masks every batch, a pure
function of the seed, so a resumed run restarts at the batch it needs), fixed held-out batches,
an optional second phase at a longer sequence length, AdamW or LAMB with warm-up and linear
decay, and ``--time-budget`` (the step timed on a throwaway model, then the steps and the
schedule sized to end with the budget, Cramming's way: :mod:`keras_bert_lab.training.budget`).

:class:`MaskedLMSettings` holds those settings and their checks, :class:`MaskedLMRecipe` the run
in :class:`~keras_bert_lab.training.recipe.PretrainRecipe`'s skeleton. A family's recipe names its
config class (``MaskedLMSettings.CONFIG``) and fills in its model (:meth:`MaskedLMRecipe.model`),
its masking rates (``MASK_RATES``), how a stream batch becomes its model's input
(:meth:`MaskedLMRecipe.model_inputs`) and the metrics only it has.
"""

import dataclasses
import json
import logging
import os
import time
import types

import keras
import numpy as np

from keras_bert_lab.data.registry import locate
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.training import budget
from keras_bert_lab.training.optimizers import adamw, lamb
from keras_bert_lab.training.pretrain import Phase
from keras_bert_lab.training.recipe import PretrainRecipe
from keras_bert_lab.training.run import write_json
from keras_bert_lab.training.run_settings import RunSettings
from keras_bert_lab.training.schedules import WarmupLinearDecay

logger = logging.getLogger(__name__)
# --jit-compile values (what Keras' compile(jit_compile=) gets)
JIT_VALUES = {"auto": "auto", "true": True, "1": True, "yes": True, "false": False, "0": False,
              "no": False}
HELDOUT_SEED = 12345   # the held-out batches' pairs and masks: the same at every evaluation


@dataclasses.dataclass
class MaskedLMSettings(RunSettings):
    """The settings of a masked-LM run (stored as ``settings.json``); a family's subclass sets
    ``CONFIG``, its config class (``sizes``, ``from_size``, ``label``)."""

    CONFIG = None
    AT_LEAST_ONE = ("accumulation", "mask_selection_length")
    LATER = ("dropout", "time_budget", "packing")

    vocabulary: str | None = None      # vocab.txt path; None: the bert-base-uncased vocabulary
    warmup_steps: int | None = None    # None: 10 % of all steps
    optimizer: str = "adamw"           # or "lamb"
    accumulation: int = 1              # batches per optimizer update; `steps` counts updates
    precision: str = "float32"         # "mixed_bfloat16", "mixed_float16"
    jit_compile: str = "auto"
    mask_selection_rate: float = 0.15
    mask_selection_length: int = 20
    whole_word_masking: bool = False
    next_sentence: bool = True
    packing: bool = False              # no NSP: full blocks across sentence and document ends
    phase2_steps: int = 0              # extra steps at phase2_sequence_length (BERT's 512 phase)
    phase2_sequence_length: int = 512
    phase2_mask_selection_length: int = 80
    dropout: float = 0.1               # hidden and attention dropout
    # A wall-clock budget ("20m", "1h30m"): the steps and the schedule sized to end with it
    time_budget: str | None = None

    def __post_init__(self):
        super().__post_init__()
        label = self.CONFIG.label
        if self.optimizer not in ("adamw", "lamb"):
            raise ConfigError(f"--optimizer {self.optimizer!r}: choose adamw or lamb.")
        if self.precision not in ("float32", "mixed_bfloat16", "mixed_float16"):
            raise ConfigError(f"--precision {self.precision!r}: choose float32, mixed_bfloat16 "
                              "or mixed_float16.")
        if self.size not in self.CONFIG.sizes:
            raise ConfigError(f"--size {self.size!r}: choose one of "
                              f"{', '.join(self.CONFIG.sizes)}.")
        if not 0 <= self.dropout < 1:
            raise ConfigError(f"--dropout {self.dropout} must be in [0, 1); {label}'s is 0.1.")
        positions = self.model_config().max_positions
        shortest = 5 if self.next_sentence else 3   # [CLS] A [SEP] (B [SEP]), a token in each
        for flag, length in (("--sequence-length", self.sequence_length),
                             ("--phase2-sequence-length", self.phase2_steps and
                              self.phase2_sequence_length)):
            if length and not shortest <= length <= positions:
                raise ConfigError(f"{flag} {length} is out of range: [CLS] A [SEP]"
                                  f"{' B [SEP]' if self.next_sentence else ''} needs at least "
                                  f"{shortest} tokens, and {label}-{self.size} has {positions} "
                                  "positions.")
        if not 0 < self.mask_selection_rate <= 1:
            raise ConfigError(f"--mask-selection-rate {self.mask_selection_rate} must be in "
                              "(0, 1]; BERT and ELECTRA-Small mask 0.15 of the tokens.")
        if self.phase2_steps < 0 or (self.warmup_steps is not None and self.warmup_steps < 0):
            raise ConfigError("--phase2-steps and --warmup-steps must be at least 0.")
        if self.learning_rate is not None and not self.learning_rate > 0:
            raise ConfigError(f"--learning-rate {self.learning_rate} must be above 0.")
        if self.packing and self.next_sentence:
            raise ConfigError("--packing true fills blocks across documents, which leaves no "
                              "next-sentence pairs; add --next-sentence false (masked LM only).")
        if self.time_budget is not None:
            budget.parse_duration(self.time_budget)
            if self.phase2_steps:
                raise ConfigError("--time-budget sizes one phase of training; leave out "
                                  "--phase2-steps (or give --steps instead of a budget).")
        if str(self.jit_compile).lower() not in JIT_VALUES:
            raise ConfigError(f"--jit-compile {self.jit_compile!r}: choose auto, true or false.")

    @property
    def model_options(self):
        """The config fields these settings choose besides the size."""
        return dict(dropout=self.dropout, attention_dropout=self.dropout)

    def model_config(self, **overrides):
        """The family's config of ``size`` with :attr:`model_options` and ``overrides``."""
        return self.CONFIG.from_size(self.size, **{**self.model_options, **overrides})

    @property
    def total_steps(self):
        return self.steps + self.phase2_steps

    @property
    def longest_sequence(self):
        return max(self.sequence_length, self.phase2_sequence_length if self.phase2_steps else 0)


def load_tokenizer(settings):
    """The run's ``WordPieceTokenizer``: ``settings.vocabulary`` or bert-base-uncased's."""
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    return WordPieceTokenizer(settings.vocabulary or locate("bert_uncased_vocab"))


def compile_recipe_model(model, settings):
    """``model.compile`` with the recipe's optimizer (AdamW or LAMB; gradient accumulation, the
    loss scale of ``mixed_float16``), warm-up + linear decay schedule and ``--jit-compile``."""
    warmup = (settings.warmup_steps if settings.warmup_steps is not None
              else max(1, settings.total_steps // 10))
    schedule = WarmupLinearDecay(settings.learning_rate, min(warmup, settings.total_steps),
                                 settings.total_steps)
    builder = adamw if settings.optimizer == "adamw" else lamb
    extra = ({"gradient_accumulation_steps": settings.accumulation}
             if settings.accumulation > 1 else {})
    optimizer = builder(model, learning_rate=schedule, weight_decay=settings.weight_decay, **extra)
    if settings.precision == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    model.compile(optimizer=optimizer, jit_compile=JIT_VALUES[str(settings.jit_compile).lower()])
    return model


def stream_options(settings, phase, mask_rates=(0.8, 0.1)):
    """:func:`~keras_bert_lab.pipelines.pretraining.pretraining_dataset` options of a phase;
    ``mask_rates``: the ``[MASK]`` and random-token shares of the selected positions."""
    long = phase == 2
    return dict(batch_size=settings.batch_size,
                sequence_length=(settings.phase2_sequence_length if long
                                 else settings.sequence_length),
                mask_selection_length=(settings.phase2_mask_selection_length if long
                                       else settings.mask_selection_length),
                mask_selection_rate=settings.mask_selection_rate,
                mask_token_rate=mask_rates[0], random_token_rate=mask_rates[1],
                whole_word_masking=settings.whole_word_masking,
                next_sentence=settings.next_sentence, pack=settings.packing,
                seed=settings.seed + (1000 if long else 0))


def heldout_dataset(settings, tokenizer, corpus, phase=1, mask_rates=(0.8, 0.1)):
    """``eval_batches`` fixed ``(features, labels, weights)`` batches (the same pairs and masks at
    every evaluation), in memory."""
    import tensorflow as tf

    from keras_bert_lab.pipelines.pretraining import pretraining_dataset

    options = dict(stream_options(settings, phase, mask_rates), seed=HELDOUT_SEED)
    batches = list(pretraining_dataset(corpus, tokenizer, **options)
                   .take(settings.eval_batches).as_numpy_iterator())
    stacked = keras.tree.map_structure(lambda *parts: np.stack(parts), *batches)
    return tf.data.Dataset.from_tensor_slices(stacked)  # known length: no "ran out of data"


def unigram_baseline(train_corpus, heldout, special_ids):
    """Accuracy of always predicting the most frequent (non-special) training token on the
    masked positions of ``heldout`` (``(features, labels, weights)`` batches)."""
    counts = np.bincount(np.asarray(train_corpus.token_ids))
    counts[[i for i in special_ids if i < len(counts)]] = 0
    best = int(np.argmax(counts))
    hits = total = 0.0
    for _, labels, weights in heldout:
        ids, w = np.asarray(labels["mlm"]), np.asarray(weights["mlm"])
        hits += float(((ids == best) * w).sum())
        total += float(w.sum())
    return hits / max(total, 1.0), best


def preset_preprocessor(settings):
    """The preset's preprocessor entry: the sequence length, and for a run without next-sentence
    prediction (BERT's MLM-only runs, every ELECTRA run) the advice to fine-tune on mean pooling
    (``kbl finetune`` takes it as the ``--pooling`` default): nothing trains the pooler then, and
    its random ``[CLS]`` projection cost the 20-minute MLM-only BERT preset 5 points of Rotten
    Tomatoes accuracy against mean pooling (benchmarks/results/quality.md)."""
    entry = {"sequence_length": settings.sequence_length}
    if not settings.next_sentence:
        entry["finetune"] = {"pooling": "mean"}
    return entry


class MaskedLMRecipe(PretrainRecipe):
    """The shared run (see the module docstring); a family sets ``MASK_RATES`` and fills in
    :meth:`model` (and :meth:`model_inputs`, :meth:`extra_metrics` where it differs)."""

    MASK_RATES = (0.8, 0.1)   # BERT's 80 % [MASK], 10 % random token, 10 % kept

    def model(self, settings, vocabulary_size):
        """The family's pretraining task, built (not compiled) for ``settings``."""
        raise NotImplementedError

    def model_inputs(self, dataset):
        """``dataset`` (``(features, labels, weights)`` batches) as the model's ``fit`` takes it."""
        return dataset

    def extra_metrics(self, model, settings, inputs, metrics):
        """Metrics only this family reports after training (``metrics``: the shared ones)."""
        return {}

    def build_model(self, settings, vocabulary_size):
        """The compiled model (:func:`compile_recipe_model`) in ``settings.precision``."""
        keras.config.set_dtype_policy(settings.precision)
        return compile_recipe_model(self.model(settings, vocabulary_size), settings)

    def stream(self, settings, inputs, phase, skip=0):
        from keras_bert_lab.pipelines.pretraining import pretraining_dataset

        options = stream_options(settings, phase, self.MASK_RATES)
        return self.model_inputs(pretraining_dataset(inputs.train, inputs.tokenizer, **options)
                                 .skip(skip))

    def heldout(self, settings, inputs, phase=1):
        """The fixed held-out batches as they come from the stream (labels apart)."""
        return heldout_dataset(settings, inputs.tokenizer, inputs.heldout, phase, self.MASK_RATES)

    def read_inputs(self, settings, output_dir, resume):
        from keras_bert_lab.pipelines.pretraining import tokenize_corpus

        started = time.time()
        tokenizer = load_tokenizer(settings)
        corpus = settings.corpus[0] if len(settings.corpus) == 1 else list(settings.corpus)
        train = tokenize_corpus(corpus, tokenizer)
        heldout = tokenize_corpus(settings.eval_corpus, tokenizer) if settings.eval_corpus \
            else None
        logger.info("corpus ready in %.1fs", time.time() - started)
        return types.SimpleNamespace(tokenizer=tokenizer, train=train, heldout=heldout,
                                     clock=time.time(), sizing=None, raw_heldout=None)

    def fit_settings(self, settings, inputs, output_dir, resume, verbose):
        if not settings.time_budget:
            return settings
        settings, inputs.sizing = self.size_to_budget(settings, output_dir, resume, inputs,
                                                      verbose)
        return settings

    def build(self, settings, inputs):
        return self.build_model(settings, inputs.tokenizer.vocabulary_size)

    def phases(self, settings, inputs):
        out = []
        for phase, (begin, end) in ((1, (0, settings.steps)),
                                    (2, (settings.steps, settings.total_steps))):
            if begin == end:
                continue
            heldout = None
            if inputs.heldout is not None:
                raw = self.heldout(settings, inputs, phase)
                if inputs.raw_heldout is None:   # the first phase's: the final evaluation's
                    inputs.raw_heldout = raw
                heldout = self.model_inputs(raw)
            out.append(Phase(
                begin, end,
                stream=lambda skip, phase=phase: self.stream(settings, inputs, phase, skip),
                heldout=heldout, batch_size=settings.batch_size,
                sequence_length=stream_options(settings, phase)["sequence_length"]))
        inputs.phases = out
        return out

    def size_to_budget(self, settings, output_dir, resume, inputs, verbose=1):
        """``settings`` with ``steps`` and ``warmup_steps`` sized to ``settings.time_budget``
        (:mod:`keras_bert_lab.training.budget`) and the sizing as a dict: measured now on a
        throwaway model (``inputs.clock``: when the budget began), or read back from the
        ``budget.json`` of the run a resume continues."""
        path = os.path.join(output_dir, budget.BUDGET_FILE)
        if resume and os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                sizing = json.load(f)
        else:
            sizing = self._measure_budget(settings, inputs, verbose)
        logger.info("--time-budget %s: %.3f s a step, %.1f s of compiling and measuring → %d "
                    "steps (warm-up %d)", settings.time_budget, sizing["step_seconds"],
                    sizing["spent_seconds"], sizing["steps"], sizing["warmup_steps"])
        if sizing["spent_seconds"] + sizing["step_seconds"] > sizing["budget_seconds"]:
            logger.warning("--time-budget %s is used up by compiling and measuring (%.0f s): the "
                           "run trains %d step(s) only; give a longer budget.",
                           settings.time_budget, sizing["spent_seconds"], sizing["steps"])
        sized = dataclasses.replace(settings, steps=sizing["steps"],
                                    warmup_steps=sizing["warmup_steps"])
        return sized, sizing

    def _measure_budget(self, settings, inputs, verbose):
        import tempfile

        from keras_bert_lab.training.callbacks import StepLog
        from keras_bert_lab.training.checkpoints import save_checkpoint

        keras.utils.set_random_seed(settings.seed)
        probe = self.build_model(settings, inputs.tokenizer.vocabulary_size)
        with tempfile.TemporaryDirectory() as scratch:   # the run's per-batch work included
            log = StepLog(os.path.join(scratch, "log.csv"), 1, settings.log_every, ["step"])
            logger.info("--time-budget: timing the training step")
            compile_s, micro_s = budget.measure(probe, self.stream(settings, inputs, 1),
                                                callbacks=[log], verbose=verbose)
            began = time.perf_counter()
            save_checkpoint(probe, os.path.join(scratch, "checkpoints"), 0)
            save_s = time.perf_counter() - began
        eval_compile_s = eval_s = 0.0
        if inputs.heldout is not None:
            eval_compile_s, eval_s = budget.measure_evaluation(
                probe, self.model_inputs(self.heldout(settings, inputs)))
        del probe
        keras.backend.clear_session()   # the real model is built as a run without a budget
        step_s = micro_s * settings.accumulation + save_s / settings.checkpoint_every
        seconds = budget.parse_duration(settings.time_budget)
        # Spent already, the real model's compiles, and the last evaluation of the run.
        fixed = time.time() - inputs.clock + compile_s + eval_compile_s + eval_s
        steps = budget.steps_for_budget(seconds, step_s, fixed,
                                        eval_s if inputs.heldout is not None else 0.0,
                                        settings.eval_every)
        warmup = (settings.warmup_steps if settings.warmup_steps is not None
                  else max(1, steps // 10))
        return {"time_budget": settings.time_budget, "budget_seconds": seconds,
                "step_seconds": round(step_s, 5), "compile_seconds": round(compile_s, 2),
                "eval_seconds": round(eval_s, 3), "spent_seconds": round(fixed, 2),
                "steps": steps, "warmup_steps": min(warmup, steps - 1)}  # the schedule ends at 0

    def start(self, model, settings, inputs, output_dir, resume):
        if inputs.sizing:
            write_json(os.path.join(output_dir, budget.BUDGET_FILE), inputs.sizing)
        return {}

    def finish(self, model, settings, inputs):
        tokenizer, metrics = inputs.tokenizer, {"steps": settings.total_steps}
        if inputs.heldout is not None:
            result = model.evaluate(inputs.phases[0].heldout, return_dict=True, verbose=0)
            special = [tokenizer.token_to_id(t) for t in tokenizer.special_tokens.values() if t]
            baseline, best = unigram_baseline(inputs.train, inputs.raw_heldout, special)
            metrics.update({f"heldout_{k}": float(v) for k, v in result.items()})
            metrics.update(unigram_mlm_accuracy=baseline,
                           unigram_token=tokenizer.id_to_token(best))
        metrics.update(self.extra_metrics(model, settings, inputs, metrics))
        if inputs.sizing:   # the budget's own clock (a resumed run: this session's part only)
            metrics.update(time_budget_seconds=inputs.sizing["budget_seconds"],
                           trained_seconds=round(time.time() - inputs.clock, 1))
        return metrics

    def preset_files(self, settings, inputs):
        return dict(vocabulary=inputs.tokenizer.vocabulary, lowercase=inputs.tokenizer.lowercase,
                    preprocessor=preset_preprocessor(settings),
                    license="as the pretraining corpus")
