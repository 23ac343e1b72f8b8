"""A regular (non-editable) install works away from the repository: the named presets ship inside
the package, `kbl` and the preset and data registries run from another directory, and so do the
README's Python examples (the quick start and the fine-tuning example), as written.

The package is installed with ``pip install --no-deps --target`` into a temporary folder (its
dependencies are this environment's) and run from a different working directory, with the
repository off ``sys.path``. Backend-independent, so it runs once, in the TensorFlow test
process; its child processes run under torch, where the README's examples took 55 s against 92 s
under TensorFlow (whose ``fit`` traces a graph first).
"""

import os
import pathlib
import re
import subprocess
import sys

import keras
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                reason="backend-independent packaging check: run once")

CHECK = """
import pathlib, sys
import keras_bert_lab
from keras_bert_lab import BertBackbone, BertClassifier
from keras_bert_lab.data.registry import locate
from keras_bert_lab.presets import list_presets, resolve_preset
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
assert pathlib.Path(keras_bert_lab.__file__).is_relative_to(sys.argv[1]), keras_bert_lab.__file__
assert "minilm_l6_en_uncased" in list_presets()
path = BertBackbone("tiny").save_to_preset(sys.argv[2], vocabulary=locate("bert_uncased_vocab"))
model = BertClassifier.from_preset(path, labels=["neg", "pos"])
print(model.predict_labels(BertTextPreprocessor.from_preset(path, 16)(["fine", "bad"]))["labels"])
"""


def test_a_regular_install_runs_from_another_directory(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(ROOT)], check=True,
                   capture_output=True, text=True)
    named = list((target / "keras_bert_lab" / "presets" / "named").glob("*.json"))
    assert [p.name for p in named] == ["minilm_l6_en_uncased.json"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=str(target), TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="torch",
               KBL_PRESET_HOME=str(tmp_path / "home"))
    out = subprocess.run([sys.executable, "-c", CHECK, str(target), str(tmp_path / "tiny")],
                         cwd=elsewhere, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    labels = eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 - our own printed list
    assert len(labels) == 2 and set(labels) <= {"neg", "pos"}
    listing = subprocess.run([sys.executable, "-m", "keras_bert_lab.cli", "preset", "list"],
                             cwd=elsewhere, env=env, capture_output=True, text=True)
    assert listing.returncode == 0, listing.stderr[-3000:]
    assert "minilm_l6_en_uncased" in listing.stdout
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    examples = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(examples) >= 2
    for number, code in enumerate(examples):
        run = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env,
                             capture_output=True, text=True)
        assert run.returncode == 0, f"README example {number + 1}: {run.stderr[-3000:]}"
    assert run.stdout  # the examples print what they show
