"""Run the test suite once per Keras backend, each in its own process.

Usage: python tests/run_backends.py [--backends tensorflow jax torch] [-- pytest args]

Prints a per-backend summary and exits non-zero if any backend fails.
"""

import argparse
import os
import re
import subprocess
import sys
import time

SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    args, pytest_args = parser.parse_known_args()
    pytest_args = [a for a in pytest_args if a != "--"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows, totals, failed = [], {}, False
    for backend in args.backends:
        # PASSIVE: torch's OpenMP threads otherwise spin while waiting, which slows every step
        # 5-15x as soon as another process (a subprocess of a test, say) wants a core.
        env = dict(os.environ, KERAS_BACKEND=backend)
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        print(f"\n===== KERAS_BACKEND={backend} =====", flush=True)
        start = time.time()
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        last = ""
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            if SUMMARY.search(line) and (" in " in line):
                last = line.strip().strip("=").strip()
        code = proc.wait()
        counts = {}
        for n, kind in SUMMARY.findall(last):
            kind = "errors" if kind.startswith("error") else kind
            counts[kind] = counts.get(kind, 0) + int(n)
            totals[kind] = totals.get(kind, 0) + int(n)
        # pytest exit 5 means no test ran: that is a failure for us, not a pass.
        ok = code == 0 and counts.get("passed", 0) > 0
        failed |= not ok
        rows.append((backend, "ok" if ok else f"FAILED (exit {code})", last, time.time() - start))
    print("\n===== summary per backend =====")
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
