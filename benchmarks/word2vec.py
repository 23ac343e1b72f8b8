"""word2vec in Keras (TensorFlow, JAX, PyTorch) against gensim 4.4, same corpus and settings.

Both sides get the same sentences (every line of the corpus, tokenized by
``keras_bert_lab.preprocessing.words.split_words``) and the same hyper-parameters: skip-gram,
100 dimensions, window 5, min_count 5, 5 negatives, sample 1e-3 with word2vec.c's formula (the
one gensim uses), linear rate decay 0.025 → 0.0001, 5 epochs. gensim runs with 2 worker
threads (this machine's cores). Printed per run: training seconds and corpus words/s (corpus
words × epochs / training time, vocabulary building excluded on both sides), the ratio to
gensim's mean words/s, and the quality of the vectors with the same evaluation code for both
(gensim's conventions, equal to its own evaluations — see ``benchmarks/word_vectors.py``):
Google analogy accuracy by 3CosAdd on the questions the vocabulary covers, WordSim-353 and
SimLex-999 Spearman ρ.

Our side runs each backend in its own process (``KERAS_BACKEND`` is fixed per process), through
the ``kbl word2vec`` recipe, with its default batch (2,048 pairs), shared noise pool (16
words per batch) and 16 updates per compiled step unless ``--batch-size`` / ``--pool`` say
otherwise (training seconds include compiling the step); ``--per-pair`` adds one run
with word2vec.c's per-pair noise words; ``--no-gensim`` leaves gensim out (no ratios then).

Usage::

    python benchmarks/word2vec.py                        # WikiText-2 train, ~20 minutes
    python benchmarks/word2vec.py --corpus wikitext2 news --seeds 0 --backends jax
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SETTINGS = dict(dim=100, window=5, min_count=5, negatives=5, sample=1e-3,
                subsampling="word2vec.c", epochs=5, learning_rate=0.025, min_learning_rate=1e-4)


def quality(words, matrix):
    from keras_bert_lab.vectors import WordVectors, evaluate_analogies, evaluate_word_pairs

    vectors = WordVectors(words, matrix)
    analogies = evaluate_analogies(vectors)
    return {"analogy": analogies.accuracy, "questions": analogies.total.used,
            "semantic": analogies.semantic.accuracy, "syntactic": analogies.syntactic.accuracy,
            "wordsim353": evaluate_word_pairs(vectors, "wordsim353").spearman,
            "simlex999": evaluate_word_pairs(vectors, "simlex999").spearman}


def gensim_run(corpus, seed):
    from gensim.models import Word2Vec as GensimWord2Vec

    from keras_bert_lab.data.corpora import load_corpus
    from keras_bert_lab.preprocessing.words import split_words

    sources = corpus[0] if len(corpus) == 1 else list(corpus)
    sentences = [s for s in (split_words(line) for doc in load_corpus(sources, split=False)
                             for line in doc) if s]
    words = sum(len(s) for s in sentences)
    model = GensimWord2Vec(vector_size=SETTINGS["dim"], window=SETTINGS["window"],
                           min_count=SETTINGS["min_count"], negative=SETTINGS["negatives"],
                           sample=SETTINGS["sample"], alpha=SETTINGS["learning_rate"],
                           min_alpha=SETTINGS["min_learning_rate"], sg=1, workers=2, seed=seed)
    model.build_vocab(sentences)
    started = time.perf_counter()
    model.train(sentences, total_examples=len(sentences), epochs=SETTINGS["epochs"])
    seconds = time.perf_counter() - started
    result = {"side": "gensim 4.4 (2 threads)", "seed": seed, "seconds": seconds,
              "words_per_s": words * SETTINGS["epochs"] / seconds,
              "vocabulary": len(model.wv.index_to_key)}
    result.update(quality(list(model.wv.index_to_key), model.wv.vectors))
    return result


def ours_run(corpus, seed, shared_pool, batch_size):
    """One recipe run in this process (KERAS_BACKEND set by the caller)."""
    import keras
    import numpy as np

    from keras_bert_lab.models.word2vec.pretrain import Word2VecSettings, run
    from keras_bert_lab.vectors import read_text

    settings = Word2VecSettings(corpus=tuple(corpus), seed=seed, shared_pool=shared_pool,
                                batch_size=batch_size, **SETTINGS)
    with tempfile.TemporaryDirectory() as out:
        metrics = run(settings, os.path.join(out, "run"), verbose=0)
        vectors = read_text(os.path.join(out, "run", "vectors.txt"))
    result = {"side": f"ours, {keras.backend.backend()}, {batch_size}" +
                      (f", pool {shared_pool}" if shared_pool else ", per-pair noise"),
              "seed": seed, "seconds": metrics["train_seconds"],
              "words_per_s": metrics["words_per_s"], "vocabulary": len(vectors)}
    result.update(quality(vectors.words, np.asarray(vectors.vectors)))
    return result


def child(backend, corpus, seed, shared_pool, batch_size):
    env = dict(os.environ, KERAS_BACKEND=backend, OMP_WAIT_POLICY="PASSIVE")
    command = [sys.executable, __file__, "--child", "--corpus", *corpus, "--seeds", str(seed),
               "--pool", str(shared_pool), "--batch-size", str(batch_size)]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"{backend} run failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def show(row, reference):
    ratio = row["words_per_s"] / reference if reference else float("nan")
    print(f"{row['side']:<34} {row['seed']:>4} {row['seconds']:>8.1f} {row['words_per_s']:>10,.0f}"
          f" {ratio:>6.2f}× {100 * row['analogy']:>7.2f}% ({row['questions']:>5})"
          f" {100 * row['semantic']:>6.2f}% {100 * row['syntactic']:>6.2f}%"
          f" {row['wordsim353']:>7.3f} {row['simlex999']:>7.3f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", default=["wikitext2"])
    parser.add_argument("--backends", nargs="+", default=["tensorflow", "jax", "torch"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--backend-seeds", type=int, default=1,
                        help="seeds for every backend but the first (which runs all --seeds)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="pairs per step (default: the recipe's)")
    parser.add_argument("--pool", type=int, default=None,
                        help="shared noise pool per batch (default: the recipe's)")
    parser.add_argument("--no-gensim", action="store_true",
                        help="skip gensim (ratios then read 'nan')")
    parser.add_argument("--per-pair", action="store_true",
                        help="also one run with per-pair noise words on the first backend")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    from keras_bert_lab.models.word2vec.pretrain import Word2VecSettings

    defaults = Word2VecSettings()
    args.batch_size = args.batch_size or defaults.batch_size
    args.pool = defaults.shared_pool if args.pool is None else args.pool
    if args.child:
        print(json.dumps(ours_run(args.corpus, args.seeds[0], args.pool, args.batch_size)))
        return
    from benchmarks.machine import cpu_jiffies

    start = cpu_jiffies()
    print(f"corpus {' + '.join(args.corpus)}; settings {SETTINGS}; skip-gram")
    print(f"{'run':<34} {'seed':>4} {'train s':>8} {'words/s':>10} {'vs gs':>7} "
          f"{'analogy (used)':>17} {'sem':>7} {'syn':>7} {'WS353':>7} {'SL999':>7}")
    gensim_rows = [] if args.no_gensim else [gensim_run(args.corpus, seed) for seed in args.seeds]
    reference = (statistics.mean(r["words_per_s"] for r in gensim_rows) if gensim_rows
                 else None)
    for row in gensim_rows:
        show(row, reference)
    rows = {}
    for i, backend in enumerate(args.backends):
        seeds = args.seeds if i == 0 else args.seeds[:args.backend_seeds]
        rows[backend] = [child(backend, args.corpus, seed, args.pool, args.batch_size)
                         for seed in seeds]
        for row in rows[backend]:
            show(row, reference)
    if args.per_pair:
        show(child(args.backends[0], args.corpus, args.seeds[0], 0, args.batch_size), reference)
    print("\nmeans over seeds (spread = max − min):")
    for name, group in [("gensim", gensim_rows)] * bool(gensim_rows) + list(rows.items()):
        for key in ("words_per_s", "analogy", "wordsim353", "simlex999"):
            values = [r[key] for r in group]
            print(f"  {name:<10} {key:<11} mean {statistics.mean(values):.4g} "
                  f"spread {max(values) - min(values):.3g} (n={len(values)})")
    end = cpu_jiffies()
    if start and end:
        print(f"machine busy {100 * (end[0] - start[0]) / max(end[1] - start[1], 1):.0f}% "
              "over the run (2 cores; the benchmark's own threads included)")


if __name__ == "__main__":
    main()
