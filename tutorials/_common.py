"""What every tutorial shares: the smoke/full switch, the data check of its first cell, and
figures and tables that show both in a notebook and in a plain ``python`` run.

A tutorial's first code cell is ``tutorial = _common.start(name, data=[...], presets=[...])``: it
checks that every registry package the tutorial reads is installed — and stops there, naming the
``pip install`` commands, when one is not — then fixes the seed and prints the mode, the backend,
the machine and the command that reproduces the run.

Environment:

- ``KBL_TUTORIAL_MODE``: ``full`` (the default by hand) runs the real experiment, whose printed
  numbers are the ones the text quotes; ``smoke`` runs the same code on tiny sizes in seconds
  (what the test suite runs).
- ``KBL_TUTORIAL_FIGURES``: the folder of the tutorial's PNGs (default
  ``tutorials/_build/<mode>/figures/<name>``, where ``tutorials/build.py`` puts them too).
- ``KBL_TUTORIAL_WORK``: scratch files such as trained vectors (default
  ``tutorials/_build/<mode>/work/<name>``).
- ``KERAS_BACKEND``: ``tensorflow``, ``jax`` or ``torch``; every tutorial runs on each.

In a notebook a figure is displayed inline (its output tagged with the PNG's path, so that the
builder's HTML page can reference the file) and a table as HTML; under plain ``python`` both are
printed.
"""

import contextlib
import html
import json
import os
import pathlib
import platform
import sys
import time
import warnings

HERE = pathlib.Path(__file__).resolve().parent
MODES = ("smoke", "full")
FIGURE_KEY = "kbl_figure"     # output metadata: the PNG a displayed figure was read from
TABLE_KEY = "kbl_table"       # output metadata: the key of a displayed table


def mode():
    """``KBL_TUTORIAL_MODE``, checked (default ``full``)."""
    value = os.environ.get("KBL_TUTORIAL_MODE", "full").strip().lower()
    if value not in MODES:
        raise ValueError(f"KBL_TUTORIAL_MODE={value!r}: choose one of {MODES} (smoke: tiny "
                         "sizes in seconds; full: the real experiment).")
    return value


def check_requirements(data=(), presets=()):
    """Stop with every missing install command: ``data`` names registry sources (``name`` or
    ``(name, part)``), ``presets`` named presets (built on first use from an installed package).

    Raises ``MissingPackageError`` (an ``ImportError``) listing what is missing and how to
    install it, or ``DataError``/``PresetError`` for a broken installation."""
    from keras_bert_lab.data import registry
    from keras_bert_lab.errors import MissingPackageError, PresetError
    from keras_bert_lab.presets import registry as preset_registry

    problems = []
    for item in data:
        name, part = item if isinstance(item, tuple) else (item, None)
        try:
            registry.locate(name, part)
        except MissingPackageError as error:
            problems.append(str(error))
    for name in presets:
        try:
            preset_registry.resolve_preset(name, build=False)
        except PresetError:   # not built yet: its source package must be there to build it
            try:
                preset_registry.locate_source(preset_registry.entry(name))
            except MissingPackageError as error:
                problems.append(str(error))
    if problems:
        commands = sorted({p.split("`")[1] for p in problems if p.count("`") >= 2})
        raise MissingPackageError(
            "This tutorial needs data that is not installed:\n- " + "\n- ".join(problems) +
            "\nInstall with:\n    " + "\n    ".join(commands) +
            "\n(or `make install`, which installs every data package), then run it again.")


def machine():
    """One line about the machine: CPU model, cores, memory, OS."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        memory = f", {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB"
    except (ValueError, OSError, AttributeError):
        memory = ""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpu}, {cores} cores{memory}, {platform.system()} {platform.machine()}"


def in_notebook():
    """True inside a Jupyter kernel (where figures and tables are displayed, not printed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class Tutorial:
    """The run of one tutorial: its mode, folders, figures and tables (see :func:`start`)."""

    def __init__(self, name, run_mode, figures, work):
        self.name, self.mode = name, run_mode
        self.figures_dir, self.work = pathlib.Path(figures), pathlib.Path(work)
        self.figures, self.tables = [], []
        self.started = time.time()

    @property
    def smoke(self):
        return self.mode == "smoke"

    def size(self, smoke, full):
        """``smoke`` in smoke mode, else ``full``."""
        return smoke if self.smoke else full

    def figure_path(self, filename):
        """Where to save the figure ``filename`` (its folder is created)."""
        self.figures_dir.mkdir(parents=True, exist_ok=True)
        return self.figures_dir / filename

    def save(self, figure, filename):
        """Save a ``matplotlib.figure.Figure`` (made without pyplot) as ``filename``; its path."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(figure)
        path = self.figure_path(filename)
        figure.savefig(path, dpi=100, bbox_inches="tight")
        return path

    def corpora(self, train_documents, valid_documents):
        """``(corpus, eval_corpus)`` for a pretraining recipe: WikiText-2's train and valid
        splits in full mode; in smoke mode files holding their first few documents (so that
        reading the corpus takes no time)."""
        if not self.smoke:
            return "wikitext2", "wikitext2:valid"
        from keras_bert_lab.data.corpora import load_corpus

        paths = []
        for name, count in (("wikitext2", train_documents), ("wikitext2:valid", valid_documents)):
            path = self.work / f"{name.replace(':', '_')}_{count}.txt"
            documents = load_corpus(name).documents[:count]
            path.write_text("\n\n".join("\n".join(d) for d in documents) + "\n",
                            encoding="utf-8")
            paths.append(str(path))
        return tuple(paths)

    def pretrained(self, run, settings, folder, what):
        """``run(settings, folder)`` of a pretraining recipe (its metrics), done once: a later
        build with the same settings reuses the run already in ``folder``."""
        folder = pathlib.Path(folder)
        if (folder / "metrics.json").is_file() and (folder / "preset").is_dir() and \
                json.loads((folder / "settings.json").read_text()) == settings.to_dict():
            metrics = json.loads((folder / "metrics.json").read_text())
            print(f"reusing the {what} trained by an earlier run in {folder} (it took "
                  f"{metrics['seconds']:.0f} s); delete the folder to train again")
            return metrics
        began = time.time()
        metrics = run(settings, str(folder), overwrite=True, verbose=0)
        print(f"pretrained in {time.time() - began:.0f} s")
        return metrics

    def eager_in_smoke(self):
        """In smoke mode on TensorFlow, run ``fit`` steps eagerly: a step or two per model
        would take longer to compile into a graph than to run (the numbers do not change)."""
        import keras

        if self.smoke and keras.backend.backend() == "tensorflow":
            import warnings

            import tensorflow as tf

            tf.config.run_functions_eagerly(True)
            warnings.filterwarnings("ignore", message="Even though the `tf.config.experimental_run")

    def show(self, path, caption):
        """Show the PNG at ``path``: inline in a notebook, its path under plain ``python``."""
        path = pathlib.Path(path).resolve()
        if not path.is_file() or path.stat().st_size == 0:
            raise RuntimeError(f"Figure {path} was not written.")
        self.figures.append(path)
        if in_notebook():
            from IPython.display import Image, display

            print(f"Figure: {caption}")
            display(Image(filename=str(path)), metadata={FIGURE_KEY: str(path)})
        else:
            print(f"Figure: {caption}\n  saved as {path}")

    def table(self, key, columns, rows, title):
        """Show a table (``rows``: sequences in ``columns`` order) as HTML in a notebook, as
        aligned text otherwise; returns the text."""
        cells = [[_cell(v) for v in row] for row in rows]
        widths = [max(len(str(c)), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
        line = lambda values: "  ".join(  # noqa: E731
            v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths)))
        text = "\n".join([title, line([str(c) for c in columns]),
                          "  ".join("-" * w for w in widths), *map(line, cells)])
        self.tables.append(key)
        if in_notebook():
            from IPython.display import display

            head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) +
                           "</tr>" for row in cells)
            page = (f'<table id="table-{html.escape(key)}" class="kbl-table"><caption>'
                    f"{html.escape(title)}</caption><thead><tr>{head}</tr></thead>"
                    f"<tbody>{body}</tbody></table>")
            display({"text/html": page, "text/plain": text}, raw=True,
                    metadata={TABLE_KEY: key})
        else:
            print(text + "\n")

    def finish(self):
        """Print what the run produced and its wall time (from the first cell on)."""
        import keras

        seconds = time.time() - self.started
        print(f"{self.name} ({self.mode} mode, KERAS_BACKEND={keras.backend.backend()}): "
              f"{len(self.figures)} figures, {len(self.tables)} tables, wall time "
              f"{seconds:.0f} s on {machine()}.")


def spread(values):
    """``mean ± sd (n)`` of a result over seeds (the sample standard deviation)."""
    import statistics

    if len(values) == 1:
        return f"{values[0]:.3f} (n=1)"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f} (n={len(values)})"


def _cell(value):
    if isinstance(value, float):
        return f"{value:.4f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


@contextlib.contextmanager
def _quiet_native_stderr():
    """Silence what native libraries write straight to file descriptor 2 while they load
    (TensorFlow's start-up and CUDA-probe lines, which a notebook would show in every cell
    that first touches them). Python's own errors still reach ``sys.stderr``."""
    try:
        saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    except OSError:
        yield
        return
    sys.stderr.flush()
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def start(name, data=(), presets=(), seed=0):
    """Check the tutorial's data (stopping here with the install commands), fix the seed and
    print how this run was made; returns its :class:`Tutorial`."""
    started = time.time()
    run_mode = mode()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    warnings.filterwarnings("ignore", message="IProgress not found")   # tqdm in a notebook
    with _quiet_native_stderr():
        import keras

        check_requirements(data, presets)
        keras.utils.set_random_seed(seed)   # imports TensorFlow where it is installed
        try:
            import tensorflow as tf

            tf.config.list_physical_devices()   # its CUDA probe, now rather than mid-run
        except ImportError:
            pass
    build = HERE / "_build" / run_mode
    figures = os.environ.get("KBL_TUTORIAL_FIGURES") or build / "figures" / name
    work = os.environ.get("KBL_TUTORIAL_WORK") or build / "work" / name
    pathlib.Path(work).mkdir(parents=True, exist_ok=True)
    print(f"Tutorial {name}: {run_mode} mode, KERAS_BACKEND={keras.backend.backend()} "
          f"(keras {keras.__version__}, Python {sys.version.split()[0]})")
    print(f"Machine: {machine()}")
    print(f"Reproduce: KERAS_BACKEND={keras.backend.backend()} KBL_TUTORIAL_MODE={run_mode} "
          f"python tutorials/{name}.py   (or: python tutorials/build.py --mode {run_mode} "
          f"--only {name[:2]})")
    tutorial = Tutorial(name, run_mode, figures, work)
    tutorial.started = started
    return tutorial
