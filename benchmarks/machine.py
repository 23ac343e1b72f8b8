"""How busy the machine is while a benchmark runs (shared by the benchmark scripts)."""

import os


def cpu_jiffies():
    """(busy, total) jiffies of the whole machine from /proc/stat; None where unavailable."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields[:8]) - idle, sum(fields[:8])


def own_seconds():
    """CPU seconds (user + system) this process has used."""
    t = os.times()
    return t.user + t.system


def best_seconds(fn, reps):
    """The shortest of ``reps`` timed calls of ``fn``, after one untimed call (the compile)."""
    import time

    fn()
    times = []
    for _ in range(reps):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def matmul_ceilings(sizes=(2048, 4096), reps=3, libraries=None):
    """``{"<library> <n>": GFLOP/s}``: the best of ``reps`` float32 ``n × n`` matmuls (after a
    warm-up that compiles) in numpy, torch, jax and tensorflow — each one installed, or those
    named in ``libraries``. The machine's fp32 matmul ceiling is the highest value."""
    import numpy as np

    libraries = libraries or ("numpy", "torch", "jax", "tensorflow")
    results = {}

    def best(fn, n):
        return 2 * n ** 3 / best_seconds(fn, reps) / 1e9

    for n in sizes:
        a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
        b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
        if "numpy" in libraries:
            results[f"numpy {n}"] = best(lambda: a @ b, n)
        try:
            if "torch" in libraries:
                import torch
                ta, tb = torch.from_numpy(a), torch.from_numpy(b)
                results[f"torch {n}"] = best(lambda: torch.mm(ta, tb), n)
        except ImportError:
            pass
        try:
            if "jax" in libraries:
                import jax
                import jax.numpy as jnp
                ja, jb = jnp.asarray(a), jnp.asarray(b)
                product = jax.jit(jnp.dot)
                results[f"jax {n}"] = best(lambda: product(ja, jb).block_until_ready(), n)
        except ImportError:
            pass
        try:
            if "tensorflow" in libraries:
                import tensorflow as tf
                fa, fb = tf.constant(a), tf.constant(b)
                results[f"tensorflow {n}"] = best(lambda: tf.linalg.matmul(fa, fb)[0, 0].numpy(), n)
        except ImportError:
            pass
    return results


def stop_worker(proc):
    """Ask a benchmark worker process reading commands on stdin to quit; kill it if it will not."""
    import subprocess

    if proc.poll() is None:
        try:
            proc.stdin.write("quit\n")
            proc.stdin.flush()
            proc.wait(timeout=60)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
