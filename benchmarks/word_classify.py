"""Static vectors in a model: Rotten Tomatoes test accuracy with GloVe 6B 50d vs. random vectors.

For each encoder (a deep averaging network: mean of the vectors → ReLU layer; a one-layer
BiLSTM), four starts at equal epochs: GloVe frozen, GloVe trained, random frozen, random
trained (``keras_bert_lab.studies.word_classify``; registry split 8,454 / 1,057 / 1,057, Adam
3e-3, batch 32). Printed: validation and test accuracy per seed, then the mean and spread.

Usage::

    python benchmarks/word_classify.py                  # ~8 minutes on 2 cores
    python benchmarks/word_classify.py --encoders mean --seeds 0 1 2 3 4 --epochs 5
"""

import argparse
import os
import statistics
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

STARTS = [("glove", False), ("glove", True), ("random", False), ("random", True)]


def main():
    import keras

    from keras_bert_lab.studies.word_classify import ClassifySettings, run

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoders", nargs="+", default=["mean", "bilstm"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    print(f"backend {keras.backend.backend()}; {args.epochs} epochs; seeds {args.seeds}")
    print(f"{'encoder':<8} {'vectors':<8} {'trained':<8} {'seed':>4} {'valid':>7} {'test':>7} "
          f"{'s':>6}")
    summary = []
    for encoder in args.encoders:
        for vectors, trainable in STARTS:
            tests = []
            for seed in args.seeds:
                result = run(ClassifySettings(vectors=vectors, encoder=encoder,
                                              trainable=trainable, epochs=args.epochs,
                                              seed=seed))
                tests.append(result["test_accuracy"])
                print(f"{encoder:<8} {vectors:<8} {str(trainable):<8} {seed:>4} "
                      f"{result['valid_accuracy']:>7.4f} {result['test_accuracy']:>7.4f} "
                      f"{result['seconds']:>6.1f}", flush=True)
            summary.append((encoder, vectors, trainable, statistics.mean(tests),
                            max(tests) - min(tests)))
    print("\nmean test accuracy (spread = max − min over seeds):")
    for encoder, vectors, trainable, mean, spread in summary:
        state = "trained" if trainable else "frozen"
        print(f"  {encoder:<7} {vectors:<7} {state:<8} {mean:.4f} ± {spread / 2:.4f}")


if __name__ == "__main__":
    main()
