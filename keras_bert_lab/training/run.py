"""The run folder every training command writes: settings, CSV log, curves, metrics.

A run directory holds ``kbl-run.json`` (the marker: a kbl run made this folder), ``settings.json``
(what defines the run: a directory is never reused by a different run), ``log.csv`` (one row per
logged step or epoch), ``curves.png`` and ``metrics.json`` (written atomically), next to what the
command adds (checkpoints, predictions, the trained preset). Pretraining and fine-tuning share
these functions, so the two folders look and behave alike: the same refusals, the same
``--resume`` / ``--overwrite`` rules.

What keeps a user's files safe:

- :func:`check_run_folder` decides, touching nothing, whether a folder can take a run; recipes
  call it (through :func:`prepare_output`) only once every input, preset and setting is checked.
- ``--overwrite`` replaces only a folder that carries the marker, and deletes only the entries a
  kbl run writes (:data:`RUN_ENTRIES`); anything else in it stays. A folder with a
  ``settings.json`` but no marker (a run of an older keras_bert_lab, or not a run at all) is
  resumed, never deleted.
- :func:`guarded` wraps a recipe: a run that fails before its first step (or before anything of
  value was written) leaves nothing behind — a corrected command is not refused — and every
  failure removes partial ``*.tmp`` files; a full disk becomes one line naming the folder and the
  space needed.

Example:
>>> import tempfile
>>> run = prepare_output(tempfile.mkdtemp() + "/run", {"steps": 10})
>>> append_row(run / "log.csv", {"step": 5, "loss": 2.5})
>>> append_row(run / "log.csv", {"step": 10, "loss": 2.0})
>>> [row["loss"] for row in read_rows(run / "log.csv")]
['2.5', '2.0']
>>> truncate_log(run / "log.csv", 5)     # resuming from the checkpoint of step 5
>>> [row["step"] for row in read_rows(run / "log.csv")]
['5']
"""

import contextlib
import csv
import errno
import functools
import inspect
import json
import math
import os
import pathlib
import shutil
import time

from keras_bert_lab.errors import TrainingError

MARKER_FILE = "kbl-run.json"
SETTINGS_FILE = "settings.json"
# Every top-level entry a kbl training run writes into its folder: --overwrite deletes these only.
RUN_ENTRIES = frozenset({
    MARKER_FILE, SETTINGS_FILE, "log.csv", "curves.png", "metrics.json", "checkpoints", "preset",
    "budget.json", "tokenizer", "vocab.txt", "vectors.txt", "embedding.keras", "vocabulary.tsv",
    "valid_predictions.csv", "test_predictions.csv", "valid_predictions.json", "n_best.json",
    "predictions.json", "valid_predictions.conll", "test_predictions.conll", "per_type.csv"})
# What a run has produced once it trained: a folder holding none of these never started.
TRAINED_ENTRIES = ("log.csv", "checkpoints", "metrics.json", "preset")


def _is_partial(name):
    """A temporary file or folder of an interrupted write (``x.tmp``, ``.preset.ab12.tmp``,
    ``ckpt-00000100.tmp``, ``.preset.ab12.old``)."""
    return name.endswith(".tmp") or (name.startswith(".") and name.endswith(".old"))


def has_started(output_dir):
    """Whether the run in ``output_dir`` trained (wrote a log, checkpoints, metrics, a preset)."""
    output = pathlib.Path(output_dir)
    return any((output / name).exists() for name in TRAINED_ENTRIES)


def _existing_ancestor(path):
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_run_folder(output_dir, settings, resume=False, overwrite=False):
    """Whether ``output_dir`` can take a run with ``settings``, touching nothing.

    Returns ``"new"`` (missing or empty), ``"resume"``, ``"restart"`` (a run that never trained:
    replaced without ``overwrite``) or ``"replace"``; raises ``TrainingError`` otherwise:

    - a file, or a path below a file, is not a folder;
    - a folder holding a run (the marker, or ``settings.json``) is continued with ``resume``
      (only with the same settings) or replaced with ``overwrite`` (only a marked one);
    - ``resume`` without a run there;
    - a non-empty folder that holds no run is never touched, not even with ``overwrite``: it may
      hold anything (``--output .``); choose an empty or new folder.
    """
    output = pathlib.Path(output_dir).expanduser()
    if resume and overwrite:
        raise TrainingError("--resume continues the run in the output folder and --overwrite "
                            "replaces it; pass one of them.")
    if output.exists() and not output.is_dir():
        raise TrainingError(f"--output {output} is a file, not a folder; give the folder the run "
                            "should write (a new or empty one).")
    ancestor = _existing_ancestor(output)
    if not ancestor.is_dir():
        raise TrainingError(f"--output {output}: {ancestor} is a file, so the folder cannot be "
                            "made; choose another path.")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise TrainingError(f"--output {output}: no permission to write in {ancestor}; choose "
                            "another folder.")
    marked = (output / MARKER_FILE).is_file()
    path = output / SETTINGS_FILE
    if marked or path.is_file():
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            previous = None
        if resume:
            if previous is None:
                raise TrainingError(f"--resume: {path} is missing or unreadable, so the run in "
                                    f"{output} cannot be continued; start a new output folder.")
            if previous != settings:
                diff = {k: (previous.get(k), v) for k, v in settings.items()
                        if previous.get(k) != v} if isinstance(previous, dict) else previous
                raise TrainingError(f"--resume with different settings than the run in "
                                    f"{output}: {diff} (stored, given). Resume with the stored "
                                    "settings or start a new output directory.")
            return "resume"
        if not marked:
            raise TrainingError(f"{output} has a {SETTINGS_FILE} but no {MARKER_FILE} marker (a "
                                "run of an older keras_bert_lab, or not a kbl run): --resume "
                                "continues an old run; --overwrite never deletes such a folder, "
                                "so delete it yourself or choose another one.")
        if not has_started(output):
            return "restart"
        if not overwrite:
            raise TrainingError(f"{output} already holds a run; pass --resume to continue it or "
                                "--overwrite to replace it.")
        return "replace"
    if resume:
        raise TrainingError(f"--resume: {output} holds no run to resume.")
    if output.is_dir() and any(output.iterdir()):
        raise TrainingError(f"{output} is not empty and holds no run (no {MARKER_FILE}); choose "
                            "an empty or new output directory — --overwrite only replaces a "
                            "previous run.")
    return "new"


def _remove(path):
    """Delete a file or folder; returns the bytes it held."""
    size = _size(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return size


def _size(path):
    path = pathlib.Path(path)
    if path.is_dir() and not path.is_symlink():
        return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file())
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def remove_partial_files(output_dir):
    """Delete the temporary files and folders of interrupted writes in ``output_dir`` and its
    ``checkpoints/``; returns the bytes freed."""
    freed = 0
    for folder in (pathlib.Path(output_dir), pathlib.Path(output_dir) / "checkpoints"):
        if folder.is_dir():
            for entry in list(folder.iterdir()):
                if _is_partial(entry.name):
                    freed += _remove(entry)
    return freed


def prepare_output(output_dir, settings, resume=False, overwrite=False):
    """Create ``output_dir`` for a run with ``settings`` (a JSON-able dict); returns its path.

    The rules are :func:`check_run_folder`'s. Replacing a run deletes only its own entries
    (:data:`RUN_ENTRIES`); resuming removes partial files left by a killed run and marks a
    folder of an older keras_bert_lab.
    """
    state = check_run_folder(output_dir, settings, resume=resume, overwrite=overwrite)
    output = pathlib.Path(output_dir).expanduser()
    if state == "resume":
        remove_partial_files(output)
    else:
        for entry in list(output.iterdir()) if output.is_dir() else ():
            if entry.name in RUN_ENTRIES or _is_partial(entry.name):
                _remove(entry)
        output.mkdir(parents=True, exist_ok=True)
    if state != "resume" or not (output / MARKER_FILE).is_file():   # the marker first: a
        write_json(output / MARKER_FILE, {"kind": "keras_bert_lab run",  # folder never holds
                                          "created": time.time()})        # an unmarked run
    if state != "resume":
        write_json(output / SETTINGS_FILE, settings)
    return output


def _names(folder):
    return {entry.name for entry in folder.iterdir()} if folder.is_dir() else None


def _disk_full(error):
    while error is not None:
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            return True
        error = error.__cause__ or error.__context__
    return False


def _human(size):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:,.{0 if unit == 'kB' else 1}f} {unit}"
    return f"{size} bytes"


def clean_failed_run(output_dir, before=None, made=None):
    """After a failed run: delete partial files and, when the run never trained, the entries of
    the run that this attempt added (those not in ``before``, the names present before it) and
    the folders it made (``output_dir`` up to ``made``, when they are left empty). Returns the
    bytes of partial files removed."""
    output = pathlib.Path(output_dir)
    if not output.is_dir() or not (output / MARKER_FILE).is_file():
        return 0   # not a run folder (the run was refused before writing): not ours to clean
    freed = remove_partial_files(output)
    if not has_started(output):
        for entry in list(output.iterdir()):
            if (before is None or entry.name not in before) and entry.name in RUN_ENTRIES:
                _remove(entry)
        folder = output.absolute()
        while made is not None and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            if folder == made:
                break
            folder = folder.parent
    return freed


def disk_full_error(output_dir, freed=0):
    """The one-line ``TrainingError`` of a full disk: the folder, the space left and the space
    one more checkpoint (or what was being written) needs."""
    output = pathlib.Path(output_dir)
    place = _existing_ancestor(output)
    free = shutil.disk_usage(place).free
    checkpoints = sorted((output / "checkpoints").glob("ckpt-*")) \
        if (output / "checkpoints").is_dir() else []
    needed = max(freed, _size(checkpoints[-1]) if checkpoints else 0)
    need = (f"; free at least {_human(needed)} more (the size of "
            f"{'one checkpoint' if checkpoints else 'what was being written'})" if needed else
            "; free some space")
    again = "resume with --resume" if has_started(output) else "run the command again"
    return TrainingError(f"The disk holding {output} is full ({_human(free)} free){need}, "
                         f"then {again}. Partial files were removed.")


def guarded(folder="output_dir"):
    """Decorate a recipe's run so that a failure leaves no partial files in its run folder.

    ``folder`` names the run's parameter that holds the run folder, or is a function of the
    run's arguments that returns it. On any failure the folder is cleaned
    (:func:`clean_failed_run`): a run that had not trained yet leaves nothing (so the corrected
    command is not refused as "already holds a run"), and a full disk becomes
    :func:`disk_full_error`. Other errors are raised as they are.
    """
    def decorate(run):
        signature = inspect.signature(run)

        def folder_of(args, kwargs):
            if callable(folder):
                return folder(*args, **kwargs)
            return signature.bind(*args, **kwargs).arguments[folder]

        @functools.wraps(run)
        def guarded_run(*args, **kwargs):
            output = pathlib.Path(folder_of(args, kwargs)).expanduser().absolute()
            before, made = _names(output), None
            if before is None:   # the top-most folder this run will make
                made = output
                while not made.parent.exists() and made.parent != made:
                    made = made.parent
            try:
                return run(*args, **kwargs)
            except BaseException as error:
                freed = clean_failed_run(output, before, made)
                if _disk_full(error):
                    raise disk_full_error(output, freed) from None
                raise
        return guarded_run
    return decorate


def truncate_log(path, step, key="step"):
    """Drop the rows of a CSV log past ``step`` (what a run killed after its last checkpoint
    logged, and logs again once resumed from that checkpoint)."""
    path = pathlib.Path(path)
    if not path.is_file():
        return
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        columns, rows = reader.fieldnames, list(reader)
    kept = [row for row in rows if _number(row.get(key)) <= step]
    if len(kept) == len(rows):
        return
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(kept)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.inf


def write_json(path, value):
    """Write ``value`` as JSON atomically (a temporary file renamed into place; removed when the
    write fails)."""
    path = pathlib.Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(value, indent=2, default=float) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
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
