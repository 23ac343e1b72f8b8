"""The pretraining recipe end to end: raw text → a BERT preset, resumable at any step.

``run(settings, output_dir)`` is what ``kbl pretrain`` calls. It ties the pieces together: the
corpus and tokenizer (``text/``), the masked-LM + next-sentence model (``tasks/``), BERT's
optimizer and schedule (``training/``), checkpoints, logs, a plot, the held-out evaluation and the
final preset. Devlin et al. (2019, App. A.2) pretrain with AdamW (lr 1e-4, β₂ 0.999, decay 0.01),
10,000 warm-up steps then linear decay, 90 % of the steps at 128 tokens and the rest at 512
(``phase2_steps``); the defaults here scale that down to a laptop-sized run.

The output directory holds ``settings.json`` (the run's settings: a directory is never reused by a
different run), ``checkpoints/``, ``log.csv`` (train rows every ``log_every`` steps and held-out
rows every ``eval_every``), ``curves.png``, ``metrics.json`` and ``preset/``.

Resuming (``resume=True``) restores weights, optimizer state, dropout RNG state and the step from
the newest checkpoint; the data stream is a pure function of the seed, so it restarts at the batch
where the checkpoint was taken. A run killed at step 300 of 600 and resumed ends with the weights
of an unbroken run (same seed, same backend) up to float round-off.
"""

import csv
import dataclasses
import json
import logging
import math
import os
import shutil
import time

import keras
import numpy as np

from keras_bert_lab.errors import DataError, TrainingError

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class PretrainSettings:
    """Everything that defines a pretraining run (stored as ``settings.json``)."""

    corpus: tuple = ("wikitext2",)
    eval_corpus: str | None = "wikitext2:valid"
    vocab: str | None = None           # vocab.txt path; None: the bert-base-uncased vocabulary
    size: str = "mini"
    seq_len: int = 128
    batch_size: int = 32
    steps: int = 1000
    learning_rate: float = 5e-4
    warmup_steps: int | None = None    # None: 10 % of all steps
    weight_decay: float = 0.01
    optimizer: str = "adamw"           # or "lamb"
    accumulation: int = 1              # batches per optimizer update; `steps` counts updates
    precision: str = "float32"         # "mixed_bfloat16", "mixed_float16"
    jit_compile: str = "auto"
    masked_lm_prob: float = 0.15
    max_predictions: int = 20
    whole_word_masking: bool = False
    next_sentence: bool = True
    phase2_steps: int = 0              # extra steps at phase2_seq_len (BERT's 512-token phase)
    phase2_seq_len: int = 512
    phase2_max_predictions: int = 80
    checkpoint_every: int = 100
    keep_checkpoints: int = 3
    eval_every: int = 200
    eval_batches: int = 20
    log_every: int = 20
    seed: int = 0

    def __post_init__(self):
        self.corpus = (self.corpus,) if isinstance(self.corpus, str) else tuple(self.corpus)
        positive = ("seq_len", "batch_size", "steps", "accumulation", "checkpoint_every",
                    "keep_checkpoints", "eval_every", "eval_batches", "log_every", "max_predictions")
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got "
                                 f"{getattr(self, name)}.")
        if self.optimizer not in ("adamw", "lamb"):
            raise ValueError(f"--optimizer {self.optimizer!r}: choose adamw or lamb.")
        if self.precision not in ("float32", "mixed_bfloat16", "mixed_float16"):
            raise ValueError(f"--precision {self.precision!r}: choose float32, mixed_bfloat16 or "
                             "mixed_float16.")

    @property
    def total_steps(self):
        return self.steps + self.phase2_steps

    def to_dict(self):
        data = dataclasses.asdict(self)
        data["corpus"] = list(self.corpus)
        return data


# ---- callbacks -------------------------------------------------------------------------------
class RunLog(keras.callbacks.Callback):
    """Adds ``tokens_per_s`` to the progress bar and appends rows to ``log.csv``."""

    COLUMNS = ("step", "split", "loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy",
               "learning_rate", "tokens_per_s", "elapsed_s")

    def __init__(self, path, tokens_per_step, log_every):
        super().__init__()
        self.path, self.tokens_per_step, self.log_every = path, tokens_per_step, log_every
        self.start = time.time()
        self._window = None
        self._logged = None

    def _step(self):
        return int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def _write(self, row):
        new = not os.path.exists(self.path)
        with open(self.path, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=self.COLUMNS, extrasaction="ignore")
            if new:
                writer.writeheader()
            writer.writerow(row)

    def on_train_begin(self, logs=None):
        self._logged = self._step()  # rows are written after updates, never for the start state

    def on_train_batch_begin(self, batch, logs=None):
        if self._window is None:
            self._window = (time.time(), batch)

    def on_train_batch_end(self, batch, logs=None):
        logs = logs if logs is not None else {}
        began, first = self._window
        done = batch - first + 1
        logs["tokens_per_s"] = done * self.tokens_per_step / max(time.time() - began, 1e-9)
        step = self._step()
        if step % self.log_every == 0 and step != self._logged:  # once per update
            self._logged = step
            lr = self.model.optimizer.learning_rate
            row = {k: float(v) for k, v in logs.items() if np.isscalar(v) or np.ndim(v) == 0}
            row.update(step=step, split="train", elapsed_s=round(time.time() - self.start, 2),
                       learning_rate=float(keras.ops.convert_to_numpy(lr)))
            self._write(row)

    def on_epoch_begin(self, epoch, logs=None):
        self._window = None

    def on_epoch_end(self, epoch, logs=None):
        val = {k[4:]: float(v) for k, v in (logs or {}).items() if k.startswith("val_")}
        if val:
            val.update(step=self._step(), split="heldout",
                       elapsed_s=round(time.time() - self.start, 2))
            self._write(val)


# ---- the run ---------------------------------------------------------------------------------
def prepare_output(output_dir, settings, resume=False, overwrite=False):
    """Create ``output_dir`` for ``settings``; refuse a directory that holds another run."""
    path = os.path.join(output_dir, "settings.json")
    if os.path.exists(path):
        with open(path) as f:
            previous = json.load(f)
        if overwrite:
            shutil.rmtree(output_dir)
        elif not resume:
            raise TrainingError(f"{output_dir} already holds a run; pass --resume to continue it "
                                "or --overwrite to replace it.")
        elif previous != settings.to_dict():
            diff = {k: (previous.get(k), v) for k, v in settings.to_dict().items()
                    if previous.get(k) != v}
            raise TrainingError(f"--resume with different settings than the run in {output_dir}: "
                                f"{diff} (stored, given). Resume with the stored settings or start "
                                "a new output directory.")
    elif resume:
        raise TrainingError(f"--resume: {output_dir} holds no run to resume.")
    elif os.path.isdir(output_dir) and os.listdir(output_dir) and not overwrite:
        raise TrainingError(f"{output_dir} is not empty and holds no run; choose an empty output "
                            "directory or pass --overwrite.")
    elif overwrite and os.path.isdir(output_dir):
        shutil.rmtree(output_dir)
    os.makedirs(output_dir, exist_ok=True)
    with open(path, "w") as f:
        json.dump(settings.to_dict(), f, indent=2)


def load_tokenizer(settings):
    from keras_bert_lab.datasets import locate
    from keras_bert_lab.text.tokenizer import WordPieceTokenizer

    vocab = settings.vocab or locate("bert_uncased_vocab")
    try:
        return WordPieceTokenizer(vocab)
    except OSError as error:
        raise DataError(f"Cannot read the vocabulary {vocab}: {error}.") from None


def build_model(settings, vocab_size):
    from keras_bert_lab.models.bert import BertBackbone
    from keras_bert_lab.models.config import BertConfig
    from keras_bert_lab.tasks.pretraining import BertPretrainer
    from keras_bert_lab.training.optimizers import adamw, lamb
    from keras_bert_lab.training.schedules import WarmupLinearDecay

    keras.config.set_dtype_policy(settings.precision)
    longest = max(settings.seq_len, settings.phase2_seq_len if settings.phase2_steps else 0)
    config = BertConfig.from_size(settings.size, vocab_size=vocab_size,
                                  max_positions=max(512, longest))
    model = BertPretrainer(BertBackbone(config))
    warmup = (settings.warmup_steps if settings.warmup_steps is not None
              else max(1, settings.total_steps // 10))
    schedule = WarmupLinearDecay(settings.learning_rate, min(warmup, settings.total_steps),
                                 settings.total_steps)
    builder = adamw if settings.optimizer == "adamw" else lamb
    extra = {"gradient_accumulation_steps": settings.accumulation} if settings.accumulation > 1 else {}
    optimizer = builder(model, learning_rate=schedule, weight_decay=settings.weight_decay, **extra)
    if settings.precision == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    jit = settings.jit_compile
    model.compile(optimizer=optimizer,
                  jit_compile=jit if jit == "auto" else jit in (True, "true", "1", "yes"))
    return model


def _segments(start, end, every):
    """Split steps ``[start, end)`` into ``(first_step, epochs, steps_per_epoch)`` fit calls whose
    epochs end on multiples of ``every`` (where held-out evaluation runs) or at ``end``."""
    out, step = [], start
    if step % every and step < end:
        n = min(every - step % every, end - step)
        out.append((step, 1, n))
        step += n
    full = (end - step) // every
    if full:
        out.append((step, full, every))
        step += full * every
    if step < end:
        out.append((step, 1, end - step))
    return out


def _phase_data(settings, tokenizer, corpus, phase):
    from keras_bert_lab.text.pretraining_data import pretraining_dataset

    long = phase == 2
    return dict(
        corpus=corpus, tokenizer=tokenizer, batch_size=settings.batch_size,
        max_seq_length=settings.phase2_seq_len if long else settings.seq_len,
        max_predictions_per_seq=settings.phase2_max_predictions if long else settings.max_predictions,
        masked_lm_prob=settings.masked_lm_prob, whole_word_masking=settings.whole_word_masking,
        next_sentence=settings.next_sentence, seed=settings.seed + (1000 if long else 0),
    ), pretraining_dataset


def heldout_dataset(settings, tokenizer, corpus, phase=1):
    """``eval_batches`` fixed batches (same pairs and masks at every evaluation), in memory."""
    import tensorflow as tf

    kwargs, make = _phase_data(settings, tokenizer, corpus, phase)
    kwargs["seed"] = 12345
    batches = list(make(**kwargs).take(settings.eval_batches).as_numpy_iterator())
    stacked = keras.tree.map_structure(lambda *parts: np.stack(parts), *batches)
    return tf.data.Dataset.from_tensor_slices(stacked)  # known length: no "ran out of data"


def train(model, settings, tokenizer, train_corpus, eval_corpus, output_dir, start_step=0,
          verbose=1, callbacks=()):
    """Fit from ``start_step`` to ``settings.total_steps``; returns the stopping reason or None."""
    from keras_bert_lab.training.checkpoints import TrainingCheckpoint

    checkpoint = TrainingCheckpoint(os.path.join(output_dir, "checkpoints"),
                                    every_steps=settings.checkpoint_every,
                                    keep=settings.keep_checkpoints)
    fitted = False
    for phase, (begin, end) in ((1, (0, settings.steps)),
                                (2, (settings.steps, settings.total_steps))):
        if start_step >= end or begin == end:
            continue
        kwargs, make = _phase_data(settings, tokenizer, train_corpus, phase)
        heldout = heldout_dataset(settings, tokenizer, eval_corpus, phase) if eval_corpus else None
        tokens = settings.batch_size * kwargs["max_seq_length"]
        log = RunLog(os.path.join(output_dir, "log.csv"), tokens, settings.log_every)
        for first, epochs, per_epoch in _segments(max(start_step, begin), end, settings.eval_every):
            # The stream is a pure function of the seed: restart it at the batch this step needs.
            # Steps count optimizer updates; with accumulation each takes several batches.
            stream = make(**kwargs).skip((first - begin) * settings.accumulation)
            try:
                model.fit(stream, epochs=epochs, steps_per_epoch=per_epoch * settings.accumulation,
                          shuffle=False,
                          validation_data=heldout, callbacks=[checkpoint, log, *callbacks],
                          verbose=verbose)
            except Exception as error:  # noqa: BLE001 - re-raised with advice when it is memory
                text = f"{type(error).__name__}: {error}"
                # torch on CPU says "DefaultCPUAllocator: can't allocate memory", not "out of".
                if isinstance(error, MemoryError) or "out of memory" in text.lower() \
                        or "allocate memory" in text.lower() \
                        or "RESOURCE_EXHAUSTED" in text or "OOM" in text:
                    raise TrainingError(
                        f"A batch of {settings.batch_size} × {kwargs['max_seq_length']} tokens "
                        f"does not fit in memory ({type(error).__name__}). Use a smaller "
                        f"--batch-size with --accumulation so the effective batch stays the same "
                        f"(e.g. --batch-size {max(1, settings.batch_size // 2)} --accumulation "
                        f"{settings.accumulation * 2}); --steps counts optimizer updates, so the "
                        "run keeps its length and schedule.") from None
                raise
            fitted = True
            if checkpoint.stopped_because:
                return checkpoint.stopped_because
    if fitted and checkpoint.last_saved_step != settings.total_steps:
        checkpoint.save()
    return None


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


def fill_in_the_blanks(model, tokenizer, sentences, top_k=5):
    """Top-``k`` predictions for each ``[MASK]`` in each sentence."""
    from keras_bert_lab.text.packing import BertPacker

    packer = BertPacker.from_tokenizer(tokenizer, 64)
    results = []
    mask = tokenizer.special_tokens["mask"]
    for sentence in sentences:
        ids = []  # the tokenizer would split "[MASK]" like any text: put its id between the parts
        for i, part in enumerate(sentence.split(mask)):
            ids += ([tokenizer.mask_token_id] if i else []) + list(tokenizer.tokenize(part))
        packed = packer(ids)
        token_ids = np.asarray(packed["token_ids"])[None]
        positions = np.flatnonzero(token_ids[0] == tokenizer.mask_token_id)
        if not len(positions):
            results.append((sentence, []))
            continue
        features = {"token_ids": token_ids, "segment_ids": np.asarray(packed["segment_ids"])[None],
                    "padding_mask": np.asarray(packed["padding_mask"])[None],
                    "mask_positions": positions[None].astype("int32")}
        logits = keras.ops.convert_to_numpy(model(features)["mlm"])[0]
        guesses = [[tokenizer.id_to_token(int(i)) for i in np.argsort(-row)[:top_k]]
                   for row in logits]
        results.append((sentence, guesses))
    return results


HELDOUT_SENTENCES = (
    "The [MASK] of the United States lives in the White House.",
    "He played football for the national [MASK] .",
    "The album was released in [MASK] 2009.",
    "She was born in London , [MASK] .",
    "The river flows into the [MASK] .",
)


def plot_curves(log_path, png_path):
    """Training and held-out MLM loss / accuracy against the step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(csv.DictReader(open(log_path)))
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for split, style in (("train", "-"), ("heldout", "o-")):
        part = [r for r in rows if r["split"] == split]
        if not part:
            continue
        steps = [int(r["step"]) for r in part]
        for ax, key in zip(axes, ("mlm_loss", "mlm_accuracy", "nsp_accuracy")):
            values = [float(r[key]) if r.get(key) else math.nan for r in part]
            ax.plot(steps, values, style, label=split, markersize=3)
            ax.set_title(key.replace("_", " "))
            ax.set_xlabel("step")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    plt.close(fig)


def run(settings, output_dir, resume=False, overwrite=False, verbose=1, callbacks=()):
    """Pretrain per ``settings`` into ``output_dir``; returns the final metrics dict.

    Example (a minute on a laptop CPU):
    >>> settings = PretrainSettings(size="tiny", steps=50, batch_size=8, seq_len=64)  # doctest: +SKIP
    >>> run(settings, "/tmp/kbl-run")["heldout_mlm_accuracy"]                       # doctest: +SKIP
    """
    from keras_bert_lab.presets import save_preset
    from keras_bert_lab.text.pretraining_data import tokenize_corpus
    from keras_bert_lab.training.checkpoints import restore_checkpoint

    prepare_output(output_dir, settings, resume=resume, overwrite=overwrite)
    keras.utils.set_random_seed(settings.seed)
    tokenizer = load_tokenizer(settings)
    started = time.time()
    corpus = settings.corpus[0] if len(settings.corpus) == 1 else list(settings.corpus)
    train_corpus = tokenize_corpus(corpus, tokenizer)
    eval_corpus = tokenize_corpus(settings.eval_corpus, tokenizer) if settings.eval_corpus else None
    logger.info("corpus ready in %.1fs", time.time() - started)
    model = build_model(settings, tokenizer.vocabulary_size)
    start_step = 0
    if resume:
        meta = restore_checkpoint(model, os.path.join(output_dir, "checkpoints"))
        start_step = meta["step"] if meta else 0
        print(f"Resuming at step {start_step} of {settings.total_steps}.")
    stopped = train(model, settings, tokenizer, train_corpus, eval_corpus, output_dir,
                    start_step=start_step, verbose=verbose, callbacks=callbacks)
    if stopped:
        raise TrainingError(stopped)
    metrics = {"steps": settings.total_steps, "seconds": round(time.time() - started, 1)}
    if eval_corpus is not None:
        heldout = heldout_dataset(settings, tokenizer, eval_corpus)
        result = model.evaluate(heldout, return_dict=True, verbose=0)
        special = [tokenizer.token_to_id(t) for t in tokenizer.special_tokens.values() if t]
        baseline, best = unigram_baseline(train_corpus, heldout, special)
        metrics.update({f"heldout_{k}": float(v) for k, v in result.items()})
        metrics.update(unigram_mlm_accuracy=baseline, unigram_token=tokenizer.id_to_token(best),
                       nsp_chance=0.5)
    with open(os.path.join(output_dir, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)
    plot_curves(os.path.join(output_dir, "log.csv"), os.path.join(output_dir, "curves.png"))
    save_preset(model, os.path.join(output_dir, "preset"), vocabulary=tokenizer.vocabulary,
                lowercase=tokenizer.lowercase, overwrite=True,
                source=f"kbl pretrain ({settings.size}, {settings.total_steps} steps on "
                       f"{'+'.join(settings.corpus)}, seed {settings.seed})",
                license="as the pretraining corpus")
    return metrics


# ---- command line ----------------------------------------------------------------------------
def add_arguments(parser):
    """``kbl pretrain`` options: one per ``PretrainSettings`` field, plus the run controls."""
    defaults = PretrainSettings()
    parser.add_argument("--corpus", nargs="+", default=list(defaults.corpus),
                        help="named corpora (wikitext2, news) or files/globs/directories")
    parser.add_argument("--out", required=True, help="output directory of the run")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")
    parser.add_argument("--overwrite", action="store_true", help="replace the run in --out")
    for field in dataclasses.fields(PretrainSettings):
        if field.name == "corpus":
            continue
        value = getattr(defaults, field.name)
        flag = "--" + field.name.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(flag, type=lambda v: v.lower() in ("1", "true", "yes"),
                                default=value, metavar="{true,false}")
        else:
            kind = type(value) if value is not None else (int if "steps" in field.name else str)
            parser.add_argument(flag, type=kind, default=value)


def main(args):
    names = {f.name for f in dataclasses.fields(PretrainSettings)}
    try:
        settings = PretrainSettings(**{k: v for k, v in vars(args).items() if k in names})
    except ValueError as error:
        raise TrainingError(str(error)) from None
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    metrics = run(settings, args.out, resume=args.resume, overwrite=args.overwrite)
    print(json.dumps(metrics, indent=2))
    return metrics
