"""Throughput of one BERT pretraining step: keras_bert_lab against keras-hub and Hugging Face.

What is timed: one optimizer step of masked-LM (+ next-sentence) pretraining on a fixed batch of
``B × T`` tokens (default 32 × 128) with ``P`` masked positions per sequence (default 20), AdamW
(lr 1e-4, weight decay 0.01 on ≥2-D weights, ε 1e-6, gradients clipped to global norm 1.0),
dropout 0.1 on hidden states *and* attention probabilities, float32, for each size (default mini
and small) and each Keras backend (default tensorflow, jax, torch).

Implementations, each (backend, implementation, size) in its own subprocess:

- ``keras_bert_lab``: ``BertPretrainer(BertBackbone(BertConfig.from_size(size)))`` with its default
  ``compile()`` (AdamW as above, MLM + NSP losses and accuracies); the time a user gets.
- ``keras_hub``: ``keras_hub.models.BertMaskedLM`` (0.32) over a ``keras_hub.models.BertBackbone``
  of the same shape (no preset), same AdamW, keras-hub's default loss and weighted accuracy. It has
  no next-sentence head (a negligible ~0.05% of the FLOPs here).
- ``hf_gathered`` (torch only): ``transformers.BertForPreTraining``: ``model.bert`` then the hidden
  states gathered at the masked positions before ``model.cls.predictions``, NSP from the pooled
  output, ``torch.optim.AdamW`` + ``clip_grad_norm_(1.0)``: the same computation as the two above.
- ``hf_every_pos`` (torch only): the stock ``BertForPreTraining(..., labels=...,
  next_sentence_label=...)`` call, which scores all ``T`` positions against the vocabulary
  (labels -100 elsewhere).

Each framework runs its fastest sensible CPU default: TensorFlow graph mode *without* XLA
(``jit_compile=False``; XLA is slower for training on this CPU), JAX jitted (``jit_compile=True``,
the Keras default), PyTorch eager (Keras' torch backend and HF alike). Threads: library defaults
(all cores).

Method: the parent process starts one group of workers (``--group-by backend``, the default: one
size on one backend, i.e. keras_bert_lab + keras-hub, plus the two HF variants on torch; ``size``:
every backend of one size at once, ~20 GB for small). Start-up (imports, build, first step =
compile/trace, then ``--warmup`` more steps) overlaps two workers at a time; the workers are then
kept alive and idle while the timed repeats are interleaved: in each repeat every worker in turn
runs steps for ``--target-s`` seconds (or exactly ``--steps``), one worker at a time, in an order
that rotates between repeats. Keras steps are ``train_on_batch`` calls, which return Python floats
and so synchronise every step; HF's is a manual loop. The figure reported is the median over
repeats of the per-repeat throughput. No ``fit`` on arrays is timed (keras-hub's routes through
tf.data and can stall at epoch end). For each measurement the share of the machine's CPU time used
by *other* processes is read from ``/proc/stat`` (column "other%"): a high value means the figure
is contended. Workers get ``OMP_WAIT_POLICY=PASSIVE`` (see ``--omp-wait-policy``): with OpenMP's
default spin-waiting, every torch step (Keras' torch backend and HF alike) ran 5–15× slower as
soon as another process took one of the two cores.

The machine's fp32 matmul ceiling is measured in the same run (large square matmuls with numpy,
torch, jax and tensorflow, best of all; once before and once after the training steps; the higher
is used) and MFU = model FLOP/s ÷ that ceiling, with the model FLOPs counted analytically for a
training step with the MLM head at the gathered positions (3 × forward):

    forward = 2·N_dense·B·T                  (encoder matmul weights: L·(4H² + 2HI))
            + 4·L·B·T²·H                     (attention scores and weighted sum)
            + 2·B·P·(H² + H·V)               (MLM transform + tied decoder at masked positions)
            + 2·B·(H² + 2H)                  (pooler + NSP)

The same useful-FLOP count is used for every implementation, so ``hf_every_pos``'s MFU counts only
the useful work (it performs ~T/P× more decoder FLOPs).

Usage::

    .venv/bin/python benchmarks/train_step.py            # full run: 18 min on 2 shared cores
    .venv/bin/python benchmarks/train_step.py --quick    # smoke test: 71-119 s (load 3-5)
    .venv/bin/python benchmarks/train_step.py --sizes mini --backends jax,torch --steps 4
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

from benchmarks.machine import cpu_jiffies  # noqa: E402

MARK = "@@TRAIN_STEP@@ "
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {  # name: (layers, hidden, heads); FFN 4 × hidden; as keras_bert_lab.BertConfig
    "tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8), "medium": (8, 512, 8),
    "base": (12, 768, 12), "large": (24, 1024, 16),
}
VOCAB, MAX_POSITIONS, DROPOUT = 30522, 512, 0.1
BACKENDS = ("tensorflow", "jax", "torch")
KERAS_IMPLS = ("keras_bert_lab", "keras_hub")
HF_IMPLS = ("hf_gathered", "hf_every_pos")
PEERS = ("keras_hub", "hf_gathered", "hf_every_pos")
JIT = {"tensorflow": False, "jax": True, "torch": False}


# ----------------------------------------------------------------------------------------------
# Shared helpers
# ----------------------------------------------------------------------------------------------

def step_flops(size, batch, seq_len, masks):
    """Useful FLOPs of one training step (3 × forward), MLM head at the gathered positions."""
    layers, hidden, _ = SIZES[size]
    inner = 4 * hidden
    dense = layers * (4 * hidden * hidden + 2 * hidden * inner)
    forward = (2 * dense * batch * seq_len
               + 4 * layers * batch * seq_len * seq_len * hidden
               + 2 * batch * masks * (hidden * hidden + hidden * VOCAB)
               + 2 * batch * (hidden * hidden + 2 * hidden))
    return 3 * forward


def make_batch(batch, seq_len, masks, seed=0):
    """A fixed pretraining batch as NumPy arrays: full-length sentence pairs, ``masks`` distinct
    sorted masked positions per sequence (never [CLS]), random targets and NSP labels."""
    import numpy as np

    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1000, VOCAB, size=(batch, seq_len)).astype("int32")
    token_ids[:, 0] = 101
    segment_ids = np.zeros((batch, seq_len), "int32")
    segment_ids[:, seq_len // 2:] = 1
    padding_mask = np.ones((batch, seq_len), "int32")
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq_len), masks, replace=False)
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
# Worker side
# ----------------------------------------------------------------------------------------------

def build_keras(impl, size, backend):
    import keras

    layers, hidden, heads = SIZES[size]
    if impl == "keras_bert_lab":
        from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer

        config = BertConfig.from_size(size, dropout=DROPOUT, attention_dropout=DROPOUT)
        model = BertPretrainer(BertBackbone(config))
        model.compile(jit_compile=JIT[backend])  # its default AdamW, losses and metrics
    else:
        import keras_hub

        from keras_bert_lab.training.optimizers import adamw

        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=VOCAB, num_layers=layers, num_heads=heads, hidden_dim=hidden,
            intermediate_dim=4 * hidden, dropout=DROPOUT, max_sequence_length=MAX_POSITIONS,
            num_segments=2)
        model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
        # keras-hub's default loss and weighted accuracy; the AdamW of BertPretrainer.compile().
        model.compile(optimizer=adamw(model, learning_rate=1e-4), jit_compile=JIT[backend])
    return keras, model


def keras_stepper(impl, size, backend, data):
    keras, model = build_keras(impl, size, backend)
    if keras.backend.backend() != backend:
        raise RuntimeError(f"Keras runs on {keras.backend.backend()!r}, not {backend!r}: set "
                           "KERAS_BACKEND before keras is first imported")
    x = {k: data[k] for k in ("token_ids", "segment_ids", "padding_mask", "mask_positions")}
    if impl == "keras_bert_lab":
        y = {"mlm": data["mask_ids"], "nsp": data["nsp_labels"]}
        sw = {"mlm": data["mask_weights"], "nsp": data["nsp_weights"]}
    else:
        y, sw = data["mask_ids"], data["mask_weights"]

    def step():
        logs = model.train_on_batch(x, y, sample_weight=sw, return_dict=True)
        return float(logs["loss"])

    opt = model.optimizer
    info = {"keras": keras.__version__, "backend": keras.backend.backend(),
            "jit_compile": JIT[backend], "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "params": int(model.count_params()),
            "optimizer": {k: getattr(opt, k, None) for k in (
                "name", "weight_decay", "epsilon", "clipnorm", "global_clipnorm")}}
    if backend == "torch":
        import torch
        info["threads"] = torch.get_num_threads()
    elif backend == "tensorflow":
        import tensorflow as tf
        info["threads"] = tf.config.threading.get_intra_op_parallelism_threads() or "default"
    return step, info


def hf_stepper(impl, size, data):
    import torch
    import transformers

    layers, hidden, heads = SIZES[size]
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=4 * hidden, hidden_act="gelu", hidden_dropout_prob=DROPOUT,
        attention_probs_dropout_prob=DROPOUT, max_position_embeddings=MAX_POSITIONS,
        type_vocab_size=2, layer_norm_eps=1e-12)
    model = transformers.BertForPreTraining(config)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=1e-4, betas=(0.9, 0.999), eps=1e-6)
    t = {k: torch.from_numpy(v) for k, v in data.items()}
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
        mlm_logits = model.cls.predictions(gathered)  # (B, P, V)
        nsp_logits = model.cls.seq_relationship(pooled)
        mlm = ce(mlm_logits.reshape(-1, VOCAB), mask_ids.reshape(-1), reduction="none")
        mlm = (mlm * weights.reshape(-1)).sum() / weights.sum()
        return mlm + ce(nsp_logits, nsp)

    def loss_every_position():
        return model(input_ids=ids, attention_mask=attention_mask, token_type_ids=segments,
                     labels=full_labels, next_sentence_label=nsp).loss

    loss_fn = loss_gathered if impl == "hf_gathered" else loss_every_position

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return float(loss.detach())

    info = {"transformers": transformers.__version__, "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "attn_implementation": getattr(model.config, "_attn_implementation", None),
            "params": int(sum(p.numel() for p in model.parameters()))}
    return step, info


def run_worker(spec, args):
    backend, impl, size = spec.split(":")
    data = make_batch(args.batch, args.seq_len, args.masks)
    t0 = time.perf_counter()
    try:
        if impl in HF_IMPLS:
            step, info = hf_stepper(impl, size, data)
        else:
            step, info = keras_stepper(impl, size, backend, data)
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
        emit({"ready": False, "error": f"{type(e).__name__}: {e}"})
        return 1
    import resource
    emit({"ready": True, "import_build_s": build_s, "first_step_s": first_s, "warmup_s": warm,
          "first_loss": first_loss, "info": info})
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        n, seconds = (int(cmd[1]), 0.0) if cmd[0] == "run" else (2, float(cmd[1]))
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
    import numpy as np

    sizes = (1024,) if args.quick else (2048, 4096)
    reps = 2 if args.quick else 3
    results = {}

    def best(fn, n):
        fn()  # warm-up (and compile)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return 2 * n ** 3 / min(times) / 1e9

    for n in sizes:
        a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
        b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
        results[f"numpy {n}"] = best(lambda: a @ b, n)
        try:
            import torch
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            results[f"torch {n}"] = best(lambda: torch.mm(ta, tb), n)
        except ImportError:
            pass
        if args.quick:  # numpy and torch only: the smoke test skips the jax/tf imports
            continue
        try:
            import jax
            import jax.numpy as jnp
            ja, jb = jnp.asarray(a), jnp.asarray(b)
            mm = jax.jit(jnp.dot)
            results[f"jax {n}"] = best(lambda: mm(ja, jb).block_until_ready(), n)
        except ImportError:
            pass
        try:
            import tensorflow as tf
            fa, fb = tf.constant(a), tf.constant(b)
            results[f"tensorflow {n}"] = best(lambda: tf.linalg.matmul(fa, fb)[0, 0].numpy(), n)
        except ImportError:
            pass
    emit({"peak": results})
    return 0


# ----------------------------------------------------------------------------------------------
# Parent side
# ----------------------------------------------------------------------------------------------

class Worker:
    def __init__(self, spec, args, logdir):
        self.spec = spec
        self.backend, self.impl, self.size = spec.split(":")
        self.log_path = os.path.join(logdir, spec.replace(":", "_") + ".log")
        self.log = open(self.log_path, "w")
        env = worker_env(args, KERAS_BACKEND=self.backend, PYTHONUNBUFFERED="1")
        cmd = [sys.executable, os.path.abspath(__file__), "--_worker", spec,
               "--batch", str(args.batch), "--seq-len", str(args.seq_len),
               "--masks", str(args.masks), "--warmup", str(args.warmup)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, bufsize=1, env=env,
                                     cwd=REPO_ROOT)
        self.ready = None
        self.runs = []
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
        return True

    def run(self, steps, seconds):
        """``steps`` timed steps, or (steps None) as many as fill ``seconds``, at least 2."""
        ticks0, t0 = cpu_jiffies(), time.perf_counter()
        self.proc.stdin.write(f"run {steps}\n" if steps else f"time {seconds}\n")
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
        self.runs.append(msg)
        return msg

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=60)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def tail(self, n=15):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


def measure_peak(args, logdir):
    log = open(os.path.join(logdir, "peak.log"), "w")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--_peak"]
                          + (["--quick"] if args.quick else []),
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
    at most 4 processes, ≤ 8 GB) or per size (every backend interleaved; ~2.5 GB per process)."""
    groups = []
    for size in args.sizes:
        by_backend = []
        for backend in args.backends:
            group = [f"{backend}:{impl}:{size}" for impl in args.impls
                     if impl in KERAS_IMPLS or backend == "torch"]
            if group:
                by_backend.append(group)
        if args.group_by == "size":
            groups.append([spec for group in by_backend for spec in group])
        else:
            groups.extend(by_backend)
    return groups


def log_line(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="mini,small",
                        help="comma-separated (default mini,small)")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--impls", default=",".join(KERAS_IMPLS + HF_IMPLS),
                        help="subset of keras_bert_lab,keras_hub,hf_gathered,hf_every_pos")
    parser.add_argument("--steps", type=int, default=None,
                        help="timed steps per worker per repeat (default: as many as fill "
                             "--target-s seconds, at least 2; --quick 2)")
    parser.add_argument("--target-s", type=float, default=5.0,
                        help="seconds per measurement when --steps is not given (default 5)")
    parser.add_argument("--group-by", choices=("backend", "size"), default="backend",
                        help="workers alive and interleaved together: one size on one backend "
                             "(default; ≤ 4 processes) or one size on every backend "
                             "(~8 processes, needs ~20 GB for small)")
    parser.add_argument("--startup-parallel", type=int, default=None,
                        help="workers starting up (import/compile/warm-up) at once (default 2; "
                             "--quick 3)")
    parser.add_argument("--repeats", type=int, default=None, help="interleaved repeats (default 4)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed steps after the first (compile) step (default 2)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--masks", type=int, default=20)
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: tiny size, batch 8, no warm-up, 1 repeat of 2 steps, "
                             "one small numpy/torch matmul check (< 2 min)")
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
    args.steps = args.steps or (2 if args.quick else None)
    args.startup_parallel = args.startup_parallel or (3 if args.quick else 2)
    args.repeats = args.repeats or (1 if args.quick else 4)
    args.warmup = args.warmup if args.warmup is not None else (0 if args.quick else 2)

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
        if i not in KERAS_IMPLS + HF_IMPLS:
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
        # Start-up (imports, build, compile, warm-up) overlaps --startup-parallel workers; the
        # timed repeats below run one worker at a time while the others wait idle.
        pending = list(specs)
        starting = []
        while pending or starting:
            while pending and len(starting) < max(1, args.startup_parallel):
                spec = pending.pop(0)
                log_line(f"starting {spec}")
                starting.append(Worker(spec, args, logdir))
            w = starting.pop(0)
            if w.wait_ready():
                r = w.ready
                log_line(f"  {w.spec} ready: import+build {r['import_build_s']:.1f}s, first step "
                         f"{r['first_step_s']:.1f}s, warm-up "
                         + " ".join(f"{t:.2f}s" for t in r["warmup_s"]))
                workers.append(w)
            else:
                log_line(f"  {w.spec} FAILED: {w.error}\n{w.tail()}")
                results.append(w)
        for rep in range(args.repeats):
            order = workers[rep % len(workers):] + workers[:rep % len(workers)] if workers else []
            for w in order:
                if w.error:
                    continue
                msg = w.run(args.steps, args.target_s)
                if msg is None:
                    log_line(f"  {w.spec} FAILED: {w.error}\n{w.tail()}")
                    continue
                sps = len(msg["times"]) * args.batch / sum(msg["times"])
                log_line(f"repeat {rep + 1}/{args.repeats} {w.spec}: {sps:.2f} seq/s "
                         f"(steps {' '.join(f'{t:.2f}' for t in msg['times'])}; "
                         f"other CPU {100 * (msg.get('other_cpu') or 0):.0f}%)")
        for w in workers:
            w.close()
        results.extend(workers)

    if not args.quick:
        peaks.append(measure_peak(args, logdir))
        log_line("matmul GFLOP/s: " + ", ".join(f"{k} {v:.0f}" for k, v in peaks[1].items()))
    load_after = os.getloadavg()
    log_line(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    peak = max([v for p in peaks for v in p.values()] or [float("nan")])
    peak_name = max(((k, v) for p in peaks for k, v in p.items()), key=lambda kv: kv[1],
                    default=("none", 0))[0]

    rows = summarise(results, args, peak)
    print()
    print(f"# Pretraining step: batch {args.batch} × {args.seq_len} tokens, {args.masks} masked "
          f"positions, AdamW, dropout {DROPOUT}, fp32; median of {args.repeats} interleaved "
          f"repeats of {args.steps or f'≥ {args.target_s:g} s'} steps; OMP_WAIT_POLICY="
          f"{worker_env(args).get('OMP_WAIT_POLICY', 'unset')}")
    print(f"# matmul ceiling {peak:.0f} GFLOP/s ({peak_name}); load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; wall "
          f"{(time.time() - started) / 60:.1f} min")
    print(f"# TensorFlow: graph mode, jit_compile=False; JAX: jit_compile=True; torch: eager "
          f"(Keras and HF); library default threads; MFU counts {peak_gflop_note(args)}")
    print_table(rows)
    for w in results:
        if w.error:
            print(f"FAILED {w.spec}: {w.error}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": {k: v for k, v in vars(args).items() if not k.startswith("_")},
                       "peaks": peaks, "peak": peak, "load_before": load_before,
                       "load_after": load_after, "rows": rows,
                       "workers": [{"spec": w.spec, "ready": w.ready, "runs": w.runs,
                                    "error": w.error} for w in results]}, f, indent=1)
    return 1 if any(w.error for w in results) else 0


def peak_gflop_note(args):
    return ", ".join(f"{size} {step_flops(size, args.batch, args.seq_len, args.masks) / 1e9:.1f}"
                     for size in args.sizes) + " GFLOP per step"


def summarise(results, args, peak):
    rows = []
    for w in results:
        if w.error or not w.runs:
            continue
        per_repeat = [args.batch * len(r["times"]) / sum(r["times"]) for r in w.runs]
        seq_s = statistics.median(per_repeat)
        flops = step_flops(w.size, args.batch, args.seq_len, args.masks)
        others = [r["other_cpu"] for r in w.runs if r.get("other_cpu") is not None]
        rows.append({
            "backend": w.backend, "impl": w.impl, "size": w.size, "seq_s": seq_s,
            "seq_s_min": min(per_repeat), "seq_s_max": max(per_repeat),
            "tokens_s": seq_s * args.seq_len, "gflop_s": seq_s / args.batch * flops / 1e9,
            "mfu": seq_s / args.batch * flops / 1e9 / peak,
            "step_gflop": flops / 1e9,
            "other_cpu": statistics.median(others) if others else None,
            "maxrss_mb": max(r["maxrss_mb"] for r in w.runs),
            "compile_s": w.ready["first_step_s"], "repeats": len(w.runs),
            "steps": sum(len(r["times"]) for r in w.runs),
        })
    for row in rows:
        same = [r for r in rows if r["size"] == row["size"]]
        hub = [r for r in same if r["impl"] == "keras_hub" and r["backend"] == row["backend"]]
        peers = [r for r in same if r["impl"] in PEERS]
        row["vs_hub"] = row["seq_s"] / hub[0]["seq_s"] if hub else None
        best = max(peers, key=lambda r: r["seq_s"]) if peers else None
        row["vs_best_peer"] = row["seq_s"] / best["seq_s"] if best else None
        row["best_peer"] = f"{best['impl']}/{best['backend']}" if best else None
    order = {s: i for i, s in enumerate(SIZES)}
    impl_order = {i: n for n, i in enumerate(KERAS_IMPLS + HF_IMPLS)}
    rows.sort(key=lambda r: (order[r["size"]], BACKENDS.index(r["backend"]),
                             impl_order[r["impl"]]))
    return rows


def print_table(rows):
    head = ("backend", "impl", "size", "seq/s", "(min–max)", "tokens/s", "GFLOP/s", "MFU",
            "vs keras-hub", "vs best peer", "steps", "other%", "RSS MB", "1st step s")
    fmt = lambda x, f: "—" if x is None else format(x, f)  # noqa: E731
    lines = []
    for r in rows:
        lines.append((r["backend"], r["impl"], r["size"], fmt(r["seq_s"], ".2f"),
                      f"{r['seq_s_min']:.1f}–{r['seq_s_max']:.1f}", fmt(r["tokens_s"], ".0f"),
                      fmt(r["gflop_s"], ".1f"), fmt(100 * r["mfu"], ".1f") + "%",
                      fmt(r["vs_hub"], ".2f"), fmt(r["vs_best_peer"], ".2f"),
                      f"{r['repeats']}×{r['steps'] / r['repeats']:.3g}",
                      fmt(None if r["other_cpu"] is None else 100 * r["other_cpu"], ".0f"),
                      fmt(r["maxrss_mb"], ".0f"), fmt(r["compile_s"], ".1f")))
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for line in lines:
        print("| " + " | ".join(line) + " |")


if __name__ == "__main__":
    sys.exit(main())
