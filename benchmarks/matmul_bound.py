"""The matmul bound: the highest MFU a step could reach if everything but its matrix products took
no time.

``train_step.py`` and ``inference.py`` report MFU as the step's useful FLOP/s over the machine's
square-matmul ceiling (the best 2048² or 4096² fp32 product). A BERT step's products are not
4096² squares: BERT-small's are 4096 × 512 × 512, its attention products are 1,024 batched
128 × 64 × 128 ones, and its masked-LM decoder is 640 × 512 × 30,522. This script runs exactly
those products, one shape after another, in each framework's fastest form (``tf.function`` on
TensorFlow, ``jax.jit``, torch eager), and reports

    bound = step FLOPs ÷ (the sum of the products' best times) ÷ ceiling,

the MFU of a step whose LayerNorms, softmaxes, dropouts, GELUs, optimizer update and data
movement were free. No implementation of the same step can exceed it on this machine (TensorFlow
can overlap two products on its two executor threads, but each product already uses both
cores). The FLOPs are the ones ``train_step.step_flops`` and ``inference.forward_flops`` count,
and the script checks that its products add up to them.

- ``--task step``: one training step of ``--size`` (default BERT-small), batch 32 × 128, 20
  masked positions: each dense layer's forward product and its two gradient products
  (dX = dY·Wᵀ, dW = Xᵀ·dY, read transposed in place), attention's two batched products and
  their four gradients (per sequence and head, the most favourable layout), the masked-LM
  transform and the decoder (tied to the token embedding) at the gathered positions, the pooler and the next-sentence layer.
- ``--task inference``: a BERT-base forward pass, batch 32 × 128 (the blocks' products only).

Usage::

    python benchmarks/matmul_bound.py --task step --size small --backends tensorflow jax torch
    python benchmarks/matmul_bound.py --task inference --backends tensorflow
"""

import argparse
import json
import os
import subprocess
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.inference import HEADS, HIDDEN, LAYERS, forward_flops  # noqa: E402
from benchmarks.machine import best_seconds, matmul_ceilings  # noqa: E402
from benchmarks.train_step import SIZES, VOCAB, step_flops  # noqa: E402

BACKENDS = ("tensorflow", "jax", "torch")


def dense(rows, fan_in, fan_out, backward):
    """``(batch, m, k, n, transpose_a, transpose_b)`` of a dense layer's products."""
    shapes = [(1, rows, fan_in, fan_out, False, False)]
    if backward:
        shapes += [(1, rows, fan_out, fan_in, False, True),   # dX = dY · Wᵀ
                   (1, fan_in, rows, fan_out, True, False)]   # dW = Xᵀ · dY
    return shapes


def attention(batch_heads, length, depth, backward):
    shapes = [(batch_heads, length, depth, length, False, True),    # S = Q · Kᵀ
              (batch_heads, length, length, depth, False, False)]   # C = P · V
    if backward:
        shapes += [(batch_heads, length, length, depth, False, False),  # dQ = dS · K
                   (batch_heads, length, length, depth, True, False),   # dK = dSᵀ · Q
                   (batch_heads, length, depth, length, False, True),   # dP = dC · Vᵀ
                   (batch_heads, length, length, depth, True, False)]   # dV = Pᵀ · dC
    return shapes


def products(task, size, batch=32, length=128, masks=20):
    """``([(group, count, (b, m, k, n, ta, tb))], FLOPs the benchmarks count)``."""
    if task == "inference":
        layers, hidden, heads, backward = LAYERS, HIDDEN, HEADS, False
        counted = forward_flops(batch, length)
    else:
        (layers, hidden, heads), backward = SIZES[size], True
        counted = step_flops(size, batch, length, masks)
    tokens, inner = batch * length, 4 * hidden
    groups = [("qkv, output, feed-forward", layers,
               dense(tokens, hidden, 3 * hidden, backward) + dense(tokens, hidden, hidden, backward)
               + dense(tokens, hidden, inner, backward) + dense(tokens, inner, hidden, backward)),
              ("attention (batched)", layers,
               attention(batch * heads, length, hidden // heads, backward))]
    if task == "step":
        rows = batch * masks
        groups += [("masked-LM transform and decoder", 1,
                    dense(rows, hidden, hidden, True)
                    # the decoder is the token embedding E (V, H), tied: x·Eᵀ, dY·E, dYᵀ·x
                    + [(1, rows, hidden, VOCAB, False, True), (1, rows, VOCAB, hidden, False, False),
                       (1, VOCAB, rows, hidden, True, False)]),
                   ("pooler and next-sentence", 1,
                    dense(batch, hidden, hidden, True) + dense(batch, hidden, 2, True))]
    listed = [(name, count, shape) for name, count, shapes in groups for shape in shapes]
    total = sum(count * 2 * b * m * k * n for _, count, (b, m, k, n, _, _) in listed)
    if total != counted:
        raise AssertionError(f"products add up to {total} FLOPs, the benchmarks count {counted}")
    return listed, counted


def timer(backend):
    """``best(shape, reps) -> seconds``: the best time of one product of that shape in
    ``backend``."""
    import numpy as np

    def operands(b, m, k, n, ta, tb):
        rng = np.random.default_rng(0)
        a = rng.standard_normal((b, k, m) if ta else (b, m, k), dtype=np.float32)
        w = rng.standard_normal((b, n, k) if tb else (b, k, n), dtype=np.float32)
        return (a[0], w[0]) if b == 1 else (a, w)

    if backend == "tensorflow":
        import tensorflow as tf

        def prepare(shape):
            a, w = (tf.constant(x) for x in operands(*shape))
            fn = tf.function(lambda a, w: tf.linalg.matmul(a, w, transpose_a=shape[4],
                                                           transpose_b=shape[5]))
            return lambda: fn(a, w).numpy()
    elif backend == "jax":
        import jax
        import jax.numpy as jnp

        def prepare(shape):
            a, w = (jnp.asarray(x) for x in operands(*shape))
            swap = (lambda x: jnp.swapaxes(x, -1, -2))
            fn = jax.jit(lambda a, w: jnp.matmul(swap(a) if shape[4] else a,
                                                 swap(w) if shape[5] else w))
            return lambda: fn(a, w).block_until_ready()
    else:
        import torch

        def prepare(shape):
            a, w = (torch.from_numpy(x) for x in operands(*shape))
            a = a.transpose(-1, -2) if shape[4] else a
            w = w.transpose(-1, -2) if shape[5] else w

            def run():
                with torch.inference_mode():
                    return torch.matmul(a, w)
            return run

    return lambda shape, reps: best_seconds(prepare(shape), reps)


def worker(backend, task, size, reps):
    listed, counted = products(task, size)
    best = timer(backend)
    groups, seconds = {}, 0.0
    for name, count, shape in listed:
        took = count * best(shape, reps)
        groups[name] = groups.get(name, 0.0) + took
        seconds += took
    return {"backend": backend, "seconds": seconds, "groups": groups, "flops": counted,
            "ceiling": max(matmul_ceilings(libraries=(backend,)).values())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=("step", "inference"), default="step")
    parser.add_argument("--size", default="small", choices=sorted(SIZES))
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--reps", type=int, default=7, help="timings per shape (best kept)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.task, args.size, args.reps)))
        return
    results = []
    for backend in args.backends:  # one process each: no framework shares threads with another
        done = subprocess.run([sys.executable, __file__, "--worker", backend, "--task", args.task,
                               "--size", args.size, "--reps", str(args.reps)],
                              stdout=subprocess.PIPE, text=True, check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    ceiling = max(r["ceiling"] for r in results)
    what = f"BERT-{args.size} training step" if args.task == "step" else "BERT-base forward"
    print(f"# {what}, batch 32 × 128: {results[0]['flops'] / 1e9:.1f} GFLOP in matrix products; "
          f"ceiling {ceiling:.0f} GFLOP/s (best square fp32 matmul of the backends run); "
          f"load {os.getloadavg()[0]:.2f}")
    print("| backend | products alone, ms | GFLOP/s | bound (% of ceiling) | "
          + " | ".join(f"{g}, ms" for g in results[0]["groups"]) + " |")
    print("|---|---:|---:|---:|" + "---:|" * len(results[0]["groups"]))
    for r in results:
        rate = r["flops"] / r["seconds"] / 1e9
        print(f"| {r['backend']} | {r['seconds'] * 1e3:,.0f} | {rate:.0f} | {rate / ceiling:.1%} | "
              + " | ".join(f"{v * 1e3:,.0f}" for v in r["groups"].values()) + " |")


if __name__ == "__main__":
    main()
