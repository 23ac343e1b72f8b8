"""Static word vectors against gensim 4.4 on the full GloVe 6B 50d (400,000 words), with gensim's
defaults (``restrict_vocab=300000``, ``case_insensitive=True``):

- the Google analogy questions (3CosAdd): our per-section counts next to gensim's
  ``KeyedVectors.evaluate_word_analogies`` on a ``KeyedVectors`` built from the same matrix and
  words — they must be *equal* — and the time each takes; our 3CosMul accuracy beside them
  (gensim's evaluation has no 3CosMul);
- WordSim-353 and SimLex-999: Spearman's ρ and Pearson's r next to ``evaluate_word_pairs``;
- reading and writing the text format (400,000 lines × 50), and loading from the registry.

Usage::

    python benchmarks/word_vectors.py              # a couple of minutes: gensim's loop is slow

Exits non-zero if any count or correlation differs from gensim's.
"""

import os
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.machine import cpu_jiffies  # noqa: E402

RESTRICT = 300000


class Timer:
    """Wall seconds of a block, and the share of the machine other processes used meanwhile."""

    def __enter__(self):
        self.start, self.jiffies, self.own = time.perf_counter(), cpu_jiffies(), os.times()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start
        end, own = cpu_jiffies(), os.times()
        self.others = None
        if self.jiffies and end and end[1] > self.jiffies[1]:
            ticks = os.sysconf("SC_CLK_TCK")
            mine = (own.user + own.system - self.own.user - self.own.system) * ticks
            busy = end[0] - self.jiffies[0] - mine
            self.others = max(0.0, busy / (end[1] - self.jiffies[1]))

    def __str__(self):
        load = "" if self.others is None else f", others busy {100 * self.others:.0f}%"
        return f"{self.seconds:.2f} s{load}"


def main():
    import numpy as np
    from gensim.models import KeyedVectors

    from keras_bert_lab.data import registry
    from keras_bert_lab.vectors import (evaluate, evaluate_analogies, evaluate_word_pairs,
                                        load_glove, read_text)

    with Timer() as t:
        glove = load_glove()
    print(f"load_glove: {glove!r} in {t}")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "glove.txt")
        with Timer() as t:
            glove.write_text(path)
        print(f"write_text: {os.path.getsize(path) / 1e6:.0f} MB in {t}")
        with Timer() as t:
            back = read_text(path)
        same = back.words == glove.words and np.array_equal(back.vectors, glove.vectors)
        print(f"read_text: {back!r} in {t}; identical to the matrix: {same}")
    kv = KeyedVectors(glove.dim)
    kv.add_vectors(list(glove.words), np.array(glove.vectors))
    analogies = str(registry.locate("google_analogies"))

    calls = [0]
    exact = evaluate._exact_candidates

    def counted(*args, **kwargs):
        calls[0] += 1
        return exact(*args, **kwargs)

    evaluate._exact_candidates = counted
    with Timer() as ours_time:
        ours = evaluate_analogies(glove, restrict_vocab=RESTRICT)
    evaluate._exact_candidates = exact
    with Timer() as cosmul_time:
        cosmul = evaluate_analogies(glove, restrict_vocab=RESTRICT, method="3cosmul")
    print(f"\nGoogle analogies, restrict_vocab={RESTRICT:,}, case_insensitive=True "
          f"(ours: {calls[0]} near-tie questions re-scored one at a time)")
    with Timer() as gensim_time:
        _, sections = kv.evaluate_word_analogies(analogies, restrict_vocab=RESTRICT)
    theirs = [(s["section"], len(s["correct"]), len(s["correct"]) + len(s["incorrect"]))
              for s in sections[:-1]]
    print(f"{'section':<30}{'ours':>14}{'gensim':>14}{'3CosMul':>14}  equal")
    equal_all = True
    for section, mul, (name, correct, used) in zip(ours.sections, cosmul.sections, theirs):
        equal = (section.name, section.correct, section.used) == (name, correct, used)
        equal_all &= equal
        print(f"{section.name:<30}{section.correct:>7,}/{section.used:<6,}{correct:>7,}/"
              f"{used:<6,}{mul.correct:>7,}/{mul.used:<6,}  {equal}")
    equal_all &= len(ours.sections) == len(theirs)
    gensim_total = sum(c for _, c, _ in theirs), sum(u for _, _, u in theirs)
    for label, mine, mul in (("semantic", ours.semantic, cosmul.semantic),
                             ("syntactic", ours.syntactic, cosmul.syntactic),
                             ("total", ours.total, cosmul.total)):
        print(f"{label:<30}{100 * mine.accuracy:>13.2f}%{'':>14}{100 * mul.accuracy:>13.2f}%")
    print(f"{'total (gensim)':<30}{'':>14}{100 * gensim_total[0] / gensim_total[1]:>13.2f}%")
    print(f"skipped as out of vocabulary: ours {ours.oov:,}")
    print(f"time: ours {ours_time}; gensim {gensim_time}; ours 3CosMul {cosmul_time}")
    print(f"analogy counts equal to gensim's in every section: {equal_all}")

    print(f"\nword pairs, restrict_vocab={RESTRICT:,}")
    print(f"{'set':<12}{'ρ ours':>12}{'ρ gensim':>12}{'r ours':>12}{'r gensim':>12}"
          f"{'pairs':>7}{'oov':>5}  equal (1e-9)  time ours / gensim")
    for name in ("wordsim353", "simlex999"):
        with Timer() as mine_time:
            mine = evaluate_word_pairs(glove, name, restrict_vocab=RESTRICT)
        with Timer() as their_time:
            pearson, spearman, _ = kv.evaluate_word_pairs(str(registry.locate(name)),
                                                          restrict_vocab=RESTRICT)
        equal = (abs(mine.spearman - spearman[0]) < 1e-9 and
                 abs(mine.pearson - pearson[0]) < 1e-9)
        equal_all &= equal
        print(f"{name:<12}{mine.spearman:>12.6f}{spearman[0]:>12.6f}{mine.pearson:>12.6f}"
              f"{pearson[0]:>12.6f}{mine.pairs:>7}{mine.oov:>5}  {str(equal):<13} "
              f"{mine_time.seconds:.3f} s / {their_time.seconds:.3f} s")
    print(f"\nall equal to gensim: {equal_all}")
    return 0 if equal_all else 1


if __name__ == "__main__":
    sys.exit(main())
