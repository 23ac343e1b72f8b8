"""AWD-LSTM language-model training speed per backend, next to a plain ``torch.nn.LSTM`` loop.

What is timed: optimizer steps of truncated-BPTT language-model training on one fixed batch of
``B × T`` windows (default 32 × 70) of random ids from a ``V``-word vocabulary (default 33,278,
WikiText-2's words: the tied softmax over ``V`` is a large share of the step), for each size
(``mini`` 3 × 128/384, ``paper`` 3 × 400/1150) and implementation, each in its own process:

- ours, on each Keras backend (``KERAS_BACKEND`` set before keras is imported): the stateful
  ``AwdLstmLanguageModel`` compiled as ``kbl pretrain --model awd-lstm`` compiles it
  (``recipes.awd_pretrain.build_model``: AdamW β 0.7/0.99, ε 1e-8, weight decay 0.01 on ≥2-D
  weights, global-norm clipping 0.25, slanted triangular rate; default loss, weighted perplexity
  and accuracy), one ``train_on_batch`` per step, LSTM states carried between steps; each
  backend's default compilation (TensorFlow graph mode without XLA, JAX jitted, torch eager).
  Recipe ``plain``: every dropout 0, no AR/TAR (``alpha = beta = 0``): the torch loop's
  computation; ``awd``: the default regularisation (dropouts embedding 0.1, input 0.65, hidden
  0.3, output 0.4, weight drop 0.5; AR α 2, TAR β 1), so that its cost shows.
- ``torch.nn.LSTM`` (``plain`` only; no dropout variant): ``nn.Embedding`` → one ``nn.LSTM`` per
  layer of the same widths (E → H → H → E) → a decoder tied to the embedding, cross-entropy over
  every position, states carried and detached between steps (the original's
  ``repackage_hidden``), ``torch.optim.AdamW`` with our settings at a constant rate (our first
  update's), ``clip_grad_norm_``: a hand-written eager loop without metrics. ``bias_hh`` is held
  at zero: ours has one bias per layer (the two summed), and Adam would step two at twice the rate.

Same computation, checked: the first Keras worker writes its initial weights in PyTorch's layout
(``kernel_to_torch_lstm``); every other model (both recipes, the other backends through
``torch_lstm_to_kernel``, the torch loop) starts from them, and the ``plain`` losses of the
first two steps (from zero states; before and after one update, so forward, backward, clipping
and AdamW) must match the torch loop's within ``--tolerance`` (1e-4), or the run fails. Later
steps differ slightly: our rate follows the slanted triangular schedule.

Method: per size, the workers start one after another (build, first step = compile/trace, then
``--warmup`` steps, none timed) and stay alive; then in each of ``--repeats`` repeats every
(worker, recipe) in turn runs ``--steps`` timed steps while the others idle, the order rotating
between repeats. Every step ends in a Python float (``train_on_batch``'s loss, ``float(loss)``),
so it is synchronised. Reported: tokens/s = B·T·steps ÷ their seconds, median over repeats
(min–max); ms/step = B·T ÷ that; the ratio to the torch loop; "other%", the share of the machine's
CPU time *other* processes used meanwhile (``/proc/stat``; high = contended); the 1-min load
average; the worker's peak RSS. Workers get ``OMP_WAIT_POLICY=PASSIVE`` (as ``train_step.py``)
and each library's default threads (printed). All workers of a size are alive at once.

Usage::

    .venv/bin/python benchmarks/lstm_speed.py          # mini + paper, all backends: estimated
                                                       # 20-25 min on the idle 2-core machine
    .venv/bin/python benchmarks/lstm_speed.py --fast   # mini only, 2 repeats: ~3 min (estimate)
    .venv/bin/python benchmarks/lstm_speed.py --sizes mini --steps 3 --repeats 1 --vocab 2000
    .venv/bin/python benchmarks/lstm_speed.py --backends jax torch --recipes plain
"""

import os
import sys

# Run as a script, Python puts benchmarks/ first on sys.path, where a sibling module could shadow
# the standard library: drop it before importing.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from benchmarks.machine import cpu_jiffies, own_seconds, stop_worker  # noqa: E402

MARK = "@@LSTM_SPEED@@ "
BACKENDS = ("tensorflow", "jax", "torch")
RECIPES = ("plain", "awd")
REFERENCE = "torch.nn.LSTM"


def emit(obj):
    sys.stdout.write(MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()


def make_batch(args):
    """``(x, y, sample_weight)``: ``B`` windows of ``T`` random ids and their next tokens."""
    import numpy as np

    ids = np.random.default_rng(0).integers(0, args.vocab, (args.batch, args.bptt + 1), "int32")
    x = {"token_ids": ids[:, :-1], "padding_mask": np.ones_like(ids[:, :-1])}
    return x, ids[:, 1:], np.ones(ids[:, 1:].shape, "float32")


def share_weights(model, path, export, learning_rate):
    """Write ``model``'s weights and AdamW settings (``learning_rate``: its first update's) in
    ``torch.nn.LSTM``'s layout to ``path`` if ``export``, then set its weights from that file."""
    import keras
    import numpy as np

    from keras_bert_lab.models.awd_lstm.backbone import kernel_to_torch_lstm, torch_lstm_to_kernel

    numpy, opt, layers = keras.ops.convert_to_numpy, model.optimizer, model.backbone.lstm_layers
    embedding = model.backbone.token_embedding.embeddings
    if export:
        arrays = {"embeddings": numpy(embedding), "decoder_bias": numpy(model.decoder.bias),
                  "adamw": np.array([learning_rate, opt.beta_1, opt.beta_2, opt.epsilon,
                                     opt.weight_decay, opt.global_clipnorm])}
        for i, lstm in enumerate(layers):
            layer = kernel_to_torch_lstm(numpy(lstm.kernel), numpy(lstm.bias), lstm.input_dim)
            arrays.update({name.replace("_l0", f"_l{i}"): value for name, value in layer.items()})
        np.savez(path, **arrays)
    arrays = np.load(path)
    embedding.assign(arrays["embeddings"])
    model.decoder.bias.assign(arrays["decoder_bias"])
    for i, lstm in enumerate(layers):
        kernel, bias = torch_lstm_to_kernel(*(arrays[f"{name}_l{i}"] for name in (
            "weight_ih", "weight_hh", "bias_ih", "bias_hh")))
        lstm.kernel.assign(kernel)
        lstm.bias.assign(bias)


def keras_steppers(backend, size, args):
    """``({recipe: step}, info)``: our language model per recipe, compiled as the recipe does."""
    import keras

    from keras_bert_lab.models.awd_lstm.backbone import AwdLstmBackbone
    from keras_bert_lab.models.awd_lstm.config import DROPOUT_FIELDS, AwdLstmConfig
    from keras_bert_lab.models.awd_lstm.pretrain import AwdPretrainSettings
    from keras_bert_lab.models.awd_lstm.language_model import AwdLstmLanguageModel
    from keras_bert_lab.training.optimizers import adamw
    from keras_bert_lab.training.schedules import SlantedTriangular

    if keras.backend.backend() != backend:
        raise RuntimeError(f"Keras runs on {keras.backend.backend()!r}, not {backend!r}: set "
                           "KERAS_BACKEND before keras is first imported")
    keras.utils.set_random_seed(0)
    settings = AwdPretrainSettings()
    x, y, weights = make_batch(args)
    steppers, params = {}, {}
    for recipe in args.recipes:
        off = {name: 0.0 for name in DROPOUT_FIELDS} if recipe == "plain" else {}
        config = AwdLstmConfig.from_size(size, vocabulary_size=args.vocab, **off)
        model = AwdLstmLanguageModel(AwdLstmBackbone(config), stateful_batch_size=args.batch,
                                     **({"alpha": 0.0, "beta": 0.0} if off else {}))
        # as recipes.awd_pretrain.build_model (from scratch: no layer decay)
        model.compile(optimizer=adamw(
            model, learning_rate=SlantedTriangular(settings.learning_rate, 10000), beta_1=0.7,
            beta_2=0.99, epsilon=1e-8, weight_decay=settings.weight_decay, global_clipnorm=0.25))
        first_rate = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))
        share_weights(model, args.weights, args.export and not steppers, first_rate)
        steppers[recipe] = (lambda m: lambda: float(m.train_on_batch(
            x, y, sample_weight=weights, return_dict=True)["loss"]))(model)
        params[recipe] = int(model.count_params())
    if backend == "tensorflow":
        import tensorflow as tf
        threads = (f"intra/inter-op {tf.config.threading.get_intra_op_parallelism_threads()}/"
                   f"{tf.config.threading.get_inter_op_parallelism_threads()} (0: all cores)")
    else:
        threads = f"torch {__import__('torch').get_num_threads()}" if backend == "torch" else \
            f"XLA CPU default (all {os.cpu_count()} cores)"
    return steppers, {"params": params, "layers": config.layer_dims(), "threads": threads}


def torch_stepper(args):
    """``({"plain": step}, info)``: the plain PyTorch loop, from the weights the first Keras
    worker wrote (widths read from their shapes)."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    arrays = np.load(args.weights)
    lr, beta_1, beta_2, epsilon, weight_decay, clipnorm = arrays["adamw"].tolist()
    vocab, width = arrays["embeddings"].shape
    embedding = torch.nn.Embedding(vocab, width)
    bias = torch.nn.Parameter(torch.zeros(vocab))
    lstms = []
    with torch.no_grad():
        embedding.weight.copy_(torch.from_numpy(arrays["embeddings"]))
        bias.copy_(torch.from_numpy(arrays["decoder_bias"]))
        for i in range(sum(name.startswith("weight_ih") for name in arrays.files)):
            # (T, B, D) in, as the original; widths from weight_ih (4U, D) and weight_hh (4U, U)
            lstm = torch.nn.LSTM(arrays[f"weight_ih_l{i}"].shape[1],
                                 arrays[f"weight_hh_l{i}"].shape[1])
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(lstm, f"{name}_l0").copy_(torch.from_numpy(arrays[f"{name}_l{i}"]))
            lstm.bias_hh_l0.requires_grad_(False)  # zero: one bias, as ours (Adam would step both)
            lstms.append(lstm)
    params = [embedding.weight, bias] + [p for lstm in lstms for p in lstm.parameters()
                                         if p.requires_grad]
    optimizer = torch.optim.AdamW(
        [{"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
         {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}],
        lr=lr, betas=(beta_1, beta_2), eps=epsilon)
    x, y, _ = make_batch(args)
    ids = torch.from_numpy(x["token_ids"]).long().t().contiguous()           # (T, B)
    targets = torch.from_numpy(y).long().t().reshape(-1)                     # (T·B,)
    states = [None] * len(lstms)

    def step():
        h = embedding(ids)
        for i, lstm in enumerate(lstms):
            h, state = lstm(h, states[i])
            states[i] = tuple(s.detach() for s in state)
        loss = F.cross_entropy(F.linear(h, embedding.weight, bias).reshape(-1, vocab), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, clipnorm)
        optimizer.step()
        return float(loss.detach())

    return {"plain": step}, {"threads": f"torch {torch.get_num_threads()}"}


def timed(step, n):
    """Seconds and losses of ``n`` calls of ``step``."""
    times, losses = [], []
    for _ in range(n):
        began = time.perf_counter()
        losses.append(step())
        times.append(time.perf_counter() - began)
    return times, losses


def run_worker(args):
    """One process per (size, implementation): build, first step, warm-up, then timed runs on
    the parent's request (``run RECIPE STEPS`` on stdin)."""
    import resource

    backend, impl, size = args._worker.split(":")
    try:
        steppers, info = (torch_stepper(args) if impl == REFERENCE
                          else keras_steppers(backend, size, args))
        ready = {}
        for recipe, step in steppers.items():
            (first_s,), losses = timed(step, 1)
            warmup_s, more = timed(step, args.warmup)
            ready[recipe] = {"first_s": first_s, "losses": losses + more, "warmup_s": warmup_s}
    except Exception as error:  # reported to the parent, which carries on with the others
        import traceback
        traceback.print_exc()
        emit({"error": f"{type(error).__name__}: {error}"})
        return 1
    emit({"recipes": ready, "info": info})
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            break
        cpu = own_seconds()
        times, _ = timed(steppers[command[1]], int(command[2]))
        emit({"times": times, "cpu_s": own_seconds() - cpu,
              "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    return 0


class Worker:
    """A worker process for ``spec`` = ``backend:impl:size``; its stderr goes to a log file."""

    def __init__(self, spec, args, logdir, weights, export=False):
        self.spec, self.runs, self.error = spec, {}, None
        self.backend, self.impl, self.size = spec.split(":")
        self.log_path = os.path.join(logdir, spec.replace(":", "_") + ".log")
        env = dict(os.environ, KERAS_BACKEND=self.backend, TF_CPP_MIN_LOG_LEVEL="2",
                   PYTHONUNBUFFERED="1")
        if args.omp_wait_policy and "OMP_WAIT_POLICY" not in os.environ:
            env["OMP_WAIT_POLICY"] = args.omp_wait_policy
        command = [sys.executable, os.path.abspath(__file__), "--_worker", spec, "--weights",
                   weights, "--batch", str(args.batch), "--bptt", str(args.bptt), "--vocab",
                   str(args.vocab), "--warmup", str(args.warmup), "--recipes", *args.recipes]
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(command + ["--export"] * export, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=log, text=True,
                                         bufsize=1, env=env)
        self.ready = self.read() or {"error": f"worker exited (rc={self.proc.wait()})"}
        self.error = self.ready.get("error")
        self.recipes = list(self.ready.get("recipes", {}))

    def read(self):
        for line in self.proc.stdout:
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])
        return None

    def run(self, recipe, steps):
        """Time ``steps`` steps of ``recipe``; record them with the machine's contention."""
        jiffies = cpu_jiffies()
        self.proc.stdin.write(f"run {recipe} {steps}\n")
        self.proc.stdin.flush()
        msg = self.read()
        if msg is None:
            self.error = f"worker died during a run (rc={self.proc.wait()})"
            return None
        after = cpu_jiffies()
        if jiffies and after:
            hz = os.sysconf("SC_CLK_TCK")
            busy, capacity = (after[0] - jiffies[0]) / hz, (after[1] - jiffies[1]) / hz
            msg["other_cpu"] = max(0.0, busy - msg["cpu_s"]) / capacity if capacity else None
        msg["load_1min"] = os.getloadavg()[0]
        self.runs.setdefault(recipe, []).append(msg)
        return msg

    def close(self):
        stop_worker(self.proc)

    def tail(self, lines=15):
        with open(self.log_path) as f:
            return "".join(f.readlines()[-lines:])


def log_line(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def loss_check(workers, tolerance):
    """Lines comparing each ``plain`` loss of the first two steps (before and after one update)
    with the torch loop's, and whether all agree within ``tolerance`` (True if nothing to
    compare: no torch loop or no plain recipe)."""
    losses = {w.spec: w.ready["recipes"]["plain"]["losses"][:2] for w in workers
              if not w.error and "plain" in w.ready["recipes"]}
    reference = next((v for k, v in losses.items() if k.split(":")[1] == REFERENCE), None)
    if reference is None or len(losses) < 2:
        return ["loss check skipped: it needs the plain recipe and the torch loop"], True
    lines, ok = [], True
    for spec, ours in losses.items():
        if spec.split(":")[1] != REFERENCE:
            gap = max(abs(a - b) for a, b in zip(ours, reference))
            ok &= gap <= tolerance
            lines.append(f"loss check {spec} plain, steps 1-{len(ours)}: "
                         f"{' '.join(f'{v:.6f}' for v in ours)} vs {REFERENCE} "
                         f"{' '.join(f'{v:.6f}' for v in reference)}, max |Δ| {gap:.1e} "
                         f"{'ok' if gap <= tolerance else 'FAILED'} (tolerance {tolerance:g})")
    return lines, ok


def summarise(workers, args):
    """One row per (worker, recipe): per size the torch loop, then each backend."""
    tokens, rows = args.batch * args.bptt, []
    for w in workers:
        for recipe, runs in w.runs.items():
            per_repeat = [tokens * len(r["times"]) / sum(r["times"]) for r in runs]
            others = [r["other_cpu"] for r in runs if r.get("other_cpu") is not None]
            rows.append({"backend": w.backend, "impl": w.impl, "size": w.size, "recipe": recipe,
                         "tokens_s": statistics.median(per_repeat), "min": min(per_repeat),
                         "max": max(per_repeat),
                         "other_cpu": statistics.median(others) if others else None,
                         "load_1min": statistics.median(r["load_1min"] for r in runs),
                         "rss_mb": max(r["rss_mb"] for r in runs),
                         "first_s": w.ready["recipes"][recipe]["first_s"]})
    for row in rows:
        ref = [r for r in rows if r["size"] == row["size"] and r["impl"] == REFERENCE]
        row["ms_step"] = 1000 * tokens / row["tokens_s"]
        row["vs_torch"] = row["tokens_s"] / ref[0]["tokens_s"] if ref else None
    return sorted(rows, key=lambda r: (args.sizes.index(r["size"]), r["impl"] != REFERENCE,
                                       BACKENDS.index(r["backend"]), RECIPES.index(r["recipe"])))


def print_table(rows):
    fmt = lambda x, f: "—" if x is None else format(x, f)  # noqa: E731
    head = ("backend", "impl", "size", "recipe", "tokens/s", "(min–max)", "ms/step",
            f"vs {REFERENCE}", "other%", "load", "RSS MB", "1st step s")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        print("| " + " | ".join((
            r["backend"], r["impl"], r["size"], r["recipe"], f"{r['tokens_s']:.0f}",
            f"{r['min']:.0f}–{r['max']:.0f}", f"{r['ms_step']:.0f}", fmt(r["vs_torch"], ".2f"),
            fmt(r["other_cpu"] and 100 * r["other_cpu"], ".0f"), f"{r['load_1min']:.1f}",
            f"{r['rss_mb']:.0f}", f"{r['first_s']:.1f}")) + " |")


def start_workers(size, args, logdir):
    """The workers of one size, started one at a time (a start-up would slow the others' first
    steps): the Keras backends, the first of them writing the weights, then the torch loop."""
    weights = os.path.join(logdir, f"weights_{size}.npz")
    specs = [f"{b}:keras_bert_lab:{size}" for b in args.backends]
    workers = []
    for spec in specs + ([] if args.no_torch_loop else [f"torch:{REFERENCE}:{size}"]):
        exporter = all(w.error for w in workers)
        if spec.split(":")[1] == REFERENCE and exporter:
            break        # no Keras worker wrote the weights to start from
        w = Worker(spec, args, logdir, weights, export=exporter)
        workers.append(w)
        log_line(f"{spec} FAILED: {w.error}\n{w.tail()}" if w.error else
                 f"{spec} ready ({w.ready['info']['threads']}): " + "; ".join(
                     f"{recipe} first step {r['first_s']:.1f} s, loss {r['losses'][0]:.4f}, "
                     f"warm-up {' '.join(f'{t:.2f}' for t in r['warmup_s'])} s"
                     for recipe, r in w.ready["recipes"].items()))
    return workers


def measure(workers, args):
    """``--repeats`` rounds of ``--steps`` steps of every (worker, recipe), order rotating."""
    units = [(w, recipe) for w in workers if not w.error for recipe in w.recipes]
    for rep in range(args.repeats):
        shift = rep * max(1, len(units) // args.repeats) % max(1, len(units))
        for w, recipe in units[shift:] + units[:shift]:
            msg = None if w.error else w.run(recipe, args.steps)
            if msg is None:
                log_line(f"{w.spec} FAILED: {w.error}\n{w.tail()}")
                continue
            log_line(f"repeat {rep + 1}/{args.repeats} {w.spec} {recipe}: "
                     f"{args.batch * args.bptt * len(msg['times']) / sum(msg['times']):.0f} "
                     f"tokens/s (steps {' '.join(f'{t:.2f}' for t in msg['times'])} s; other CPU "
                     f"{100 * (msg.get('other_cpu') or 0):.0f}%, load {msg['load_1min']:.1f})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--sizes", nargs="+", help="AWD-LSTM sizes (default mini paper; --fast mini)")
    add("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    add("--recipes", nargs="+", default=list(RECIPES), choices=RECIPES)
    add("--no-torch-loop", action="store_true", help=f"leave out {REFERENCE} and the loss check")
    add("--batch", type=int, default=32, help="windows per batch (default 32)")
    add("--bptt", type=int, default=70, help="tokens per window (default 70)")
    add("--vocab", type=int, default=33278, help="vocabulary size (default 33,278: WikiText-2)")
    add("--steps", type=int, help="timed steps per measurement (default 4; --fast 3)")
    add("--repeats", type=int, help="interleaved repeats (default 3; --fast 2)")
    add("--warmup", type=int, help="untimed steps after the first one (default 2; --fast 1)")
    add("--fast", action="store_true", help="mini only, fewer steps and repeats")
    add("--tolerance", type=float, default=1e-4, help="largest |Δ| of the first 2 plain losses")
    add("--omp-wait-policy", default="PASSIVE", help="workers' OMP_WAIT_POLICY ('' leaves it)")
    add("--_worker", help=argparse.SUPPRESS)
    add("--weights", help=argparse.SUPPRESS)
    add("--export", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.sizes = args.sizes or (["mini"] if args.fast else ["mini", "paper"])
    args.steps = args.steps or (3 if args.fast else 4)
    args.repeats = args.repeats or (2 if args.fast else 3)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.fast else 2)
    if args._worker:
        return run_worker(args)

    started, load_before = time.time(), os.getloadavg()
    logdir = tempfile.mkdtemp(prefix="lstm_speed_")
    log_line(f"load average {load_before[0]:.2f}, {os.cpu_count()} CPUs; worker logs in {logdir}")
    results, checks, ok = [], [], True
    for size in args.sizes:
        workers = start_workers(size, args, logdir)
        lines, passed = loss_check(workers, args.tolerance)
        checks, ok = checks + lines, ok and passed
        for line in lines:
            log_line(line)
        measure(workers, args)
        for w in workers:
            w.close()
        results += workers

    print(f"\n# AWD-LSTM LM training step: {args.batch} × {args.bptt} tokens, vocabulary "
          f"{args.vocab:,}; median of {args.repeats} interleaved repeats of {args.steps} steps, "
          f"after the first (compile) step and {args.warmup} warm-up step(s); OMP_WAIT_POLICY="
          f"{os.environ.get('OMP_WAIT_POLICY') or args.omp_wait_policy or 'unset'}")
    print(f"# load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after; wall "
          f"{(time.time() - started) / 60:.1f} min; {os.cpu_count()} CPUs")
    print("# threads: " + "; ".join(f"{w.backend}:{w.impl} {w.ready['info']['threads']}"
                                    for w in results if not w.error and w.size == args.sizes[0]))
    for size in args.sizes:
        info = next((w.ready["info"] for w in results if w.size == size and not w.error
                     and w.impl != REFERENCE), None)
        if info:
            print(f"# {size}: LSTM (input, output) widths {info['layers']}, parameters "
                  f"{info['params']}")
    for line in checks:
        print(f"# {line}")
    print_table(summarise(results, args))
    for w in results:
        if w.error:
            print(f"FAILED {w.spec}: {w.error}")
    return 1 if any(w.error for w in results) or not ok else 0


if __name__ == "__main__":
    sys.exit(main())
