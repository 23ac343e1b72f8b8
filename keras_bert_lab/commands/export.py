"""``kbl export``: a fine-tuned classifier preset → a SavedModel that serves raw text (or, with
``--format onnx``, its network as ONNX with the vocabulary beside it).

The command line of :func:`keras_bert_lab.export.export_saved_model`: the SavedModel takes
strings (``serve(text)``, or ``serve(text_a, text_b)`` for sentence pairs) and returns class
names and probabilities, with tokenization inside the graph, and loads with
``tf.saved_model.load`` without keras_bert_lab. A model trained on any backend exports the same
way. Example::

    kbl finetune classify --dataset rotten_tomatoes --output out/sentiment
    kbl export out/sentiment/preset --output export/sentiment
    python -c "import tensorflow as tf; m = tf.saved_model.load('export/sentiment'); \\
               print(m.serve(tf.constant(['A gripping, funny film.']))['label'])"

``--out`` is the old spelling of ``--output`` (it warns, and goes in the next release).
"""

import argparse
import warnings


class OldSpelling(argparse.Action):
    """Store the value; warn when the option was given by its old spelling (``--out``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string == "--out":
            warnings.warn("kbl export --out is now --output; the old spelling goes in the next "
                          "release.", FutureWarning, stacklevel=2)
        setattr(namespace, self.dest, values)


def register(subparsers):
    """Add ``kbl export`` to the top-level sub-commands."""
    p = subparsers.add_parser(
        "export", help="export a fine-tuned classifier preset as a TensorFlow SavedModel that "
                       "serves raw text",
        description="Write a SavedModel whose serve() takes strings and returns labels and "
                    "scores; tokenization runs inside the graph, and the result loads with "
                    "tf.saved_model.load without keras_bert_lab, Keras or tensorflow-text.")
    p.add_argument("preset", help="a BertClassifier preset: directory (e.g. the preset/ folder "
                                  "of `kbl finetune classify|pair`) or name")
    p.add_argument("--output", "--out", dest="output", required=True, action=OldSpelling,
                   help="the export directory to write (--out: the old spelling)")
    p.add_argument("--format", choices=("saved_model", "onnx"), default="saved_model",
                   help="saved_model: strings in, labels and scores out, tokenizer inside; onnx: "
                        "packed ids in, logits out, vocab.txt beside it (needs onnx, "
                        "onnxruntime, tf2onnx) (default: saved_model)")
    p.add_argument("--sequence-length", type=int, default=None, metavar="N",
                   help="tokens per input, longer texts are cut (default: the length the preset "
                        "was fine-tuned with, else 128)")
    inputs = p.add_mutually_exclusive_group()
    inputs.add_argument("--pair", dest="pair", action="store_true", default=None,
                        help="the model reads sentence pairs: serve(text_a, text_b) (default: "
                             "what the preset records)")
    inputs.add_argument("--single", dest="pair", action="store_false",
                        help="the model reads one text: serve(text)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace --output if it holds a previous export (any other folder is "
                        "refused)")
    p.set_defaults(func=run)
    return p


def run(args):
    """Export, then print what was written and how to call it; returns the directory."""
    from keras_bert_lab.export import export_onnx, export_saved_model, read_export_info

    if args.format == "onnx":
        directory = export_onnx(args.preset, args.output, sequence_length=args.sequence_length,
                                pair=args.pair, overwrite=args.overwrite)
        print(f"wrote {directory}: model.onnx (token_ids, segment_ids, padding_mask -> logits), "
              "vocab.txt, keras_bert_lab_onnx.json\n  load: import onnxruntime; "
              f"onnxruntime.InferenceSession({str(directory / 'model.onnx')!r})")
        return directory
    directory = export_saved_model(args.preset, args.output, sequence_length=args.sequence_length,
                                   pair=args.pair, overwrite=args.overwrite)
    info = read_export_info(directory)
    serve = info["signatures"]["serve"]
    classes = f"; classes {info['labels']}" if info["problem"] != "regression" else ""
    print(f"wrote {directory}: {info['task']} ({info['problem']}{classes}), sequence length "
          f"{info['sequence_length']}\n  serve({', '.join(serve['inputs'])}) -> "
          f"{', '.join(serve['outputs'])}   (also serve_ids, preprocess)\n  load: import "
          f"tensorflow as tf; model = tf.saved_model.load({str(directory)!r})")
    return directory
