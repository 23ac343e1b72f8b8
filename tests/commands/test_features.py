"""`kbl features extract|table` end to end on a small CoNLL file with static vectors."""

import json

import numpy as np
import pytest

from keras_bert_lab import cli


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    people, things = ["ada", "alan", "grace"], ["stick", "glue", "plan", "tree", "car"]
    with open(tmp_path / "train.conll", "w") as f:
        for _ in range(40):
            words = list(rng.choice(things, size=4))
            position = int(rng.integers(0, 4))
            words[position] = str(rng.choice(people))
            for i, word in enumerate(words):
                f.write(f"{word}\t{'B-person' if i == position else 'O'}\n")
            f.write("\n")
    vocabulary = people + things
    with open(tmp_path / "vectors.txt", "w") as f:
        f.write(f"{len(vocabulary)} 2\n")
        for word in vocabulary:
            f.write(f"{word} {1.0 if word in people else -1.0} {rng.normal():.3f}\n")
    return tmp_path


def test_table_from_static_vectors(data, capsys):
    out = data / "out"
    args = ["features", "table", "--train", str(data / "train.conll"), "--valid-fraction", "0.25",
            "--delimiter", "\\t", "--vectors", str(data / "vectors.txt"), "--epochs", "6",
            "--lstm-units", "8", "--lstm-layers", "1", "--learning-rate", "0.02",
            "--batch-size", "4",
            "--output", str(out)]
    assert cli.main(args) == 0
    table = json.loads((out / "table.json").read_text())
    (row,) = table["rows"]
    assert row["combination"] == "layer_0" and row["f1_best"] > 0.8
    assert "| layer_0 |" in (out / "table.md").read_text()
    # a second run reuses the cache; a combination the features cannot give is a clear error
    assert cli.main(args[:-2] + ["--output", str(data / "out2"), "--cache", str(out / "features"),
                                 "--combinations", "concat_last_four"]) == 2
    assert "only 1 layer" in capsys.readouterr().err


def test_extract_writes_one_cache_per_split(data):
    out = data / "x"
    assert cli.main(["features", "extract", "--train", str(data / "train.conll"),
                     "--delimiter", "\\t", "--vectors", str(data / "vectors.txt"),
                     "--output", str(out)]) == 0
    assert sorted(p.name for p in (out / "features").iterdir()) == ["train", "valid"]


def test_extract_from_an_elmo_preset(data, tmp_path):
    from tests.conftest import locate_or_skip
    from keras_bert_lab.features import FeatureCache
    from keras_bert_lab.models.elmo.convert import import_original

    preset = import_original(locate_or_skip("elmo_fixture", "options"),
                             locate_or_skip("elmo_fixture", "weights"), tmp_path / "elmo")
    out = data / "e"
    assert cli.main(["features", "extract", "--train", str(data / "train.conll"),
                     "--delimiter", "\\t", "--elmo", str(preset), "--output", str(out)]) == 0
    cache = FeatureCache(out / "features" / "train")
    assert (cache.num_layers, cache.dim) == (3, 32) and cache.manifest["source"]["source"] == "elmo"
