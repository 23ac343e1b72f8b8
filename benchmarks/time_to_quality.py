"""Time to quality: how soon each pretraining recipe gives a good masked-LM model on this machine.

A user who pretrains cares how soon they have a good model, not how fast one step of the 2018
recipe is. Same machine, corpus (WikiText-2 train), vocabulary (bert-base-uncased) and model
size (BERT-mini: 4 layers, 256 wide, 4 heads), the same wall-clock budget for each recipe:

- ``bert``: the BERT recipe (``kbl pretrain`` defaults: post-LN, dropout 0.1, masked LM + NSP on
  sentence pairs, 15 % masking, AdamW at 5e-4 with 10 % warm-up and linear decay) under
  ``--time-budget``;
- ``modern``: MosaicBERT's and Cramming's choices (pre-LN, no biases, GEGLU at the same weight
  count, no dropout, masked LM only on packed blocks, a 30 % mask rate, a peak rate of 1e-3)
  under the same budget; ``modern-<option>`` puts one option back to BERT's (the ablation rows:
  ``norm_first``, ``use_bias``, ``feedforward``, ``dropout``, ``next_sentence``, ``packing``,
  ``mask_selection_rate``, ``learning_rate``; ``modern+rotary`` adds rotary positions,
  ``modern+bf16`` mixed bfloat16);
- ``electra``: ELECTRA's recipe (``kbl pretrain --model electra``: a generator of 1/4 the width
  corrupts, the discriminator finds the replaced tokens, ``L_MLM + 50·L_D``, packed blocks,
  15 % masked as 85 % ``[MASK]`` / 15 % kept) with ``--size mini``: ELECTRA-mini's discriminator,
  which fine-tuning keeps, has BERT-mini's weights; its curve is the generator's accuracy, and
  a second table gives its own held-out evaluation (the discriminator's accuracy next to the
  all-original baseline, its AUC, its loss next to the entropy of the replaced rate);
- any of ours followed by ``:field=value,…`` changes those settings (the ablation rows:
  ``electra:generator_size=0.5``, ``electra:discriminator_weight=10``,
  ``electra:mask_selection_rate=0.25,mask_selection_length=32``); ``--steps N`` trains for N
  steps instead of the budget (ablations at equal steps; only the final weights are scored);
- ``hf``: Hugging Face ``transformers``' ``BertForMaskedLM`` trained the way ``run_mlm.py``
  trains it with the Trainer's defaults (batch 8, AdamW at 5e-5, no warm-up, linear decay, no
  weight decay, gradient clipping at 1; ``DataCollatorForLanguageModeling`` at 15 %; every line
  tokenized with ``[CLS]``/``[SEP]``, concatenated and cut into 128-token blocks), on torch;
  ``hf-bert-recipe``: the same loop with the BERT recipe's batch 32, rate 5e-4, 10 % warm-up
  and decay 0.01.

Every model is scored the same way, on the same fixed batches: masked-LM accuracy on WikiText-2
valid in single 128-token segments, 15 % of the tokens selected, 80/10/10, one draw of masks.
Our recipes keep a copy of the weights every ``budget / points`` seconds (in memory, the clock
running) and score them after training; the HF loop scores itself with its clock stopped. The
x axis is the wall time from the start of each recipe (tokenizing, timing the step for the
budget, compiling, training). Then, optionally (``--tasks rt stsb``), each final model is
fine-tuned with one recipe (``kbl finetune``; the HF model through ``kbl preset import-hf``).
A model pretrained without next-sentence prediction (``modern``, ``hf``) has an untrained
pooler, so its head reads the mean of the last layer instead (``--pooling mean``: our presets
recommend it to ``kbl finetune``, the HF one is given the flag); ``bert``'s reads [CLS].

Run it alone on the machine: every number here is a wall time.

Usage::

    python benchmarks/time_to_quality.py --out /tmp/ttq --budget 20m
    python benchmarks/time_to_quality.py --out /tmp/ttq --budget 20m --recipes bert modern \\
        electra --tasks rt stsb --seeds 0 1 2          # the ELECTRA comparison (issue 51)
    python benchmarks/time_to_quality.py --out /tmp/ttq --budget 5m --recipes bert modern \\
        modern-packing modern-dropout --tasks rt stsb
    python benchmarks/time_to_quality.py --out /tmp/ttq --steps 194 --recipes \\
        electra:generator_size=0.5 electra:discriminator_weight=10     # ELECTRA's ablations
    python benchmarks/time_to_quality.py --out /tmp/ttq --report
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

MODERN = dict(norm_first=True, use_bias=False, feedforward="geglu", dropout=0.0, next_sentence=False, packing=True, mask_selection_rate=0.3,
              mask_selection_length=40, learning_rate=1e-3)
# option → what ``modern-<option>`` puts back (BERT's value); the width follows GEGLU
BERT_VALUES = dict(norm_first=dict(norm_first=False), use_bias=dict(use_bias=True),
                   feedforward=dict(feedforward="gelu", intermediate_size=None),
                   dropout=dict(dropout=0.1), next_sentence=dict(next_sentence=True,
                                                                 packing=False),
                   packing=dict(packing=False),
                   mask_selection_rate=dict(mask_selection_rate=0.15, mask_selection_length=20),
                   learning_rate=dict(learning_rate=5e-4))
HF = {"hf": dict(batch_size=8, learning_rate=5e-5, warmup=0.0, weight_decay=0.0),
      "hf-bert-recipe": dict(batch_size=32, learning_rate=5e-4, warmup=0.1, weight_decay=0.01)}
FINETUNE = {"rt": (["classify", "--dataset", "rotten_tomatoes", "--sequence-length", "64"],
                   "accuracy"),
            "stsb": (["pair", "--dataset", "stsb", "--sequence-length", "64"], "pearson")}


def recipe_settings(name, size="mini"):
    """``PretrainSettings`` overrides of one of our recipes (``bert``, ``modern…``). GEGLU's
    width is 8/3 of the hidden size (rounded to 8), so its feed-forward has GELU's weights."""
    from keras_bert_lab.models.bert.config import BertConfig

    modern = dict(MODERN, intermediate_size=round(BertConfig.from_size(size).hidden_size * 8 / 24)
                  * 8)
    if name == "bert":
        return {}
    if name == "modern":
        return modern
    if name == "modern+rotary":
        return dict(modern, position_embedding="rotary")
    if name == "modern+bf16":      # where the CPU has native bfloat16 (AVX512_BF16 here)
        return dict(modern, precision="mixed_bfloat16")
    option = name.removeprefix("modern-")
    if not name.startswith("modern-") or option not in BERT_VALUES:
        raise SystemExit(f"unknown recipe {name!r}: bert, modern, modern+rotary, modern+bf16, "
                         f"modern-<{'|'.join(BERT_VALUES)}>, {', '.join(HF)}")
    return {k: v for k, v in dict(modern, **BERT_VALUES[option]).items() if v is not None}


def common_heldout(tokenizer, batches):
    """The one evaluation set: WikiText-2 valid, single 128-token segments, 15 % / 80/10/10."""
    from keras_bert_lab.pipelines.pretraining import pretraining_dataset

    ds = pretraining_dataset("wikitext2:valid", tokenizer, batch_size=32, sequence_length=128,
                             next_sentence=False, seed=12345, output="dict")
    return [{k: v.numpy() for k, v in b.items()} for b in ds.take(batches)]


def accuracy(logits_of, heldout):
    """Masked-LM accuracy over ``heldout``: ``logits_of(batch)`` gives (B, P, V) logits or their
    (B, P) argmax."""
    import numpy as np

    hits = total = 0.0
    for batch in heldout:
        guess = logits_of(batch)
        guess = np.argmax(guess, axis=-1) if guess.ndim == 3 else guess
        weights = batch["mask_weights"]
        hits += float(((guess == batch["mask_ids"]) * weights).sum())
        total += float(weights.sum())
    return hits / total


def snapshots(every_s, start):
    """A Keras callback keeping the weights every ``every_s`` seconds (and at the end) in
    ``.taken``: ``(seconds since start, step, weights)``."""
    import keras

    class Snapshots(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.taken, self.next_at = [], every_s

        def _step(self):
            return int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

        def on_train_batch_end(self, batch, logs=None):
            if time.time() - start >= self.next_at:
                self.taken.append((time.time() - start, self._step(), self.model.get_weights()))
                self.next_at += every_s

        def on_train_end(self, logs=None):
            if not self.taken or self.taken[-1][1] != self._step():
                self.taken.append((time.time() - start, self._step(), self.model.get_weights()))

    return Snapshots()


def _value(text):
    """A ``field=value`` override's value: a number or true/false where it reads as one."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def recipe(name, size="mini"):
    """``(settings class, run, overrides)`` of one of our recipes: ``bert``, ``modern…`` or
    ``electra``, optionally followed by ``:field=value,field=value`` (the ablation rows, e.g.
    ``electra:generator_size=0.5`` or ``electra:discriminator_weight=10``). Every field is
    checked by building the settings, so a typo stops here, not after an hour."""
    base, _, extra = name.partition(":")
    if base == "electra":
        from keras_bert_lab.models.electra.pretrain import ElectraPretrainSettings as Settings
        from keras_bert_lab.models.electra.pretrain import run
        overrides = {}
    else:
        from keras_bert_lab.models.bert.pretrain import PretrainSettings as Settings
        from keras_bert_lab.models.bert.pretrain import run
        overrides = recipe_settings(base, size)
    for item in filter(None, extra.split(",")):
        field, equals, value = item.partition("=")
        if not equals:
            raise SystemExit(f"recipe {name!r}: write each change as field=value, not {item!r}")
        overrides[field] = _value(value)
    try:
        Settings(size=size, **overrides)
    except TypeError as error:
        raise SystemExit(f"recipe {name!r}: {error}") from None
    return Settings, run, overrides


def train_ours(name, args, heldout, out):
    """One of our recipes under the budget (or for ``--steps``); returns its curve and final
    numbers. ELECTRA's curve is its generator's masked-LM accuracy (the discriminator's quality
    shows in its own held-out numbers, kept as ``discriminator``, and in fine-tuning)."""
    import keras
    import numpy as np

    Settings, run, overrides = recipe(name, args.size)
    limit = (dict(time_budget=None, steps=args.steps) if args.steps
             else dict(time_budget=args.budget))
    settings = Settings(size=args.size, eval_every=1000000, checkpoint_every=1000000,
                        log_every=50, seed=args.seed, **limit, **overrides)
    start = time.time()
    # a fixed number of steps keeps the final weights only
    kept = snapshots(float("inf") if args.steps else _seconds(args.budget) / args.points, start)
    metrics = run(settings, str(out), overwrite=True, verbose=0, callbacks=[kept])
    wall = time.time() - start
    model = kept.model
    # the masked-LM guesses alone, compiled (ELECTRA's discriminator is not run to score them)
    scorer = keras.Model(model.input, keras.ops.argmax(model.output["mlm"], axis=-1))
    curve = []
    for seconds, step, weights in kept.taken:
        model.set_weights(weights)

        def logits_of(batch):
            features = {k: batch[k] for k in model.input}   # ELECTRA's: the mask ids too
            return keras.ops.convert_to_numpy(scorer.predict_on_batch(features))

        curve.append({"seconds": round(seconds, 1), "step": step,
                      "accuracy": accuracy(logits_of, heldout)})
        print(f"  {name}: {seconds:7.1f} s, step {step:5d}: held-out MLM accuracy "
              f"{curve[-1]['accuracy']:.4f}", flush=True)
    budget = out / "budget.json"
    step_seconds = (json.loads(budget.read_text())["step_seconds"] if budget.exists()
                    else steady_step_seconds(out / "log.csv"))
    own = {k: metrics[k] for k in ("heldout_mlm_accuracy", "heldout_rtd_accuracy",
                                   "all_original_accuracy", "heldout_rtd_auc",
                                   "heldout_rtd_loss", "heldout_replaced_rate") if k in metrics}
    return {"recipe": name, "curve": curve, "steps": metrics["steps"],
            "wall_seconds": round(wall, 1), **({"discriminator": own} if own else {}),
            "trained_seconds": metrics.get("trained_seconds", metrics["seconds"]),
            "step_seconds": step_seconds,
            "parameters": int(sum(np.prod(w.shape) for w in model.weights)),
            "encoder_parameters": model.backbone.count_params(),   # what fine-tuning keeps
            "preset": str(out / "preset")}


def steady_step_seconds(log):
    """Seconds a step between the first and the last training rows of a run's ``log.csv`` (the
    compile left out), or ``None`` with fewer than two rows."""
    import csv

    with open(log, encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["split"] == "train"]
    if len(rows) < 2:
        return None
    first, last = rows[0], rows[-1]
    return round((float(last["elapsed_s"]) - float(first["elapsed_s"]))
                 / (int(last["step"]) - int(first["step"])), 5)


def train_hf(name, args, heldout, out, tokenizer, vocabulary):
    """``BertForMaskedLM`` trained as ``run_mlm.py`` trains it, under the same budget."""
    import numpy as np
    import torch
    import transformers

    from keras_bert_lab.models.bert.config import BertConfig
    from keras_bert_lab.pipelines.pretraining import tokenize_corpus
    from keras_bert_lab.training import budget

    recipe = HF[name]
    start = time.time()
    paused = 0.0
    torch.manual_seed(args.seed)
    # (transformers 5 ignores vocab_file= here and builds an empty vocabulary: positional)
    hf_tokenizer = transformers.BertTokenizerFast(str(vocabulary), do_lower_case=True)
    assert len(hf_tokenizer) == tokenizer.vocabulary_size, len(hf_tokenizer)
    corpus = tokenize_corpus("wikitext2", tokenizer)     # the same ids as HF's (tested)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    lines = np.split(corpus.token_ids, corpus.sentence_splits[1:-1])
    stream = np.concatenate([np.concatenate([[cls], line, [sep]]) for line in lines])
    blocks = stream[:len(stream) // 128 * 128].reshape(-1, 128)     # run_mlm's group_texts
    collator = transformers.DataCollatorForLanguageModeling(hf_tokenizer, mlm_probability=0.15)
    ours = BertConfig.from_size(args.size)
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocabulary_size, hidden_size=ours.hidden_size,
        num_hidden_layers=ours.num_layers, num_attention_heads=ours.num_heads,
        intermediate_size=ours.intermediate_size, max_position_embeddings=512)
    generator = np.random.default_rng(args.seed)

    def batches():                                       # the Trainer's shuffled epochs
        size = recipe["batch_size"]
        while True:
            order = generator.permutation(len(blocks))
            for i in range(0, len(order) - size + 1, size):
                yield collator([{"input_ids": torch.tensor(r)} for r in blocks[order[i:i + size]]])

    def make(total_steps):
        model = transformers.BertForMaskedLM(config)
        decay = [p for n, p in model.named_parameters() if "bias" not in n and "LayerNorm" not in n]
        rest = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
        optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": recipe["weight_decay"]},
                                       {"params": rest, "weight_decay": 0.0}],
                                      lr=recipe["learning_rate"])
        schedule = transformers.get_linear_schedule_with_warmup(
            optimizer, int(recipe["warmup"] * total_steps), total_steps)
        return model, optimizer, schedule

    def step(model, optimizer, schedule, batch):
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()

    # The budget is sized as ours is: the step timed on a throwaway model first.
    probe, data = make(1000), batches()
    times = []
    for _ in range(11):
        began = time.perf_counter()
        step(*probe, next(data))
        times.append(time.perf_counter() - began)
    step_s = sorted(times[1:])[5]
    total = budget.steps_for_budget(_seconds(args.budget), step_s, time.time() - start)
    torch.manual_seed(args.seed)
    model, optimizer, schedule = make(total)
    del probe

    def evaluate():
        model.eval()
        with torch.no_grad():
            def logits_of(batch):
                logits = model(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                               attention_mask=torch.tensor(batch["padding_mask"]),
                               token_type_ids=torch.tensor(batch["segment_ids"],
                                                           dtype=torch.long)).logits
                positions = torch.tensor(batch["mask_positions"], dtype=torch.long)
                return torch.gather(logits, 1, positions[..., None].expand(
                    -1, -1, logits.shape[-1])).numpy()

            value = accuracy(logits_of, heldout)
        model.train()
        return value

    curve, every = [], _seconds(args.budget) / args.points
    model.train()
    next_at = every
    for i in range(1, total + 1):
        step(model, optimizer, schedule, next(data))
        elapsed = time.time() - start - paused
        if elapsed >= next_at or i == total:
            began = time.time()
            curve.append({"seconds": round(elapsed, 1), "step": i, "accuracy": evaluate()})
            paused += time.time() - began
            next_at += every
            print(f"  {name}: {elapsed:7.1f} s, step {i:5d}: held-out MLM accuracy "
                  f"{curve[-1]['accuracy']:.4f}", flush=True)
    hf_dir = out / "hf"
    # BertForMaskedLM has no pooler: saved inside a BertForPreTraining whose pooler (and NSP
    # head) start fresh, as transformers' own fine-tuning of an MLM checkpoint starts them.
    whole = transformers.BertForPreTraining(config)
    missing = whole.load_state_dict(model.state_dict(), strict=False).missing_keys
    assert all("pooler" in k or "seq_relationship" in k for k in missing), missing
    whole.save_pretrained(hf_dir)
    hf_tokenizer.save_pretrained(hf_dir)
    shutil.copy(vocabulary, hf_dir / "vocab.txt")    # newer transformers write tokenizer.json only
    return {"recipe": name, "curve": curve, "steps": total,
            "wall_seconds": round(time.time() - start - paused, 1), "step_seconds": step_s,
            "parameters": int(sum(p.numel() for p in model.parameters())),
            "encoder_parameters": int(sum(p.numel() for p in model.bert.parameters())),
            "hf_dir": str(hf_dir)}


def finetune(result, task, args, out):
    """``kbl finetune`` of a recipe's final model on ``task``; returns the test metric."""
    import keras

    from keras_bert_lab.cli import main as kbl

    preset = result.get("preset")
    if preset is None:      # the HF model: into a preset first
        preset = str(out / "preset")
        if not os.path.exists(preset):
            assert kbl(["preset", "import-hf", result["hf_dir"], preset]) == 0
    command, metric = FINETUNE[task]
    run = out / f"finetune-{task}"
    keras.backend.clear_session()
    argv = ["finetune", *command, "--preset", preset, "--output", str(run), "--overwrite",
            "--epochs", str(args.epochs), "--patience", str(args.epochs), "--batch-size", "32",
            "--learning-rate", str(args.finetune_learning_rate), "--seed", str(args.seed)]
    if result.get("preset") is None:   # MLM only: the imported pooler is untrained
        argv += ["--pooling", "mean"]
    if args.finetune_limit:
        argv += ["--limit", str(args.finetune_limit)]
    if kbl(argv) != 0:
        raise SystemExit(f"kbl {' '.join(argv)} failed")
    metrics = json.loads((run / "metrics.json").read_text())
    return (metrics["test"] or {}).get(metric)


def _seconds(text):
    from keras_bert_lab.training.budget import parse_duration

    return parse_duration(text)


def first_reaching(curve, target):
    """Seconds at which ``curve`` first reaches ``target`` accuracy, or ``None``."""
    return next((p["seconds"] for p in curve if p["accuracy"] >= target), None)


def spread(values):
    """``"mean ± sd (n)"`` of the values that exist (one value: itself)."""
    import numpy as np

    values = [v for v in values if v is not None]
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{np.mean(values):.3f} ± {np.std(values, ddof=1):.3f} ({len(values)})"


def report(groups, path):
    """The table (markdown) and the figure of accuracy against wall time; ``groups`` maps a
    recipe to its runs (one per seed): numbers are mean ± sample standard deviation (runs)."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reference = groups.get("bert")
    target = reference[0]["curve"][-1]["accuracy"] if reference else None
    lines = ["| recipe | steps | s/step | weights (encoder) | held-out MLM accuracy | reaches "
             "BERT's final at | RT test acc | STS-B test Pearson |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    figure, axis = plt.subplots(figsize=(7, 4.2))
    for name, runs in groups.items():
        first = runs[0]
        curve = first["curve"]
        reach = first_reaching(curve, target) if target is not None else None
        encoder = first.get("encoder_parameters")
        cells = [name + (" (generator)" if name.startswith("electra") else ""),
                 f"{first['steps']:,}",
                 f"{first['step_seconds']:.3f}" if first["step_seconds"] else "—",
                 f"{first['parameters'] / 1e6:.2f} M"
                 + (f" ({encoder / 1e6:.2f} M)" if encoder else ""),
                 spread([r["curve"][-1]["accuracy"] for r in runs]),
                 f"{reach:.0f} s" if reach is not None else "—"]
        cells += [spread([r.get("finetune", {}).get(t) for r in runs]) for t in ("rt", "stsb")]
        lines.append("| " + " | ".join(cells) + " |")
        axis.plot([p["seconds"] / 60 for p in curve], [p["accuracy"] for p in curve],
                  marker="o", markersize=3, label=name)
    own = {name: runs for name, runs in groups.items() if "discriminator" in runs[0]}
    if own:   # ELECTRA's own held-out evaluation (its masking: 85 % [MASK] / 15 % kept)
        lines += ["", "| ELECTRA run | steps | trained s | generator MLM acc | discriminator "
                      "acc (all-original) | AUC | rtd loss (prior's) |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for name, runs in own.items():
            d = [r["discriminator"] for r in runs]
            rate = np.mean([x["heldout_replaced_rate"] for x in d])
            prior = -(rate * np.log(rate) + (1 - rate) * np.log(1 - rate))
            lines.append("| " + " | ".join([
                name, f"{runs[0]['steps']:,}", f"{runs[0]['trained_seconds']:.0f}",
                spread([x["heldout_mlm_accuracy"] for x in d]),
                spread([x["heldout_rtd_accuracy"] for x in d])
                + f" ({np.mean([x['all_original_accuracy'] for x in d]):.3f})",
                spread([x["heldout_rtd_auc"] for x in d]),
                spread([x["heldout_rtd_loss"] for x in d]) + f" ({prior:.3f})"]) + " |")
    if target is not None:
        axis.axhline(target, color="grey", linewidth=0.8, linestyle=":")
    axis.set_xlabel("wall time (minutes)")
    axis.set_ylabel("held-out masked-LM accuracy")
    sizes = sorted({r.get("size", "mini") for runs in groups.values() for r in runs})
    axis.set_title(f"Time to quality, {'/'.join(sizes)} encoders on WikiText-2")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="working folder (finished recipes reused)")
    parser.add_argument("--budget", default="20m", help="wall-clock budget of each recipe")
    parser.add_argument("--recipes", nargs="+", default=["bert", "modern", "hf"])
    parser.add_argument("--size", default="mini")
    parser.add_argument("--points", type=int, default=10, help="scored copies per run")
    parser.add_argument("--heldout-batches", type=int, default=40)
    parser.add_argument("--tasks", nargs="*", default=[], choices=list(FINETUNE))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--finetune-learning-rate", type=float, default=1e-4)
    parser.add_argument("--finetune-limit", type=int, help="examples per split (plumbing runs)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="one run per seed (pretraining and fine-tuning); mean ± sd")
    parser.add_argument("--steps", type=int,
                        help="train our recipes for this many steps instead of --budget (the "
                             "ablations at equal steps; the final weights scored only)")
    parser.add_argument("--report", action="store_true", help="the table of finished recipes")
    args = parser.parse_args()
    label = f"{args.steps}steps" if args.steps else args.budget    # results.json's run length
    for name in [] if args.report else args.recipes:
        if name in HF and args.steps:
            raise SystemExit(f"--steps: the {name} loop runs to --budget only")
        if name not in HF:
            recipe(name, args.size)                       # a typo stops here, not after an hour
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_file = out / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    if not args.report:
        import keras

        from keras_bert_lab.data.registry import locate
        from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

        print(f"backend {keras.backend.backend()}, {os.cpu_count()} CPUs, {label} each; "
              f"load before: {os.getloadavg()[0]:.1f}", flush=True)
        vocabulary = locate("bert_uncased_vocab")
        tokenizer = WordPieceTokenizer(vocabulary)
        heldout = common_heldout(tokenizer, args.heldout_batches)
        for seed in args.seeds:
            args.seed = seed
            for name in args.recipes:
                key = run_key(name, label, seed)
                folder = out / re.sub(r"[@#:=,/]", "_", key)
                if key not in results:
                    keras.backend.clear_session()
                    result = (train_hf(name, args, heldout, folder, tokenizer, vocabulary)
                              if name in HF
                              else train_ours(name, args, heldout, folder))
                    result.update(budget=label, backend=keras.backend.backend(),
                                  size=args.size, seed=seed)
                    results[key] = result
                    results_file.write_text(json.dumps(results, indent=1))
                for task in args.tasks:
                    if task not in results[key].setdefault("finetune", {}):
                        results[key]["finetune"][task] = finetune(results[key], task, args,
                                                                  folder)
                        results_file.write_text(json.dumps(results, indent=1))
    groups = {}
    for key, result in results.items():
        name, _, rest = key.partition("@")
        if rest.split("#")[0] == label:
            groups.setdefault(name, []).append(result)
    print(report(groups, out / f"time_to_quality_{label}.png"))


def run_key(name, budget, seed):
    """``results.json``'s key of a run (seed 0's is the plain ``recipe@budget`` of older runs)."""
    return f"{name}@{budget}" + (f"#seed{seed}" if seed else "")


if __name__ == "__main__":
    main()
