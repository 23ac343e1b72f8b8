"""``kbl finetune ner``: named-entity recognition (token classification) on CoNLL column files.

BERT's NER recipe (Devlin et al. 2019, §5.3; HF ``run_ner.py``): each word's tag on its first
WordPiece, a linear layer over the last layer
(:class:`~keras_bert_lab.models.bert.token_classifier.BertTokenClassifier`), cross-entropy over the
labelled pieces (a GPT preset: ``[start] pieces`` rows with each word's tag on its last piece,
:class:`~keras_bert_lab.models.gpt.token_classifier.GPTTokenClassifier`), and entity-level F1 on
words — seqeval's default (conlleval) scoring, with its strict IOB2 figure beside it
(:mod:`keras_bert_lab.metrics.entities`). Validation F1 picks the best epoch. Besides
``metrics.json`` (per-type precision/recall/F1 included) the run writes ``per_type.csv`` and
``valid_predictions.conll`` (``word gold predicted``, conlleval's input).

Data: ``--train``/``--valid`` (and optional ``--test``) CoNLL files, or ``--dataset wnut16`` — the
registry copy of WNUT-16 holds one file, so its sentences are shuffled with ``--seed`` and split
into train / validation (``--valid-fraction``, default 20 %) and, with ``--test-fraction``, a test
part held out from both. A ``--train`` without ``--valid`` is split the same way.

Example (WNUT-16 from MiniLM, as in benchmarks/results/quality.md)::

    kbl finetune ner --dataset wnut16 --sequence-length 64 --epochs 8 --learning-rate 1e-4 \\
        --output out/ner-wnut16
"""

import csv

# The text side (TensorFlow) is imported inside the run functions, so that `kbl` starts, and
# `kbl models` / `kbl preset …` run, without TensorFlow on the JAX and PyTorch backends.
from keras_bert_lab.data import conll, registry
from keras_bert_lab.metrics.entities import MODES, tagger_scores
from keras_bert_lab.commands.finetune import common


def register(subparsers):
    """Add the ``ner`` subcommand to ``kbl finetune``."""
    parser = subparsers.add_parser(
        "ner", help="named-entity recognition / token classification (CoNLL columns)",
        description="Fine-tune a token-classification head on CoNLL column files (or the "
                    "registry's WNUT-16); monitors entity-level F1 on the validation set.")
    common.add_data_arguments(parser, registry.names(kind="tagging"), test_fraction=True,
                              default_valid_fraction=0.2)
    parser.add_argument("--token-column", type=int, default=0, help="column of the words")
    parser.add_argument("--tag-column", type=int, default=-1, help="column of the tags")
    parser.add_argument("--delimiter", default=None,
                        help="column separator (default: any whitespace, or the registry set's; "
                             "use '\\t' when words contain spaces)")
    parser.add_argument("--encoding", default="utf-8",
                        help="text encoding of --train/--valid/--test (e.g. latin-1)")
    parser.add_argument("--label-all-pieces", action="store_true",
                        help="train on every piece of a word (B-X word -> I-X pieces), not just "
                             "the first; predictions still come from first pieces")
    parser.add_argument("--scheme-mode", choices=MODES, default="conlleval",
                        help="entity scoring that picks the best epoch: seqeval default "
                             "(conlleval) or strict IOB2")
    common.add_common_arguments(parser, output="out/finetune-ner", epochs=5, learning_rate=1e-4,
                                sequence_length=128, patience=3)
    parser.set_defaults(run=run)
    return parser


def load_splits(args):
    """``{"train", "valid", "test"}`` lists of :class:`~keras_bert_lab.data.conll.TaggedSentence`
    (``test`` may be ``None``) and a sentence describing where they came from.

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> _ = register(parser.add_subparsers())
    >>> splits, how = load_splits(parser.parse_args(["ner", "--dataset", "wnut16"]))
    >>> [len(splits[k] or []) for k in ("train", "valid", "test")]
    [1915, 479, 0]
    >>> how
    "registry data set 'wnut16' (20% validation held out of train with seed 0)"
    """
    delimiter = args.delimiter.encode().decode("unicode_escape") if args.delimiter else None
    columns = dict(token_column=args.token_column, tag_column=args.tag_column)

    def read_dataset(name):
        options = {**registry.source(name).options, **({"delimiter": delimiter} if delimiter
                                                         else {})}
        return conll.read_conll(registry.locate(name), **columns, **options)

    return common.load_splits(
        args, lambda path: conll.read_conll(path, delimiter=delimiter, **columns,
                                            encoding=args.encoding),
        read_dataset)


def _scalars(scores):
    return {k: float(v) for k, v in scores.items() if isinstance(v, (int, float))}


def write_predictions(path, sentences, predicted):
    """``word gold predicted`` per line, blank line between sentences (conlleval's input)."""
    with open(path, "w", encoding="utf-8") as f:
        for sentence, tags in zip(sentences, predicted):
            for word, gold, tag in zip(sentence.words, sentence.tags, tags):
                f.write(f"{word} {gold} {tag}\n")
            f.write("\n")


def write_per_type(path, tables):
    """``per_type.csv``: split, type, precision, recall, f1, support."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["split", "type", "precision", "recall", "f1", "support"])
        for split, per_type in tables.items():
            for kind, row in per_type.items():
                writer.writerow([split, kind, f"{row['precision']:.4f}", f"{row['recall']:.4f}",
                                 f"{row['f1']:.4f}", row["support"]])


@common.guard
def run(args):
    """Run ``kbl finetune ner`` from parsed arguments; returns the metrics dict."""
    from keras_bert_lab.pipelines.batches import batches

    settings = common.settings_from_args(args)
    splits, how = load_splits(args)
    labels = conll.label_list(splits["train"])
    for name in ("valid", "test"):
        conll.check_labels(splits[name] or [], labels, where=f"The {name} split")
    output = common.start(settings)
    if settings.limit:
        splits["train"] = splits["train"][:settings.limit]
    model, preprocessor, train_preprocessor = common.adapter(settings, args, "ner", "ner")(
        settings, args, labels)
    aligned = {name: (train_preprocessor if name == "train" else preprocessor)(sentences)
               for name, sentences in splits.items() if sentences}
    print(f"ner: {how}; " + ", ".join(
        f"{name} {len(splits[name])} sentences ({data.truncated_words} words cut at "
        f"{settings.sequence_length} pieces)" for name, data in aligned.items())
        + f"; {len(labels)} labels")
    train_data = aligned["train"]
    train = batches(train_data.features, train_data.labels, train_data.sample_weight,
                    batch_size=settings.batch_size, shuffle=True, seed=settings.seed)
    prefix = "" if args.scheme_mode == "conlleval" else "strict_"

    def evaluate(model):
        scores, _ = tagger_scores(model, preprocessor, splits["valid"], aligned["valid"],
                                  settings.batch_size)
        return _scalars(scores)

    report = common.fine_tune(model, train, settings, evaluate, monitor=prefix + "f1")
    valid_scores, valid_predicted = tagger_scores(model, preprocessor, splits["valid"],
                                                  aligned["valid"], settings.batch_size)
    write_predictions(output / "valid_predictions.conll", splits["valid"], valid_predicted)
    tables = {"valid": valid_scores["per_type"]}
    test_metrics = None
    if splits["test"]:
        test_scores, test_predicted = tagger_scores(model, preprocessor, splits["test"],
                                                    aligned["test"], settings.batch_size)
        write_predictions(output / "test_predictions.conll", splits["test"], test_predicted)
        tables["test"] = test_scores["per_type"]
        test_metrics = _scalars(test_scores)
    write_per_type(output / "per_type.csv", tables)
    extra = {"data": how, "labels": labels, "label_all_pieces": bool(args.label_all_pieces),
             "valid": valid_scores, "per_type": tables,
             "truncated_words": {name: data.truncated_words for name, data in aligned.items()}}
    return common.finish(model, settings, report, test_metrics=test_metrics, extra=extra)
