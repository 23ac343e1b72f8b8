"""Child process of test_sharded_training: one tiny BERT trained on 1 and on 8 simulated devices.

Run as ``python -m tests.distribution.sharded_training OUT.json [CHECKPOINT_DIR]`` with
``KERAS_BACKEND=jax`` and ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` in the
environment (the flag only works before JAX is imported, hence a process of its own). It trains
the same BertPretrainer from the same initial weights on the same 20 batches without a
distribution, under DataParallel(8) and under ModelParallel 2×4 and 1×8, asserts inside that every
weight (and its Adam moments) is sharded as the layout map says, then resumes checkpoints written
on one mesh on another. Losses, shardings and timings go to OUT.json; the parent compares them.
"""

import contextlib
import json
import os
import sys
import tempfile
import time

import jax
import keras
import numpy as np

from keras_bert_lab.distribution import check_batch_size, check_model, distribution_for
from keras_bert_lab.models.bert.backbone import BertBackbone
from keras_bert_lab.models.bert.config import BertConfig
from keras_bert_lab.models.bert.pretrainer import BertPretrainer
from keras_bert_lab.training.checkpoints import restore_checkpoint, save_checkpoint
from keras_bert_lab.training.optimizers import adamw

STARTED = time.time()

CONFIG = BertConfig.from_size("tiny", vocabulary_size=300, num_heads=8, max_positions=32,
                              dropout=0.0, attention_dropout=0.0)
BATCH, LENGTH, MASKED, STEPS, RESUME_STEPS = 16, 32, 5, 20, 2
KINDS = ("1 device", "data", "model 2x4", "model 1x8")


def batches(count, seed=0):
    """``count`` fixed pretraining batches with something to learn, so the loss falls.

    Tokens follow a Zipf law (the output bias and embeddings learn it within a few steps), the
    masked positions hold a [MASK] id and predict the token that was there, and the next-sentence
    label says whether the sequence is longer than average; rows are padded to ragged lengths and
    some last masked positions carry weight 0.
    """
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, CONFIG.vocabulary_size - 4)
    zipf /= zipf.sum()
    out = []
    for _ in range(count):
        lengths = rng.integers(LENGTH // 2, LENGTH + 1, size=BATCH)
        mask = (np.arange(LENGTH)[None] < lengths[:, None]).astype("int32")
        tokens = (5 + rng.choice(len(zipf), size=(BATCH, LENGTH), p=zipf)).astype("int32") * mask
        segments = (np.arange(LENGTH)[None] >= (lengths // 2)[:, None]).astype("int32") * mask
        positions = np.stack([np.sort(rng.choice(np.arange(1, n - 1), MASKED, replace=False))
                              for n in lengths]).astype("int32")
        labels = np.take_along_axis(tokens, positions, axis=1)
        np.put_along_axis(tokens, positions, 4, axis=1)  # 4 plays [MASK]
        weights = np.ones((BATCH, MASKED), "float32")
        weights[:, -1] = rng.integers(0, 2, size=BATCH)
        x = {"token_ids": tokens, "segment_ids": segments, "padding_mask": mask,
             "mask_positions": positions}
        y = {"mlm": labels, "nsp": (lengths > 3 * LENGTH // 4).astype("int32")}
        out.append((x, y, {"mlm": weights, "nsp": np.ones(BATCH, "float32")}))
    return out


def build(weights):
    model = BertPretrainer(BertBackbone(CONFIG))
    model.set_weights(weights)
    # 10× BERT's rate, so that 20 steps move the weights far enough for any difference to show.
    model.compile(optimizer=adamw(model, learning_rate=1e-3), metrics=[], weighted_metrics=[])
    return model


def train(model, data):
    return [float(model.train_on_batch(x, y, sample_weight=w, return_dict=True)["loss"])
            for x, y, w in data]


def padded(axes, rank):
    axes = tuple(axes)
    return axes + (None,) * (rank - len(axes))


def check_shardings(model, expected, sizes):
    """Assert each weight, and its Adam moments, carries the layout the map gives it."""
    by_name = {v.path.split("/", 1)[-1]: v for v in model.optimizer.variables}
    report = {}
    for v in model.weights:
        axes = padded(expected[v.path], len(v.shape))
        shard = tuple(d // sizes[a] if a else d for d, a in zip(v.shape, axes))
        moments = [by_name[f"{v.path.replace('/', '_')}_{m}"] for m in ("momentum", "velocity")
                   if v.trainable]
        for value, name in [(v, v.path)] + [(m, m.path) for m in moments]:
            sharding = value.value.sharding
            got = padded(sharding.spec, len(v.shape))
            assert got == axes, f"{name}: sharded as {got}, the layout map says {axes}"
            got_shard = tuple(sharding.shard_shape(tuple(v.shape)))
            assert got_shard == shard, f"{name}: shards of {got_shard}, expected {shard}"
        report[v.path] = {"spec": [a for a in axes], "shard": list(shard)}
    return report


def scope(distribution):
    return distribution.scope() if distribution else contextlib.nullcontext()


def main(out_path, checkpoint_dir):
    assert keras.backend.backend() == "jax", keras.backend.backend()
    assert jax.device_count() == 8, f"{jax.device_count()} devices: set XLA_FLAGS before jax"
    data = batches(STEPS + RESUME_STEPS)
    first, after = data[:STEPS], data[STEPS:]
    reference = BertPretrainer(BertBackbone(CONFIG))  # a template: the weights' shapes
    # Fixed initial kernels and tables, N(0, 0.02) as BERT's, from NumPy (keras' own seeding
    # would import TensorFlow); biases and LayerNorms keep their constant initial values.
    rng = np.random.default_rng(1)
    weights = [(rng.standard_normal(w.shape) * CONFIG.initializer_range).astype(w.dtype)
               if w.ndim >= 2 else w for w in reference.get_weights()]
    result = {"devices": jax.device_count(), "losses": {}, "shardings": {}, "continued": {},
              "stale": {}, "resumed": {},
              "seconds": {"imports, reference": round(time.time() - STARTED, 1)}}
    runs, expected = {}, {}
    for kind in KINDS:  # 20 steps from the same weights on each mesh
        start = time.time()
        # The recipes' way: the distribution from the config, the model built in its scope.
        distribution = None if kind == "1 device" else distribution_for(kind, CONFIG)
        with scope(distribution):
            if distribution:
                check_batch_size(distribution, BATCH)
            model = build(weights)
            result["losses"][kind] = train(model, first)
            if distribution:
                mesh = distribution.device_mesh
                expected[kind] = check_model(model, distribution)
                result["shardings"][kind] = check_shardings(
                    model, expected[kind], dict(zip(mesh.axis_names, mesh.shape)))
        runs[kind] = distribution, model
        result["seconds"][kind] = round(time.time() - start, 1)
    # The sharding check can fail: the replicated model does not pass for a 2×4 one.
    try:
        check_shardings(runs["data"][1], expected["model 2x4"], {"batch": 2, "model": 4})
    except AssertionError as error:
        result["wrong_claim_caught"] = str(error)
    # Checkpoints written on one mesh, resumed on another: the next two steps (the second one
    # depends on the restored Adam moments) must match the run that went on unbroken. Every
    # model first goes on past the checkpoint, so anything a restore missed would show.
    start = time.time()
    saved = {}
    for kind, (distribution, model) in runs.items():
        with scope(distribution):
            if kind in ("1 device", "model 2x4"):
                saved[kind] = save_checkpoint(
                    model, os.path.join(checkpoint_dir, kind.replace(" ", "_")), STEPS)
            result["continued"][kind] = train(model, after)
    for source, target in (("model 2x4", "1 device"), ("model 2x4", "data"),
                           ("1 device", "model 1x8")):
        distribution, model = runs[target]
        with scope(distribution):
            # What the next steps would give without the restore (the model is past step 22).
            result["stale"][f"{source} -> {target}"] = train(model, after)
            meta = restore_checkpoint(model, saved[source])
            step = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
            assert meta["step"] == STEPS and step == STEPS, (meta["step"], step)
            result["resumed"][f"{source} -> {target}"] = train(model, after)
    result["seconds"]["checkpoints"] = round(time.time() - start, 1)
    result["seconds"]["child total"] = round(time.time() - STARTED, 1)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else scratch)
