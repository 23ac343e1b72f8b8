import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
from keras_bert_lab.training.optimizers import decayed_variables
from tests.conftest import padded_pair_batch, to_numpy

CONFIG = BertConfig.from_size("tiny", vocabulary_size=2000, max_positions=64)


def pretraining_batch(batch_size=8, length=32, predictions=5, seed=0, vocabulary_size=2000):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(length // 2, length + 1, size=batch_size)
    lengths[0] = length
    x = padded_pair_batch(vocabulary_size=vocabulary_size, lengths=tuple(lengths),
                          first_lengths=tuple(n // 2 - 1 for n in lengths), seed=seed)
    positions = np.zeros((batch_size, predictions), "int32")
    weights = np.zeros((batch_size, predictions), "float32")
    for row, n in enumerate(lengths):
        count = min(predictions, max(1, int(round(0.15 * n))))
        positions[row, :count] = np.sort(rng.choice(np.arange(1, n - 1), count, replace=False))
        weights[row, :count] = 1
    mask_ids = np.take_along_axis(x["token_ids"], positions, axis=1)
    x["token_ids"] = x["token_ids"].copy()
    np.put_along_axis(x["token_ids"], positions, 103, axis=1)  # [MASK] where selected
    x["mask_positions"] = positions
    y = {"mlm": mask_ids, "nsp": rng.integers(0, 2, size=batch_size).astype("int32")}
    sw = {"mlm": weights, "nsp": np.ones(batch_size, "float32")}
    return x, y, sw


def fit_one_batch(model, x, y, sw, steps):
    """``steps`` updates on the same batch, as few long epochs (epoch ends are slow on some
    backends' array adapters)."""
    repeat = lambda tree: {k: np.concatenate([v] * (steps // 3)) for k, v in tree.items()}  # noqa
    return model.fit(repeat(x), repeat(y), sample_weight=repeat(sw), batch_size=len(y["nsp"]),
                     epochs=3, shuffle=False, verbose=0).history


def test_overfits_one_batch():
    model = BertPretrainer(BertBackbone(CONFIG))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    x, y, sw = pretraining_batch()
    first = model.evaluate(x, y, sample_weight=sw, return_dict=True, verbose=0)["mlm_loss"]
    fit_one_batch(model, x, y, sw, steps=60)
    final = model.evaluate(x, y, sample_weight=sw, return_dict=True, verbose=0)
    last = final["mlm_loss"]
    assert last <= 0.1 * first, (first, last)
    assert final["mlm_accuracy"] == 1.0 and final["nsp_accuracy"] == 1.0


def test_fit_on_tf_dataset():
    tf = pytest.importorskip("tensorflow")
    model = BertPretrainer(BertBackbone(CONFIG))
    model.compile()
    x, y, sw = pretraining_batch(batch_size=16)
    ds = tf.data.Dataset.from_tensor_slices((x, y, sw)).batch(4)
    history = model.fit(ds, epochs=2, verbose=0, shuffle=False).history
    assert np.isfinite(history["loss"]).all() and history["loss"][-1] < history["loss"][0]


def test_masked_lm_loss_ignores_padded_predictions():
    model = BertPretrainer(BertBackbone(CONFIG))
    model.compile()
    x, y, sw = pretraining_batch()
    base = model.evaluate(x, y, sample_weight=sw, return_dict=True, verbose=0)["mlm_loss"]
    y_changed = {"mlm": np.where(sw["mlm"] > 0, y["mlm"], 7), "nsp": y["nsp"]}
    changed = model.evaluate(x, y_changed, sample_weight=sw, return_dict=True, verbose=0)
    assert abs(changed["mlm_loss"] - base) < 1e-5


def test_decoder_is_tied_to_token_embedding():
    model = BertPretrainer(BertBackbone(CONFIG))
    names = [v.path for v in model.trainable_variables]
    assert len(names) == len(set(names))
    shared = {id(v) for v in model.backbone.weights}
    head_own = [v for v in model.masked_lm_head.weights if id(v) not in shared]
    assert sum(int(np.prod(v.shape)) for v in head_own) == 128 * 128 + 3 * 128 + 2000
    assert model.count_params() == (CONFIG.num_parameters() + 128 * 128 + 3 * 128 + 2000
                                    + 2 * 128 + 2)
    x, _, _ = pretraining_batch()
    before = to_numpy(model(x)["mlm"])
    table = model.backbone.token_embedding.embeddings
    table.assign(table * 2.0)
    assert not np.allclose(to_numpy(model(x)["mlm"]), before)


def test_weight_decay_rule():
    model = BertPretrainer(BertBackbone(CONFIG))
    decayed = {v.path for v in decayed_variables(model)}
    assert model.backbone.token_embedding.embeddings.path in decayed
    assert all(len(v.shape) >= 2 for v in decayed_variables(model))
    model.compile()
    optimizer = model.optimizer
    for v in model.trainable_variables:
        assert optimizer._use_weight_decay(v) == (len(v.shape) >= 2), v.path


def test_decoder_stays_tied_after_a_keras_round_trip(tmp_path):
    model = BertPretrainer(BertBackbone(CONFIG))
    path = str(tmp_path / "pretrainer.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.masked_lm_head.token_embedding is restored.backbone.token_embedding


def test_mixed_bfloat16_trains():
    keras.config.set_dtype_policy("mixed_bfloat16")
    model = BertPretrainer(BertBackbone(CONFIG))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    x, y, sw = pretraining_batch()
    out = model(x)
    assert keras.backend.standardize_dtype(out["mlm"].dtype) == "float32"
    assert keras.backend.standardize_dtype(out["nsp"].dtype) == "float32"
    hidden = model.backbone(x)["sequence_output"]
    assert keras.backend.standardize_dtype(hidden.dtype) == "bfloat16"
    assert all(keras.backend.standardize_dtype(v.dtype) == "float32" for v in model.weights)
    history = fit_one_batch(model, x, y, sw, steps=30)
    assert np.isfinite(history["loss"]).all()
    assert history["mlm_loss"][-1] < 0.5 * history["mlm_loss"][0]
