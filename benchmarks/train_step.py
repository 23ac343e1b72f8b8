"""Throughput of BERT's pretraining recipe: keras_bert_lab against keras-hub and Hugging Face.

What is timed: optimizer steps of masked-LM (+ next-sentence) pretraining on a fixed micro-batch
of ``B × T`` tokens (default 32 × 128) with ``P`` masked positions per sequence (default 20),
AdamW (lr 1e-4, weight decay 0.01 on ≥2-D weights, ε 1e-6, gradients clipped to global norm 1.0),
dropout 0.1 on hidden states *and* attention probabilities, for each size (default mini and small),
each Keras backend (default tensorflow, jax, torch) and each *recipe* (``--recipes``):

- ``fp32``: float32, each framework's default compilation (below);
- ``bf16``: mixed precision — Keras ``mixed_bfloat16`` (bf16 compute, float32 weights; set before
  the model is built), HF ``torch.autocast("cpu", dtype=torch.bfloat16)`` around the forward pass
  and loss (backward outside, as PyTorch recommends). No loss scaling is needed for bf16;
- ``accum4`` (any ``accum<N>``): gradient accumulation — one optimizer step = ``N`` micro-batches
  of ``B``; Keras ``gradient_accumulation_steps=N`` in the optimizer (one ``train_on_batch`` per
  micro-batch, the update on every ``N``-th), HF as its ``Trainer`` does: ``(loss / N).backward()``
  ``N`` times, then clip, ``optimizer.step()``, ``zero_grad()``. Reported per micro-batch
  (sequences/s, tokens/s, s/micro-batch) and per optimizer step (s/opt step);
- ``jit`` / ``nojit``: ``jit_compile`` forced to the value that is *not* the backend's default
  (TensorFlow with XLA; JAX un-jitted; torch ``torch.compile`` — Keras ``jit_compile=True`` and HF
  ``torch.compile(loss)`` — only with ``--torch-compile``, as compiling alone takes 35–78 s per
  model here). A recipe equal to the default on a backend is not run twice.

Ratios printed, per recipe: ours/keras-hub on the same backend and ours/HF (``hf_gathered``, torch,
same recipe), both measured in the same run; and each row against its own fp32 row.

Implementations, each (backend, implementation, size) in its own subprocess, holding one model
per recipe (built and compiled at start-up):

- ``keras_bert_lab``: ``BertPretrainer(BertBackbone(BertConfig.from_size(size)))`` with its default
  ``compile()`` (AdamW as above, MLM + NSP losses and accuracies); the time a user gets.
- ``keras_hub``: ``keras_hub.models.BertMaskedLM`` (0.32) over a ``keras_hub.models.BertBackbone``
  of the same shape (no preset), same AdamW, keras-hub's default loss and weighted accuracy. It has
  no next-sentence head (a negligible ~0.05% of the FLOPs here). Its optimizer is Keras' own
  ``AdamW`` with the same settings and decay rule (ours compiles ``training.optimizers.FusedAdamW``).
- ``hf_gathered`` (torch only): ``transformers.BertForPreTraining``: ``model.bert`` then the hidden
  states gathered at the masked positions before ``model.cls.predictions``, NSP from the pooled
  output, ``torch.optim.AdamW`` + ``clip_grad_norm_(1.0)``: the same computation as the two above.
- ``hf_every_pos`` (torch only): the stock ``BertForPreTraining(..., labels=...,
  next_sentence_label=...)`` call, which scores all ``T`` positions against the vocabulary
  (labels -100 elsewhere).

In recipe ``fp32`` each framework runs its fastest sensible CPU default: TensorFlow graph mode *without* XLA
(``jit_compile=False``; XLA is slower for training on this CPU), JAX jitted (``jit_compile=True``,
the Keras default), PyTorch eager (Keras' torch backend and HF alike). Threads: library defaults
(all cores).

Method: the parent process starts one group of workers (``--group-by backend``, the default: one
size on one backend, i.e. keras_bert_lab + keras-hub, plus the two HF variants on torch; ``size``:
every backend of one size at once, ~20 GB for small). Start-up (imports, build, first step =
compile/trace, then ``--warmup`` more steps) overlaps two workers at a time; the workers are then
kept alive and idle while the timed repeats are interleaved: in each repeat every (worker,
recipe) in turn runs optimizer steps for ``--target-s`` seconds (or ``--steps`` micro-batches,
rounded up to whole optimizer steps), one at a time, in an order that rotates between repeats. Keras steps are ``train_on_batch`` calls, which return Python floats
and so synchronise every step; HF's is a manual loop. The figure reported is the median over
repeats of the per-repeat throughput. No ``fit`` on arrays is timed (keras-hub's routes through
tf.data and can stall at epoch end). For each measurement the share of the machine's CPU time used
by *other* processes is read from ``/proc/stat`` (column "other%"): a high value means the figure
is contended; the 1-min load average is recorded with each measurement too. Workers get ``OMP_WAIT_POLICY=PASSIVE`` (see ``--omp-wait-policy``): with OpenMP's
default spin-waiting, every torch step (Keras' torch backend and HF alike) ran 5–15× slower as
soon as another process took one of the two cores.

The machine's fp32 matmul ceiling is measured in the same run (large square matmuls with numpy,
torch, jax and tensorflow, best of all; once before and once after the training steps, the higher
used; ``--fast``: 2048² only) and MFU = model FLOP/s ÷ that ceiling, with the model FLOPs counted
analytically for a training step with the MLM head at the gathered positions (3 × forward), per
micro-batch (the bf16 rows are divided by the same fp32 ceiling):

    forward = 2·N_dense·B·T                  (encoder matmul weights: L·(4H² + 2HI))
            + 4·L·B·T²·H                     (attention scores and weighted sum)
            + 2·B·P·(H² + H·V)               (MLM transform + tied decoder at masked positions)
            + 2·B·(H² + 2H)                  (pooler + NSP)

The same useful-FLOP count is used for every implementation, so ``hf_every_pos``'s MFU counts only
the useful work (it performs ~T/P× more decoder FLOPs).

Usage::

    .venv/bin/python benchmarks/train_step.py            # everything, mini + small (not timed
                                                         # with the recipes yet; > 30 min)
    .venv/bin/python benchmarks/train_step.py --fast     # mini, ours/keras-hub/hf_gathered, all
                                                         # recipes, 2 repeats: 7.7 min at load 3,
                                                         # 29 min at load 10-12
    .venv/bin/python benchmarks/train_step.py --quick    # smoke test (tiny, batch 8)
    .venv/bin/python benchmarks/train_step.py --sizes mini --backends jax,torch --recipes fp32,bf16
"""

import os
import sys

# Run as a script, Python puts benchmarks/ first on sys.path, where a sibling module could shadow
# the standard library: drop it before importing.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    sys.path.pop(0)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from benchmarks.machine import cpu_jiffies, stop_worker  # noqa: E402

MARK = "@@TRAIN_STEP@@ "
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {  # name: (layers, hidden, heads); FFN 4 × hidden; as keras_bert_lab.BertConfig
    "tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8), "medium": (8, 512, 8),
    "base": (12, 768, 12), "large": (24, 1024, 16),
}
VOCAB, MAX_POSITIONS, DROPOUT = 30522, 512, 0.1
BACKENDS = ("tensorflow", "jax", "torch")
KERAS_IMPLS = ("keras_bert_lab", "keras_hub")
# Accepted by --impls, not run by default: ours with Keras' own Dropout layer (threefry bits on
# JAX) in place of layers.common.CounterDropout, to measure what the counter mask gains.
KERAS_VARIANTS = ("keras_bert_lab_kerasdrop",)
HF_IMPLS = ("hf_gathered", "hf_every_pos")
PEERS = ("keras_hub", "hf_gathered", "hf_every_pos")
JIT = {"tensorflow": False, "jax": True, "torch": False}


# ----------------------------------------------------------------------------------------------
# Shared helpers
# ----------------------------------------------------------------------------------------------

def step_flops(size, batch, sequence_length, masks):
    """Useful FLOPs of one training step (3 × forward), MLM head at the gathered positions."""
    layers, hidden, _ = SIZES[size]
    inner = 4 * hidden
    dense = layers * (4 * hidden * hidden + 2 * hidden * inner)
    forward = (2 * dense * batch * sequence_length
               + 4 * layers * batch * sequence_length * sequence_length * hidden
               + 2 * batch * masks * (hidden * hidden + hidden * VOCAB)
               + 2 * batch * (hidden * hidden + 2 * hidden))
    return 3 * forward


def make_batch(batch, sequence_length, masks, seed=0):
    """A fixed pretraining batch as NumPy arrays: full-length sentence pairs, ``masks`` distinct
    sorted masked positions per sequence (never [CLS]), random targets and NSP labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, VOCAB, size=(batch, sequence_length)).astype("int32")
    token_ids[:, 0] = 101
    segment_ids = np.zeros((batch, sequence_length), "int32")
    segment_ids[:, sequence_length // 2:] = 1
    padding_mask = np.ones((batch, sequence_length), "int32")
    positions = np.sort(np.stack([rng.choice(np.arange(1, sequence_length), masks, replace=False)
                                  for _ in range(batch)]), axis=1).astype("int32")
    mask_ids = np.take_along_axis(token_ids, positions, axis=1).copy()
    token_ids[np.arange(batch)[:, None], positions] = 103  # [MASK]
    return {
        "token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask,
        "mask_positions": positions, "mask_ids": mask_ids,
        "mask_weights": np.ones((batch, masks), "float32"),
        "nsp_labels": rng.integers(0, 2, size=(batch,)).astype("int32"),
        "nsp_weights": np.ones((batch,), "float32"),
    }


def emit(obj):
    sys.stdout.write(MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()


# ----------------------------------------------------------------------------------------------
# Recipes
# ----------------------------------------------------------------------------------------------

def parse_recipe(recipe):
    """``(bf16, accumulation, jit)`` of a recipe name; ``jit`` None means the backend default."""
    if recipe == "fp32":
        return False, 1, None
    if recipe == "bf16":
        return True, 1, None
    if recipe == "bf16-jit":  # benchmarks/gpu.py: bf16 with torch.compile
        return True, 1, True
    if recipe in ("jit", "nojit"):
        return False, 1, recipe == "jit"
    if recipe.startswith("accum") and recipe[5:].isdigit() and int(recipe[5:]) >= 2:
        return False, int(recipe[5:]), None
    raise ValueError(f"unknown recipe {recipe!r}: fp32, bf16, accum<N> (N >= 2), jit or nojit")


def recipes_for(backend, impl, args):
    """The recipes one worker runs: jit/nojit only where they differ from the backend's default
    (HF: ``jit`` = ``torch.compile``); ``jit`` on torch only with ``--torch-compile``."""
    out = []
    for recipe in args.recipes:
        _, _, jit = parse_recipe(recipe)
        if jit is not None:
            if jit == JIT[backend]:
                continue  # the same as fp32 on this backend
            if backend == "torch" and not args.torch_compile:
                continue
            if impl in HF_IMPLS and not jit:
                continue
        if impl == "hf_every_pos" and recipe != "fp32":
            continue  # the stock HF call is timed in fp32 only (the peer of record is hf_gathered)
        out.append(recipe)
    return out


# ----------------------------------------------------------------------------------------------
# Worker side
# ----------------------------------------------------------------------------------------------

def build_keras(impl, size, backend, recipe):
    import keras

    from keras_bert_lab.training.optimizers import adamw

    bf16, accumulation, jit = parse_recipe(recipe)
    jit = JIT[backend] if jit is None else jit
    extra = {"gradient_accumulation_steps": accumulation} if accumulation > 1 else {}
    layers, hidden, heads = SIZES[size]
    keras.config.set_dtype_policy("mixed_bfloat16" if bf16 else "float32")
    try:
        if impl.startswith("keras_bert_lab"):
            from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
            from keras_bert_lab.layers import common

            if impl.endswith("_kerasdrop"):
                common.CounterDropout.call = keras.layers.Dropout.call

            # benchmarks/gpu.py's variants: "_fused", no attention-probability dropout, so
            # attention takes keras.ops.dot_product_attention's fused path; "_nodrop", no dropout.
            attention_dropout = 0.0 if impl.endswith(("_fused", "_nodrop")) else DROPOUT
            dropout = 0.0 if impl.endswith("_nodrop") else DROPOUT
            config = BertConfig.from_size(size, dropout=dropout,
                                          attention_dropout=attention_dropout)
            model = BertPretrainer(BertBackbone(config))
            # Its default losses and metrics; the AdamW of its default compile() (+ accumulation).
            model.compile(optimizer=adamw(model, learning_rate=1e-4, **extra), jit_compile=jit)
        else:
            import keras_hub

            backbone = keras_hub.models.BertBackbone(
                vocabulary_size=VOCAB, num_layers=layers, num_heads=heads, hidden_dim=hidden,
                intermediate_dim=4 * hidden, dropout=DROPOUT, max_sequence_length=MAX_POSITIONS,
                num_segments=2)
            model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
            # keras-hub's default loss and weighted accuracy; Keras' own AdamW (what a keras-hub
            # user compiles with) with BertPretrainer.compile()'s settings and decay rule.
            optimizer = keras.optimizers.AdamW(learning_rate=1e-4, weight_decay=0.01,
                                               epsilon=1e-6, global_clipnorm=1.0, **extra)
            optimizer.exclude_from_weight_decay(
                var_list=[v for v in model.weights if len(v.shape) < 2])
            model.compile(optimizer=optimizer, jit_compile=jit)
    finally:
        keras.config.set_dtype_policy("float32")
    return keras, model, {"jit_compile": jit, "accumulation": accumulation,
                          "dtype_policy": model.dtype_policy.name}


def keras_stepper(impl, size, backend, data, recipe):
    keras, model, info = build_keras(impl, size, backend, recipe)
    if keras.backend.backend() != backend:
        raise RuntimeError(f"Keras runs on {keras.backend.backend()!r}, not {backend!r}: set "
                           "KERAS_BACKEND before keras is first imported")
    x = {k: data[k] for k in ("token_ids", "segment_ids", "padding_mask", "mask_positions")}
    if impl.startswith("keras_bert_lab"):
        y = {"mlm": data["mask_ids"], "nsp": data["nsp_labels"]}
        sw = {"mlm": data["mask_weights"], "nsp": data["nsp_weights"]}
    else:
        y, sw = data["mask_ids"], data["mask_weights"]
    micro_batches = info["accumulation"]

    def step():  # one optimizer step: `micro_batches` train_on_batch calls
        for _ in range(micro_batches):
            logs = model.train_on_batch(x, y, sample_weight=sw, return_dict=True)
        return float(logs["loss"])

    opt = model.optimizer
    info.update({"keras": keras.__version__, "backend": keras.backend.backend(),
                 "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                 "params": int(model.count_params()),
                 "optimizer": {k: getattr(opt, k, None) for k in (
                     "name", "weight_decay", "epsilon", "clipnorm", "global_clipnorm",
                     "gradient_accumulation_steps")}})
    step.model = model  # for profile_step.py
    if backend == "torch":
        import torch
        info["threads"] = torch.get_num_threads()
    elif backend == "tensorflow":
        import tensorflow as tf
        info["threads"] = tf.config.threading.get_intra_op_parallelism_threads() or "default"
    return step, info


def hf_stepper(impl, size, data, recipe, device="cpu"):
    import torch
    import transformers

    bf16, accumulation, jit = parse_recipe(recipe)
    layers, hidden, heads = SIZES[size]
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=4 * hidden, hidden_act="gelu", hidden_dropout_prob=DROPOUT,
        attention_probs_dropout_prob=DROPOUT, max_position_embeddings=MAX_POSITIONS,
        type_vocab_size=2, layer_norm_eps=1e-12)
    model = transformers.BertForPreTraining(config).to(device)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=1e-4, betas=(0.9, 0.999), eps=1e-6)
    t = {k: torch.from_numpy(v).to(device) for k, v in data.items()}
    ids, segments = t["token_ids"].long(), t["segment_ids"].long()
    attention_mask = t["padding_mask"].long()
    positions, mask_ids = t["mask_positions"].long(), t["mask_ids"].long()
    weights, nsp = t["mask_weights"], t["nsp_labels"].long()
    full_labels = torch.full_like(ids, -100)
    full_labels.scatter_(1, positions, mask_ids)
    ce = torch.nn.functional.cross_entropy

    def loss_gathered():
        out = model.bert(input_ids=ids, attention_mask=attention_mask, token_type_ids=segments)
        sequence, pooled = out[0], out[1]  # (B, T, H), (B, H)
        gathered = torch.gather(sequence, 1, positions[:, :, None].expand(-1, -1, hidden))
        mlm_logits = model.cls.predictions(gathered).float()  # (B, P, V)
        nsp_logits = model.cls.seq_relationship(pooled).float()
        mlm = ce(mlm_logits.reshape(-1, VOCAB), mask_ids.reshape(-1), reduction="none")
        mlm = (mlm * weights.reshape(-1)).sum() / weights.sum()
        return mlm + ce(nsp_logits, nsp)

    def loss_every_position():
        return model(input_ids=ids, attention_mask=attention_mask, token_type_ids=segments,
                     labels=full_labels, next_sentence_label=nsp).loss

    loss_fn = loss_gathered if impl == "hf_gathered" else loss_every_position
    if jit:
        loss_fn = torch.compile(loss_fn)

    def forward():
        if bf16:  # torch's mixed precision: bf16 matmuls inside, fp32 weights and loss
            with torch.autocast(device, dtype=torch.bfloat16):
                return loss_fn()
        return loss_fn()

    def step():  # one optimizer step; with accumulation as HF's Trainer: (loss / n).backward() × n
        optimizer.zero_grad(set_to_none=True)
        for _ in range(accumulation):
            loss = forward()
            (loss / accumulation if accumulation > 1 else loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return float(loss.detach())

    info = {"transformers": transformers.__version__, "torch": torch.__version__,
            "threads": torch.get_num_threads(), "accumulation": accumulation,
            "autocast_bf16": bf16, "torch_compile": bool(jit),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "attn_implementation": getattr(model.config, "_attn_implementation", None),
            "params": int(sum(p.numel() for p in model.parameters()))}
    step.model = model  # for profile_step.py
    return step, info


def run_worker(spec, args):
    """One process per (backend, implementation, size), holding one model per recipe."""
    backend, impl, size = spec.split(":")
    data = make_batch(args.batch, args.sequence_length, args.masks)
    steppers, ready = {}, {}
    for recipe in recipes_for(backend, impl, args):
        t0 = time.perf_counter()
        try:
            if impl in HF_IMPLS:
                step, info = hf_stepper(impl, size, data, recipe)
            else:
                step, info = keras_stepper(impl, size, backend, data, recipe)
            build_s = time.perf_counter() - t0
            t1 = time.perf_counter()
            first_loss = step()
            first_s = time.perf_counter() - t1
            warm = []
            for _ in range(args.warmup):
                t1 = time.perf_counter()
                step()
                warm.append(time.perf_counter() - t1)
        except Exception as e:  # reported to the parent, which carries on with the others
            import traceback
            traceback.print_exc()
            ready[recipe] = {"error": f"{type(e).__name__}: {e}"}
            continue
        steppers[recipe] = step
        ready[recipe] = {"import_build_s": build_s, "first_step_s": first_s, "warmup_s": warm,
                         "first_loss": first_loss, "info": info}
    import resource
    emit({"ready": bool(steppers), "recipes": ready,
          "error": None if steppers else "; ".join(r["error"] for r in ready.values())})
    if not steppers:
        return 1
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        recipe = cmd[1]
        n, seconds = (int(cmd[2]), 0.0) if cmd[0] == "run" else (1, float(cmd[2]))
        step = steppers[recipe]
        cpu0, times, losses = time.process_time(), [], []
        while len(times) < n or sum(times) < seconds:
            t1 = time.perf_counter()
            losses.append(step())
            times.append(time.perf_counter() - t1)
        emit({"times": times, "cpu_s": time.process_time() - cpu0, "last_loss": losses[-1],
              "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    return 0


def run_peak_worker(args):
    """Best fp32 GFLOP/s of large square matmuls in each library available."""
    from benchmarks.machine import matmul_ceilings

    sizes = (1024,) if args.quick else (2048,) if args.fast else (2048, 4096)
    # the smoke test (--quick) skips the jax/tf imports
    emit({"peak": matmul_ceilings(sizes, reps=2 if args.quick else 3,
                                  libraries=("numpy", "torch") if args.quick else None)})
    return 0


# ----------------------------------------------------------------------------------------------
# Parent side
# ----------------------------------------------------------------------------------------------

class Worker:
    def __init__(self, spec, args, logdir):
        self.spec = spec
        self.backend, self.impl, self.size = spec.split(":")
        self.recipes = recipes_for(self.backend, self.impl, args)
        self.log_path = os.path.join(logdir, spec.replace(":", "_") + ".log")
        self.log = open(self.log_path, "w")
        env = worker_env(args, KERAS_BACKEND=self.backend, PYTHONUNBUFFERED="1")
        cmd = [sys.executable, os.path.abspath(__file__), "--_worker", spec,
               "--batch", str(args.batch), "--sequence-length", str(args.sequence_length),
               "--masks", str(args.masks), "--warmup", str(args.warmup),
               "--recipes", ",".join(args.recipes)] + (
                   ["--torch-compile"] if args.torch_compile else [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, bufsize=1, env=env,
                                     cwd=REPO_ROOT)
        self.ready = None
        self.runs = {}  # recipe: [measurement, ...]
        self.error = None

    def read(self):
        for line in self.proc.stdout:
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])
            self.log.write(line)
        self.log.flush()
        return None

    def wait_ready(self):
        msg = self.read()
        if not msg or not msg.get("ready"):
            self.error = (msg or {}).get("error") or f"worker exited (rc={self.proc.wait()})"
            self.close()
            return False
        self.ready = msg
        self.recipes = [r for r in self.recipes if "error" not in msg["recipes"].get(r, {})]
        return True

    def failed_recipes(self):
        return {r: v["error"] for r, v in ((self.ready or {}).get("recipes") or {}).items()
                if "error" in v}

    def run(self, recipe, steps, seconds):
        """``steps`` timed optimizer steps, or (steps None) as many as fill ``seconds``, ≥ 1."""
        ticks0, t0 = cpu_jiffies(), time.perf_counter()
        self.proc.stdin.write(f"run {recipe} {steps}\n" if steps else f"time {recipe} {seconds}\n")
        self.proc.stdin.flush()
        msg = self.read()
        wall, ticks1 = time.perf_counter() - t0, cpu_jiffies()
        if msg is None:
            self.error = f"worker died during a run (rc={self.proc.wait()})"
            self.close()
            return None
        if ticks0 and ticks1:
            hz = os.sysconf("SC_CLK_TCK")
            busy = (ticks1[0] - ticks0[0]) / hz
            capacity = (ticks1[1] - ticks0[1]) / hz  # ≈ wall × cores
            msg["other_cpu"] = max(0.0, busy - msg["cpu_s"]) / capacity if capacity else None
        msg["wall_s"] = wall
        msg["load_1min"] = os.getloadavg()[0]
        self.runs.setdefault(recipe, []).append(msg)
        return msg

    def close(self):
        stop_worker(self.proc)
        self.log.close()

    def tail(self, n=15):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


def measure_peak(args, logdir):
    log = open(os.path.join(logdir, "peak.log"), "a")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--_peak"]
                          + (["--quick"] if args.quick else [])
                          + (["--fast"] if args.fast else []),
                          stdout=subprocess.PIPE, stderr=log, text=True,
                          env=worker_env(args))
    log.close()
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])["peak"]
    print(f"matmul peak measurement failed (rc={proc.returncode}); see {log.name}")
    return {}


def worker_env(args, **extra):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **extra)
    if args.omp_wait_policy and "OMP_WAIT_POLICY" not in os.environ:
        env["OMP_WAIT_POLICY"] = args.omp_wait_policy
    return env


def plan(args):
    """Groups of worker specs kept alive together and interleaved: per size and backend (default;
    at most 4 processes, ≤ 8 GB) or per size (every backend interleaved; ~2.5 GB per process and
    recipe)."""
    groups = []
    for size in args.sizes:
        by_backend = []
        for backend in args.backends:
            group = [f"{backend}:{impl}:{size}" for impl in args.impls
                     if impl in KERAS_IMPLS + KERAS_VARIANTS or backend == "torch"]
            if group:
                by_backend.append(group)
        if args.group_by == "size":
            groups.append([spec for group in by_backend for spec in group])
        else:
            groups.extend(by_backend)
    return groups


def log_line(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def steps_for(recipe, args):
    """Optimizer steps per measurement: ``--steps`` micro-batches rounded up to whole steps."""
    if not args.steps:
        return None
    accumulation = parse_recipe(recipe)[1]
    return max(1, -(-args.steps // accumulation))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="mini,small",
                        help="comma-separated (default mini,small)")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--impls", default=",".join(KERAS_IMPLS + HF_IMPLS),
                        help="subset of keras_bert_lab,keras_hub,hf_gathered,hf_every_pos; "
                        "also keras_bert_lab_kerasdrop")
    parser.add_argument("--recipes", default="fp32,bf16,accum4,jit,nojit",
                        help="comma-separated subset of fp32 (framework default), bf16 (Keras "
                             "mixed_bfloat16 / torch.autocast bf16), accum<N> (gradient "
                             "accumulation over N micro-batches of --batch), jit / nojit (force "
                             "jit_compile on / off where that is not the backend's default; "
                             "torch: torch.compile, only with --torch-compile)")
    parser.add_argument("--torch-compile", action="store_true",
                        help="include the jit recipe on torch (Keras jit_compile=True and HF "
                             "torch.compile): 35-78 s of compiling per model on this CPU")
    parser.add_argument("--steps", type=int, default=None,
                        help="timed micro-batches per measurement, rounded up to whole "
                             "optimizer steps (default: as many steps as fill --target-s "
                             "seconds, at least 1; --quick 2, --fast 2)")
    parser.add_argument("--target-s", type=float, default=5.0,
                        help="seconds per measurement when --steps is not given (default 5)")
    parser.add_argument("--group-by", choices=("backend", "size"), default="backend",
                        help="workers alive and interleaved together: one size on one backend "
                             "(default; ≤ 4 processes) or one size on every backend "
                             "(~8 processes, needs ~20 GB for small)")
    parser.add_argument("--startup-parallel", type=int, default=None,
                        help="workers starting up (import/compile/warm-up) at once (default 2; "
                             "--quick 3)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="interleaved repeats (default 4; --fast 2)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed optimizer steps after the first (compile) step (default 2; "
                             "--fast 1)")
    parser.add_argument("--batch", type=int, default=32, help="micro-batch size (default 32)")
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--masks", type=int, default=20)
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: tiny size, batch 8, no warm-up, 1 repeat of 2 steps, "
                             "one small numpy/torch matmul check (< 2 min)")
    parser.add_argument("--fast", action="store_true",
                        help="the < 10 min run on a loaded 2-core machine: mini only, "
                             "keras_bert_lab, keras_hub and hf_gathered, 2 repeats of 2 "
                             "micro-batches (accum4: 1 optimizer step), 1 warm-up step, matmul "
                             "ceiling from 2048² only")
    parser.add_argument("--json", help="write every raw measurement to this file")
    parser.add_argument("--omp-wait-policy", default="PASSIVE",
                        help="OMP_WAIT_POLICY for the workers (default PASSIVE: with OpenMP's "
                             "default spin-waiting, torch steps ran 5-15x slower whenever another "
                             "process held one of the two cores); '' leaves it unset")
    parser.add_argument("--_worker", help=argparse.SUPPRESS)
    parser.add_argument("--_peak", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes = "tiny" if args.sizes == "mini,small" else args.sizes
        args.batch = 8 if args.batch == 32 else args.batch
    if args.fast:
        args.sizes = "mini" if args.sizes == "mini,small" else args.sizes
        if args.impls == ",".join(KERAS_IMPLS + HF_IMPLS):
            args.impls = "keras_bert_lab,keras_hub,hf_gathered"
    args.steps = args.steps or (2 if args.quick or args.fast else None)
    args.startup_parallel = args.startup_parallel or (3 if args.quick else 2)
    args.repeats = args.repeats or (1 if args.quick else 2 if args.fast else 4)
    args.warmup = args.warmup if args.warmup is not None else (
        0 if args.quick else 1 if args.fast else 2)
    args.recipes = [r for r in args.recipes.split(",") if r]
    for r in args.recipes:
        try:
            parse_recipe(r)
        except ValueError as error:
            parser.error(str(error))

    if args._peak:
        return run_peak_worker(args)
    if args._worker:
        return run_worker(args._worker, args)

    args.sizes = [s for s in args.sizes.split(",") if s]
    args.backends = [b for b in args.backends.split(",") if b]
    args.impls = [i for i in args.impls.split(",") if i]
    for s in args.sizes:
        if s not in SIZES:
            parser.error(f"unknown size {s!r}; choose from {list(SIZES)}")
    for b in args.backends:
        if b not in BACKENDS:
            parser.error(f"unknown backend {b!r}; choose from {list(BACKENDS)}")
    for i in args.impls:
        if i not in KERAS_IMPLS + KERAS_VARIANTS + HF_IMPLS:
            parser.error(f"unknown implementation {i!r}")

    started = time.time()
    load_before = os.getloadavg()
    log_line(f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} "
             f"{load_before[2]:.2f} on {os.cpu_count()} CPUs")
    logdir = tempfile.mkdtemp(prefix="train_step_")
    log_line(f"worker logs in {logdir}")

    peaks = [measure_peak(args, logdir)]
    log_line("matmul GFLOP/s: " + ", ".join(f"{k} {v:.0f}" for k, v in peaks[0].items()))

    results = []
    for specs in plan(args):
        workers = []
        # Start-up (imports, build one model per recipe, compile, warm-up) overlaps
        # --startup-parallel workers; the timed repeats below run one (worker, recipe) at a time
        # while the others wait idle.
        pending = list(specs)
        starting = []
        while pending or starting:
            while pending and len(starting) < max(1, args.startup_parallel):
                spec = pending.pop(0)
                log_line(f"starting {spec} ({', '.join(recipes_for(*spec.split(':')[:2], args))})")
                starting.append(Worker(spec, args, logdir))
            w = starting.pop(0)
            if w.wait_ready():
                for recipe, r in w.ready["recipes"].items():
                    if "error" in r:
                        log_line(f"  {w.spec} {recipe} FAILED: {r['error']}")
                        continue
                    log_line(f"  {w.spec} {recipe} ready: build {r['import_build_s']:.1f}s, "
                             f"first step {r['first_step_s']:.1f}s, warm-up "
                             + " ".join(f"{t:.2f}s" for t in r["warmup_s"]))
                workers.append(w)
            else:
                log_line(f"  {w.spec} FAILED: {w.error}\n{w.tail()}")
                results.append(w)
        units = [(w, recipe) for w in workers for recipe in w.recipes]
        for rep in range(args.repeats):
            shift = rep * max(1, len(units) // args.repeats) % len(units) if units else 0
            for w, recipe in units[shift:] + units[:shift]:
                if w.error:
                    continue
                msg = w.run(recipe, steps_for(recipe, args), args.target_s)
                if msg is None:
                    log_line(f"  {w.spec} FAILED: {w.error}\n{w.tail()}")
                    continue
                micro = parse_recipe(recipe)[1]
                sps = len(msg["times"]) * micro * args.batch / sum(msg["times"])
                log_line(f"repeat {rep + 1}/{args.repeats} {w.spec} {recipe}: {sps:.2f} seq/s "
                         f"(optimizer steps {' '.join(f'{t:.2f}' for t in msg['times'])} s; "
                         f"other CPU {100 * (msg.get('other_cpu') or 0):.0f}%, load "
                         f"{msg['load_1min']:.1f})")
        for w in workers:
            w.close()
        results.extend(workers)

    if not args.quick:  # the ceiling again at the end: under load one reading is often low
        peaks.append(measure_peak(args, logdir))
        log_line("matmul GFLOP/s: " + ", ".join(f"{k} {v:.0f}" for k, v in peaks[1].items()))
    load_after = os.getloadavg()
    log_line(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    peak = max([v for p in peaks for v in p.values()] or [float("nan")])
    peak_name = max(((k, v) for p in peaks for k, v in p.items()), key=lambda kv: kv[1],
                    default=("none", 0))[0]

    rows = summarise(results, args, peak)
    loads = [r["load_1min"] for w in results for runs in w.runs.values() for r in runs]
    print()
    print(f"# Pretraining step: micro-batch {args.batch} × {args.sequence_length} tokens, {args.masks} "
          f"masked positions, AdamW, dropout {DROPOUT}; median of {args.repeats} interleaved "
          f"repeats of {f'{args.steps} micro-batches' if args.steps else f'≥ {args.target_s:g} s'}"
          f"; OMP_WAIT_POLICY={worker_env(args).get('OMP_WAIT_POLICY', 'unset')}")
    print(f"# matmul ceiling {peak:.0f} GFLOP/s fp32 ({peak_name}); load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after, 1-min load during the "
          f"measurements median {statistics.median(loads) if loads else float('nan'):.1f} "
          f"(range {min(loads, default=float('nan')):.1f}–{max(loads, default=float('nan')):.1f}); "
          f"wall {(time.time() - started) / 60:.1f} min")
    print("# recipes: fp32 = framework default (TensorFlow graph mode jit_compile=False, JAX "
          "jit_compile=True, torch eager); bf16 = Keras mixed_bfloat16 / HF torch.autocast(cpu, "
          "bfloat16); accumN = N micro-batches per optimizer step (Keras "
          "gradient_accumulation_steps=N; HF: (loss/N).backward() × N then clip + step); jit / "
          "nojit = jit_compile forced to the non-default value (torch: torch.compile)")
    print(f"# MFU = useful FLOP/s ÷ the fp32 ceiling (also for bf16); {peak_gflop_note(args)}")
    print_table(rows)
    print()
    print_ratios(rows)
    for w in results:
        if w.error:
            print(f"FAILED {w.spec}: {w.error}")
        for recipe, error in w.failed_recipes().items():
            print(f"FAILED {w.spec} {recipe}: {error}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": {k: v for k, v in vars(args).items() if not k.startswith("_")},
                       "peaks": peaks, "peak": peak, "load_before": load_before,
                       "load_after": load_after, "rows": rows,
                       "workers": [{"spec": w.spec, "ready": w.ready, "runs": w.runs,
                                    "error": w.error} for w in results]}, f, indent=1)
    return 1 if any(w.error or w.failed_recipes() for w in results) else 0


def peak_gflop_note(args):
    return ", ".join(f"{size} {step_flops(size, args.batch, args.sequence_length, args.masks) / 1e9:.1f}"
                     for size in args.sizes) + " GFLOP per micro-batch"


def summarise(results, args, peak):
    rows = []
    for w in results:
        if w.error and not w.runs:
            continue
        for recipe, runs in w.runs.items():
            micro = parse_recipe(recipe)[1]
            per_repeat = [args.batch * micro * len(r["times"]) / sum(r["times"]) for r in runs]
            seq_s = statistics.median(per_repeat)
            flops = step_flops(w.size, args.batch, args.sequence_length, args.masks)
            others = [r["other_cpu"] for r in runs if r.get("other_cpu") is not None]
            rows.append({
                "backend": w.backend, "impl": w.impl, "size": w.size, "recipe": recipe,
                "micro_batches": micro, "seq_s": seq_s,
                "seq_s_min": min(per_repeat), "seq_s_max": max(per_repeat),
                "tokens_s": seq_s * args.sequence_length,
                "micro_batch_s": args.batch / seq_s, "optimizer_step_s": args.batch * micro / seq_s,
                "gflop_s": seq_s / args.batch * flops / 1e9,
                "mfu": seq_s / args.batch * flops / 1e9 / peak,
                "step_gflop": flops / 1e9,
                "other_cpu": statistics.median(others) if others else None,
                "load_1min": statistics.median(r["load_1min"] for r in runs),
                "maxrss_mb": max(r["maxrss_mb"] for r in runs),
                "compile_s": w.ready["recipes"][recipe]["first_step_s"], "repeats": len(runs),
                "steps": sum(len(r["times"]) for r in runs),
            })
    for row in rows:
        same = [r for r in rows if r["size"] == row["size"] and r["recipe"] == row["recipe"]]
        hub = [r for r in same if r["impl"] == "keras_hub" and r["backend"] == row["backend"]]
        hf = [r for r in same if r["impl"] == "hf_gathered"]
        fp32 = [r for r in rows if r["size"] == row["size"] and r["backend"] == row["backend"]
                and r["impl"] == row["impl"] and r["recipe"] == "fp32"]
        row["vs_hub"] = row["seq_s"] / hub[0]["seq_s"] if hub else None
        row["vs_hf"] = row["seq_s"] / hf[0]["seq_s"] if hf else None
        row["vs_fp32"] = row["seq_s"] / fp32[0]["seq_s"] if fp32 else None
    order = {s: i for i, s in enumerate(SIZES)}
    impl_order = {i: n for n, i in enumerate(KERAS_IMPLS + KERAS_VARIANTS + HF_IMPLS)}
    recipe_order = {r: n for n, r in enumerate(args.recipes)}
    rows.sort(key=lambda r: (order[r["size"]], BACKENDS.index(r["backend"]),
                             recipe_order.get(r["recipe"], 99), impl_order[r["impl"]]))
    return rows


def print_table(rows):
    head = ("backend", "impl", "size", "recipe", "seq/s", "(min–max)", "tokens/s",
            "s/micro-batch", "s/opt step", "MFU", "vs keras-hub", "vs HF", "vs own fp32",
            "steps", "other%", "load", "RSS MB", "1st step s")
    fmt = lambda x, f: "—" if x is None else format(x, f)  # noqa: E731
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        line = (r["backend"], r["impl"], r["size"], r["recipe"], fmt(r["seq_s"], ".2f"),
                f"{r['seq_s_min']:.1f}–{r['seq_s_max']:.1f}", fmt(r["tokens_s"], ".0f"),
                fmt(r["micro_batch_s"], ".2f"), fmt(r["optimizer_step_s"], ".2f"),
                fmt(100 * r["mfu"], ".1f") + "%", fmt(r["vs_hub"], ".2f"), fmt(r["vs_hf"], ".2f"),
                fmt(r["vs_fp32"], ".2f"), f"{r['repeats']}×{r['steps'] / r['repeats']:.3g}",
                fmt(None if r["other_cpu"] is None else 100 * r["other_cpu"], ".0f"),
                fmt(r["load_1min"], ".1f"), fmt(r["maxrss_mb"], ".0f"), fmt(r["compile_s"], ".1f"))
        print("| " + " | ".join(line) + " |")


def print_ratios(rows):
    """keras_bert_lab's tokens/s over keras-hub's (same backend) and HF's, per recipe."""
    ours = [r for r in rows if r["impl"] == "keras_bert_lab"]
    sizes = sorted({r["size"] for r in ours}, key=list(SIZES).index)
    recipes = list(dict.fromkeys(r["recipe"] for r in rows))
    backends = [b for b in BACKENDS if any(r["backend"] == b for r in ours)]
    fmt = lambda x: "—" if x is None else f"{x:.2f}"  # noqa: E731
    for size in sizes:
        print(f"Ratios of tokens/s, {size}: ours/keras-hub (same backend) | ours/HF "
              "(hf_gathered, torch, same recipe)")
        print("| recipe | " + " | ".join(f"{b} vs keras-hub" for b in backends) + " | "
              + " | ".join(f"{b} vs HF" for b in backends) + " |")
        print("|---|" + "---|" * (2 * len(backends)))
        for recipe in recipes:
            cells = {b: next((r for r in ours if r["size"] == size and r["backend"] == b
                              and r["recipe"] == recipe), None) for b in backends}
            if not any(cells.values()):
                continue
            print(f"| {recipe} | "
                  + " | ".join(fmt(c and c["vs_hub"]) for c in cells.values()) + " | "
                  + " | ".join(fmt(c and c["vs_hf"]) for c in cells.values()) + " |")


if __name__ == "__main__":
    sys.exit(main())
