"""Build the tutorials: each numbered percent-format script → executed notebook → HTML page.

For every ``tutorials/NN_*.py`` (or those named by ``--only``): jupytext reads the script as a
notebook, nbclient executes it in a ``python3`` Jupyter kernel of this interpreter (cwd
``tutorials/``, so ``import _common`` works; ``KBL_TUTORIAL_MODE``, ``KBL_TUTORIAL_FIGURES`` and
``KBL_TUTORIAL_WORK`` set for it), and nbconvert writes the page. The output folder holds::

    index.html                 the list of pages (mode, backend, wall time, status)
    NN_name.ipynb              the executed notebook (figures embedded: it stands alone)
    NN_name.html               its page; figures are <img src="figures/NN_name/*.png">
    NN_name.json               what the run produced: figures, tables, wall time, error
    figures/NN_name/*.png      the figures, as the tutorial saved them
    work/NN_name/              scratch files (trained vectors, small corpora)

A tutorial that fails keeps its partly executed notebook and page (the error shows in the cell
that raised it) and makes the build exit with status 1.

Usage::

    python tutorials/build.py                     # full mode: the real experiments
    python tutorials/build.py --mode smoke        # tiny sizes, seconds each (what CI runs)
    python tutorials/build.py --only 01 08 --out /tmp/tutorials
"""

import argparse
import copy
import html
import json
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _common  # noqa: E402

PATTERN = "[0-9][0-9]_*.py"
TIMEOUTS = {"smoke": 300, "full": 3600}   # seconds per cell


def find_tutorials(only=None):
    """The numbered tutorial scripts, in order; ``only``: numbers (``01``) or names to keep."""
    scripts = sorted(HERE.glob(PATTERN))
    if only:
        wanted = {str(o).removesuffix(".py") for o in only}
        scripts = [s for s in scripts if s.stem in wanted or s.stem[:2] in wanted
                   or s.stem.split("_")[0].lstrip("0") in wanted]
        found = {s.stem for s in scripts} | {s.stem[:2] for s in scripts}
        missing = sorted(w for w in wanted if w not in found and w.zfill(2) not in found)
        if missing:
            raise SystemExit(f"No tutorial {', '.join(missing)} in {HERE} (have: "
                             f"{', '.join(s.stem for s in sorted(HERE.glob(PATTERN)))}).")
    return scripts


def failed_cell(nb):
    """``(n, error text)`` of the first code cell (1-based) with an error output, or None."""
    number = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        number += 1
        for output in cell.get("outputs", ()):
            if output.get("output_type") == "error":
                return number, f"{output.get('ename')}: {output.get('evalue')}"
    return None


def execute(script, out, mode, timeout=None, env=None):
    """Execute ``script`` as a notebook; returns ``(notebook, error or None, seconds)``."""
    import jupytext
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = jupytext.read(script, fmt="py:percent")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata.pop("jupytext", None)
    kernel_env = dict(os.environ if env is None else env)
    kernel_env.update(KBL_TUTORIAL_MODE=mode,
                      KBL_TUTORIAL_FIGURES=str(out / "figures" / script.stem),
                      KBL_TUTORIAL_WORK=str(out / "work" / script.stem),
                      TF_CPP_MIN_LOG_LEVEL=kernel_env.get("TF_CPP_MIN_LOG_LEVEL", "2"),
                      MPLBACKEND="Agg")
    client = NotebookClient(nb, kernel_name="python3", timeout=timeout or TIMEOUTS[mode],
                            resources={"metadata": {"path": str(HERE)}})
    started, error = time.time(), None
    try:
        client.execute(env=kernel_env)
    except CellExecutionError as exc:
        where = failed_cell(nb)
        error = (f"code cell {where[0]}: {where[1]}" if where else str(exc).splitlines()[-1])
    return nb, error, time.time() - started


def produced(nb):
    """``(figure paths, table keys)`` the notebook's outputs are tagged with, in order."""
    figures, tables = [], []
    for cell in nb.cells:
        for output in cell.get("outputs", ()) if cell.cell_type == "code" else ():
            metadata = output.get("metadata", {})
            if _common.FIGURE_KEY in metadata:
                figures.append(metadata[_common.FIGURE_KEY])
            if _common.TABLE_KEY in metadata:
                tables.append(metadata[_common.TABLE_KEY])
    return figures, tables


def page_notebook(nb, page_folder):
    """A copy of ``nb`` whose figures are ``<img>`` references to their PNG files (relative to
    ``page_folder``) instead of embedded data, for the HTML page."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        for output in cell.get("outputs", ()) if cell.cell_type == "code" else ():
            path = output.get("metadata", {}).get(_common.FIGURE_KEY)
            if path:
                source = pathlib.Path(os.path.relpath(path, page_folder)).as_posix()
                name = html.escape(pathlib.Path(path).name)
                output["data"] = {"text/html": f'<img src="{html.escape(source)}" alt="{name}" '
                                               'style="max-width: 100%">',
                                  "text/plain": f"[figure {name}]"}
    return nb


def render(nb, page):
    """Write ``nb`` as the HTML page ``page``."""
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab").from_notebook_node(
        page_notebook(nb, page.parent))
    page.write_text(body, encoding="utf-8")


def build_one(script, out, mode, timeout=None, env=None, log=print):
    """Execute one tutorial into ``out`` and write its notebook, page and record."""
    import nbformat

    log(f"[{mode}] {script.stem} …")
    nb, error, seconds = execute(script, out, mode, timeout, env)
    notebook, page = out / f"{script.stem}.ipynb", out / f"{script.stem}.html"
    nbformat.write(nb, notebook)
    render(nb, page)
    figures, tables = produced(nb)
    backend = (env or os.environ).get("KERAS_BACKEND") or _configured_backend()
    record = {"name": script.stem, "mode": mode, "backend": backend, "ok": error is None,
              "error": error, "seconds": round(seconds, 1), "notebook": notebook.name,
              "page": page.name,
              "figures": [pathlib.Path(os.path.relpath(f, out)).as_posix() for f in figures],
              "tables": tables}
    (out / f"{script.stem}.json").write_text(json.dumps(record, indent=2) + "\n",
                                             encoding="utf-8")
    log(f"[{mode}] {script.stem}: {'ok' if error is None else 'FAILED — ' + error} in "
        f"{seconds:.0f} s; {len(figures)} figures, {len(tables)} tables → {page}")
    return record


def _configured_backend():
    """The backend Keras would pick without ``KERAS_BACKEND`` (its config file, else
    tensorflow), read without importing Keras."""
    config = pathlib.Path(os.environ.get("KERAS_HOME", pathlib.Path.home() / ".keras"),
                          "keras.json")
    try:
        return json.loads(config.read_text()).get("backend", "tensorflow")
    except (OSError, ValueError):
        return "tensorflow"


def write_index(out, records):
    rows = "".join(
        f"<tr><td><a href=\"{html.escape(r['page'])}\">{html.escape(r['name'])}</a></td>"
        f"<td>{r['mode']}</td><td>{html.escape(r['backend'])}</td><td>{r['seconds']:.0f} s</td>"
        f"<td>{len(r['figures'])}</td><td>{len(r['tables'])}</td>"
        f"<td>{'ok' if r['ok'] else 'FAILED: ' + html.escape(r['error'] or '')}</td></tr>"
        for r in records)
    (out / "index.html").write_text(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>keras_bert_lab tutorials"
        "</title></head><body><h1>keras_bert_lab tutorials</h1><p>Built by "
        "<code>tutorials/build.py</code> on " + html.escape(_common.machine()) + ".</p>"
        "<table border=\"1\" cellpadding=\"4\"><tr><th>tutorial</th><th>mode</th>"
        "<th>backend</th><th>wall time</th><th>figures</th><th>tables</th><th>status</th></tr>"
        + rows + "</table></body></html>\n", encoding="utf-8")


def build(scripts, out, mode, timeout=None, env=None, log=print):
    """Build ``scripts`` into ``out``; returns their records (see :func:`build_one`)."""
    out = pathlib.Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    records = [build_one(pathlib.Path(s), out, mode, timeout, env, log) for s in scripts]
    previous = {}
    for path in sorted(out.glob("[0-9][0-9]_*.json")):   # keep pages built by earlier calls
        previous[path.stem] = json.loads(path.read_text(encoding="utf-8"))
    previous.update({r["name"]: r for r in records})
    write_index(out, [previous[k] for k in sorted(previous)])
    return records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=_common.MODES, default="full")
    parser.add_argument("--out", default=None,
                        help="output folder (default: tutorials/_build/<mode>)")
    parser.add_argument("--only", nargs="+", default=None,
                        help="tutorial numbers or names (default: all)")
    parser.add_argument("--timeout", type=int, default=None,
                        help="seconds per cell (default: 300 smoke, 3600 full)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out) if args.out else HERE / "_build" / args.mode
    records = build(find_tutorials(args.only), out, args.mode, args.timeout)
    failed = [r["name"] for r in records if not r["ok"]]
    print(f"{len(records) - len(failed)} of {len(records)} tutorials built; open "
          f"{out.resolve() / 'index.html'}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
