"""``kbl finetune classify | pair | choice``: sentence, sentence-pair and multiple-choice tasks.

The BERT paper's GLUE and SWAG recipes (Devlin et al. 2019, §4.1 and §4.4) from a preset:

- ``classify``: one text → a class (SST-2 style; ``--dataset rotten_tomatoes``), or several
  classes with ``--multi-label``;
- ``pair``: two texts → a class (MNLI, MRPC style) or, with ``--regression``, a similarity score
  (STS-B; ``--dataset stsb``);
- ``choice``: a context and C candidate continuations → the right one (SWAG style, JSONL).

Files are CSV, TSV or JSONL with named columns (``--text-column`` …). Scores: accuracy and
macro-F1 for classes (monitor: accuracy; macro-F1 for multi-label), Pearson and Spearman
correlation for scores (monitor: Pearson), accuracy for multiple choice — the GLUE metrics, in
NumPy. The best epoch on the validation set is kept; the test set is scored once with it.

Example (what the functions compute):

>>> import numpy as np
>>> round(pearson([1, 2, 3, 4], [1, 3, 2, 4]), 4), spearman([1, 2, 3, 4], [10, 30, 20, 40])
(0.8, 0.8)
>>> accuracy([0, 1, 1, 2], [0, 1, 0, 2]), round(macro_f1([0, 1, 1, 2], [0, 1, 0, 2]), 4)
(0.75, 0.7778)
"""

import csv
import json

import numpy as np

from keras_bert_lab.errors import DataError
from keras_bert_lab.finetune import common


# ---- metrics (NumPy) -------------------------------------------------------------------------
def accuracy(y_true, y_pred):
    """Share of exact matches (rows must match entirely for 2-D multi-label arrays)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim > 1:
        return float(np.mean(np.all(y_true == y_pred, axis=-1)))
    return float(np.mean(y_true == y_pred)) if len(y_true) else 0.0


def macro_f1(y_true, y_pred, labels=None):
    """Unweighted mean of per-class F1, over ``labels`` (default: classes in either array —
    scikit-learn's ``f1_score(average="macro")``; a class with no true and no predicted example
    has F1 0 there too). 2-D multi-hot arrays: mean of each column's binary F1."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim > 1:
        return float(np.mean([_f1(y_true[:, k] == 1, y_pred[:, k] == 1)
                              for k in range(y_true.shape[1])]))
    if labels is None:
        labels = np.union1d(y_true, y_pred)
    if len(labels) == 0:
        return 0.0
    return float(np.mean([_f1(y_true == k, y_pred == k) for k in labels]))


def _f1(truth, predicted):
    tp = np.sum(truth & predicted)
    denominator = np.sum(truth) + np.sum(predicted)
    return 2.0 * tp / denominator if denominator else 0.0


def pearson(x, y):
    """Pearson's correlation coefficient (``scipy.stats.pearsonr``'s r); 0 for a constant input."""
    x, y = np.asarray(x, "float64"), np.asarray(y, "float64")
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.sum(x * x) * np.sum(y * y))
    return float(np.sum(x * y) / denominator) if denominator > 0 else 0.0


def rank(x):
    """Ranks from 1, ties sharing their mean rank (``scipy.stats.rankdata``)."""
    x = np.asarray(x, "float64")
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), "float64")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], len(x)]
    for start, end in zip(starts, ends):
        ranks[order[start:end]] = (start + end + 1) / 2.0   # mean of ranks start+1 … end
    return ranks


def spearman(x, y):
    """Spearman's rank correlation: Pearson's r of the (tie-averaged) ranks."""
    return pearson(rank(x), rank(y))


def classification_scores(logits, y_true, problem):
    """The validation/test scores of a classifier's logits (see the module docstring)."""
    logits = np.asarray(logits)
    if problem == "regression":
        predicted = logits[:, 0]
        return {"pearson": pearson(predicted, y_true), "spearman": spearman(predicted, y_true),
                "mse": float(np.mean((predicted - np.asarray(y_true)) ** 2))}
    if problem == "multi_label":
        predicted = (logits >= 0).astype("float32")
        return {"accuracy": accuracy(y_true, predicted), "macro_f1": macro_f1(y_true, predicted)}
    predicted = logits.argmax(axis=-1)
    return {"accuracy": accuracy(y_true, predicted), "macro_f1": macro_f1(y_true, predicted)}


MONITORS = {"single_label": "accuracy", "multi_label": "macro_f1", "regression": "pearson"}


# ---- command line ----------------------------------------------------------------------------
def register(subparsers):
    """Add ``classify``, ``pair`` and ``choice`` to ``kbl finetune``."""
    parsers = []
    for name, help_text, datasets in (
            ("classify", "single-sentence classification (CSV/TSV/JSONL or rotten_tomatoes)",
             ["rotten_tomatoes"]),
            ("pair", "sentence-pair classification or --regression (CSV/TSV/JSONL or stsb)",
             ["stsb"])):
        parser = subparsers.add_parser(name, help=help_text, description=help_text)
        _add_file_arguments(parser, datasets)
        parser.add_argument("--text-column", default="text" if name == "classify" else "sentence1",
                            help="column of the (first) text")
        if name == "pair":
            parser.add_argument("--text-pair-column", default="sentence2",
                                help="column of the second text")
            parser.add_argument("--regression", action="store_true",
                                help="labels are scores (STS-B style): MSE loss, Pearson and "
                                     "Spearman (implied by --dataset stsb)")
        parser.add_argument("--label-column", default="label", help="column of the label")
        parser.add_argument("--labels", default=None,
                            help="comma-separated class names in id order (default: the sorted "
                                 "labels of the training file)")
        parser.add_argument("--multi-label", action="store_true",
                            help="each example has a list of classes (JSONL arrays, or names "
                                 "separated by '|'): sigmoid outputs, binary cross-entropy")
        parser.add_argument("--dropout", type=float, default=None,
                            help="dropout before the head (default: the backbone's)")
        parser.add_argument("--pooling", choices=["cls", "mean"], default="cls",
                            help="head input: the pooled [CLS] state (BERT) or the mean of the "
                                 "last layer (models trained for mean pooling, e.g. MiniLM)")
        common.add_common_arguments(parser, output=f"out/finetune-{name}")
        parser.set_defaults(run=run_classification, pair=name == "pair")
        parsers.append(parser)
    parser = subparsers.add_parser(
        "choice", help="multiple choice (JSONL: context, choices, label)",
        description="Fine-tune a multiple-choice head (SWAG style): each context is paired with "
                    "each of its choices; softmax over the choices. Monitors accuracy.")
    _add_file_arguments(parser, [], formats=False)
    parser.add_argument("--context-column", default="context")
    parser.add_argument("--choices-column", default="choices")
    parser.add_argument("--label-column", default="label",
                        help="the right choice's index (or its text)")
    parser.add_argument("--dropout", type=float, default=None)
    common.add_common_arguments(parser, output="out/finetune-choice", batch_size=16)
    parser.set_defaults(run=run_choice)
    parsers.append(parser)
    return parsers


def _add_file_arguments(parser, datasets, formats=True):
    if datasets:
        parser.add_argument("--dataset", choices=datasets,
                            help="a registry data set instead of --train/--valid/--test")
    parser.add_argument("--train", help="training file (.csv, .tsv or .jsonl)")
    parser.add_argument("--valid", help="validation file; default: split off --train")
    parser.add_argument("--test", help="test file, scored once with the best epoch")
    parser.add_argument("--valid-fraction", type=float, default=0.1,
                        help="share of --train held out for validation when --valid is absent")
    if formats:
        parser.add_argument("--format", choices=["csv", "tsv", "jsonl"], default=None,
                            help="file format (default: from the extension)")
    parser.add_argument("--encoding", default="utf-8", help="text encoding of the files")


def load_splits(args, reader):
    """``{"train", "valid", "test"}`` (test may be ``None``) and a sentence saying where from."""
    from keras_bert_lab.text import labelled_data

    dataset = getattr(args, "dataset", None)
    if bool(dataset) == bool(args.train):
        raise DataError("Pass either --dataset NAME or --train FILE (with --valid/--test), "
                        "not both or neither.")
    if dataset:
        splits = labelled_data.load_dataset(dataset, seed=args.seed)
        how = f"registry data set {dataset}"
    else:
        splits = {"train": reader(args.train), "valid": reader(args.valid) if args.valid else None,
                  "test": reader(args.test) if args.test else None}
        how = f"train {args.train}"
        if splits["valid"] is None:
            if not 0 < args.valid_fraction < 1:
                raise DataError(f"--valid-fraction={args.valid_fraction}: without --valid a share "
                                "in (0, 1) of --train is held out for validation.")
            train, valid = labelled_data.split_indices(
                len(splits["train"]), args.seed, (1 - args.valid_fraction, args.valid_fraction))
            if not train or not valid:
                raise DataError(f"{args.train} has {len(splits['train'])} examples: too few to "
                                "hold out a validation share; pass --valid FILE.")
            splits["valid"] = splits["train"].subset(valid)
            splits["train"] = splits["train"].subset(train)
            how += f" (validation: {args.valid_fraction:.0%} held out by seed {args.seed})"
        else:
            how += f", valid {args.valid}"
        if args.test:
            how += f", test {args.test}"
    return splits, how


def _multi(labels):
    return [x if isinstance(x, list) else [p for p in str(x).split("|") if p.strip()]
            for x in labels]


def run_classification(args):
    """Run ``kbl finetune classify`` / ``pair`` from parsed arguments; returns the metrics dict."""
    from keras_bert_lab.tasks.classifier import BertClassifier
    from keras_bert_lab.text import labelled_data

    settings = common.settings_from_args(args)
    regression = bool(getattr(args, "regression", False) or getattr(args, "dataset", None) == "stsb")
    if regression and args.multi_label:
        raise DataError("--regression and --multi-label exclude each other.")
    problem = "regression" if regression else "multi_label" if args.multi_label else "single_label"
    pair_column = args.text_pair_column if args.pair else None
    reader = lambda path: labelled_data.read_labelled(  # noqa: E731
        path, args.text_column, pair_column, args.label_column, format=args.format,
        encoding=args.encoding, regression=regression)
    splits, how = load_splits(args, reader)
    output = common.prepare_output(settings)
    if settings.limit:
        splits["train"] = splits["train"].subset(range(min(settings.limit, len(splits["train"]))))

    vocab, names = None, None
    if not regression:
        if args.multi_label:
            for part in splits.values():
                if part is not None:
                    part.labels = _multi(part.labels)
        if args.labels:
            vocab = labelled_data.LabelVocabulary(args.labels.split(","))
        elif getattr(args, "dataset", None) == "rotten_tomatoes":
            vocab = labelled_data.LabelVocabulary(labelled_data.RT_LABELS)
        else:
            vocab = labelled_data.LabelVocabulary.fit(splits["train"].labels)
        names = vocab.names
        if problem == "single_label" and len(names) < 2:
            raise DataError(f"{splits['train'].source} has only the label {names}; a classifier "
                            "needs at least two classes (pass --labels to name them all).")

    def targets(part):
        if regression:
            return np.asarray(part.labels, "float32")
        encode = vocab.encode_multi_hot if args.multi_label else vocab.encode
        return encode(part.labels, source=part.source, lines=part.lines)

    model = BertClassifier.from_preset(settings.preset, problem=problem, labels=names,
                                       num_classes=len(names) if names else 1,
                                       dropout=args.dropout, pooling=args.pooling,
                                       sequence_length=settings.sequence_length)
    tokenizer = model.tokenizer
    data = {name: (labelled_data.pack_texts(tokenizer, part.texts, part.texts_pair,
                                            settings.sequence_length), targets(part))
            for name, part in splits.items() if part is not None}
    print(f"{'pair' if args.pair else 'classify'} ({problem}): {how}; "
          + ", ".join(f"{name} {len(splits[name])}" for name in data)
          + (f"; classes {names}" if names else ""))
    train = common.batches(*data["train"], batch_size=settings.batch_size, shuffle=True,
                           seed=settings.seed)

    def scores(model, part):
        features, y = data[part]
        logits = model.predict_packed(features, batch_size=2 * settings.batch_size)
        return classification_scores(logits, y, problem), logits

    report = common.finetune(model, train, settings, lambda m: scores(m, "valid")[0],
                             monitor=MONITORS[problem])
    valid_scores, valid_logits = scores(model, "valid")
    _write_predictions(output / "valid_predictions.csv", splits["valid"], valid_logits, problem,
                       names)
    test_scores = None
    if "test" in data:
        test_scores, test_logits = scores(model, "test")
        _write_predictions(output / "test_predictions.csv", splits["test"], test_logits, problem,
                           names)
    extra = {"data": how, "problem": problem, "labels": names, "valid": valid_scores,
             "sizes": {name: len(splits[name]) for name in data}}
    return common.finish(model, settings, report, test_metrics=test_scores, extra=extra)


def run_choice(args):
    """Run ``kbl finetune choice`` from parsed arguments; returns the metrics dict."""
    from keras_bert_lab.tasks.multiple_choice import BertMultipleChoice
    from keras_bert_lab.text import labelled_data

    settings = common.settings_from_args(args)
    reader = lambda path: labelled_data.read_multiple_choice(  # noqa: E731
        path, args.context_column, args.choices_column, args.label_column, encoding=args.encoding)
    splits, how = load_splits(args, reader)
    counts = {part.num_choices for part in splits.values() if part is not None}
    if len(counts) > 1:
        raise DataError(f"The files have different numbers of choices ({sorted(counts)}); use "
                        "one number throughout.")
    output = common.prepare_output(settings)
    if settings.limit:
        splits["train"] = splits["train"].subset(range(min(settings.limit, len(splits["train"]))))
    model = BertMultipleChoice.from_preset(settings.preset, dropout=args.dropout,
                                           sequence_length=settings.sequence_length)
    tokenizer = model.tokenizer
    data = {name: (labelled_data.pack_choices(tokenizer, part.contexts, part.choices,
                                              settings.sequence_length),
                   np.asarray(part.labels, "int32"))
            for name, part in splits.items() if part is not None}
    print(f"choice: {how}; " + ", ".join(f"{name} {len(splits[name])}" for name in data)
          + f"; {counts.pop()} choices")
    train = common.batches(*data["train"], batch_size=settings.batch_size, shuffle=True,
                           seed=settings.seed)

    def scores(model, part):
        features, y = data[part]
        logits = model.predict_packed(features, batch_size=settings.batch_size)
        return {"accuracy": accuracy(y, logits.argmax(axis=-1))}

    report = common.finetune(model, train, settings, lambda m: scores(m, "valid"),
                             monitor="accuracy")
    test_scores = scores(model, "test") if "test" in data else None
    extra = {"data": how, "valid": scores(model, "valid"),
             "sizes": {name: len(splits[name]) for name in data}}
    return common.finish(model, settings, report, test_metrics=test_scores, extra=extra)


def _write_predictions(path, part, logits, problem, names):
    from keras_bert_lab.tasks.classifier import decode_logits

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
