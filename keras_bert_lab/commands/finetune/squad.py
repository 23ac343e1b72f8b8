"""``kbl finetune squad``: extractive question answering on SQuAD-format JSON.

BERT's SQuAD recipe (Devlin et al. 2019, §4.2–4.3; google-research/bert ``run_squad.py``):
``[CLS] question [SEP] context window [SEP]`` windows of a long context, a start and an end vector
over the last layer (:class:`~keras_bert_lab.models.bert.span_qa.BertSpanQA`), the best
``start + end`` span over all windows of a question, scored by the official exact match and F1
(:mod:`keras_bert_lab.preprocessing.span_qa`, :mod:`keras_bert_lab.metrics.squad`).
``--version-2`` adds SQuAD 2.0's "no answer" ([CLS]) with a null-score threshold. A GPT preset
selects :class:`~keras_bert_lab.models.gpt.span_qa.GPTSpanQA` on ``[start] question [delim]
context [extract]`` windows (``--lm-loss-weight`` adds GPT-1's auxiliary LM loss). The validation
F1 picks the best epoch; ``predictions.json`` holds ``{id: answer}`` for ``--predict`` (or for the
validation file when none is given) and ``valid_predictions.json`` those of the validation file.

Example (the real 5-question sample, a plumbing check only)::

    kbl finetune squad --train SAMPLE --valid SAMPLE --epochs 1 --sequence-length 192 \\
        --doc-stride 64 --output out/squad-sample
"""

import json
import pathlib

# The text side (TensorFlow) is imported inside the run functions, so that `kbl` starts, and
# `kbl models` / `kbl preset …` run, without TensorFlow on the JAX and PyTorch backends.
from keras_bert_lab.data.squad import check_trainable, read_squad
from keras_bert_lab.metrics.squad import squad_scores
from keras_bert_lab.commands.finetune import common


def register(subparsers):
    """Add the ``squad`` subcommand to ``kbl finetune``.

    Example:
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="kbl finetune")
    >>> _ = register(parser.add_subparsers())
    >>> args = parser.parse_args(["squad", "--train", "t.json", "--valid", "v.json", "--version-2"])
    >>> args.doc_stride, args.max_query_length, args.version_2, args.sequence_length
    (128, 64, True, 384)
    """
    parser = subparsers.add_parser(
        "squad", help="extractive QA (SQuAD v1.1/v2.0 JSON)",
        description="Fine-tune a span-QA head on SQuAD-format JSON files; monitors validation "
                    "F1 and writes predictions.json.")
    parser.add_argument("--train", required=True, help="training file (SQuAD JSON)")
    parser.add_argument("--valid", required=True, help="validation file (SQuAD JSON)")
    parser.add_argument("--predict", help="a file to answer after training (SQuAD JSON); "
                                          "scored too when it has answers")
    parser.add_argument("--encoding", default="utf-8", help="text encoding of the files")
    parser.add_argument("--version-2", action="store_true",
                        help="SQuAD 2.0: questions may have no answer (default: from the files)")
    parser.add_argument("--doc-stride", type=int, default=128,
                        help="context tokens between the starts of consecutive windows (Google's "
                             "doc_stride; HF's --doc_stride is the overlap instead)")
    parser.add_argument("--max-query-length", type=int, default=64,
                        help="questions keep at most this many tokens")
    parser.add_argument("--max-answer-length", type=int, default=30,
                        help="longest answer in tokens")
    parser.add_argument("--n-best", type=int, default=20,
                        help="start/end candidates per window and answers kept per question")
    parser.add_argument("--null-threshold", type=float, default=0.0,
                        help="SQuAD 2.0: answer '' when null score - best span score exceeds this")
    common.add_lm_loss_weight(parser)
    common.add_common_arguments(parser, output="out/finetune-squad", sequence_length=384,
                                batch_size=16, learning_rate=1e-4, epochs=2)
    parser.set_defaults(run=run)
    return parser


@common.guard
def run(args):
    """Run ``kbl finetune squad`` from parsed arguments; returns the metrics dict."""
    from keras_bert_lab.pipelines.batches import batches
    from keras_bert_lab.preprocessing.span_qa import predict_answers

    settings = common.settings_from_args(args)
    version_2 = True if args.version_2 else None
    train_examples, train_v2 = read_squad(args.train, version_2=version_2, encoding=args.encoding)
    check_trainable(train_examples, args.train)
    valid_examples, valid_v2 = read_squad(args.valid, version_2=version_2, encoding=args.encoding)
    version_2 = bool(args.version_2 or train_v2 or valid_v2)
    output = common.start(settings)
    if settings.limit:
        train_examples = train_examples[:settings.limit]
    model, preprocessor = common.adapter(settings, args, "squad", "squad")(settings, args)
    post = dict(version_2=version_2, batch_size=settings.batch_size, n_best=args.n_best,
                max_answer_length=args.max_answer_length, null_threshold=args.null_threshold)
    train_features = preprocessor(train_examples)
    train_features = train_features.select(train_features.trainable)
    valid_features = preprocessor(valid_examples)
    print(f"squad: {len(train_examples)} training questions → {len(train_features)} windows; "
          f"{len(valid_examples)} validation questions → {len(valid_features)} windows"
          f"{' (SQuAD 2.0)' if version_2 else ''}")
    train = batches(train_features.inputs, train_features.labels(),
                    batch_size=settings.batch_size, shuffle=True, seed=settings.seed)

    def evaluate(model):
        predictions, _ = predict_answers(model, valid_examples, valid_features, **post)
        scores = squad_scores(valid_examples, predictions, version_2=version_2)
        return {k: v for k, v in scores.items() if not k.endswith("total")}

    report = common.fine_tune(model, train, settings, evaluate, monitor="f1")
    valid_predictions, _ = predict_answers(model, valid_examples, valid_features, **post)
    _write_json(output / "valid_predictions.json", valid_predictions)
    test_metrics, predictions = None, valid_predictions
    if args.predict:
        examples, predict_v2 = read_squad(args.predict, version_2=version_2 or None,
                                          encoding=args.encoding)
        predictions, n_best = predict_answers(model, examples, preprocessor(examples),
                                     **post)
        _write_json(output / "n_best.json", n_best)
        if any(e.gold_texts for e in examples) or predict_v2:
            test_metrics = squad_scores(examples, predictions, version_2=version_2)
    _write_json(output / "predictions.json", predictions)
    return common.finish(model, settings, report, test_metrics=test_metrics)


def _write_json(path, value):
    pathlib.Path(path).write_text(json.dumps(value, indent=1, ensure_ascii=False) + "\n",
                                  encoding="utf-8")
