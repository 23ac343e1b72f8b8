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
