"""The BERT paper's feature-based NER table (Devlin et al. 2019, §5.4, Table 7) as a study.

Frozen per-word layer stacks (a :class:`~keras_bert_lab.features.FeatureCache`) feed one small
BiLSTM tagger (:class:`~keras_bert_lab.tasks.feature_tagger.FeatureTagger`) per way of combining
the layers — one row of the paper's table. :func:`train_row` trains one row for one seed and
reports validation entity F1 (seqeval's default scoring, and strict IOB2) after the last epoch
and at the best epoch; :func:`markdown_table` writes the rows as the table. ``kbl features
table`` is this study on the command line; tutorial stations 6 and 10 call it directly.

Shapes: ``W`` words, ``K`` layers, ``H`` width.
"""

import dataclasses
import time

import keras
import numpy as np

from keras_bert_lab.errors import DataError
from keras_bert_lab.metrics.entities import entity_scores
from keras_bert_lab.tasks.feature_tagger import FeatureTagger, combination


@dataclasses.dataclass
class TaggerSettings:
    """How one row's tagger trains (``kbl features table``'s flags of the same names)."""

    epochs: int = 8
    batch_size: int = 32
    learning_rate: float = 1e-3
    lstm_units: int = 256       # per direction (the paper: 768)
    lstm_layers: int = 2
    dropout: float = 0.1
def predict_tags(tagger, batches, labels):
    """One predicted tag per word for every sentence of ``batches`` (in order, not shuffled)."""
    out = []
    for b in range(len(batches)):
        inputs = batches[b][0]
        logits = keras.ops.convert_to_numpy(tagger.predict_on_batch(inputs))
        for row, mask in zip(logits.argmax(-1), inputs["word_mask"]):
            out.append([labels[i] for i in row[:int(mask.sum())]])
    return out


def train_row(caches, splits, labels, name, seed, args):
    """Train one tagger for combination ``name`` (e.g. ``"concat_last_four"``) with ``seed`` on
    ``caches["train"]``, scored on ``caches["valid"]`` against ``splits["valid"]``'s tags;
    ``args``: a :class:`TaggerSettings` (or anything with its attributes). Returns
    ``{"f1_last", "f1_best", "best_epoch", "curve", ...}``."""
    from keras_bert_lab.features import TaggerBatches
    layers, mode = combination(name, caches["train"].num_layers)
    keras.utils.set_random_seed(seed)
    index = {label: i for i, label in enumerate(labels)}
    train_labels = [np.array([index[t] for t in s.tags], "int32") for s in splits["train"]]
    train = TaggerBatches(caches["train"], train_labels, layers, args.batch_size, shuffle=True,
                          seed=seed)
    valid = TaggerBatches(caches["valid"], None, layers, args.batch_size)
    tagger = FeatureTagger(len(layers), caches["train"].dim, len(labels), mode=mode,
                           lstm_units=args.lstm_units, lstm_layers=args.lstm_layers,
                           dropout=args.dropout)
    tagger.compile(optimizer=keras.optimizers.Adam(args.learning_rate, clipnorm=5.0))
    gold = [s.tags for s in splits["valid"]]
    curve, start = [], time.time()
    for _ in range(args.epochs):
        tagger.fit(train, epochs=1, verbose=0)
        predicted = predict_tags(tagger, valid, labels)
        scores = entity_scores(gold, predicted)
        try:
            strict = float(entity_scores(gold, predicted, mode="strict")["f1"])
        except DataError:  # tags outside IOB2: conlleval scoring only
            strict = None
        curve.append({"f1": float(scores["f1"]), "strict_f1": strict})
    best = max(range(len(curve)), key=lambda e: curve[e]["f1"])
    row = {"combination": name, "layers": layers, "mode": mode, "seed": seed,
           "f1_last": curve[-1]["f1"], "strict_f1_last": curve[-1]["strict_f1"],
           "f1_best": curve[best]["f1"], "best_epoch": best + 1, "curve": curve,
           "seconds": round(time.time() - start, 1)}
    if mode == "mix":
        row["mix_weights"] = [round(float(w), 4) for w in keras.ops.convert_to_numpy(
            tagger.scalar_mix.layer_weights())]
    return row


def markdown_table(rows, names, seeds, header):
    """The rows of :func:`train_row` as a Markdown table: mean ± std over seeds per row."""
    lines = [header, "", "| combination | layers | valid F1, last epoch | best epoch F1 | "
             "strict F1, last |", "|---|---|---|---|---|"]
    for name in names:
        mine = [r for r in rows if r["combination"] == name]

        def cell(key):
            values = [r[key] for r in mine if r[key] is not None]
            if not values:
                return "–"
            mean = 100 * float(np.mean(values))
            return f"{mean:.1f}" if len(values) == 1 else \
                f"{mean:.1f} ± {100 * float(np.std(values)):.1f} (n={len(values)})"
        lines.append(f"| {name} | {mine[0]['layers']} | {cell('f1_last')} | {cell('f1_best')} | "
                     f"{cell('strict_f1_last')} |")
    lines.append("")
    lines.append(f"seeds {seeds}; F1 in %, seqeval default (conlleval) unless 'strict'.")
    return "\n".join(lines) + "\n"
