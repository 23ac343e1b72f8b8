"""The shape of the package: imports point one way, down, and the model side stays backend-free.

Reads every module's imports with ``ast`` — at module level *and* inside functions — and checks:

1. no import cycle between modules, and none between the top-level parts of the package;
2. each part imports only the parts below it (``LAYERS``: the picture of README's Layout);
3. ``layers``, ``models``, ``tasks`` and ``training`` never import TensorFlow, PyTorch, JAX,
   keras-hub, Hugging Face libraries or the text side (``data``, ``preprocessing``,
   ``pipelines``);
4. importing the model side does not load TensorFlow on the JAX and PyTorch backends (checked in
   a fresh process);
5. no module is much longer than ~400 lines unless its docstring says why.
"""

import ast
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "keras_bert_lab"
PACKAGE = "keras_bert_lab"

# What each top-level part may import (besides itself). Read bottom-up, this is the architecture:
# errors/version at the bottom; presets (format, converters, registry) and layers; generic
# training; models over layers and presets; tasks over models; the text side (data →
# preprocessing → pipelines) and metrics beside them; recipes over everything; the command line
# and the package's public API on top.
LAYERS = {
    "errors": set(),
    "version": set(),
    "presets": {"errors", "version"},
    "layers": {"errors"},
    "training": {"errors"},
    "distribution": {"errors", "models"},
    "models": {"errors", "layers", "presets"},
    "tasks": {"errors", "layers", "models", "presets", "training"},
    "data": {"errors"},
    "metrics": {"errors", "data"},
    "vectors": {"errors", "data"},
    "preprocessing": {"errors", "data", "presets"},
    "pipelines": {"errors", "data", "preprocessing"},
    "features": {"errors", "data", "models", "preprocessing", "presets", "vectors"},
    "export": {"errors", "models", "presets", "preprocessing", "tasks", "version"},
    "recipes": {"errors", "data", "distribution", "export", "features", "metrics", "models",
                "pipelines", "preprocessing", "presets", "tasks", "training", "vectors"},
    "cli": {"errors", "data", "distribution", "features", "models", "presets", "preprocessing",
            "recipes", "tasks",
            "vectors"},
    "__init__": {"models", "tasks", "version"},
}
BACKEND_FREE = ("layers", "models", "tasks", "training", "distribution")
FORBIDDEN_EXTERNAL = ("tensorflow", "tensorflow_text", "torch", "jax", "jaxlib", "keras_hub",
                      "keras_nlp", "transformers", "tokenizers")
TEXT_SIDE = ("data", "preprocessing", "pipelines")
MAX_LINES = 420
LONG_MODULE_REASON = "Long module:"  # a docstring paragraph starting so says why


def module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def resolve(name):
    """The package module an imported name lives in (a module, else its parent package)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(path):
    """``[(imported module or external top-level name, at_module_level)]`` of a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    this = module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    found = []

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((alias.name, top) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.rsplit(".", child.level - 1)[0] if child.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    found.append((full if resolve(full) == full else base, top))
            visit(child, inner)

    visit(tree, True)
    return found


EDGES = {name: imports(path) for name, path in MODULES.items()}


def part(module):
    """The top-level part of the package a module belongs to (``"__init__"`` for the root)."""
    rest = module[len(PACKAGE) + 1:] if module != PACKAGE else "__init__"
    return rest.split(".")[0]


def internal_edges(level=None):
    for source, targets in EDGES.items():
        for target, top in targets:
            if level is not None and top != level:
                continue
            resolved = resolve(target) if target.startswith(PACKAGE) else None
            if resolved and resolved != source:
                yield source, resolved


def find_cycle(edges):
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    state, stack = {}, []

    def dfs(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = dfs(nxt)
                if cycle:
                    return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = dfs(node)
            if cycle:
                return cycle
    return None


def test_every_part_is_placed():
    parts = {part(m) for m in MODULES}
    assert parts <= set(LAYERS), f"parts without a place in LAYERS: {parts - set(LAYERS)}"


def test_no_import_cycle_between_modules():
    cycle = find_cycle(internal_edges())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_import_cycle_between_parts():
    edges = {(part(a), part(b)) for a, b in internal_edges() if part(a) != part(b)}
    cycle = find_cycle(edges)
    assert cycle is None, "cycle between parts: " + " -> ".join(cycle)


def test_each_part_imports_only_the_parts_below_it():
    wrong = sorted(f"{a} imports {b}" for a, b in internal_edges()
                   if part(a) != part(b) and part(b) not in LAYERS[part(a)])
    assert not wrong, "\n".join(wrong)


def test_model_side_imports_no_backend_library_and_no_text_code():
    wrong = []
    for source, targets in EDGES.items():
        if part(source) not in BACKEND_FREE:
            continue
        for target, top in targets:
            where = "module level" if top else "inside a function"
            if target.split(".")[0] in FORBIDDEN_EXTERNAL:
                wrong.append(f"{source} imports {target} ({where})")
            if target.startswith(PACKAGE) and part(resolve(target)) in TEXT_SIDE:
                wrong.append(f"{source} imports {target} ({where})")
    assert not wrong, "\n".join(wrong)


def test_checks_see_function_level_imports():
    """The checks above would catch an import hidden inside a function."""
    found = dict(imports(MODULES["keras_bert_lab.presets.convert.google"]))
    assert found.get("tensorflow") is False  # imported inside read_google_checkpoint


def test_module_level_closure_of_the_model_side_stays_backend_free():
    """What ``import keras_bert_lab.<model side>`` loads, statically: no backend library."""
    module_level = {}
    for source, targets in EDGES.items():
        module_level[source] = [t for t, top in targets if top]
    seen, todo = set(), [m for m in MODULES if part(m) in BACKEND_FREE]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for target in module_level.get(name, []):
            assert target.split(".")[0] not in FORBIDDEN_EXTERNAL, \
                f"importing the model side loads {target} (via {name})"
            resolved = resolve(target) if target.startswith(PACKAGE) else None
            if resolved:
                todo.append(resolved)


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_model_side_does_not_load_tensorflow(backend):
    code = ("import sys, keras_bert_lab, keras_bert_lab.training.finetune, "
            "keras_bert_lab.training.pretrain, keras_bert_lab.presets\n"
            "print(sorted(m for m in ('tensorflow', 'tensorflow_text', 'keras_hub') "
            "if m in sys.modules))")
    env = dict(os.environ, KERAS_BACKEND=backend)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=ROOT.parent)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_long_modules_say_why():
    wrong = []
    for name, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").count("\n")
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        if lines > MAX_LINES and LONG_MODULE_REASON not in doc:
            wrong.append(f"{name}: {lines} lines, no '{LONG_MODULE_REASON} …' in its docstring")
    assert not wrong, "\n".join(wrong)
