"""``--data-parallel`` / ``--model-parallel BxM`` on ``kbl pretrain`` and ``kbl finetune``.

The runs on 8 simulated devices need ``XLA_FLAGS`` before JAX is imported: one JAX child process
(``tests/distribution/cli_runs.py``) runs the commands and the parent compares its results; those
tests run once, under the JAX backend. The flag parsing and the message on the other backends
run on every backend.
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from keras_bert_lab import cli
from keras_bert_lab.distribution import session
from keras_bert_lab.errors import ConfigError

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOLERANCE = 1e-5  # relative, on every logged loss
on_jax = pytest.mark.skipif(keras.backend.backend() != "jax",
                            reason="runs once: the child process is JAX whatever the backend")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("cli_runs")
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2",
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") +
                          " --xla_force_host_platform_device_count=8").strip())
    start = time.time()
    done = subprocess.run([sys.executable, "-m", "tests.distribution.cli_runs",
                           str(scratch / "out.json"), str(scratch)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads((scratch / "out.json").read_text())
    result["seconds"]["child process"] = round(time.time() - start, 1)
    print(json.dumps(result["seconds"]))
    return result


def losses(log, split="train"):
    return np.array([float(row["loss"]) for row in log if row["split"] == split])


def relative(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / np.abs(np.asarray(b))))


@on_jax
def test_pretrain_on_eight_devices_logs_one_devices_losses(runs):
    one = runs["pretrain"]["1 device"]
    assert len(losses(one["log"])) == 8 and len(losses(one["log"], "heldout")) == 2
    for kind in ("data", "model 4x2"):
        run = runs["pretrain"][kind]
        for split in ("train", "heldout"):
            assert relative(losses(run["log"], split), losses(one["log"], split)) <= TOLERANCE, \
                (kind, split)
        # The mesh is how the run trains, not what it is: settings.json does not record it.
        assert run["settings"] == one["settings"]
        assert not {"data_parallel", "model_parallel"} & set(run["settings"])
    assert runs["resumed_on_one_device"] == {"code": 0, "error": ""}
    assert len(losses(runs["gpt"]["model 4x2"])) == 2


@on_jax
def test_finetune_on_eight_devices_matches_one_device(runs):
    one = runs["finetune"]["1 device"]
    assert one["predictions"] == 5  # 5 validation rows: a short batch on an 8-way mesh
    for kind in ("data", "model 4x2"):
        run = runs["finetune"][kind]
        assert run["predictions"] == 5
        for got, want in zip(run["epochs"], one["epochs"]):
            assert abs(got["loss"] - want["loss"]) <= TOLERANCE * abs(want["loss"]), kind
            assert got["accuracy"] == want["accuracy"]


@on_jax
def test_bad_meshes_and_batches_are_clear_errors_before_any_output(runs):
    errors = runs["errors"]
    expected = {"batch": r"Batch size 6 does not split over the 8 data-parallel replicas.*"
                         r"multiple of 8",
                "mesh": r"3x2 mesh needs 6 devices but 8 are available.*4x2",
                "heads": r"model axis \(4 devices\) does not divide BertConfig.num_heads \(2\)",
                "both": r"--data-parallel or --model-parallel BxM, not both"}
    for name, pattern in expected.items():
        assert errors[name]["code"] == 2 and not errors[name]["wrote"], errors[name]
        assert errors[name]["error"].startswith("kbl: error: ")
        assert re.search(pattern, errors[name]["error"]), errors[name]["error"]


def test_flags_parse_into_a_kind():
    parser = argparse.ArgumentParser()
    session.add_arguments(parser)
    assert session.kind_from_args(parser.parse_args([])) is None
    assert session.kind_from_args(parser.parse_args(["--data-parallel"])) == "data"
    assert session.kind_from_args(parser.parse_args(["--model-parallel", "2X4"])) == "model 2x4"
    with pytest.raises(ConfigError, match="'model BxM'"):
        session.kind_from_args(parser.parse_args(["--model-parallel", "2by4"]))


def test_other_backends_get_a_clear_message(tmp_path, capsys):
    argv = ["pretrain", "--corpus", str(tmp_path / "none.txt"), "--size", "tiny",
            "--output", str(tmp_path / "out"), "--data-parallel"]
    code = cli.main(argv)
    err = capsys.readouterr().err
    if keras.backend.backend() in ("jax", "tensorflow"):  # one device: on to the corpus
        assert code == 2 and "none.txt" in err, err
    else:
        assert code == 2 and "KERAS_BACKEND=jax" in err, err
        assert "no PyTorch implementation" in err
    code = cli.main([*argv[:-1], "--model-parallel", "1x1"])
    err = capsys.readouterr().err
    if keras.backend.backend() == "jax":
        assert code == 2 and "none.txt" in err, err
    else:  # model parallelism is keras.distribution's, on JAX only
        assert code == 2 and "KERAS_BACKEND=jax" in err, err
    assert not (tmp_path / "out").exists()
    code = cli.main([*argv[:-1], "--model", "elmo", "--data-parallel"])
    assert code == 2 and "applies to --model bert or gpt only" in capsys.readouterr().err
