"""ULMFiT's techniques on every model: layer groups, discriminative rates, slanted triangular
rates, gradual unfreezing (in fit on each backend)."""

import math

import keras
import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.bert.backbone import BertBackbone
from keras_bert_lab.models.bert.config import BertConfig
from keras_bert_lab.models.gpt.backbone import GPTBackbone
from keras_bert_lab.pipelines.batches import batches
from keras_bert_lab.models.bert.classifier import BertClassifier
from keras_bert_lab.models.gpt.classifier import GPTClassifier
from keras_bert_lab.training.finetune import fit_best_epoch
from keras_bert_lab.training.optimizers import adamw
from keras_bert_lab.training.schedules import SlantedTriangular
from keras_bert_lab.training.transfer import (GradualUnfreezing, freeze_below,
                                              group_learning_rate_factors, layer_groups)

CONFIG = BertConfig.from_size("tiny", vocabulary_size=300, max_positions=32)


def _classifier():
    keras.utils.set_random_seed(3)
    config = BertConfig.from_dict({**CONFIG.to_dict(), "dropout": 0.0, "attention_dropout": 0.0})
    return BertClassifier(BertBackbone(config), num_classes=2, dropout=0.0)


def _data(n=16, length=12):
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(1, 300, (n, length)).astype("int32"),
         "segment_ids": np.zeros((n, length), "int32"),
         "padding_mask": np.ones((n, length), "int32")}
    return x, rng.integers(0, 2, n)


def _group_of(groups):
    return {v.path: depth for depth, group in enumerate(groups) for v in group}


def test_layer_groups_cover_bert_and_gpt_bottom_up():
    bert = _classifier()
    groups = layer_groups(bert)
    assert len(groups) == CONFIG.num_layers + 2
    where = _group_of(groups)
    assert sorted(where) == sorted(v.path for v in bert.weights)   # each weight exactly once
    assert where["embeddings/token_embedding/embeddings"] == 0
    assert where["encoder_layer_0/ffn_in/kernel"] == 1
    assert where["encoder_layer_1/ffn_in/kernel"] == 2
    assert where["pooler/kernel"] == where["classifier/kernel"] == 3
    gpt = GPTClassifier(GPTBackbone({**GPTBackbone("tiny").config.to_dict(), "vocabulary_size": 64}),
                        num_classes=3)
    where = _group_of(layer_groups(gpt))
    assert where["embeddings/position_embedding"] == 0
    assert max(where.values()) == gpt.backbone.config.num_layers + 1
    assert {p for p, d in where.items() if d == max(where.values())} == {
        v.path for v in gpt.weights if not v.path.startswith(("embeddings/", "decoder_layer_"))}


def test_discriminative_rates_follow_eta_over_2_6():
    model = _classifier()
    factors = group_learning_rate_factors(model, 1 / 2.6)
    where = _group_of(layer_groups(model))
    top = max(where.values())
    for path, depth in where.items():
        assert factors[path] == pytest.approx(2.6 ** -(top - depth), rel=1e-12), path
    with pytest.raises(ConfigError, match="1/2.6"):
        group_learning_rate_factors(model, 2.6)


def test_slanted_triangular_equals_equation_3():
    """Howard & Ruder (2018) eq. 3, written out here independently."""
    total, cut_frac, ratio, peak = 250, 0.2, 16.0, 0.02
    schedule = SlantedTriangular(peak, total, cut_frac, ratio)
    cut = math.floor(total * cut_frac)
    for t in (0, 1, 17, 49, 50, 51, 120, 249, 250):
        p = t / cut if t < cut else 1 - (t - cut) / (cut * (1 / cut_frac - 1))
        expected = peak * (1 + p * (ratio - 1)) / ratio
        assert float(keras.ops.convert_to_numpy(schedule(t))) == pytest.approx(expected, rel=1e-6)


class _Recorder(keras.callbacks.Callback):
    """Per epoch: the trainable paths at its start and the weights that moved during it."""

    def __init__(self):
        super().__init__()
        self.trainable, self.moved, self._before = [], [], None

    def on_epoch_begin(self, epoch, logs=None):
        self.trainable.append({v.path for v in self.model.trainable_variables})
        self._before = {v.path: keras.ops.convert_to_numpy(v) for v in self.model.weights}

    def on_epoch_end(self, epoch, logs=None):
        self.moved.append({v.path for v in self.model.weights
                           if not np.array_equal(keras.ops.convert_to_numpy(v),
                                                 self._before[v.path])})


def test_gradual_unfreezing_trains_one_more_group_each_epoch_in_one_fit():
    model = _classifier()
    groups = layer_groups(model)
    model.compile(optimizer=adamw(model, learning_rate=1e-2, weight_decay=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    recorder = _Recorder()
    x, y = _data()
    epochs = len(groups) + 1
    model.fit(x, y, batch_size=8, epochs=epochs, verbose=0, shuffle=False,
              callbacks=[GradualUnfreezing(), recorder])
    for epoch in range(epochs):
        top = min(epoch + 1, len(groups))
        wanted = {v.path for g in groups[len(groups) - top:] for v in g}
        assert recorder.trainable[epoch] == wanted, epoch
        assert recorder.moved[epoch] == wanted, epoch     # frozen groups: no step, no decay
    # The step counter ran on through every rebuild of the optimizer.
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2 * epochs


def test_rebuilt_optimizer_keeps_the_moments_of_the_groups_that_trained():
    model = _classifier()
    model.compile(optimizer=adamw(model, learning_rate=1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    unfreezing = GradualUnfreezing()
    x, y = _data()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[unfreezing])
    moments = {v.path: keras.ops.convert_to_numpy(v) for v in model.optimizer.variables
               if "classifier_kernel" in v.path}
    assert moments and all(np.abs(m).max() > 0 for m in moments.values())
    unfreezing.on_epoch_begin(1)    # what fit does at the next epoch
    carried = {v.path: keras.ops.convert_to_numpy(v) for v in model.optimizer.variables}
    for path, value in moments.items():
        np.testing.assert_array_equal(carried[path], value)
    fresh = [p for p in carried if "encoder_layer_1_ffn_in_kernel" in p]
    assert fresh and all(not np.abs(carried[p]).any() for p in fresh)


def test_fit_best_epoch_top_only_and_slanted(tmp_path):
    model = _classifier()
    x, y = _data()
    before = {v.path: keras.ops.convert_to_numpy(v) for v in model.weights}
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(loss=loss)
    report = fit_best_epoch(model, batches(x, y, batch_size=8), lambda m: {"score": 0.5},
                            "score", tmp_path, epochs=2, learning_rate=1e-2, schedule="slanted",
                            unfreeze="top", verbose=0)
    assert report["best_epoch"] == 1
    top = {v.path for v in layer_groups(model)[-1]}
    moved = {v.path for v in model.weights
             if not np.array_equal(keras.ops.convert_to_numpy(v), before[v.path])}
    assert moved == top
    assert len(model.trainable_variables) == len(model.weights)   # all trainable again
    with pytest.raises(ConfigError, match="unfreeze"):
        fit_best_epoch(model, batches(x, y, batch_size=8), lambda m: {"score": 0.5}, "score",
                       tmp_path, unfreeze="bottom")


def test_freeze_below_names_the_range():
    model = _classifier()
    with pytest.raises(ConfigError, match="1 … 4"):
        freeze_below(model, 5)
    with pytest.raises(ConfigError, match="start"):
        GradualUnfreezing(start=0)
