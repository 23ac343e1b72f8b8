"""The pretraining recipe end to end: raw text → a BERT preset, resumable at any step.

``run(settings, output_dir)`` is what ``kbl pretrain`` calls. It ties the pieces together: the
corpus and tokenizer (:mod:`keras_bert_lab.data`, :mod:`keras_bert_lab.preprocessing`), the
pretraining stream (:mod:`keras_bert_lab.pipelines.pretraining`), the masked-LM + next-sentence
model (:mod:`keras_bert_lab.tasks`), BERT's optimizer, schedule and the resumable training loop
(:mod:`keras_bert_lab.training`), the held-out evaluation and the final preset. Devlin et al.
(2019, App. A.2) pretrain with AdamW (lr 1e-4, β₂ 0.999, decay 0.01), 10,000 warm-up steps then
linear decay, 90 % of the steps at 128 tokens and the rest at 512 (``phase2_steps``); the defaults
here scale that down to a laptop-sized run. The settings also reach the parts of later recipes
(MosaicBERT, Cramming) that change the model or its objective, each off by default: the modern
encoder options of :class:`~keras_bert_lab.models.bert.config.BertConfig` (``--norm-first``,
``--use-bias false``, ``--feedforward geglu``, ``--position-embedding rotary``), ``--dropout 0``,
a higher ``--mask-selection-rate``, ``--next-sentence false`` (masked LM only) with
``--packing true`` (full blocks of text, no padding: ``pairs.packed_rows``), and
``--time-budget 20m`` (the steps and the schedule sized to a wall-clock budget, Cramming's way:
:mod:`keras_bert_lab.training.budget`).

The output directory holds ``settings.json`` (the run's settings: a directory is never reused by a
different run), ``checkpoints/``, ``log.csv`` (train rows every ``log_every`` steps and held-out
rows every ``eval_every``), ``curves.png``, ``metrics.json`` and ``preset/``.

Resuming (``resume=True``) restores weights, optimizer state, dropout RNG state and the step from
the newest checkpoint; the data stream is a pure function of the seed, so it restarts at the batch
where the checkpoint was taken (see :mod:`keras_bert_lab.training.pretrain`).
"""

import dataclasses
import json
import logging
import os
import time
import types

import keras
import numpy as np

# The text side (TensorFlow) is imported inside the run functions, so that `kbl` starts, and
# `kbl models` / `kbl preset …` run, without TensorFlow on the JAX and PyTorch backends.
from keras_bert_lab.data.registry import locate
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.bert.backbone import BertBackbone
from keras_bert_lab.models.bert.config import SIZES, BertConfig
from keras_bert_lab.training.run_settings import RunSettings
from keras_bert_lab.models.bert.pretrainer import BertPretrainer
from keras_bert_lab.training import budget
from keras_bert_lab.training.optimizers import adamw, lamb
from keras_bert_lab.training.pretrain import Phase
from keras_bert_lab.training.recipe import PretrainRecipe
from keras_bert_lab.training.run import write_json
from keras_bert_lab.training.schedules import WarmupLinearDecay

logger = logging.getLogger(__name__)
# --jit-compile values (what Keras' compile(jit_compile=) gets)
JIT_VALUES = {"auto": "auto", "true": True, "1": True, "yes": True, "false": False, "0": False,
              "no": False}


@dataclasses.dataclass
class PretrainSettings(RunSettings):
    """Everything that defines a pretraining run (stored as ``settings.json``)."""

    AT_LEAST_ONE = ("accumulation", "mask_selection_length")
    LATER = ("dropout", "norm_first", "use_bias", "feedforward", "position_embedding",
             "time_budget", "packing", "intermediate_size")

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
    packing: bool = False              # MLM only: full blocks across sentence and document ends
    phase2_steps: int = 0              # extra steps at phase2_sequence_length (BERT's 512 phase)
    phase2_sequence_length: int = 512
    phase2_mask_selection_length: int = 80
    dropout: float = 0.1               # hidden and attention dropout (0: the fused attention path)
    # The modern encoder options (models.bert_config; all off: BERT): pre-LN, biases, GEGLU, rotary
    norm_first: bool = False
    use_bias: bool = True
    feedforward: str = "gelu"
    position_embedding: str = "learned"
    intermediate_size: int | None = None   # None: 4 × hidden; GEGLU at equal weights: 8/3 ×
    # A wall-clock budget ("20m", "1h30m"): the steps and the schedule sized to end with it
    time_budget: str | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.optimizer not in ("adamw", "lamb"):
            raise ConfigError(f"--optimizer {self.optimizer!r}: choose adamw or lamb.")
        if self.precision not in ("float32", "mixed_bfloat16", "mixed_float16"):
            raise ConfigError(f"--precision {self.precision!r}: choose float32, mixed_bfloat16 "
                              "or mixed_float16.")
        if self.size not in SIZES:
            raise ConfigError(f"--size {self.size!r}: choose one of {', '.join(SIZES)}.")
        if not 0 <= self.dropout < 1:
            raise ConfigError(f"--dropout {self.dropout} must be in [0, 1); BERT's is 0.1.")
        positions = BertConfig.from_size(self.size, **self.encoder_options).max_positions
        shortest = 5 if self.next_sentence else 3   # [CLS] A [SEP] (B [SEP]), a token in each
        for flag, length in (("--sequence-length", self.sequence_length),
                             ("--phase2-sequence-length", self.phase2_steps and
                              self.phase2_sequence_length)):
            if length and not shortest <= length <= positions:
                raise ConfigError(f"{flag} {length} is out of range: [CLS] A [SEP]"
                                  f"{' B [SEP]' if self.next_sentence else ''} needs at least "
                                  f"{shortest} tokens, and BERT-{self.size} has {positions} "
                                  "positions.")
        if not 0 < self.mask_selection_rate <= 1:
            raise ConfigError(f"--mask-selection-rate {self.mask_selection_rate} must be in "
                              "(0, 1]; BERT masks 0.15 of the tokens.")
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
    def encoder_options(self):
        """The ``BertConfig`` fields these settings choose besides the size."""
        options = dict(dropout=self.dropout, attention_dropout=self.dropout,
                       norm_first=self.norm_first, use_bias=self.use_bias,
                       feedforward=self.feedforward, position_embedding=self.position_embedding)
        if self.intermediate_size is not None:
            options["intermediate_size"] = self.intermediate_size
        return options

    @property
    def total_steps(self):
        return self.steps + self.phase2_steps


def load_tokenizer(settings):
    """The run's ``WordPieceTokenizer``: ``settings.vocabulary`` or bert-base-uncased's."""
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    return WordPieceTokenizer(settings.vocabulary or locate("bert_uncased_vocab"))


def build_model(settings, vocabulary_size):
    """A compiled ``BertPretrainer`` of ``settings.size`` with BERT's optimizer and schedule."""
    keras.config.set_dtype_policy(settings.precision)
    longest = max(settings.sequence_length,
                  settings.phase2_sequence_length if settings.phase2_steps else 0)
    config = BertConfig.from_size(settings.size, vocabulary_size=vocabulary_size,
                                  max_positions=max(512, longest), **settings.encoder_options)
    model = BertPretrainer(BertBackbone(config))
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


def stream_options(settings, phase):
    """:func:`~keras_bert_lab.pipelines.pretraining.pretraining_dataset` options of a phase."""
    long = phase == 2
    return dict(batch_size=settings.batch_size,
                sequence_length=(settings.phase2_sequence_length if long
                                 else settings.sequence_length),
                mask_selection_length=(settings.phase2_mask_selection_length if long
                                       else settings.mask_selection_length),
                mask_selection_rate=settings.mask_selection_rate,
                whole_word_masking=settings.whole_word_masking,
                next_sentence=settings.next_sentence, pack=settings.packing,
                seed=settings.seed + (1000 if long else 0))


def heldout_dataset(settings, tokenizer, corpus, phase=1):
    """``eval_batches`` fixed batches (same pairs and masks at every evaluation), in memory."""
    import tensorflow as tf

    from keras_bert_lab.pipelines.pretraining import pretraining_dataset

    options = dict(stream_options(settings, phase), seed=12345)
    batches = list(pretraining_dataset(corpus, tokenizer, **options)
                   .take(settings.eval_batches).as_numpy_iterator())
    stacked = keras.tree.map_structure(lambda *parts: np.stack(parts), *batches)
    return tf.data.Dataset.from_tensor_slices(stacked)  # known length: no "ran out of data"


def phases(settings, tokenizer, train_corpus, eval_corpus):
    """The :class:`~keras_bert_lab.training.pretrain.Phase`\\ s of the run (BERT's 128 then 512)."""
    from keras_bert_lab.pipelines.pretraining import pretraining_dataset

    out = []
    for phase, (begin, end) in ((1, (0, settings.steps)),
                                (2, (settings.steps, settings.total_steps))):
        if begin == end:
            continue
        options = stream_options(settings, phase)
        out.append(Phase(
            begin, end,
            stream=lambda skip, options=options: pretraining_dataset(
                train_corpus, tokenizer, **options).skip(skip),
            heldout=heldout_dataset(settings, tokenizer, eval_corpus, phase) if eval_corpus
            else None,
            batch_size=settings.batch_size, sequence_length=options["sequence_length"]))
    return out


def unigram_baseline(train_corpus, heldout, special_ids):
    """Accuracy of always predicting the most frequent (non-special) training token."""
    counts = np.bincount(np.asarray(train_corpus.token_ids))
    counts[[i for i in special_ids if i < len(counts)]] = 0
    best = int(np.argmax(counts))
    hits = total = 0.0
    for _, labels, weights in heldout:
        ids, w = np.asarray(labels["mlm"]), np.asarray(weights["mlm"])
        hits += float(((ids == best) * w).sum())
        total += float(w.sum())
    return hits / max(total, 1.0), best


def size_to_budget(settings, output_dir, resume, tokenizer, train_corpus, eval_corpus, clock,
                   verbose=1):
    """``settings`` with ``steps`` and ``warmup_steps`` sized to ``settings.time_budget``
    (:mod:`keras_bert_lab.training.budget`) and the sizing as a dict: measured now on a throwaway
    model (``clock``: when the budget began), or read back from the ``budget.json`` of the run a
    resume continues."""
    from keras_bert_lab.pipelines.pretraining import pretraining_dataset

    path = os.path.join(output_dir, budget.BUDGET_FILE)
    if resume and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            sizing = json.load(f)
    else:
        import tempfile

        from keras_bert_lab.training.callbacks import StepLog
        from keras_bert_lab.training.checkpoints import save_checkpoint

        keras.utils.set_random_seed(settings.seed)
        probe = build_model(settings, tokenizer.vocabulary_size)
        stream = pretraining_dataset(train_corpus, tokenizer, **stream_options(settings, 1))
        with tempfile.TemporaryDirectory() as scratch:   # the run's per-batch work included
            log = StepLog(os.path.join(scratch, "log.csv"), 1, settings.log_every, ["step"])
            logger.info("--time-budget: timing the training step")
            compile_s, micro_s = budget.measure(probe, stream, callbacks=[log],
                                                verbose=verbose)
            began = time.perf_counter()
            save_checkpoint(probe, os.path.join(scratch, "checkpoints"), 0)
            save_s = time.perf_counter() - began
        eval_compile_s = eval_s = 0.0
        if eval_corpus is not None:
            eval_compile_s, eval_s = budget.measure_evaluation(
                probe, heldout_dataset(settings, tokenizer, eval_corpus))
        del probe
        keras.backend.clear_session()   # the real model is built as a run without a budget
        step_s = micro_s * settings.accumulation + save_s / settings.checkpoint_every
        seconds = budget.parse_duration(settings.time_budget)
        # Spent already, the real model's compiles, and the last evaluation of the run.
        fixed = time.time() - clock + compile_s + eval_compile_s + eval_s
        steps = budget.steps_for_budget(seconds, step_s, fixed, eval_s if eval_corpus else 0.0,
                                        settings.eval_every)
        warmup = (settings.warmup_steps if settings.warmup_steps is not None
                  else max(1, steps // 10))
        sizing = {"time_budget": settings.time_budget, "budget_seconds": seconds,
                  "step_seconds": round(step_s, 5), "compile_seconds": round(compile_s, 2),
                  "eval_seconds": round(eval_s, 3), "spent_seconds": round(fixed, 2),
                  "steps": steps, "warmup_steps": min(warmup, steps - 1)}  # ends at 0
    logger.info("--time-budget %s: %.3f s a step, %.1f s of compiling and measuring → %d steps "
                "(warm-up %d)", settings.time_budget, sizing["step_seconds"],
                sizing["spent_seconds"], sizing["steps"], sizing["warmup_steps"])
    if sizing["spent_seconds"] + sizing["step_seconds"] > sizing["budget_seconds"]:
        logger.warning("--time-budget %s is used up by compiling and measuring (%.0f s): the run "
                       "trains %d step(s) only; give a longer budget.", settings.time_budget,
                       sizing["spent_seconds"], sizing["steps"])
    sized = dataclasses.replace(settings, steps=sizing["steps"],
                                warmup_steps=sizing["warmup_steps"])
    return sized, sizing


def preset_preprocessor(settings):
    """The preset's preprocessor entry: the sequence length, and for a run without next-sentence
    prediction the advice to fine-tune on mean pooling (``kbl finetune`` takes it as the
    ``--pooling`` default): nothing trains the pooler then, and its random ``[CLS]`` projection
    cost the 20-minute MLM-only preset 5 points of Rotten Tomatoes accuracy against mean
    pooling (benchmarks/results/quality.md)."""
    entry = {"sequence_length": settings.sequence_length}
    if not settings.next_sentence:
        entry["finetune"] = {"pooling": "mean"}
    return entry


class BertRecipe(PretrainRecipe):
    """BERT's run (see the module docstring) in :class:`PretrainRecipe`'s skeleton.

    Example (a minute on a laptop CPU):
    >>> settings = PretrainSettings(size="tiny", steps=50, batch_size=8,   # doctest: +SKIP
    ...                             sequence_length=64)
    >>> run(settings, "/tmp/kbl-run")["heldout_mlm_accuracy"]             # doctest: +SKIP
    """

    name = "bert"
    curves = tuple((k, k.replace("_", " ")) for k in ("mlm_loss", "mlm_accuracy", "nsp_accuracy"))

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
                                     clock=time.time(), sizing=None)

    def fit_settings(self, settings, inputs, output_dir, resume, verbose):
        if not settings.time_budget:
            return settings
        settings, inputs.sizing = size_to_budget(settings, output_dir, resume, inputs.tokenizer,
                                                 inputs.train, inputs.heldout, inputs.clock,
                                                 verbose)
        return settings

    def build(self, settings, inputs):
        return build_model(settings, inputs.tokenizer.vocabulary_size)

    def phases(self, settings, inputs):
        inputs.phases = phases(settings, inputs.tokenizer, inputs.train, inputs.heldout)
        return inputs.phases

    def start(self, model, settings, inputs, output_dir, resume):
        if inputs.sizing:
            write_json(os.path.join(output_dir, budget.BUDGET_FILE), inputs.sizing)
        return {}

    def finish(self, model, settings, inputs):
        tokenizer, metrics = inputs.tokenizer, {"steps": settings.total_steps}
        if inputs.heldout is not None:
            heldout = inputs.phases[0].heldout  # the 128-token phase's fixed batches
            result = model.evaluate(heldout, return_dict=True, verbose=0)
            special = [tokenizer.token_to_id(t) for t in tokenizer.special_tokens.values() if t]
            baseline, best = unigram_baseline(inputs.train, heldout, special)
            metrics.update({f"heldout_{k}": float(v) for k, v in result.items()})
            metrics.update(unigram_mlm_accuracy=baseline, unigram_token=tokenizer.id_to_token(best),
                           nsp_chance=0.5)
        if inputs.sizing:   # the budget's own clock (a resumed run: this session's part only)
            metrics.update(time_budget_seconds=inputs.sizing["budget_seconds"],
                           trained_seconds=round(time.time() - inputs.clock, 1))
        return metrics

    def preset_files(self, settings, inputs):
        return dict(vocabulary=inputs.tokenizer.vocabulary, lowercase=inputs.tokenizer.lowercase,
                    preprocessor=preset_preprocessor(settings),
                    license="as the pretraining corpus")


run = BertRecipe().run


# What `kbl pretrain --model` builds from its flags (families.Family.recipe).
SETTINGS = PretrainSettings
