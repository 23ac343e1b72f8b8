"""The Rotten Tomatoes classifier over static vectors: GloVe aligned to the task's words (with
its coverage), frozen unless asked, and a random start that trains its vectors."""

import pytest

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.studies.word_classify import ClassifySettings, run
from tests.conftest import locate_or_skip


def test_glove_and_random_runs_report_accuracy_and_coverage():
    locate_or_skip("glove_6b_50d")
    locate_or_skip("rotten_tomatoes")
    glove = run(ClassifySettings(vectors="glove", encoder="mean", epochs=1))
    assert glove["trainable_vectors"] is False and 0.85 < glove["coverage"] < 1
    assert glove["test_accuracy"] > 0.6       # two balanced classes: chance is 0.5
    random = run(ClassifySettings(vectors="random", encoder="mean", epochs=1, dim=8))
    assert random["trainable_vectors"] is True and "coverage" not in random
    with pytest.raises(ConfigError, match="encoder"):
        ClassifySettings(encoder="cnn")
