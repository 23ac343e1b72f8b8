"""Training on 8 simulated devices gives 1 device's losses; layout maps and their errors.

The sharded runs need ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` before JAX is
imported, so they run in one child process (``tests/distribution/sharded_training.py``, always on
JAX) whose results the tests below read. The module runs once, under the JAX backend: the child
ignores the parent's backend, and the rest checks plain Python on variable paths.
"""

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

from keras_bert_lab.distribution import (check_backend, check_batch_size, check_layout,
                                         check_model, device_mesh, distribution_for, layout_map,
                                         parse_kind)
from keras_bert_lab.errors import ConfigError, InputError
from keras_bert_lab.models.awd_lstm.backbone import AwdLstmBackbone
from keras_bert_lab.models.awd_lstm.config import AwdLstmConfig
from keras_bert_lab.models.bert.backbone import BertBackbone
from keras_bert_lab.models.bert.config import BertConfig
from keras_bert_lab.models.gpt.backbone import GPTBackbone
from keras_bert_lab.models.gpt.config import GPTConfig
from keras_bert_lab.models.gpt.causal_lm import GPTCausalLM
from keras_bert_lab.models.bert.pretrainer import BertPretrainer

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="runs once: the sharded child process is JAX whatever the parent's backend")

ROOT = pathlib.Path(__file__).resolve().parents[2]
EIGHT = [f"cpu:{i}" for i in range(8)]  # device names: meshes are checked without devices
TOLERANCE = 1e-5  # relative, on every step's loss
TINY = dict(vocabulary_size=300, num_heads=8, max_positions=32, dropout=0.0, attention_dropout=0.0)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """The child's results (see its module docstring), run once for the module."""
    scratch = tmp_path_factory.mktemp("sharded")
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="2",
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") +
                          " --xla_force_host_platform_device_count=8").strip())
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-m", "tests.distribution.sharded_training", str(scratch / "out.json"),
         str(scratch / "checkpoints")], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads((scratch / "out.json").read_text())
    result["seconds"]["child process"] = round(time.time() - start, 1)
    print(json.dumps(result["seconds"]))
    return result


def relative(a, b):
    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    return float(np.max(np.abs(a - b) / np.abs(b)))


def test_every_mesh_gives_one_devices_losses(sharded):
    losses = sharded["losses"]
    one = losses["1 device"]
    assert sharded["devices"] == 8
    assert len(one) == 20 and one[-1] < one[0] - 0.5, one  # it learned: the check has teeth
    for kind in ("data", "model 2x4", "model 1x8"):
        assert len(losses[kind]) == 20
        assert relative(losses[kind], one) <= TOLERANCE, (kind, losses[kind], one)


def test_weights_are_sharded_as_the_layout_map_says(sharded):
    # The child asserted every weight's and Adam moment's sharding spec and shard shape; here
    # the map's claims themselves: heads and feed-forward split, norms and heads whole.
    for kind, model_ways in (("model 2x4", 4), ("model 1x8", 8)):
        layout = sharded["shardings"][kind]
        qkv = layout["encoder_layer_1/attention/qkv/kernel"]
        assert qkv == {"spec": [None, None, "model", None], "shard": [128, 3, 8 // model_ways, 16]}
        assert layout["encoder_layer_0/ffn_in/kernel"]["shard"] == [128, 512 // model_ways]
        assert layout["encoder_layer_0/ffn_out/kernel"]["shard"] == [512 // model_ways, 128]
        assert layout["encoder_layer_0/attention/output/kernel"]["shard"] == [8 // model_ways,
                                                                             16, 128]
        assert layout["embeddings/token_embedding/embeddings"]["shard"] == [300, 128 // model_ways]
        for whole in ("encoder_layer_0/ffn_norm/gamma", "pooler/kernel",
                      "masked_lm_head/transform/kernel", "next_sentence_head/kernel"):
            assert not any(layout[whole]["spec"]), whole
    assert all(not any(v["spec"]) for v in sharded["shardings"]["data"].values())
    assert "sharded as" in sharded["wrong_claim_caught"]  # the child's check does fail


def test_a_sharded_checkpoint_resumes_on_another_mesh(sharded):
    resumed, continued = sharded["resumed"], sharded["continued"]
    for route, losses in resumed.items():
        source = route.split(" -> ")[0]
        assert len(losses) == 2
        assert relative(losses, continued[source]) <= TOLERANCE, (route, losses, continued)
        # Before the restore the target had gone on past the checkpoint: without it, it differs.
        assert relative(sharded["stale"][route], continued[source]) > 100 * TOLERANCE
    assert set(resumed) == {"model 2x4 -> 1 device", "model 2x4 -> data", "1 device -> model 1x8"}


@pytest.fixture(scope="module")
def pretrainer():
    return BertPretrainer(BertBackbone(BertConfig.from_size("tiny", **TINY)))


def test_layout_map_covers_bert_and_its_heads(pretrainer):
    rules = layout_map(pretrainer, device_mesh((2, 4), EIGHT))
    expected = check_layout(pretrainer, rules)
    assert expected["encoder_layer_0/attention/qkv/bias"] == (None, "model", None)
    assert expected["embeddings/segment_embedding/embeddings"] == (None, "model")
    assert expected["masked_lm_head/output_bias"] == ()
    assert expected["encoder_layer_0/attention_norm/beta"] == ()
    # Head rules leave the heads' activations alone (Keras looks up "<layer>/output" too).
    assert rules["masked_lm_head/output"] is None and rules["next_sentence_head/output"] is None
    # From the config alone: the backbone's rules, without the heads (replicated by default).
    from_config = layout_map(pretrainer.backbone.config, device_mesh((2, 4), EIGHT))
    assert set(rules) - set(from_config) == {"masked_lm_head/.*(?<!/output)",
                                              "next_sentence_head/.*(?<!/output)"}
    # What the recipes check once the model is built under a distribution.
    parallel = distribution_for("model 2x4", pretrainer.backbone.config, devices=EIGHT)
    assert check_model(pretrainer, parallel) == expected
    data = check_model(pretrainer, distribution_for("data", devices=EIGHT))
    assert set(data.values()) == {()} and set(data) == set(expected)


def test_layout_map_covers_gpt():
    config = GPTConfig.from_size("tiny", vocabulary_size=300, max_positions=32)
    for model in (GPTBackbone(config), GPTCausalLM(GPTBackbone(config))):
        expected = check_layout(model, layout_map(model, device_mesh((4, 2), EIGHT)))
        assert expected["decoder_layer_1/attention/output/kernel"] == ("model", None, None)
        assert expected["decoder_layer_0/ffn_out/kernel"] == ("model", None)


def test_a_backbone_without_a_layout_map_says_to_use_data_parallel():
    lstm = AwdLstmBackbone(AwdLstmConfig.from_size("tiny", vocabulary_size=40, num_layers=1))
    with pytest.raises(ConfigError, match="AwdLstmConfig.*distribution_for\\('data'\\)"):
        layout_map(lstm, device_mesh((1, 8), EIGHT))


def test_a_rule_that_matches_no_variable_fails(pretrainer):
    rules = layout_map(pretrainer, device_mesh((2, 4), EIGHT))
    rules[r"encoder_layer_\d+/attention/query/kernel"] = (None, "model")  # a keras-hub-style name
    with pytest.raises(ConfigError, match=re.escape(r"encoder_layer_\d+/attention/query/kernel")):
        check_layout(pretrainer, rules)


def test_a_large_variable_no_rule_reaches_fails(pretrainer):
    rules = layout_map(pretrainer, device_mesh((2, 4), EIGHT))
    del rules[r"encoder_layer_\d+/ffn_out/kernel"]
    with pytest.raises(ConfigError, match="encoder_layer_0/ffn_out/kernel .* matches no layout"):
        check_layout(pretrainer, rules)


def test_a_rule_of_the_wrong_rank_or_size_fails(pretrainer):
    rules = layout_map(pretrainer, device_mesh((2, 4), EIGHT))
    rules["pooler/kernel"] = ("model",)  # exact paths win over the pooler's regex
    with pytest.raises(ConfigError, match="for pooler/kernel has 1 axes but the variable has"):
        check_layout(pretrainer, rules)
    rules = layout_map(pretrainer, device_mesh((2, 4), EIGHT))
    rules["next_sentence_head/kernel"] = (None, "model")  # (128, 2) over 4 devices
    with pytest.raises(ConfigError, match="dimension 2 cannot be split over the 4 devices"):
        check_layout(pretrainer, rules)
    rules = layout_map(pretrainer, device_mesh((2, 4), EIGHT))
    rules[r"encoder_layer_0/ffn_\w+/kernel"] = ()  # overlaps the feed-forward rules
    with pytest.raises(ConfigError, match="encoder_layer_0/ffn_in/kernel.*matches multiple"):
        check_layout(pretrainer, rules)


def test_a_mesh_that_is_not_the_device_count_fails(pretrainer):
    with pytest.raises(ConfigError, match=r"3x2 mesh needs 6 devices but 8 are available.*2x4"):
        device_mesh((3, 2), EIGHT)
    with pytest.raises(ConfigError, match="4x4 mesh needs 16 devices"):
        distribution_for("model 4x4", pretrainer, devices=EIGHT)


def test_a_model_axis_that_does_not_divide_the_model_fails():
    heads = BertConfig.from_size("tiny", **{**TINY, "num_heads": 4})
    with pytest.raises(ConfigError, match=r"model axis \(8 devices\) does not divide "
                                          r"BertConfig.num_heads \(4\).*among \[1, 2, 4\]"):
        distribution_for("model 1x8", heads, devices=EIGHT)
    distribution_for("model 2x4", heads, devices=EIGHT)
    width = BertBackbone(BertConfig.from_size("tiny", **{**TINY, "intermediate_size": 100}))
    with pytest.raises(ConfigError, match=r"BertConfig.intermediate_size \(100\)"):
        distribution_for("model 1x8", width, devices=EIGHT)
    gpt = GPTConfig.from_size("tiny", vocabulary_size=300, num_heads=2)
    with pytest.raises(ConfigError, match=r"GPTConfig.num_heads \(2\)"):
        layout_map(gpt, device_mesh((2, 4), EIGHT))


def test_a_batch_that_does_not_split_over_the_replicas_fails(pretrainer):
    data = distribution_for("data", devices=EIGHT)
    check_batch_size(data, 16)
    with pytest.raises(InputError, match="Batch size 12 .* 8 data-parallel replicas.* 8 or 16"):
        check_batch_size(data, 12)
    model = distribution_for("model 2x4", pretrainer, devices=EIGHT)
    check_batch_size(model, 6)
    with pytest.raises(InputError, match="Batch size 3 .* 2 data-parallel"):
        check_batch_size(model, 3)


def test_other_backends_are_told_to_use_jax():
    check_backend("jax")
    check_backend("jax", "model 2x4")
    check_backend("tensorflow", "data")  # MirroredStrategy (tests/distribution/test_mirrored.py)
    with pytest.raises(ConfigError, match="KERAS_BACKEND=jax .*no PyTorch implementation"):
        check_backend("torch")
    with pytest.raises(ConfigError, match="KERAS_BACKEND=jax .*model parallelism needs JAX"):
        check_backend("tensorflow", "model 2x4")


def test_kinds():
    assert parse_kind("data") == ("data", None)
    assert parse_kind("model 2x4") == parse_kind("Model:2X4") == ("model", (2, 4))
    for bad in ("model", "model 2by4", "tensor 2x4"):
        with pytest.raises(ConfigError, match="'data' .* or 'model BxM'"):
            parse_kind(bad)
    with pytest.raises(ConfigError, match="needs the backbone config"):
        distribution_for("model 2x4", devices=EIGHT)
