"""Run the test suite once per Keras backend, each in its own process.

Usage: python tests/run_backends.py [--backends tensorflow jax torch] [--jobs 2] [-- pytest args]

With ``--jobs N`` (default 2) up to N backends run at the same time; each one's output is
printed as one block when it ends (with ``--jobs 1`` it streams). Backends start in the order
given, so put the longest first. Prints a per-backend summary and exits non-zero if any backend
fails.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def start(backend, pytest_args, root, log):
    # PASSIVE: torch's OpenMP threads otherwise spin while waiting, which slows every step
    # 5-15x as soon as another process (a subprocess of a test, say) wants a core.
    env = dict(os.environ, KERAS_BACKEND=backend)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
        cwd=root, env=env, stdout=log if log else subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)


def last_summary(lines):
    last = ""
    for line in lines:
        if SUMMARY.search(line) and " in " in line:
            last = line.strip().strip("=").strip()
    return last


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["jax", "tensorflow", "torch"])
    parser.add_argument("--jobs", type=int, default=2, help="backends run at the same time")
    args, pytest_args = parser.parse_known_args()
    pytest_args = [a for a in pytest_args if a != "--"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    waiting, running, done = list(args.backends), {}, {}
    begin = time.time()
    while waiting or running:
        while waiting and len(running) < max(1, args.jobs):
            backend = waiting.pop(0)
            log = tempfile.TemporaryFile("w+") if args.jobs > 1 else None
            print(f"\n===== KERAS_BACKEND={backend} started at {time.time() - begin:.0f}s =====",
                  flush=True)
            running[backend] = (start(backend, pytest_args, root, log), log, time.time())
        if args.jobs <= 1:   # stream the one running backend
            backend, (proc, _, started) = next(iter(running.items()))
            lines = []
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                lines.append(line)
            done[backend] = (proc.wait(), last_summary(lines), time.time() - started)
            del running[backend]
            continue
        time.sleep(2)
        for backend, (proc, log, started) in list(running.items()):
            if proc.poll() is None:
                continue
            log.seek(0)
            text = log.read()
            log.close()
            print(f"\n===== KERAS_BACKEND={backend} (ended at {time.time() - begin:.0f}s) =====")
            print(text, flush=True)
            done[backend] = (proc.returncode, last_summary(text.splitlines()),
                             time.time() - started)
            del running[backend]
    rows, totals, failed = [], {}, False
    for backend in args.backends:
        code, last, secs = done[backend]
        counts = {}
        for n, kind in SUMMARY.findall(last):
            kind = "errors" if kind.startswith("error") else kind
            counts[kind] = counts.get(kind, 0) + int(n)
            totals[kind] = totals.get(kind, 0) + int(n)
        # pytest exit 5 means no test ran: that is a failure for us, not a pass.
        ok = code == 0 and counts.get("passed", 0) > 0
        failed |= not ok
        rows.append((backend, "ok" if ok else f"FAILED (exit {code})", last, secs))
    print(f"\n===== summary per backend ({args.jobs} at a time, "
          f"{time.time() - begin:.0f}s in all) =====")
    for backend, state, last, secs in rows:
        print(f"{backend:<11} {state:<16} {last}  [{secs:.0f}s]")
    print(
        f"{totals.get('passed', 0)} passed, "
        f"{totals.get('failed', 0) + totals.get('errors', 0)} failed, "
        f"{totals.get('skipped', 0)} skipped"
    )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
