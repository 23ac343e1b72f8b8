"""Where one pretraining step's time goes, per op class, on each backend (issue 16).

The step is ``train_step.py``'s: BERT's recipe unchanged (post-LN, dropout 0.1 on hidden states and
attention probabilities, AdamW with global-norm clipping, MLM at ``P`` gathered positions + NSP) on a
fixed ``B × T`` batch, through ``train_on_batch`` as a user's ``fit`` runs it. Each (backend,
implementation) runs in its own process, one after the other. A worker builds the model, runs
``--warmup`` steps, times ``--steps`` steps without the profiler (the wall step), then records
``--profile-steps`` steps with its framework's own profiler:

- **TensorFlow**: ``tf.profiler.experimental`` → the host ``XPlane``; every kernel event
  (``scope/name:OpType``) of the executor threads, its *self* time (nested kernels subtracted);
- **JAX**: ``jax.profiler.trace`` → the Perfetto trace of XLA:CPU's thunks, each matched by name to
  the optimised HLO of the train step (``XLA_FLAGS=--xla_dump_to``, set by the parent): its opcode,
  the opcodes inside a fusion, and the ``op_name`` scope (Keras layer names appear there);
- **PyTorch**: ``torch.profiler`` → every ``aten::`` op's self CPU time; its scope is the chain of
  ``record_function`` ranges around it, which this script opens around each Keras layer call (or
  each HF module's forward), the loss and the optimizer update; backward ops carry the autograd
  node that ran them (``MmBackward0``, ``NativeLayerNormBackward0`` …).

Each op is then put in one class by its type and scope (first match wins, in this order): matmul
(including attention's batched matmuls and a fusion that contains a ``dot``), optimizer update
(AdamW and the clipping), loss, metrics (the accuracies' arg-max over the vocabulary), dropout (random bits and the masks), softmax, LayerNorm, GELU,
embedding (lookups, their sum and the scatter-add gradient), data movement (transposes, copies,
gathers, casts), other elementwise. The table prints each class's milliseconds per step and share
of all op time, then the matmul rate: the step's analytic matmul FLOPs (``train_step.step_flops``)
over the matmul class's time, against the machine's fp32 matmul ceiling measured in the same run —
how fast the step would be if everything that is not a matmul went away.

Caveats written into the output: op times are summed over the threads that run ops (TensorFlow runs
independent kernels concurrently on two executor threads, so its sum can exceed the wall step); the
profilers add overhead (the profiled step is printed next to the unprofiled one).

Usage::

    .venv/bin/python benchmarks/profile_step.py                       # small, all backends, ours
    .venv/bin/python benchmarks/profile_step.py --impls keras_bert_lab keras_hub hf_gathered
    .venv/bin/python benchmarks/profile_step.py --size tiny --batch 8 --steps 2 --profile-steps 1
"""

import os
import sys

if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    sys.path.pop(0)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse  # noqa: E402
import collections  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

MARK = "@@PROFILE_STEP@@ "
CLASSES = ("matmul", "optimizer update", "loss", "metrics", "dropout", "softmax", "LayerNorm", "GELU",
           "embedding", "data movement", "other elementwise")
MATMUL_TYPES = {
    "matmul", "_mklmatmul", "_fusedmatmul", "_mklfusedmatmul", "_mklnativefusedmatmul",
    "batchmatmul", "batchmatmulv2", "batchmatmulv3", "_mklbatchmatmul", "_mklbatchmatmulv2",
    "_mklfusedbatchmatmulv2", "einsum", "_mkleinsum", "dot", "dot-general", "convolution",
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
    "aten::_mkldnn_linear", "aten::mkldnn_linear",
}
RULES = (  # (class, keywords searched in "scope/type", lower-cased); after the matmul test
    ("optimizer update", ("adam", "optimizer", "clip", "global_norm", "accumulategrad")),
    ("loss", ("loss", "nll", "log_softmax", "logsoftmax", "crossentropy", "sparsesoftmax")),
    ("metrics", ("metric", "accuracy", "argmax")),
    ("dropout", ("dropout", "bernoulli", "random", "rng", "threefry")),
    ("softmax", ("softmax",)),
    ("LayerNorm", ("layer_norm", "layernorm", "_norm", "/norm")),
    ("GELU", ("gelu", "erf")),
    ("embedding", ("embedding", "scatter", "segment_sum", "segmentsum", "index_add")),
    ("data movement", ("transpose", "copy", "reshape", "concat", "gather", "slice", "pad",
                       "broadcast", "bitcast", "tile", "convert", "cast", "identity", "view",
                       "clone", "contiguous", "expand", "permute", "squeeze", "stack",
                       "aten::to", "aten::_to_copy", "as_strided", "aten::empty", "aten::fill_",
                       "aten::zero_", "aten::zeros")),
)


MOVEMENT_OPCODES = {"copy", "transpose", "bitcast", "reshape", "broadcast", "slice", "concatenate",
                    "pad", "gather", "dynamic-slice", "dynamic-update-slice", "parameter",
                    "constant", "convert", "tuple", "get-tuple-element", "iota"}


def classify(op_type, scope="", fused=()):
    """The class of one executed op from its type (TF op type, ``aten::`` name or HLO opcode), its
    scope (name scope, ``record_function`` chain or autograd node) and, for an XLA fusion, the
    opcodes inside it (a fusion's name says little: its scope and its opcodes decide)."""
    kind = op_type.lower()
    if kind in MATMUL_TYPES or "dot" in fused or "convolution" in fused or "matmul" in kind:
        return "matmul"
    scope = re.sub(r"(transpose|jvp)\(", "", scope)  # JAX's backward/forward markers, not ops
    text = scope.lower() if fused else f"{scope.lower()}/{kind}"
    for name, keys in RULES:
        if any(key in text for key in keys):
            return name
    if fused:
        if "iota" in fused and "reduce" in fused:
            return "metrics"  # an arg-max: the accuracies' (the losses take no arg-max)
        if "exponential" in fused and "reduce" in fused:
            return "softmax"
        if set(fused) <= MOVEMENT_OPCODES:
            return "data movement"
    return "other elementwise"


def self_times(events):
    """``[(key, self duration)]`` of ``(key, start, duration)`` events on one thread: each event's
    duration less that of the events nested directly inside it."""
    out, stack = [], []  # stack of [end, key, self]
    for key, start, duration in sorted(events, key=lambda e: (e[1], -e[2])):
        while stack and stack[-1][0] <= start:
            done = stack.pop()
            out.append((done[1], done[2]))
        if stack:
            stack[-1][2] -= duration
        stack.append([start + duration, key, duration])
    out.extend((entry[1], entry[2]) for entry in stack)
    return out


# ----------------------------------------------------------------------------------------------
# Workers: one per (backend, implementation); each returns {(type, scope, fused): µs} over the
# profiled steps
# ----------------------------------------------------------------------------------------------

def profile_tensorflow(step, steps, logdir):
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    tf.profiler.experimental.start(logdir)
    began = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = time.perf_counter() - began
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    with open(sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1],
              "rb") as f:
        space.ParseFromString(f.read())
    kernel = re.compile(r"^([^\s:]*):([A-Za-z_][\w]*)$")  # "scope/name:OpType"
    totals = collections.Counter()
    for plane in space.planes:
        for line in plane.lines:
            events = []
            for e in line.events:
                match = kernel.match(plane.event_metadata[e.metadata_id].name)
                if match:
                    scope, op_type = match.group(1).rsplit("/", 1)[0], match.group(2)
                    events.append(((op_type, scope, ()), e.offset_ps, e.duration_ps))
            for key, ps in self_times(events):
                totals[key] += ps / 1e6
    return totals, seconds


def _hlo_index(dump_dir):
    """``{instruction: (opcode, op_name, fused opcodes)}`` of the largest optimised train-step
    module XLA dumped."""
    files = glob.glob(os.path.join(dump_dir, "*train_step*after_optimizations.txt"))
    if not files:
        raise RuntimeError(f"no optimised train-step HLO in {dump_dir}: XLA_FLAGS not honoured?")
    text = open(max(files, key=os.path.getsize)).read()
    computations, instructions, current = collections.defaultdict(set), {}, None
    head = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$")
    line_re = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = .*? ([a-z][a-z0-9\-]*)\(")
    for line in text.splitlines():
        if not line.startswith(" ") and line.endswith("{"):
            match = head.match(line)
            current = match.group(1) if match else None
            continue
        match = line_re.match(line)
        if not match:
            continue
        name, opcode = match.groups()
        computations[current].add(opcode)
        calls = re.search(r"calls=%?([\w.\-]+)", line)
        op_name = re.search(r'op_name="([^"]*)"', line)
        target = re.search(r'custom_call_target="([^"]*)"', line)
        instructions[name] = (opcode if not target else f"{opcode}:{target.group(1)}",
                              op_name.group(1) if op_name else "", calls.group(1) if calls else None)
    # the type of a fusion is its kind as XLA names it ("ynn_fusion", "iota_reduce_fusion" …)
    return {name: (re.sub(r"\.\d+$", "", name) if opcode == "fusion" else opcode, scope,
                   tuple(sorted(computations.get(called, ()))))
            for name, (opcode, scope, called) in instructions.items()}


def profile_jax(step, steps, logdir, dump_dir):
    import gzip

    import jax

    with jax.profiler.trace(logdir, create_perfetto_trace=True):
        began = time.perf_counter()
        for _ in range(steps):
            step()
        seconds = time.perf_counter() - began
    index = _hlo_index(dump_dir)
    path = sorted(glob.glob(os.path.join(logdir, "**", "perfetto_trace.json.gz"),
                            recursive=True))[-1]
    with gzip.open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("name") in index:
            by_thread[(e["pid"], e["tid"])].append((index[e["name"]], e["ts"], e.get("dur", 0)))
    totals = collections.Counter()
    for thread_events in by_thread.values():
        for key, us in self_times(thread_events):
            totals[key] += us
    return totals, seconds


def _torch_scopes(model, impl):
    """Open a ``record_function`` range around each layer call (Keras) or module forward (HF), the
    loss and the optimizer update, so that every aten op carries the scope it ran in."""
    import torch
    from torch.profiler import record_function

    if impl == "hf_gathered":
        for name, module in model.named_modules():
            ranges = []
            module.register_forward_pre_hook(
                lambda m, a, name=name, ranges=ranges: ranges.append(
                    record_function(name or "model").__enter__()))
            module.register_forward_hook(
                lambda m, a, out, ranges=ranges: ranges.pop().__exit__(None, None, None))
        clip = torch.nn.utils.clip_grad_norm_

        def clip_scoped(*args, **kwargs):
            with record_function("optimizer.clip_grad_norm"):
                return clip(*args, **kwargs)
        torch.nn.utils.clip_grad_norm_ = clip_scoped
        return
    from keras.src.layers.layer import Layer

    call = Layer.__call__

    def scoped_call(self, *args, **kwargs):
        with record_function(self.name):
            return call(self, *args, **kwargs)
    Layer.__call__ = scoped_call
    for owner, attribute, label in ((model.optimizer, "apply", "optimizer"),
                                    (model, "compute_loss", "loss"),
                                    (model, "compute_metrics", "metrics")):
        original = getattr(owner, attribute)

        def scoped(*args, _original=original, _label=label, **kwargs):
            with record_function(_label):
                return _original(*args, **kwargs)
        setattr(owner, attribute, scoped)


def profile_torch(step, steps):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        began = time.perf_counter()
        for _ in range(steps):
            step()
        seconds = time.perf_counter() - began
    totals = collections.Counter()
    for e in prof.events():
        if not e.name.startswith("aten::") or e.self_cpu_time_total <= 0:
            continue
        scopes, parent = [], e.cpu_parent
        while parent is not None:
            if parent.name.startswith("autograd::engine::evaluate_function: "):
                scopes.append(parent.name.split(": ", 1)[1])
            elif not parent.name.startswith(("aten::", "autograd::", "ProfilerStep")):
                scopes.append(parent.name)
            parent = parent.cpu_parent
        totals[(e.name, "/".join(reversed(scopes)), ())] += e.self_cpu_time_total
    return totals, seconds


def run_worker(args):
    from benchmarks import train_step

    backend, impl = args.worker.split(":")
    data = train_step.make_batch(args.batch, args.sequence_length, args.masks)
    if impl == "hf_gathered":
        step, info = train_step.hf_stepper(impl, args.size, data, args.recipe)
    else:
        step, info = train_step.keras_stepper(impl, args.size, backend, data, args.recipe)
    for _ in range(1 + args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        began = time.perf_counter()
        step()
        times.append(time.perf_counter() - began)
    with tempfile.TemporaryDirectory(prefix="profile_step_") as logdir:
        if backend == "tensorflow":
            totals, seconds = profile_tensorflow(step, args.profile_steps, logdir)
        elif backend == "jax":
            totals, seconds = profile_jax(step, args.profile_steps, logdir,
                                          os.environ["KBL_XLA_DUMP"])
        else:
            _torch_scopes(step.model, impl)
            step()  # one step with the ranges in place before the profiled ones
            totals, seconds = profile_torch(step, args.profile_steps)
    per_step, ops = collections.Counter(), collections.Counter()
    for (op_type, scope, fused), us in totals.items():
        name, ms = classify(op_type, scope, fused), us / args.profile_steps / 1e3
        per_step[name] += ms
        ops[(op_type, scope[-80:], name)] += ms
    sys.stdout.write(MARK + json.dumps({
        "spec": args.worker, "wall_ms": 1e3 * statistics.median(times),
        "profiled_ms": 1e3 * seconds / args.profile_steps, "classes": per_step,
        "top": [[*key, ms] for key, ms in ops.most_common(args.top)],
        "threads": info.get("threads")}) + "\n")
    return 0



# ----------------------------------------------------------------------------------------------
# Parent: one worker at a time, then the table
# ----------------------------------------------------------------------------------------------

def run_one(spec, args, argv):
    backend = spec.split(":")[0]
    env = dict(os.environ, KERAS_BACKEND=backend, OMP_WAIT_POLICY="PASSIVE")
    with tempfile.TemporaryDirectory(prefix="xla_dump_") as dump:
        if backend == "jax":
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_dump_to={dump} "
                                "--xla_dump_hlo_as_text --xla_dump_hlo_module_re=.*train_step.*")
            env["KBL_XLA_DUMP"] = dump
        began = time.perf_counter()
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", spec, *argv],
                              env=env, capture_output=True, text=True)
    lines = [line[len(MARK):] for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if proc.returncode or not lines:
        tail = "\n".join(proc.stderr.splitlines()[-15:])
        print(f"{spec}: FAILED (exit {proc.returncode})\n{tail}", flush=True)
        return None
    result = json.loads(lines[-1])
    print(f"{spec}: done in {time.perf_counter() - began:.0f} s", flush=True)
    return result


def report(results, args, ceiling):
    from benchmarks.train_step import step_flops

    flops = step_flops(args.size, args.batch, args.sequence_length, args.masks)
    names = [r["spec"] for r in results]
    print(f"\nms per step by op class — {args.size}, batch {args.batch} × {args.sequence_length}, "
          f"{args.masks} masked, recipe {args.recipe}; ms (share of all op time)\n")
    print("| class | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for name in CLASSES:
        cells = []
        for r in results:
            total = sum(r["classes"].values())
            ms = r["classes"].get(name, 0.0)
            cells.append(f"{ms:.1f} ({100 * ms / total:.0f} %)")
        print(f"| {name} | " + " | ".join(cells) + " |")
    rows = (("all op time", lambda r: f"{sum(r['classes'].values()):.1f}"),
            ("wall step, unprofiled", lambda r: f"{r['wall_ms']:.1f}"),
            ("wall step, profiled", lambda r: f"{r['profiled_ms']:.1f}"),
            ("matmul GFLOP/s (analytic FLOPs / matmul time)",
             lambda r: f"{flops / r['classes'].get('matmul', float('nan')) / 1e6:.0f}"),
            ("matmul time / wall step", lambda r: f"{r['classes'].get('matmul', 0) / r['wall_ms']:.2f}"),
            ("MFU of the wall step", lambda r: f"{flops / r['wall_ms'] / 1e6 / ceiling:.2f}"))
    for label, cell in rows:
        print(f"| {label} | " + " | ".join(cell(r) for r in results) + " |")
    print(f"\nfp32 matmul ceiling of this machine, same run: {ceiling:.0f} GFLOP/s; "
          f"analytic step FLOPs {flops / 1e9:.1f} G; threads "
          + ", ".join(f"{r['spec']} {r['threads']}" for r in results))
    for r in results:
        print(f"\n{r['spec']}: the {len(r['top'])} largest ops (type | scope | class | ms/step)")
        for op_type, scope, name, ms in r["top"]:
            print(f"  {ms:8.2f}  {op_type:<28} {name:<18} {scope}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    parser.add_argument("--impls", nargs="+", default=["keras_bert_lab"],
                        choices=["keras_bert_lab", "keras_hub", "hf_gathered"])
    parser.add_argument("--size", default="small")
    parser.add_argument("--recipe", default="fp32", choices=["fp32", "bf16"])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--masks", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="unprofiled steps timed")
    parser.add_argument("--profile-steps", type=int, default=3)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json", help="write the raw results here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return run_worker(args)
    passed = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()
              if k not in ("backends", "impls", "json", "worker")]
    specs = [f"{b}:{i}" for b in args.backends for i in args.impls
             if i != "hf_gathered" or b == "torch"]
    results = [r for r in (run_one(spec, args, passed) for spec in specs) if r]
    if not results:
        return 1
    from benchmarks.machine import matmul_ceilings

    ceiling = max(matmul_ceilings((2048, 4096)).values())
    report(results, args, ceiling)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "ceiling": ceiling, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
