"""ULMFiT's Table 6/7 shape here: what each fine-tuning technique is worth for an AWD-LSTM.

Howard & Ruder (2018) compare classifier fine-tuning methods on a pretrained, target-LM-tuned
AWD-LSTM (IMDb / TREC-6 / AG validation error: from scratch 9.93 / 13.36 / 6.81, full
fine-tuning 6.87 / 5.81 on IMDb / AG, all techniques 5.00 / 5.38). Here: Rotten Tomatoes or
TREC-6 (registry splits), one stage-1/2 preset (``kbl pretrain --model awd-lstm``), each
configuration from the same start for the same epochs with AdamW at ``--learning-rate``, the
best validation epoch kept, test accuracy reported:

- ``scratch``: the same architecture and vocabulary, randomly initialised, all layers trained;
- ``full``: all layers, one rate, BERT's warm-up + linear decay;
- ``last``: only the top layer group (the classifier head);
- ``full+discr`` / ``full+stlr``: one technique added to ``full``;
- ``freez``: gradual unfreezing (one more group per epoch from the top);
- ``all``: gradual unfreezing + discriminative rates (η/2.6 per group) + slanted triangular.

Usage::

    python benchmarks/ulmfit.py --preset out/awd_rt/preset --dataset rotten_tomatoes --seeds 0 1 2

The low-resource curve (first N labelled examples; with and without target-task LM fine-tuning)::

    python benchmarks/ulmfit.py --preset lm2=out/awd_rt/preset lm1=out/awd_wt2/preset \\
        --configs scratch full --limit 100 300 1000 0 --min-steps 300
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# name: (pretrained, unfreeze, schedule, layer_decay)
CONFIGS = {
    "scratch": (False, "all", "slanted", 1.0),
    "full": (True, "all", "linear", 1.0),
    "last": (True, "top", "linear", 1.0),
    "full+discr": (True, "all", "linear", 1 / 2.6),
    "full+stlr": (True, "all", "slanted", 1.0),
    "freez": (True, "gradual", "linear", 1.0),
    "all": (True, "gradual", "slanted", 1 / 2.6),
}


def run_one(name, preset, parts, vocab, sequence_length, epochs, learning_rate, batch_size, seed):
    import keras
    import numpy as np

    from keras_bert_lab.models.awd_lstm.backbone import AwdLstmBackbone
    from keras_bert_lab.pipelines.batches import batches
    from keras_bert_lab.presets.registry import read_preset
    from keras_bert_lab.models.awd_lstm.finetune import pack_words
    from keras_bert_lab.preprocessing.word_tokenizer import WordTokenizer
    from keras_bert_lab.models.awd_lstm.ulmfit_classifier import UlmfitClassifier
    from keras_bert_lab.training.finetune import fit_best_epoch

    pretrained, unfreeze, schedule, decay = CONFIGS[name]
    keras.utils.set_random_seed(seed)
    if pretrained:
        model = UlmfitClassifier.from_preset(preset, num_classes=len(vocab.names))
    else:
        config = AwdLstmBackbone.config_class.from_dict(read_preset(preset).config)
        model = UlmfitClassifier(AwdLstmBackbone(config), num_classes=len(vocab.names))
    model.compile()
    tokenizer = WordTokenizer.from_preset(preset)
    data = {k: (pack_words(tokenizer, p.texts, sequence_length), vocab.encode(p.labels))
            for k, p in parts.items()}

    def accuracy(part):
        logits = model.predict_packed(data[part][0], batch_size=128)
        return float((np.argmax(logits, -1) == data[part][1]).mean())

    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        report = fit_best_epoch(
            model, batches(*data["train"], batch_size=batch_size, shuffle=True, seed=seed),
            lambda m: {"accuracy": accuracy("valid")}, "accuracy", tmp, epochs=epochs,
            learning_rate=learning_rate, schedule=schedule, unfreeze=unfreeze, layer_decay=decay,
            patience=epochs, verbose=0)
    return report["best"]["accuracy"], accuracy("test"), time.time() - started


def main():
    import keras

    from keras_bert_lab.data.labelled import load_dataset
    from keras_bert_lab.data.labels import LabelVocabulary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", nargs="+", required=True,
                        help="AWD-LSTM presets (stage 1 or 2), each PATH or LABEL=PATH; scratch "
                             "runs once, on the first one's architecture and vocabulary")
    parser.add_argument("--dataset", default="rotten_tomatoes")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--min-steps", type=int, default=0,
                        help="more epochs for small --limit sets, up to this many updates "
                             "(the low-resource curve at a comparable number of updates)")
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--limit", type=int, nargs="+", default=[0],
                        help="first N training examples; several give the low-resource curve "
                             "(0: all)")
    args = parser.parse_args()
    presets = [(p.partition("=")[0], p.partition("=")[2]) if "=" in p else (p, p)
               for p in args.preset]
    dataset = load_dataset(args.dataset)
    vocab = LabelVocabulary.fit(dataset["train"].labels)   # all classes, whatever --limit keeps
    print(f"backend {keras.backend.backend()}; {args.dataset} train {len(dataset['train'])}, "
          f"valid {len(dataset['valid'])}, test {len(dataset['test'])}; "
          f"{args.epochs} epochs, lr {args.learning_rate}, batch {args.batch_size}")
    for label, path in presets:
        print(f"preset {label}: {path}")
    print(f"{'train':>6} {'epochs':>6} {'config':<11} {'preset':<10} {'seed':>4} {'valid':>7} "
          f"{'test':>7} {'s':>6}")
    summary = []
    for limit in args.limit:
        parts = dict(dataset)
        if limit:
            parts["train"] = dataset["train"].subset(range(min(limit, len(dataset["train"]))))
        epochs = max(args.epochs, -(-args.min_steps // -(-len(parts["train"]) // args.batch_size)))
        for name in args.configs:
            for label, path in presets[:1] if name == "scratch" else presets:
                tests = []
                for seed in args.seeds:
                    valid, test, seconds = run_one(
                        name, path, parts, vocab, args.sequence_length, epochs,
                        args.learning_rate, args.batch_size, seed)
                    tests.append(test)
                    print(f"{len(parts['train']):>6} {epochs:>6} {name:<11} {label[:10]:<10} "
                          f"{seed:>4} {valid:>7.4f} {test:>7.4f} {seconds:>6.0f}", flush=True)
                summary.append((len(parts["train"]), name, label, statistics.mean(tests),
                                max(tests) - min(tests)))
    print("\ntest error, mean over seeds (spread = max − min):")
    for size, name, label, mean, spread in summary:
        print(f"  {size:>6} {name:<11} {label[:10]:<10} {100 * (1 - mean):5.2f} %  "
              f"(spread {100 * spread:.2f})")


if __name__ == "__main__":
    main()
