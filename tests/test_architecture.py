"""The shape of the package: imports point one way, down, and the model side stays backend-free.

Reads every module's imports with ``ast`` — at module level *and* inside functions — and checks:

1. no import cycle between modules, and none between the top-level parts of the package;
2. each part imports only the parts below it (``LAYERS``: the picture of README's Layout); every
   family folder ``models/<family>/`` is one part, ``family``, over the shared floors;
3. the model side — ``layers``, ``models``, ``tasks``, ``training``, ``distribution`` and each
   family's model modules (all but its text side, :data:`FAMILY_TEXT_SIDE`) — never imports
   TensorFlow, PyTorch, JAX, keras-hub, Hugging Face libraries or the text side (``data``,
   ``preprocessing``, ``pipelines``, a family's text-side modules);
4. importing the model side does not load TensorFlow on the JAX and PyTorch backends (checked in
   a fresh process);
5. no module is longer than 400 lines unless its docstring says why;
6. the family house: a shared floor imports no family, a family imports no other family, and
   nothing outside the registry (``families.py``) dispatches on the family — no comparison with a
   preset's ``backbone_class`` or with the name of a family or of a family's class, no
   ``isinstance``/``issubclass`` against another family's class.

``python tests/test_architecture.py`` prints the figures these checks hold.
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
SHARED = {"errors", "version", "families", "presets", "layers", "training", "models", "tasks",
          "distribution", "data", "metrics", "vectors", "preprocessing", "pipelines", "features",
          "export"}
LAYERS = {
    "errors": set(),
    "version": set(),
    "families": {"errors"},
    "presets": {"errors", "families", "version"},
    "layers": {"errors"},
    "training": {"errors"},
    "models": {"errors", "families", "layers", "presets"},
    "tasks": {"errors", "families", "layers", "models", "presets", "training"},
    "distribution": {"errors", "families", "models"},
    "data": {"errors"},
    "metrics": {"errors", "data"},
    "vectors": {"errors", "data"},
    "preprocessing": {"errors", "data", "families", "presets"},
    # the masked-LM recipe the encoder families share (pipelines.masked_lm_recipe) runs
    # the generic training loop
    "pipelines": {"errors", "data", "preprocessing", "training"},
    "features": {"errors", "data", "models", "preprocessing", "presets", "vectors"},
    "export": {"errors", "families", "models", "presets", "preprocessing", "tasks", "version"},
    "family": SHARED,
    "studies": SHARED | {"family"},
    "commands": SHARED | {"family", "studies"},
    "cli": {"errors", "commands"},
    "__init__": {"family", "models", "tasks", "version"},
}
FAMILIES_ROOT = ROOT / "models"
FAMILY_NAMES = sorted(p.name for p in FAMILIES_ROOT.iterdir()
                      if p.is_dir() and (p / "__init__.py").is_file())
# A family's text side (preprocessors, feature sources, recipes, adapters): may load TensorFlow
# and the shared text side. Its converters (convert*, hf_weights) are NumPy code, as the shared
# presets/convert floor is: the model side may read a checkpoint format through them.
FAMILY_TEXT_SIDE = ("preprocessor", "word_features", "pretrain", "finetune", "pipeline")
FAMILY_CONVERTERS = ("convert", "hf_weights")
BACKEND_FREE = ("layers", "models", "tasks", "training", "distribution", "family")
FORBIDDEN_EXTERNAL = ("tensorflow", "tensorflow_text", "torch", "jax", "jaxlib", "keras_hub",
                      "keras_nlp", "transformers", "tokenizers")
TEXT_SIDE = ("data", "preprocessing", "pipelines")
MAX_LINES = 400
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


def family_of(module):
    """The family folder a module lives in (``"bert"``), or ``None``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "models" and parts[2] in FAMILY_NAMES \
        else None


def part(module):
    """The top-level part of the package a module belongs to (``"__init__"`` for the root,
    ``"family"`` for any module of a family folder)."""
    if family_of(module):
        return "family"
    rest = module[len(PACKAGE) + 1:] if module != PACKAGE else "__init__"
    return rest.split(".")[0]


def backend_free(module):
    """Whether a module is on the model side (see the module docstring, check 3)."""
    if family_of(module):
        leaf = module.split(".")[3] if len(module.split(".")) > 3 else "__init__"
        return leaf not in FAMILY_TEXT_SIDE and not leaf.startswith(FAMILY_CONVERTERS)
    return part(module) in BACKEND_FREE


def text_side(module):
    """A family module on its text side (see :data:`FAMILY_TEXT_SIDE`)."""
    return bool(family_of(module)) and module.split(".")[-1] in FAMILY_TEXT_SIDE


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
        if not backend_free(source):
            continue
        for target, top in targets:
            where = "module level" if top else "inside a function"
            if target.split(".")[0] in FORBIDDEN_EXTERNAL:
                wrong.append(f"{source} imports {target} ({where})")
            resolved = resolve(target) if target.startswith(PACKAGE) else None
            if resolved and (part(resolved) in TEXT_SIDE or text_side(resolved)):
                wrong.append(f"{source} imports {target} ({where})")
    assert not wrong, "\n".join(wrong)


def test_checks_see_function_level_imports():
    """The checks above would catch an import hidden inside a function."""
    found = dict(imports(MODULES["keras_bert_lab.models.bert.convert_google"]))
    assert found.get("tensorflow") is False  # imported inside read_google_checkpoint


def test_module_level_closure_of_the_model_side_stays_backend_free():
    """What ``import keras_bert_lab.<model side>`` loads, statically: no backend library."""
    module_level = {}
    for source, targets in EDGES.items():
        module_level[source] = [t for t, top in targets if top]
    seen, todo = set(), [m for m in MODULES if backend_free(m)]
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


# ---- the family house ---------------------------------------------------------------------------
REGISTRY = f"{PACKAGE}.families"


def family_classes():
    """``{class name: family}`` of every class defined in a family folder."""
    found = {}
    for name, path in MODULES.items():
        family = family_of(name)
        if family:
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef):
                    found[node.name] = family
    return found


def family_words():
    """``{string: family}``: the families' names and ``kbl pretrain --model`` spellings, and
    their class names — what a string comparison that dispatches on the family would name."""
    from keras_bert_lab import families

    words = dict(family_classes())
    for family in families.FAMILIES:
        words[family.name] = family.name
        if family.cli_name:
            words[family.cli_name] = family.name
    return words


def imported_names(tree, this):
    """``{local name: (module it comes from, name there)}`` of a module's ``from`` imports."""
    package = this.rpartition(".")[0]
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                names[alias.asname or alias.name] = (base, alias.name)
    return names


def dispatch_sites():
    """``[(module, line, what)]``: every place outside the registry that dispatches on the
    family (see the module docstring, check 6)."""
    words, classes, found = family_words(), family_classes(), []
    for name, path in MODULES.items():
        if name == REGISTRY:
            continue
        own = family_of(name)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = imported_names(tree, name)

        def foreign(word):
            return word in words and words[word] != own

        def strings(node):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                return [node.value]
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                return [s for e in node.elts for s in strings(e)]
            return []

        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for operand in [node.left, *node.comparators]:
                    if isinstance(operand, ast.Attribute) and operand.attr == "backbone_class":
                        found.append((name, node.lineno, "compares a preset's backbone_class"))
                    for word in strings(operand):
                        if foreign(word):
                            found.append((name, node.lineno, f"compares with {word!r}"))
            elif isinstance(node, ast.Dict):
                for key in node.keys:
                    for word in strings(key) if key is not None else ():
                        if foreign(word) and word in classes:
                            found.append((name, node.lineno, f"a table keyed by {word!r}"))
            elif isinstance(node, ast.Subscript) or (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "get"):
                keys = [node.slice] if isinstance(node, ast.Subscript) else node.args[:1]
                if any(isinstance(k, ast.Attribute) and k.attr == "backbone_class" for k in keys):
                    found.append((name, node.lineno, "looks up a preset's backbone_class"))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                target = node.args[1]
                for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                    origin = imported.get(getattr(element, "id", None))
                    theirs = family_of(origin[0]) if origin else None
                    if theirs and theirs != own:
                        found.append((name, node.lineno,
                                      f"{node.func.id}(…, {element.id}) of the {theirs} family"))
    return found


def test_families_each_live_in_one_folder_and_are_declared_once():
    from keras_bert_lab import families

    assert sorted(f.name for f in families.FAMILIES) == FAMILY_NAMES
    for family in families.FAMILIES:  # every reference of the registry resolves
        assert family.backbone_class.__module__.startswith(family.package)
        for kind in family.tasks:
            assert family.task(kind).__module__.startswith(family.package), kind
        for reference in (*family.preprocessors.values(), *family.converters.values(),
                          *[r for r in (family.layout, family.features, family.tokenizer) if r]):
            assert family.resolve(reference) is not None, reference
        for module in (family.finetune, family.recipe):
            if module:
                family.module(module)


def test_no_family_dispatch_outside_the_registry():
    sites = dispatch_sites()
    assert not sites, "\n".join(f"{m}:{line}: {what}" for m, line, what in sites)


def test_the_dispatch_check_sees_the_old_patterns(tmp_path):
    """The check would catch the sites the registry replaced (each pattern is one of them)."""
    global MODULES
    code = ('from keras_bert_lab.models.gpt.config import GPTConfig\n'
            'def f(info, config):\n'
            '    a = info.backbone_class in ("GPTBackbone",)\n'
            '    b = {"BertBackbone": 1}.get(info.backbone_class)\n'
            '    c = isinstance(config, GPTConfig)\n'
            '    d = args.model != "bert"\n')
    fake = tmp_path / "fake.py"
    fake.write_text(code)
    saved = MODULES
    MODULES = {f"{PACKAGE}.distribution.fake": fake}
    try:
        sites = dispatch_sites()
    finally:
        MODULES = saved
    assert len({line for _, line, _ in sites}) == 4, sites


def test_a_shared_floor_imports_no_family_and_a_family_no_other():
    wrong = []
    for source, target in internal_edges():
        theirs, own = family_of(target), family_of(source)
        if theirs and own and theirs != own:
            wrong.append(f"{source} (family {own}) imports {target} (family {theirs})")
        if theirs and not own and part(source) in SHARED:
            wrong.append(f"{source} (a shared floor) imports {target} (family {theirs})")
    assert not wrong, "\n".join(wrong)


def figures():
    """The numbers the checks above hold (what ``python tests/test_architecture.py`` prints)."""
    long = [n for n, p in MODULES.items()
            if p.read_text(encoding="utf-8").count("\n") > MAX_LINES
            and LONG_MODULE_REASON not in (ast.get_docstring(ast.parse(p.read_text())) or "")]
    per_family = {f: sum(1 for m in MODULES if family_of(m) == f) for f in FAMILY_NAMES}
    return {"families": len(FAMILY_NAMES), "modules per family folder": per_family,
            "family folders outside models/": 0,
            "dispatch sites outside the registry": len(dispatch_sites()),
            f"modules over {MAX_LINES} lines without a reason": len(long),
            "import cycles": 0 if find_cycle(internal_edges()) is None else 1}


if __name__ == "__main__":
    for key, value in figures().items():
        print(f"{key}: {value}")
