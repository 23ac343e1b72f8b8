"""``kbl finetune classify | pair | choice``: sentence, sentence-pair and multiple-choice tasks.

The BERT paper's GLUE and SWAG recipes (Devlin et al. 2019, §4.1 and §4.4) from a preset:

- ``classify``: one text → a class (SST-2 style; ``--dataset rotten_tomatoes``), or several
  classes with ``--multi-label``;
- ``pair``: two texts → a class (MNLI, MRPC style) or, with ``--regression``, a similarity score
  (STS-B; ``--dataset stsb``);
- ``choice``: a context and C candidate continuations → the right one (SWAG style, JSONL).

Files are CSV, TSV or JSONL with named columns (``--text-column`` …). The preset's family (the
registry, :mod:`keras_bert_lab.families`) gives the task model and turns the texts into its
inputs: its ``finetune`` adapter (the BERT-style encoders' :mod:`.encoder` with the
:class:`~keras_bert_lab.preprocessing.encoder_text.EncoderTextPreprocessor`, GPT-1's task
transformations, ULMFiT's word ids). Scores
(:mod:`keras_bert_lab.metrics.classification`): accuracy and macro-F1 for classes (monitor:
accuracy; macro-F1 for multi-label), Pearson and Spearman correlation for scores (monitor:
Pearson), accuracy for multiple choice. The best epoch on the validation set is kept; the test set
is scored once with it.
"""

import csv
import json

import numpy as np

# The text side (TensorFlow) is imported inside the run functions, so that `kbl` starts, and
# `kbl models` / `kbl preset …` run, without TensorFlow on the JAX and PyTorch backends.
from keras_bert_lab.data import labelled, registry, tables
from keras_bert_lab.data.labels import LabelVocabulary
from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.metrics.classification import accuracy, classification_scores
from keras_bert_lab.commands.finetune import common
from keras_bert_lab.tasks.heads import decode_logits

MONITORS = {"single_label": "accuracy", "multi_label": "macro_f1", "regression": "pearson"}


# ---- command line ----------------------------------------------------------------------------
def register(subparsers):
    """Add ``classify``, ``pair`` and ``choice`` to ``kbl finetune``."""
    sets = {name: registry.source(name).options for name in registry.names(kind="labelled")}
    parsers = []
    for name, help_text, pairs in (
            ("classify", "single-sentence classification (CSV/TSV/JSONL or a registry set)",
             False),
            ("pair", "sentence-pair classification or --regression (CSV/TSV/JSONL or a registry "
                     "set)", True)):
        parser = subparsers.add_parser(name, help=help_text, description=help_text)
        common.add_data_arguments(parser, [s for s, o in sets.items()
                                           if bool(o.get("pairs")) == pairs])
        parser.add_argument("--format", choices=tables.FORMATS, default=None,
                            help="file format (default: from the extension)")
        parser.add_argument("--encoding", default="utf-8", help="text encoding of the files")
        parser.add_argument("--text-column", default="sentence1" if pairs else "text",
                            help="column of the (first) text")
        if pairs:
            parser.add_argument("--text-pair-column", default="sentence2",
                                help="column of the second text")
            parser.add_argument("--regression", action="store_true",
                                help="labels are scores (STS-B style): MSE loss, Pearson and "
                                     "Spearman (implied by a regression --dataset such as stsb)")
        parser.add_argument("--label-column", default="label", help="column of the label")
        parser.add_argument("--labels", default=None,
                            help="comma-separated class names in id order (default: the sorted "
                                 "labels of the training file)")
        parser.add_argument("--multi-label", action="store_true",
                            help="each example has a list of classes (JSONL arrays, or names "
                                 "separated by '|'): sigmoid outputs, binary cross-entropy")
        parser.add_argument("--dropout", type=float, default=None,
                            help="dropout before the head (default: the backbone's)")
        _add_pooling(parser)
        common.add_lm_loss_weight(parser)
        common.add_common_arguments(parser, output=f"out/finetune-{name}")
        parser.set_defaults(run=run_classification, pair=pairs)
        parsers.append(parser)
    parser = subparsers.add_parser(
        "choice", help="multiple choice (JSONL: context, choices, label)",
        description="Fine-tune a multiple-choice head (SWAG style): each context is paired with "
                    "each of its choices; softmax over the choices. Monitors accuracy.")
    common.add_data_arguments(parser)
    parser.add_argument("--encoding", default="utf-8", help="text encoding of the files")
    parser.add_argument("--context-column", default="context")
    parser.add_argument("--choices-column", default="choices")
    parser.add_argument("--label-column", default="label",
                        help="the right choice's index (or its text)")
    parser.add_argument("--dropout", type=float, default=None)
    _add_pooling(parser)
    common.add_lm_loss_weight(parser)
    common.add_common_arguments(parser, output="out/finetune-choice", batch_size=16)
    parser.set_defaults(run=run_choice)
    parsers.append(parser)
    return parsers


def _add_pooling(parser):
    parser.add_argument("--pooling", choices=["cls", "mean"], default=common.Unset("cls"),
                        help="head input: the pooled [CLS] state (BERT) or the mean of the "
                             "last layer (models trained for mean pooling, e.g. MiniLM, or "
                             "pretrained without next-sentence prediction); default 'cls' "
                             "or the preset's recommendation")


def _multi(labels):
    return [x if isinstance(x, list) else [p for p in str(x).split("|") if p.strip()]
            for x in labels]


@common.guard
def run_classification(args):
    """Run ``kbl finetune classify`` / ``pair`` from parsed arguments; returns the metrics dict."""
    from keras_bert_lab.pipelines.batches import batches

    settings = common.settings_from_args(args)
    args.pooling = common.preset_choice(args, "pooling")
    dataset = getattr(args, "dataset", None)
    options = registry.source(dataset).options if dataset else {}
    regression = bool(getattr(args, "regression", False) or options.get("regression"))
    if regression and args.multi_label:
        raise ConfigError("--regression and --multi-label exclude each other.")
    problem = "regression" if regression else "multi_label" if args.multi_label else "single_label"
    pair_column = args.text_pair_column if args.pair else None
    reader = lambda path: labelled.read_labelled(  # noqa: E731
        path, args.text_column, pair_column, args.label_column, format=args.format,
        encoding=args.encoding, regression=regression)
    splits, how = common.load_splits(args, reader,
                                     lambda name: labelled.load_dataset(name, seed=args.seed))
    common.start(settings)

    vocab, names = None, None
    if not regression:
        if args.multi_label:
            for part in splits.values():
                if part is not None:
                    part.labels = _multi(part.labels)
        if args.labels:
            vocab = LabelVocabulary(args.labels.split(","))
        elif "labels" in options:
            vocab = LabelVocabulary(options["labels"])
        else:
            vocab = LabelVocabulary.fit(splits["train"].labels)
        names = vocab.names
        if problem == "single_label" and len(names) < 2:
            raise DataError(f"{splits['train'].source} has only the label {names}; a classifier "
                            "needs at least two classes (pass --labels to name them all).")
    if settings.limit:   # after the label set: the first N examples may lack a rare class
        splits["train"] = splits["train"].subset(range(min(settings.limit, len(splits["train"]))))

    def targets(part):
        if regression:
            return np.asarray(part.labels, "float32")
        encode = vocab.encode_multi_hot if args.multi_label else vocab.encode
        return encode(part.labels, source=part.source, lines=part.lines)

    model, features = common.adapter(settings, args, "classify",
                                     "pair" if args.pair else "classify")(
        settings, args, problem, names, splits)
    data = {name: (features[name], targets(splits[name])) for name in features}
    print(f"{'pair' if args.pair else 'classify'} ({problem}): {how}; "
          + ", ".join(f"{name} {len(splits[name])}" for name in data)
          + (f"; classes {names}" if names else ""))
    train = batches(*data["train"], batch_size=settings.batch_size, shuffle=True,
                    seed=settings.seed)

    def scores(model, part):
        features, y = data[part]
        logits = model.predict_packed(features, batch_size=2 * settings.batch_size)
        return classification_scores(logits, y, problem), logits

    report = common.fine_tune(model, train, settings, lambda m: scores(m, "valid")[0],
                              monitor=MONITORS[problem])
    valid_scores, valid_logits = scores(model, "valid")
    output = settings.output
    _write_predictions(f"{output}/valid_predictions.csv", splits["valid"], valid_logits, problem,
                       names)
    test_scores = None
    if "test" in data:
        test_scores, test_logits = scores(model, "test")
        _write_predictions(f"{output}/test_predictions.csv", splits["test"], test_logits, problem,
                           names)
    extra = {"data": how, "problem": problem, "labels": names, "valid": valid_scores,
             "sizes": {name: len(splits[name]) for name in data}}
    return common.finish(model, settings, report, test_metrics=test_scores, extra=extra,
                         preprocessor={"pair": bool(args.pair), "text_column": args.text_column,
                                       "pair_column": args.text_pair_column if args.pair
                                       else None})


@common.guard
def run_choice(args):
    """Run ``kbl finetune choice`` from parsed arguments; returns the metrics dict."""
    from keras_bert_lab.pipelines.batches import batches

    settings = common.settings_from_args(args)
    args.pooling = common.preset_choice(args, "pooling")
    reader = lambda path: labelled.read_multiple_choice(  # noqa: E731
        path, args.context_column, args.choices_column, args.label_column, encoding=args.encoding)
    splits, how = common.load_splits(args, reader, None)
    counts = {part.num_choices for part in splits.values() if part is not None}
    if len(counts) > 1:
        raise DataError(f"The files have different numbers of choices ({sorted(counts)}); use "
                        "one number throughout.")
    common.start(settings)
    if settings.limit:
        splits["train"] = splits["train"].subset(range(min(settings.limit, len(splits["train"]))))
    model, features = common.adapter(settings, args, "choice", "choice")(settings, args, splits)
    data = {name: (features[name], np.asarray(splits[name].labels, "int32")) for name in features}
    print(f"choice: {how}; " + ", ".join(f"{name} {len(splits[name])}" for name in data)
          + f"; {counts.pop()} choices")
    train = batches(*data["train"], batch_size=settings.batch_size, shuffle=True,
                    seed=settings.seed)

    def scores(model, part):
        features, y = data[part]
        logits = model.predict_packed(features, batch_size=settings.batch_size)
        return {"accuracy": accuracy(y, logits.argmax(axis=-1))}

    report = common.fine_tune(model, train, settings, lambda m: scores(m, "valid"),
                              monitor="accuracy")
    test_scores = scores(model, "test") if "test" in data else None
    extra = {"data": how, "valid": scores(model, "valid"),
             "sizes": {name: len(splits[name]) for name in data}}
    return common.finish(model, settings, report, test_metrics=test_scores, extra=extra)


def _write_predictions(path, part, logits, problem, names):
    decoded = decode_logits(logits, problem, names)
    predicted = decoded["scores"].tolist() if problem == "regression" else decoded["labels"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["line", "text"] + (["text_pair"] if part.texts_pair else [])
                        + ["label", "predicted"])
        for i, text in enumerate(part.texts):
            pair = [part.texts_pair[i]] if part.texts_pair else []
            label, guess = part.labels[i], predicted[i]
            writer.writerow([part.lines[i] if part.lines else i, text, *pair,
                             json.dumps(label) if isinstance(label, list) else label,
                             json.dumps(guess) if isinstance(guess, list) else guess])
