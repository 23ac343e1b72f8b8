"""``--data-parallel`` on TensorFlow runs under ``tf.distribute.MirroredStrategy`` (four logical
CPU devices here): training equals one device (without gradient clipping, which Keras applies to
each replica's gradients before the all-reduce), the commands fine-tune and pretrain under it and
a checkpoint saved there loads on one device, a batch that does not split is a clear error. One TensorFlow child process
(tests/distribution/mirrored_runs.py); runs once, under the TensorFlow backend."""

import json
import os
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOLERANCE = 1e-5
pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                reason="tf.distribute: runs once, under TensorFlow")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("mirrored")
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3",
               KBL_CPU_DEVICES="4")
    done = subprocess.run([sys.executable, "-m", "tests.distribution.mirrored_runs",
                           str(scratch / "out.json"), str(scratch)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads((scratch / "out.json").read_text())


def test_four_replicas_train_as_one_device(runs):
    one, four = runs["api"]["1 device"], runs["api"]["mirrored"]
    assert len(one) == 3 and one[-1] < one[0]
    np.testing.assert_allclose(four, one, rtol=TOLERANCE)


def test_kbl_finetune_runs_mirrored(runs):
    one, four = runs["finetune"]["1 device"], runs["finetune"]["mirrored"]
    assert len(one["epochs"]) == len(four["epochs"]) == 2
    # kbl finetune clips gradients to global norm 1: under the strategy Keras clips each
    # replica's share, so the runs differ a little (equal without clipping, the test above).
    for got, want in zip(four["epochs"], one["epochs"]):
        assert abs(got["loss"] - want["loss"]) <= 0.1 * abs(want["loss"]), (got, want)
    assert four["predictions"] == one["predictions"] == 5  # a short last batch of 5 rows


def test_pretraining_runs_mirrored_and_resumes_on_one_device(runs):
    assert runs["pretrain"]["code"] == 0, runs["pretrain"]["error"]
    losses = [float(r["loss"]) for r in runs["pretrain"]["log"] if r["split"] == "train"]
    assert len(losses) == 4 and np.isfinite(losses).all()
    assert runs["resumed"]["code"] == 0, runs["resumed"]["error"]
    assert runs["resumed"]["log"] == runs["pretrain"]["log"]  # finished: nothing left to train


def test_a_batch_that_does_not_split_is_a_clear_error(runs):
    bad = runs["bad_batch"]
    assert bad["code"] == 2 and not bad["wrote"]
    assert "Batch size 6 does not split over the 4 replicas of MirroredStrategy" in bad["error"]
