"""``kbl features extract`` and ``kbl features table``: the BERT paper's feature-based NER study.

Devlin et al. (2019, §5.4, Table 7) freeze BERT and train a two-layer BiLSTM tagger on its
layers, one row per way of combining them, next to fine-tuning. ``extract`` computes every
layer of every word once and caches it (:mod:`keras_bert_lab.features.cache`) with the preset's
family's feature source (the registry's ``features``); ``table`` trains one
:class:`~keras_bert_lab.tasks.feature_tagger.FeatureTagger` per combination and seed on the
cache (:mod:`keras_bert_lab.studies.feature_tables`) and writes ``table.md`` / ``table.json`` with validation entity F1 (seqeval's default
scoring and strict IOB2): the score after the last epoch, and the best epoch's (selected on the
same validation set, so optimistic — both are reported). The data flags and the split are those
of ``kbl finetune ner``, so the fine-tuning row of the same table comes from that command.

Example (the run in benchmarks/results/quality.md)::

    kbl features table --dataset wnut16 --preset minilm_l6_en_uncased --output out/features
"""

import pathlib
import time


from keras_bert_lab.data import conll, registry
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.commands.finetune import common
from keras_bert_lab.commands.finetune.ner import load_splits
from keras_bert_lab.studies.feature_tables import markdown_table, train_row
from keras_bert_lab.tasks.feature_tagger import COMBINATIONS, combination
from keras_bert_lab.training.run import write_json

# The feature side (TensorFlow, through the tokenizers) is imported inside the functions, so that
# `kbl` starts without TensorFlow on the JAX and PyTorch backends.


def add_arguments(parser):
    """The flags shared by ``extract`` and ``table``."""
    common.add_data_arguments(parser, registry.names(kind="tagging"), default_valid_fraction=0.2)
    parser.add_argument("--token-column", type=int, default=0)
    parser.add_argument("--tag-column", type=int, default=-1)
    parser.add_argument("--delimiter", default=None)
    parser.add_argument("--encoding", default="utf-8", help="text encoding of the CoNLL files")
    parser.add_argument("--seed", type=int, default=0, help="seed of the train/valid split")
    parser.add_argument("--preset", default="minilm_l6_en_uncased",
                        help="BERT preset whose layers are the features")
    parser.add_argument("--vectors", default=None, metavar="glove|FILE",
                        help="static word vectors as the features instead of a preset")
    parser.add_argument("--elmo", default=None, metavar="PRESET",
                        help="an ELMo biLM preset's layers as the features instead")
    parser.add_argument("--pooling", choices=("first", "mean"), default="first",
                        help="a word's vector: its first piece (the paper) or the mean of pieces")
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    parser.add_argument("--cache", default=None,
                        help="feature cache directory (default OUTPUT/features)")
    parser.add_argument("--output", default="out/features")
    parser.add_argument("--overwrite", action="store_true",
                        help="recompute a cache that exists (it is reused when it matches)")


def register(subparsers):
    """``kbl features extract|table``."""
    group = subparsers.add_parser(
        "features", help="feature extraction: cache frozen layers, the feature-based table"
    ).add_subparsers(dest="features_command", required=True)
    p = group.add_parser("extract", help="cache every layer of every word of a tagging set")
    add_arguments(p)
    p.set_defaults(func=extract)
    p = group.add_parser("table", help="train a BiLSTM tagger per layer combination")
    add_arguments(p)
    p.add_argument("--combinations", nargs="+", default=None,
                   help=f"rows (default: all that apply): {', '.join(COMBINATIONS)}, layer_k")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--lstm-units", type=int, default=256,
                   help="units per direction (the paper: 768)")
    p.add_argument("--lstm-layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--limit", type=int, default=None, help="first N training sentences only")
    p.set_defaults(func=table)


def feature_source(args):
    """The feature source the flags name: static vectors, or the per-word extractor of the
    family of ``--elmo`` / ``--preset`` (the registry's ``features``)."""
    from keras_bert_lab.features import StaticWordFeatures
    from keras_bert_lab.presets.registry import read_preset

    if args.vectors and args.elmo:
        raise ConfigError("Pass one feature source: --vectors or --elmo (or neither: --preset).")
    if args.vectors:
        from keras_bert_lab.vectors import load_vectors
        return StaticWordFeatures(load_vectors(args.vectors), name=args.vectors)
    preset = args.elmo or args.preset
    extractor = read_preset(preset, verify=False).family.feature_extractor()
    return extractor.from_preset(preset, sequence_length=args.sequence_length,
                                 pooling=args.pooling)


def cached_features(args, splits, output):
    """``{split: FeatureCache}``: reuse a matching cache, extract where missing (or asked)."""
    from keras_bert_lab.features import FeatureCache, write_cache
    root = pathlib.Path(args.cache or output / "features")
    source, caches = None, {}
    for name, sentences in splits.items():
        if not sentences:
            continue
        words = [s.words for s in sentences]
        directory = root / name
        if directory.exists() and not args.overwrite:
            caches[name] = FeatureCache(directory, words)
            print(f"features: reusing {directory} ({len(words)} sentences)")
            continue
        source = source or feature_source(args)
        start = time.time()
        write_cache(directory, source, words, dtype=args.dtype, overwrite=args.overwrite)
        print(f"features: {name} {len(words)} sentences -> {directory} "
              f"({time.time() - start:.0f} s)")
        caches[name] = FeatureCache(directory, words)
    return caches


def _check_folders(args):
    """``--output`` and ``--cache`` must be folders (or not exist yet), checked before any work."""
    for flag, path in (("--output", args.output), ("--cache", args.cache)):
        path = pathlib.Path(path) if path else None
        if path is not None and (path.is_file() or any(p.is_file() for p in path.parents)):
            raise ConfigError(f"{flag} {path} is a file (or inside one); give a folder.")


def _splits(args):
    _check_folders(args)
    splits, how = load_splits(args)
    return {k: v for k, v in splits.items() if v}, how


def extract(args):
    """``kbl features extract``: write the caches; returns them."""
    splits, how = _splits(args)
    output = pathlib.Path(args.output)
    print(f"features: {how}")
    return cached_features(args, splits, output)


def table(args):
    """``kbl features table``: one tagger per combination and seed; returns the rows."""
    if args.epochs < 1 or args.batch_size < 1 or args.lstm_units < 1:
        raise ConfigError("--epochs, --batch-size and --lstm-units must be at least 1.")
    splits, how = _splits(args)
    if "valid" not in splits:
        raise DataError("The table needs validation sentences: pass --valid or a "
                        "--valid-fraction above 0.")
    labels = conll.label_list(splits["train"])   # of the whole training part, before --limit
    if args.limit:
        splits["train"] = splits["train"][:args.limit]
    conll.check_labels(splits["valid"], labels, where="The valid split")
    output = pathlib.Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    caches = cached_features(args, {k: splits[k] for k in ("train", "valid")}, output)
    num_layers = caches["train"].num_layers
    # Static vectors have one layer: their table has one row.
    names = args.combinations or (list(COMBINATIONS) if num_layers > 1 else ["layer_0"])
    rows = []
    for name in names:
        combination(name, num_layers)  # fail on a bad name before any training
    for name in names:
        for seed in args.seeds:
            row = train_row(caches, splits, labels, name, seed, args)
            rows.append(row)
            print(f"features: {name:<18} seed {seed}: valid F1 {100 * row['f1_last']:.1f} "
                  f"(best {100 * row['f1_best']:.1f} at epoch {row['best_epoch']}) "
                  f"[{row['seconds']:.0f} s]")
            write_json(output / "table.json", {"data": how, "source": caches["train"].manifest[
                "source"], "settings": {k: v for k, v in vars(args).items()
                                        if isinstance(v, (int, float, str, list, type(None)))},
                "rows": rows})
    header = (f"Feature-based tagging on {how}: {caches['train'].manifest['source']}, "
              f"{args.lstm_layers}-layer BiLSTM ({args.lstm_units} units per direction), "
              f"{args.epochs} epochs.")
    (output / "table.md").write_text(markdown_table(rows, names, args.seeds, header),
                                     encoding="utf-8")
    print((output / "table.md").read_text(encoding="utf-8"))
    return rows

