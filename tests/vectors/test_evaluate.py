"""The analogy and word-pair evaluations: equal to gensim's (synthetic vectors with case
variants, and real GloVe), OOV and invalid lines counted, correlations equal to SciPy's."""

import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.vectors import (WordVectors, evaluate_analogies, evaluate_word_pairs,
                                    load_glove, scoring)
from keras_bert_lab.vectors.evaluate import average_ranks, pearson, spearman
from tests.conftest import locate_or_skip
from tests.vectors.helpers import gensim_keyed, numpy_only, random_vectors

pytestmark = numpy_only


def gensim_counts(sections):
    """[(name, correct, used)] of gensim's per-section result (its total dropped)."""
    return [(s["section"], len(s["correct"]), len(s["correct"]) + len(s["incorrect"]))
            for s in sections[:-1]]


def ours(result):
    return [(s.name, s.correct, s.used) for s in result.sections]


def write_analogies(path, vectors, seed, count=300):
    """Questions over the vocabulary (mixed case, some unknown words, some bad lines); half of
    them expect gensim's own unrestricted answer, so that some are answered right."""
    rng = np.random.default_rng(seed)
    kv = gensim_keyed(vectors)
    pool = vectors.words[:260] + ["Unknown", "nothere"]
    lines = []
    for section in ("capital-x", "family", "gram1-x", "gram2-y"):
        lines.append(f": {section}")
        for _ in range(count // 4):
            words = [pool[i] for i in rng.integers(0, len(pool), 4)]
            if rng.random() < 0.5 and all(w in vectors for w in words[:3]):
                words[3] = kv.most_similar(positive=words[1:3], negative=words[:1])[0][0]
            words = [w.lower() if rng.random() < 0.3 else w for w in words]
            lines.append(" ".join(words))
        lines += ["only three words", ""]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("near_tie", [scoring.NEAR_TIE, 10.0])   # 10: every question alone
@pytest.mark.parametrize("case_insensitive, restrict_vocab", [(True, 300000), (True, 150),
                                                              (False, None)])
def test_analogies_equal_gensim(tmp_path, monkeypatch, near_tie, case_insensitive,
                                restrict_vocab):
    monkeypatch.setattr(scoring, "NEAR_TIE", near_tie)
    vectors = random_vectors(count=400, dim=12, seed=5)
    path = write_analogies(tmp_path / "questions.txt", vectors, seed=6)
    kv = gensim_keyed(vectors)
    _, sections = kv.evaluate_word_analogies(str(path), restrict_vocab=restrict_vocab or 400,
                                             case_insensitive=case_insensitive)
    result = evaluate_analogies(vectors, path, restrict_vocab=restrict_vocab,
                                case_insensitive=case_insensitive, batch_size=64)
    assert ours(result) == gensim_counts(sections)
    assert result.total.correct == len(sections[-1]["correct"]) > 0
    assert result.invalid == 8                           # 4 × ("only three words", "")
    assert result.total.used + result.oov == 300
    assert result.semantic.used == sum(s.used for s in result.sections[:2])
    assert result.syntactic.name == "syntactic" and "gram2-y" in str(result)


def test_exact_ties_are_broken_as_gensim_breaks_them(tmp_path):
    # vectors of -1/0/1 share directions, so many candidates tie exactly; which tied word comes
    # first is gensim's partial-sort order, which the batched argmax would not reproduce
    rng = np.random.default_rng(7)
    vectors = WordVectors([f"t{i}" for i in range(300)],
                          rng.integers(-1, 2, size=(300, 5)).astype("float32") + [3, 0, 0, 0, 0])
    path = write_analogies(tmp_path / "questions.txt", vectors, seed=8, count=400)
    _, sections = gensim_keyed(vectors).evaluate_word_analogies(str(path))
    assert ours(evaluate_analogies(vectors, path)) == gensim_counts(sections)


def test_analogies_by_construction_and_oov(tmp_path):
    vectors = WordVectors(["man", "woman", "king", "queen", "boy", "girl", "car"],
                          [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 0],
                           [1, 0, 0, 1], [1, 1, 0, 1], [0, 0, 0, -1]])
    path = tmp_path / "q.txt"
    path.write_text(": family\nman woman king queen\nMAN WOMAN KING CAR\nman king boy prince\n"
                    ": gram-x\nMan Woman boy girl\nman woman\n")
    for method in ("3cosadd", "3cosmul"):
        result = evaluate_analogies(vectors, path, method=method)
        assert [(s.name, s.correct, s.used) for s in result.sections] == [
            ("family", 1, 2), ("gram-x", 1, 1)]      # the answer to "MAN WOMAN KING" is QUEEN
        assert (result.oov, result.invalid, result.total.accuracy) == (1, 1, 2 / 3)
    path.write_text("man woman king queen\n")
    with pytest.raises(DataError, match="line 1: a question before any ': section'"):
        evaluate_analogies(vectors, path)
    with pytest.raises(ConfigError, match="method"):
        evaluate_analogies(vectors, path, method="cos")
    with pytest.raises(ConfigError, match="restrict_vocab"):
        evaluate_analogies(vectors, tmp_path / "q.txt", restrict_vocab=0)


def test_correlations_equal_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    x = rng.normal(size=300)
    y = 0.5 * x + rng.normal(size=300)
    for a, b in ((x, y), (np.round(x), np.round(2 * y) / 2)):          # with many ties
        assert pearson(a, b) == pytest.approx(stats.pearsonr(a, b)[0], abs=1e-12)
        assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b)[0], abs=1e-12)
        np.testing.assert_array_equal(average_ranks(a), stats.rankdata(a))
    assert np.isnan(pearson([1, 1, 1], [1, 2, 3]))


def test_word_pairs_format_and_counts(tmp_path):
    vectors = random_vectors(count=60, dim=6, seed=1)
    path = tmp_path / "pairs.tsv"
    rng = np.random.default_rng(2)
    words = vectors.words
    lines = ["# a comment", "w2\tw3\t3.5", "w2\tnothere\t2", "not a pair", "w3\tw4\tx"]
    lines += [f"{words[i].lower()}\t{words[j]}\t{rng.integers(0, 10)}"
              for i, j in rng.integers(0, 60, (40, 2))]
    path.write_text("\n".join(lines) + "\n")
    result = evaluate_word_pairs(vectors, path)
    assert (result.pairs, result.oov, result.invalid) == (41, 1, 2)
    pearson_r, spearman_r, oov_ratio = gensim_keyed(vectors).evaluate_word_pairs(str(path))
    assert result.spearman == pytest.approx(spearman_r[0], abs=1e-9)
    assert result.pearson == pytest.approx(pearson_r[0], abs=1e-9)
    assert result.oov_ratio == pytest.approx(oov_ratio)
    assert result.name == "pairs.tsv" and "pairs.tsv" in str(result)
    with pytest.raises(DataError, match="not a registry set"):
        evaluate_word_pairs(vectors, tmp_path / "missing.tsv")
    with pytest.raises(DataError, match="No usable pairs"):
        evaluate_word_pairs(vectors, path, delimiter=",")


@pytest.fixture(scope="module")
def glove():
    locate_or_skip("glove_6b_50d")
    return load_glove(limit=40000)


def test_glove_word_pairs_equal_gensim(glove):
    kv = gensim_keyed(glove)
    for name in ("wordsim353", "simlex999"):
        result = evaluate_word_pairs(glove, name, restrict_vocab=30000)
        pearson_r, spearman_r, oov_ratio = kv.evaluate_word_pairs(
            str(locate_or_skip(name)), restrict_vocab=30000)
        assert result.spearman == pytest.approx(spearman_r[0], abs=1e-9)
        assert result.pearson == pytest.approx(pearson_r[0], abs=1e-9)
        assert result.oov_ratio == pytest.approx(oov_ratio, abs=1e-9)
        assert result.pairs > 300


def test_glove_analogies_equal_gensim(glove, tmp_path):
    # every 3rd question of each section keeps gensim's per-question loop to a few seconds
    source = locate_or_skip("google_analogies").read_text().splitlines()
    subset, count = [], 0
    for line in source:
        count = 0 if line.startswith(":") else count + 1
        if count % 3 == 0:
            subset.append(line)
    path = tmp_path / "questions.txt"
    path.write_text("\n".join(subset) + "\n")
    _, sections = gensim_keyed(glove).evaluate_word_analogies(str(path), restrict_vocab=30000)
    result = evaluate_analogies(glove, path, restrict_vocab=30000)
    assert ours(result) == gensim_counts(sections)
    assert len(result.sections) == 14 and result.total.used > 2000
    assert 0.3 < result.accuracy < 0.8
