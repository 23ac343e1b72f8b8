"""The run folder every training command writes: settings, CSV log, curves, metrics.

A run directory holds ``settings.json`` (what defines the run: a directory is never reused by a
different run), ``log.csv`` (one row per logged step or epoch), ``curves.png`` and
``metrics.json`` (written atomically), next to what the command adds (checkpoints, predictions,
the trained preset). Pretraining and fine-tuning share these functions, so the two folders look
and behave alike: the same refusals, the same ``--resume`` / ``--overwrite`` rules.

Example:
>>> import tempfile
>>> run = prepare_output(tempfile.mkdtemp() + "/run", {"steps": 10})
>>> append_row(run / "log.csv", {"step": 5, "loss": 2.5})
>>> append_row(run / "log.csv", {"step": 10, "loss": 2.0})
>>> [row["loss"] for row in read_rows(run / "log.csv")]
['2.5', '2.0']
"""

import csv
import json
import math
import os
import pathlib
import shutil

from keras_bert_lab.errors import TrainingError

SETTINGS_FILE = "settings.json"


def prepare_output(output_dir, settings, resume=False, overwrite=False):
    """Create ``output_dir`` for a run with ``settings`` (a JSON-able dict); returns its path.

    - A directory holding a run (``settings.json``) is continued with ``resume`` (only with the
      same settings) or replaced with ``overwrite``; otherwise ``TrainingError``.
    - ``resume`` without a run there is a ``TrainingError``.
    - A non-empty directory that holds no run is never deleted, not even with ``overwrite``:
      it may hold anything (``--output .``); choose an empty or new directory.
    """
    output = pathlib.Path(output_dir)
    path = output / SETTINGS_FILE
    if path.is_file():
        previous = json.loads(path.read_text(encoding="utf-8"))
        if resume:
            if previous != settings:
                diff = {k: (previous.get(k), v) for k, v in settings.items()
                        if previous.get(k) != v}
                raise TrainingError(f"--resume with different settings than the run in "
                                    f"{output}: {diff} (stored, given). Resume with the stored "
                                    "settings or start a new output directory.")
            return output
        if not overwrite:
            raise TrainingError(f"{output} already holds a run; pass --resume to continue it or "
                                "--overwrite to replace it.")
        shutil.rmtree(output)
    elif resume:
        raise TrainingError(f"--resume: {output} holds no run to resume.")
    elif output.is_dir() and any(output.iterdir()):
        raise TrainingError(f"{output} is not empty and holds no run (no {SETTINGS_FILE}); "
                            "choose an empty or new output directory — --overwrite only replaces "
                            "a previous run.")
    output.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return output


def write_json(path, value):
    """Write ``value`` as JSON atomically (a temporary file renamed into place)."""
    path = pathlib.Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, default=float) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def append_row(path, row, columns=None):
    """Append ``row`` (a dict) to a CSV file, writing the header first when the file is new.

    ``columns`` fixes the header (extra keys are dropped); default: the row's keys.
    """
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(columns or row), extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow(row)


def write_rows(path, rows):
    """Write ``rows`` (dicts) as a CSV file; the header is the union of their keys, in order."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def read_rows(path):
    """The rows of a CSV log as dicts of strings."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot_curves(rows, x, panels, path, groups=("train",), group_key=None):
    """One panel per ``(column, title)`` in ``panels``: the column against ``x``, a line per
    group (rows whose ``group_key`` equals it; all rows when ``group_key`` is None). Missing or
    empty cells are gaps. Saves a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 3.5), squeeze=False)
    for group, style in zip(groups, ("o-", "s-", "^-") if len(groups) > 1 else ("o-",)):
        part = [r for r in rows if group_key is None or r.get(group_key) == group]
        if not part:
            continue
        xs = [float(r[x]) for r in part]
        for ax, (column, title) in zip(axes[0], panels):
            values = [float(r[column]) if r.get(column) not in (None, "") else math.nan
                      for r in part]
            ax.plot(xs, values, style, label=group, markersize=3)
            ax.set_title(title)
            ax.set_xlabel(x)
    if len(groups) > 1:
        axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def is_out_of_memory(error):
    """Whether ``error`` is a backend's out-of-memory failure (TensorFlow, JAX, torch, Python)."""
    text = f"{type(error).__name__}: {error}"
    # torch on CPU says "DefaultCPUAllocator: can't allocate memory", not "out of memory".
    return (isinstance(error, MemoryError) or "out of memory" in text.lower()
            or "allocate memory" in text.lower() or "RESOURCE_EXHAUSTED" in text or "OOM" in text)
