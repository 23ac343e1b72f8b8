"""``kbl predict``: a fine-tuned classifier preset over a file of texts → labels and scores.

The preset is the ``preset/`` folder of ``kbl finetune classify`` (one text → a class, several
classes with ``--multi-label``) or ``kbl finetune pair`` (two texts → a class, or a score with
``--regression``): a :class:`~keras_bert_lab.models.bert.classifier.BertClassifier` whose preset records
its class names, its sequence length and whether it reads sentence pairs
(``preprocessor.pair``). The texts come from a plain text file (one per line) or a CSV/TSV/JSONL
table (:func:`~keras_bert_lab.commands.batch_text.read_inputs`) and go through the preset's own
tokenizer in length-sorted batches (:func:`~keras_bert_lab.commands.batch_text.run_batches`).
Each text gets its label and the probability of every class (softmax; sigmoid for multi-label,
where the label lists the classes with p ≥ 0.5) or, for regression, its score — the decoding of
:func:`~keras_bert_lab.models.bert.classifier.decode_logits`, as ``BertClassifier.predict_labels``.

Example::

    kbl finetune classify --dataset rotten_tomatoes --output out/sentiment
    kbl predict out/sentiment/preset --input reviews.txt --output predictions.csv
    kbl predict out/sts/preset --input pairs.tsv --text-column s1 --pair-column s2 \\
        --output scores.jsonl
"""

import csv
import json
import sys
import time

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.export.saved_model import classifiers, describe_task
from keras_bert_lab.commands import batch_text

SUFFIXES = (".csv", ".tsv", ".jsonl")
HOW = ("kbl predict runs fine-tuned {classes} presets (sentence or sentence-pair "
       "classification or regression): the preset/ folder of `kbl finetune classify` or "
       "`kbl finetune pair`")
# What else a preset may be used for, by the kind of task it holds (None: no task head).
ELSEWHERE = {None: " For sentence vectors from it, use `kbl embed`.",
             "fill_mask": " For its masked-LM head, use `kbl fill-mask`.",
             "embed": " For its vectors, use `kbl embed`."}
PREVIEW = 10


def register(subparsers):
    """Add ``kbl predict`` to the top-level sub-commands."""
    p = subparsers.add_parser(
        "predict", help="run a fine-tuned classifier preset over a file: labels and scores",
        description="Predict a label and per-class scores (or a regression score) for every text "
                    "of a plain text file (one text per line) or a CSV/TSV/JSONL table, with a "
                    "preset written by `kbl finetune classify` or `kbl finetune pair`.")
    p.add_argument("preset", help="a fine-tuned classifier preset (directory or name)")
    p.add_argument("--input", required=True,
                   help="texts: .txt (one per line), .csv, .tsv or .jsonl (named columns)")
    p.add_argument("--output", default=None,
                   help="write every prediction to this .csv, .tsv or .jsonl file (default: "
                        f"print the first {PREVIEW})")
    p.add_argument("--text-column", default=None,
                   help="table column of the (first) text (default: text, or sentence1 for a "
                        "sentence-pair model)")
    p.add_argument("--pair-column", default=None,
                   help="table column of the second text, for a sentence-pair model (default "
                        "sentence2)")
    batch_text.add_reading_arguments(p)
    p.add_argument("--sequence-length", type=int, default=None,
                   help="tokens per text (default: the length the preset was fine-tuned with)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


def check_classifier_preset(preset):
    """The checked preset of a ``BertClassifier``; ``ConfigError`` naming what else it holds."""
    checked = batch_text.check_preset_for(preset, "predict", "kbl predict")
    task = (checked.task or {}).get("class_name")
    if task == checked.family.task("classify").__name__:
        return checked
    what = (f"a {checked.backbone_class} without a task head (a pretrained backbone, not a "
            "fine-tuned classifier)" if task is None else f"{describe_task(checked)} ({task})")
    kinds = [k for k, ref in checked.family.tasks.items() if ref.endswith(f":{task}")] \
        if task else [None]
    hint = next((ELSEWHERE[k] for k in kinds if k in ELSEWHERE), "")
    how = HOW.format(classes=classifiers("predict"))
    raise ConfigError(f"Preset {preset} holds {what}; {how}.{hint}")


def columns(preset, args):
    """``(pair, text_column, pair_column)``: whether the model reads pairs (as its preset
    records) and the columns to read, checked against each other."""
    recorded = preset.preprocessor or {}
    pair = recorded.get("pair")
    if pair is None:  # a preset saved from Python without the record: the flags decide
        pair = args.pair_column is not None
        print(f"note: preset {args.preset} does not record whether it reads sentence pairs; "
              f"reading {'pairs' if pair else 'single texts (pass --pair-column for a pair model)'}"
              ".", file=sys.stderr)
    elif not pair and args.pair_column is not None:
        raise ConfigError(f"Preset {args.preset} reads one text per example (fine-tuned by `kbl "
                          f"finetune classify`), not sentence pairs; drop --pair-column "
                          f"{args.pair_column}.")
    text_column = args.text_column or recorded.get("text_column") or (
        "sentence1" if pair else "text")
    pair_column = (args.pair_column or recorded.get("pair_column") or "sentence2") if pair \
        else None
    if pair and batch_text.input_format(args.input, args.format) == "text":
        raise DataError(f"Preset {args.preset} reads sentence pairs (fine-tuned by `kbl finetune "
                        f"pair`), but {args.input} is plain text with one text per line; give a "
                        "CSV/TSV/JSONL table with both texts (--text-column, default sentence1; "
                        "--pair-column, default sentence2).")
    return bool(pair), text_column, pair_column


def run(args):
    """Run ``kbl predict`` from parsed arguments; returns a dict of the predictions (``ids``,
    ``logits``, and ``labels``/``probabilities`` or ``scores`` as ``decode_logits`` gives)."""
    preset = check_classifier_preset(args.preset)
    pair, text_column, pair_column = columns(preset, args)
    length = batch_text.sequence_length(preset, args.sequence_length, pair)
    output = batch_text.check_output(args.output, args.overwrite, SUFFIXES) if args.output \
        else None
    if args.batch_size < 1:
        raise ConfigError(f"--batch-size {args.batch_size}: give a positive number.")
    inputs = batch_text.read_inputs(args.input, text_column, pair_column, args.id_column,
                                    args.format, args.encoding)

    from keras_bert_lab.tasks.heads import decode_logits

    family = preset.family
    model = family.task("classify").from_preset(preset.directory)
    preprocessor = family.preprocessor("classify").from_preset(preset.directory, length)
    started = time.perf_counter()
    logits, seconds = batch_text.run_batches(
        lambda features: model.predict_packed(features, batch_size=len(features["token_ids"])),
        preprocessor, inputs.texts, inputs.pairs, args.batch_size, args.quiet, "predict")
    names = list(model.labels) if model.labels else [str(i) for i in range(model.num_classes)]
    result = {"ids": inputs.ids, "logits": logits,
              **decode_logits(logits, model.problem, model.labels)}
    rows = list(prediction_rows(inputs, result, model.problem, names))
    if output is not None:
        write_predictions(output, rows)
    print(summary(args.preset, model.problem, names, result, len(inputs)))
    if output is None:
        preview(rows)
    print(batch_text.throughput(len(inputs), seconds, started))
    if output is not None:
        print(f"wrote {output}")
    return result


def prediction_rows(inputs, result, problem, names):
    """One dict per text: ``id``, ``text`` (``text_pair``), ``label``, ``score`` (of the label;
    the value for regression) and ``scores`` (``{class: probability}``)."""
    for i, text in enumerate(inputs.texts):
        row = {"id": inputs.ids[i], "text": text}
        if inputs.pairs is not None:
            row["text_pair"] = inputs.pairs[i]
        if problem == "regression":
            row["score"] = float(result["scores"][i])
        else:
            probabilities = result["probabilities"][i]
            best = int(probabilities.argmax())
            row["label"] = (names[best] if problem == "single_label" else
                            [names[j] for j in result["ids"][i]])
            row["score"] = float(probabilities[best])
            row["scores"] = {name: float(p) for name, p in zip(names, probabilities)}
        yield row


def write_predictions(path, rows):
    """Write the rows of :func:`prediction_rows` as JSONL, or CSV/TSV with one ``score_<class>``
    column per class (a multi-label ``label`` joined by ``|``)."""
    with batch_text.atomic_file(path) as f:
        if path.suffix.lower() == ".jsonl":
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            return
        writer = None
        for row in rows:
            flat = {k: v for k, v in row.items() if k != "scores"}
            if isinstance(flat.get("label"), list):
                flat["label"] = "|".join(flat["label"])
            flat.update({f"score_{name}": p for name, p in row.get("scores", {}).items()})
            if writer is None:
                writer = csv.DictWriter(f, fieldnames=list(flat),
                                        delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
                writer.writeheader()
            writer.writerow(flat)


def summary(preset, problem, names, result, count):
    """One line: how many texts, the problem, and the spread of the predictions."""
    if problem == "regression":
        scores = result["scores"]
        return (f"predicted {count:,} texts with {preset} (regression): scores mean "
                f"{scores.mean():.3f}, min {scores.min():.3f}, max {scores.max():.3f}")
    if problem == "single_label":
        counts = {name: 0 for name in names}
        for label in result["labels"]:
            counts[str(label)] += 1
        spread = ", ".join(f"{n} {c:,} ({c / count:.1%})" for n, c in counts.items())
        return f"predicted {count:,} texts with {preset} ({problem}): {spread}"
    active = {name: sum(name in labels for labels in result["labels"]) for name in names}
    spread = ", ".join(f"{n} {c:,}" for n, c in active.items())
    return f"predicted {count:,} texts with {preset} (multi_label, texts per class): {spread}"


def preview(rows):
    """Print the first predictions, one per line: id, label, score, text."""
    for i, row in enumerate(rows[:PREVIEW]):
        label = row.get("label", "")
        label = "|".join(label) if isinstance(label, list) else label
        text = row["text"] + (f" ||| {row['text_pair']}" if "text_pair" in row else "")
        text = text if len(text) <= 70 else text[:67] + "..."
        print(f"  {row['id']}\t{label}\t{row['score']:.4f}\t{text}")
    if len(rows) > PREVIEW:
        print(f"  … {len(rows) - PREVIEW:,} more (--output FILE.csv or .jsonl writes them all)")
