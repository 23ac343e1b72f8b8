"""Two processes × four simulated devices, joined by JAX's multi-process runtime (``kbl launch``),
train as one device does; each process feeds its own half of every batch; an unreachable
coordinator is a clear error, not a hang.

The JAX-only parts run once, under the JAX backend (the children are JAX whatever the parent's
backend).
"""

import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from keras_bert_lab import cli
from keras_bert_lab.distribution import launch
from keras_bert_lab.errors import ConfigError
from tests.distribution.cli_runs import pretrain_args, rows, write_corpus

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOLERANCE = 1e-5  # relative, on every logged loss
STEPS = 10
pytestmark = pytest.mark.skipif(keras.backend.backend() != "jax",
                                reason="JAX's multi-process runtime; runs once")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERAS_DISTRIBUTION_")}
    return dict(env, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2", **extra)


def train_losses(log):
    return np.array([float(r["loss"]) for r in log if r["split"] == "train"])


def test_two_processes_of_four_devices_train_as_one_device(tmp_path):
    corpus, vocab = write_corpus(str(tmp_path))
    start = time.time()
    one = str(tmp_path / "one")  # the reference, in this process, on one device
    assert cli.main(pretrain_args(corpus, vocab, one, steps=STEPS, every=10)) == 0
    reference = rows(os.path.join(one, "log.csv"))
    seconds = {"one device": round(time.time() - start, 1)}
    start = time.time()
    out = str(tmp_path / "two")
    done = subprocess.run(
        [sys.executable, "-m", "keras_bert_lab.cli", "launch", "--processes", "2",
         "--devices-per-process", "4", "--coordinator", f"127.0.0.1:{free_port()}", "--",
         *pretrain_args(corpus, vocab, out, steps=STEPS, every=10), "--data-parallel"],
        cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=600)
    seconds["2 processes x 4 devices"] = round(time.time() - start, 1)
    print(json.dumps(seconds))
    assert done.returncode == 0, done.stdout[-4000:]
    for index in (0, 1):  # both joined one job of 8 devices, 4 of them their own
        line = (f"[{index}] kbl: DataParallel on 8 devices (4 in process {index} of 2), "
                "mesh 8; batches split 8 ways")
        assert line in done.stdout, done.stdout[-3000:]
    want = train_losses(reference)
    assert len(want) == STEPS and want[-1] < want[0]
    for folder in (out, out + ".process-1"):  # process 1 keeps its own copy of the run
        got = rows(os.path.join(folder, "log.csv"))
        assert len(train_losses(got)) == STEPS
        assert np.max(np.abs(train_losses(got) - want) / want) <= TOLERANCE, (folder, got)
        heldout = [float(r["loss"]) for r in got if r["split"] == "heldout"]
        assert np.allclose(heldout, [float(r["loss"]) for r in reference
                                     if r["split"] == "heldout"], rtol=TOLERANCE)


def test_each_process_feeds_its_own_half_of_every_batch(tmp_path):
    """Keras' DataParallel.distribute_dataset, which fit/evaluate apply in a multi-process job:
    process i keeps rows [4i, 4i+4) of each global batch of 8, so the two halves make the batch
    and no example is fed twice."""
    import tensorflow as tf

    from keras_bert_lab.pipelines.pretraining import pretraining_dataset, tokenize_corpus
    from keras_bert_lab.models.bert.pretrain import PretrainSettings, load_tokenizer, stream_options

    corpus, vocab = write_corpus(str(tmp_path))
    settings = PretrainSettings(corpus=(corpus,), vocabulary=vocab, size="tiny",
                                sequence_length=32, batch_size=8)
    tokenizer = load_tokenizer(settings)
    stream = pretraining_dataset(tokenize_corpus(corpus, tokenizer), tokenizer,
                                 **stream_options(settings, 1))
    batches = list(stream.take(6).as_numpy_iterator())
    halves = []
    for index in (0, 1):
        parallel = keras.distribution.DataParallel(devices=[f"cpu:{i}" for i in range(8)])
        parallel._num_processes, parallel._process_id, parallel._is_multi_process = 2, index, True
        shard = parallel.distribute_dataset(stream)
        assert isinstance(shard, tf.data.Dataset)
        halves.append(list(shard.take(6).as_numpy_iterator()))
    for whole, first, second in zip(batches, *halves):
        for a, b, c in zip(*(keras.tree.flatten(x) for x in (whole, first, second))):
            assert len(b) == len(c) == 4
            np.testing.assert_array_equal(np.concatenate([b, c]), a)
    ids = [tuple(r) for b in batches for r in b[0]["token_ids"]]
    assert len(set(ids)) == len(ids)  # distinct examples: the check above has teeth


def test_an_unreachable_coordinator_is_a_clear_error_not_a_hang(tmp_path):
    address = f"127.0.0.1:{free_port()}"  # nobody listens there
    start = time.time()
    with pytest.raises(ConfigError, match=f"coordinator at {address} could not be reached "
                                          "within 1 s"):
        launch.wait_for_coordinator(address, timeout=1)
    assert time.time() - start < 5
    # The whole command, as process 1 of 2 whose process 0 never started.
    env = child_env(**{launch.ADDRESS: address, launch.COUNT: "2", launch.INDEX: "1",
                       launch.TIMEOUT: "2"})
    out = tmp_path / "out"
    start = time.time()
    done = subprocess.run([sys.executable, "-m", "keras_bert_lab.cli", "pretrain", "--corpus",
                           "wikitext2", "--size", "tiny", "--output", str(out),
                           "--data-parallel"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"kbl: error: The coordinator at {address} could not be reached within 2 s" \
        in done.stderr
    assert time.time() - start < 60 and not out.exists()


def test_launch_refuses_what_would_not_be_one_job():
    with pytest.raises(ConfigError, match="Add --data-parallel or --model-parallel"):
        launch.launch(["pretrain", "--size", "tiny", "--output", "x"], processes=2)
    with pytest.raises(ConfigError, match="runs a training command"):
        launch.launch(["models"], processes=2)
    with pytest.raises(ConfigError, match="HOST:PORT"):
        launch.launch(["pretrain", "--data-parallel"], processes=2, coordinator="localhost")
    env = launch.child_environment({"XLA_FLAGS": "--xla_force_host_platform_device_count=8 "
                                                 "--xla_dump_to=/tmp/x"}, "h:1", 2, 1, 4)
    assert env["XLA_FLAGS"] == "--xla_dump_to=/tmp/x --xla_force_host_platform_device_count=4"
    assert (env[launch.ADDRESS], env[launch.COUNT], env[launch.INDEX]) == ("h:1", "2", "1")
