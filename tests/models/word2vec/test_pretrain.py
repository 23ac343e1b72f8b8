"""`kbl word2vec` end to end on a small corpus: outputs that load back, resume, bad input."""

import json
import os
import shutil

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from keras_bert_lab.cli import main  # noqa: E402
from keras_bert_lab.errors import DataError  # noqa: E402
from keras_bert_lab.models.word2vec.pretrain import Word2VecSettings, run  # noqa: E402
from keras_bert_lab.training.checkpoints import list_checkpoints  # noqa: E402
from keras_bert_lab.vectors import WordVectors, load_keras  # noqa: E402

TOPICS = [("king queen prince throne crown palace", "royal"),
          ("river water boat bridge fish stream", "river"),
          ("music song album band guitar singer", "music")]


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    lines = []
    for _ in range(300):
        words, _ = TOPICS[rng.integers(len(TOPICS))]
        lines.append("The " + " ".join(rng.choice(words.split(), size=7)) + " .")
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def settings_for(corpus, **overrides):
    fields = dict(corpus=corpus, dim=16, epochs=2, min_count=2, batch_size=64, sample=0,
                  window=3, seed=2)
    fields.update(overrides)
    return Word2VecSettings(**fields)


def test_run_writes_vectors_that_load_back_everywhere(corpus_file, tmp_path):
    out = tmp_path / "run"
    metrics = run(settings_for(corpus_file), out, verbose=0)
    assert metrics["vocabulary_size"] == 19 and metrics["words_per_s"] > 0
    text = WordVectors.read_text(out / "vectors.txt")
    keras_copy = load_keras(out / "embedding.keras")
    assert text.words[0] == "the" and len(text) == 19
    np.testing.assert_allclose(text.vectors, keras_copy.vectors, atol=1e-6)
    rows = (out / "log.csv").read_text().splitlines()
    assert rows[0] == "epoch,loss" and len(rows) == 3
    assert float(rows[2].split(",")[1]) < float(rows[1].split(",")[1])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["corpus_words"] == 300 * 8   # "." is not a word
    # The topics were learned: each word's nearest neighbour shares its topic.
    for words, _ in TOPICS:
        for word in words.split():
            neighbour = text.nearest(word, k=1)[0][0]
            assert neighbour in words.split(), (word, neighbour)


def test_resume_from_an_epoch_checkpoint_reproduces_the_run(corpus_file, tmp_path):
    out = tmp_path / "run"
    settings = settings_for(corpus_file, epochs=3)
    run(settings, out, verbose=0)
    finished = WordVectors.read_text(out / "vectors.txt").vectors
    checkpoints = list_checkpoints(out / "checkpoints")
    assert len(checkpoints) == 2
    shutil.rmtree(checkpoints[-1])          # as if killed during the last epoch
    run(settings, out, resume=True, verbose=0)
    resumed = WordVectors.read_text(out / "vectors.txt").vectors
    np.testing.assert_allclose(resumed, finished, atol=1e-5)


def test_bad_corpus_is_refused_before_the_output_is_touched(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n , . \n")
    with pytest.raises(DataError, match="no words"):
        run(settings_for(str(empty)), tmp_path / "a", verbose=0)
    rare = tmp_path / "rare.txt"
    rare.write_text("one two three\nfour five six\n")
    with pytest.raises(DataError, match="min_count=2"):
        run(settings_for(str(rare)), tmp_path / "b", verbose=0)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_command_line(corpus_file, tmp_path, capsys):
    out = str(tmp_path / "cli")
    assert main(["word2vec", "--corpus", corpus_file, "--output", out, "--epochs", "1",
                 "--dim", "8", "--min-count", "2", "--batch-size", "64", "--cbow",
                 "--quiet"]) == 0
    assert "vectors.txt" in capsys.readouterr().out
    assert json.loads(open(os.path.join(out, "settings.json")).read())["architecture"] == "cbow"
    assert main(["word2vec", "--corpus", corpus_file, "--output", out, "--quiet"]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["word2vec", "--corpus", corpus_file, "--output", str(tmp_path / "x"),
                 "--min-count", "1000", "--quiet"]) == 2
    assert "min_count=1000" in capsys.readouterr().err
