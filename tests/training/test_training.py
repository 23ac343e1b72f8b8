import json
import os

import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
from keras_bert_lab.errors import TrainingError
from keras_bert_lab.training.checkpoints import (TrainingCheckpoint, list_checkpoints,
                                                 restore_checkpoint, save_checkpoint)
from keras_bert_lab.training.optimizers import FusedAdamW, adamw, lamb
from keras_bert_lab.training.transfer import group_learning_rate_factors
from keras_bert_lab.training.schedules import SlantedTriangular, WarmupLinearDecay
from tests.models.bert.test_pretrainer import pretraining_batch

CONFIG = BertConfig.from_size("tiny", vocabulary_size=500, max_positions=64)


def test_warmup_linear_decay_values():
    schedule = WarmupLinearDecay(2e-4, warmup_steps=100, total_steps=1000)
    values = {s: float(keras.ops.convert_to_numpy(schedule(s))) for s in (0, 50, 100, 550, 1000, 2000)}
    assert values[0] == 0.0
    assert values[50] == pytest.approx(1e-4)
    assert values[100] == pytest.approx(2e-4)   # warm-up end: the peak
    assert values[550] == pytest.approx(1e-4)
    assert values[1000] == pytest.approx(0.0, abs=1e-12)  # last step: the end rate
    assert values[2000] == pytest.approx(0.0, abs=1e-12)
    clone = WarmupLinearDecay.from_config(schedule.get_config())
    assert float(keras.ops.convert_to_numpy(clone(100))) == pytest.approx(2e-4)
    with pytest.raises(ValueError, match="warmup_steps"):
        WarmupLinearDecay(1e-4, warmup_steps=10, total_steps=5)


def test_slanted_triangular_values():
    schedule = SlantedTriangular(0.01, total_steps=1000, cut_fraction=0.1, ratio=32)
    at = lambda s: float(keras.ops.convert_to_numpy(schedule(s)))  # noqa: E731
    assert at(100) == pytest.approx(0.01)
    assert at(0) == pytest.approx(0.01 / 32)
    assert at(1000) == pytest.approx(0.01 / 32)
    assert at(50) < at(100) and at(550) < at(100)


@pytest.mark.parametrize("builder", [adamw, lamb])
def test_decay_excludes_biases_and_norms(builder):
    model = BertPretrainer(BertBackbone(CONFIG))
    optimizer = builder(model)
    optimizer.build(model.trainable_variables)
    decayed = [v for v in model.trainable_variables if optimizer._use_weight_decay(v)]
    kept = [v for v in model.trainable_variables if not optimizer._use_weight_decay(v)]
    assert all(len(v.shape) >= 2 for v in decayed) and all(len(v.shape) == 1 for v in kept)
    kept_names = {v.path.split("/")[-1] for v in kept}
    assert kept_names == {"bias", "gamma", "beta", "output_bias"}
    assert any("token_embedding" in v.path for v in decayed)


def test_layer_decay_scales_each_update():
    """One AdamW step with layer decay d moves block i by d**(L-i) times the plain step (decoupled
    weight decay included), the embeddings by d**(L+1), pooler and heads by 1 — in fit on each
    backend."""
    x, y, sw = pretraining_batch(batch_size=4, length=16, seed=3, vocabulary_size=500)

    def one_step(layer_decay):
        keras.utils.set_random_seed(7)
        config = BertConfig.from_dict({**CONFIG.to_dict(), "dropout": 0.0, "attention_dropout": 0.0})
        model = BertPretrainer(BertBackbone(config))
        model.compile(optimizer=adamw(model, learning_rate=1e-2, weight_decay=0.1,
                                      layer_decay=layer_decay))
        before = {v.path: keras.ops.convert_to_numpy(v) for v in model.trainable_variables}
        model.fit(x, y, sample_weight=sw, batch_size=4, epochs=1, verbose=0, shuffle=False)
        return model, {v.path: keras.ops.convert_to_numpy(v) - before[v.path]
                       for v in model.trainable_variables}

    _, plain = one_step(None)
    model, scaled = one_step(0.5)
    factors = group_learning_rate_factors(model, 0.5)
    assert factors["encoder_layer_1/ffn_in/kernel"] == 0.5
    assert factors["embeddings/token_embedding/embeddings"] == 0.125
    assert factors["pooler/kernel"] == 1.0
    for path, delta in plain.items():
        expected = factors[path] * delta
        np.testing.assert_allclose(scaled[path], expected, atol=1e-6, err_msg=path)
    assert np.abs(plain["encoder_layer_0/ffn_in/kernel"]).max() > 1e-3  # the step did move it
    with pytest.raises(ValueError, match="layer_decay"):
        adamw(model, layer_decay=1.5)


def test_fused_adamw_equals_keras_adamw():
    """Three steps of the fused update (TF kernel / torch in-place ops / Keras' on JAX) leave the
    weights and both slots where ``keras.optimizers.AdamW`` leaves them: decay, clipping and a
    warm-up schedule included."""
    batches = [pretraining_batch(batch_size=4, length=16, seed=s, vocabulary_size=500) for s in (1, 2, 3)]

    def train(optimizer_class):
        keras.utils.set_random_seed(11)
        config = BertConfig.from_dict({**CONFIG.to_dict(), "dropout": 0.0, "attention_dropout": 0.0})
        model = BertPretrainer(BertBackbone(config))
        optimizer = optimizer_class(learning_rate=WarmupLinearDecay(1e-2, 1, 10), weight_decay=0.1,
                                    beta_2=0.99, epsilon=1e-6, global_clipnorm=1.0)
        optimizer.exclude_from_weight_decay(var_list=[v for v in model.weights if len(v.shape) < 2])
        model.compile(optimizer=optimizer)
        for x, y, sw in batches:
            model.train_on_batch(x, y, sample_weight=sw)
        slots = {"optimizer/" + v.path.split("/", 1)[-1]: v for v in model.optimizer.variables}
        return {path: keras.ops.convert_to_numpy(v)
                for path, v in {**slots, **{v.path: v for v in model.trainable_variables}}.items()}

    fused, reference = train(FusedAdamW), train(keras.optimizers.AdamW)
    assert fused.keys() == reference.keys()
    for path, value in reference.items():
        np.testing.assert_allclose(fused[path], value, rtol=1e-5, atol=1e-6, err_msg=path)
    assert any(np.abs(v).max() > 0 for k, v in fused.items() if "momentum" in k)


def _run(model, batches, callbacks=()):
    for x, y, sw in batches:
        model.fit(x, y, sample_weight=sw, batch_size=len(y["nsp"]), epochs=1, verbose=0,
                  shuffle=False, callbacks=list(callbacks))


def _new_model(seed):
    keras.utils.set_random_seed(seed)
    model = BertPretrainer(BertBackbone(CONFIG))  # dropout 0.1: resume must restore RNG state too
    schedule = WarmupLinearDecay(1e-3, warmup_steps=2, total_steps=6)
    model.compile(optimizer=adamw(model, learning_rate=schedule))
    return model


def test_exact_resume(tmp_path):
    batches = [pretraining_batch(batch_size=4, length=16, seed=s, vocabulary_size=500) for s in range(6)]
    unbroken = _new_model(seed=7)
    _run(unbroken, batches)

    interrupted = _new_model(seed=7)
    callback = TrainingCheckpoint(str(tmp_path), every_steps=3, keep=2,
                                  extra_state=lambda: {"batches_seen": 3}, handle_signals=False)
    _run(interrupted, batches[:3], [callback])
    assert [os.path.basename(p) for p in list_checkpoints(str(tmp_path))] == ["ckpt-00000003"]

    resumed = _new_model(seed=99)  # different initial weights and RNG: all must come from disk
    meta = restore_checkpoint(resumed, str(tmp_path))
    assert meta["step"] == 3 and meta["extra"] == {"batches_seen": 3}
    assert int(keras.ops.convert_to_numpy(resumed.optimizer.iterations)) == 3
    _run(resumed, batches[meta["extra"]["batches_seen"]:])
    for a, b in zip(unbroken.variables, resumed.variables):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b),
                                   atol=1e-6, err_msg=a.path)


def test_checkpoints_are_pruned_and_atomic(tmp_path):
    model = _new_model(seed=1)
    model.optimizer.build(model.trainable_variables)
    for step in (1, 2, 3, 4):
        save_checkpoint(model, str(tmp_path), step, keep=2)
    os.makedirs(tmp_path / "ckpt-00000009.tmp")  # a write that was killed half-way
    assert [os.path.basename(p) for p in list_checkpoints(str(tmp_path))] == [
        "ckpt-00000003", "ckpt-00000004"]
    assert json.load(open(tmp_path / "ckpt-00000004" / "meta.json"))["step"] == 4


def test_restore_rejects_another_model(tmp_path):
    model = _new_model(seed=1)
    save_checkpoint(model, str(tmp_path), 1)
    other = BertPretrainer(BertBackbone(BertConfig.from_size("tiny", vocabulary_size=500,
                                                             max_positions=64, num_layers=1)))
    other.compile()
    with pytest.raises(TrainingError, match="variables"):
        restore_checkpoint(other, str(tmp_path))
    (tmp_path / "ckpt-00000001" / "state.npz").write_bytes(b"garbage")
    with pytest.raises(TrainingError, match="unreadable"):
        restore_checkpoint(model, str(tmp_path))
