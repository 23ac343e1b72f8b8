"""UlmfitClassifier: concat pooling against NumPy on the exposed states, padding invariance, BPT3C
(only the last max_len tokens are trained), fit, layer groups and serialisation."""

import keras
import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.awd_lstm.backbone import AwdLstmBackbone
from keras_bert_lab.models.awd_lstm.config import AwdLstmConfig
from keras_bert_lab.models.awd_lstm.ulmfit_classifier import UlmfitClassifier
from tests.conftest import to_numpy

V, MAX_LEN = 40, 4
# one LSTM layer (E → E) keeps compilation short; BPT3C is checked on two
CONFIG = AwdLstmConfig.from_size("tiny", vocabulary_size=V, num_layers=1)
IDS = np.array([[5, 6, 7, 8, 9, 10, 11, 12], [13, 14, 15, 16, 17, 0, 0, 0],
                [18, 19, 0, 0, 0, 0, 0, 0]], "int32")
MASK = (IDS > 0).astype("int32")
X = {"token_ids": IDS, "padding_mask": MASK}


@pytest.fixture(scope="module")
def model():
    model = UlmfitClassifier(AwdLstmBackbone(CONFIG), num_classes=3, max_len=MAX_LEN)
    for layer in model.head:  # non-trivial batch-norm statistics
        if isinstance(layer, keras.layers.BatchNormalization):
            for v in layer.weights:
                v.assign(np.random.default_rng(1).uniform(0.5, 1.5, v.shape).astype("float32"))
    return model


def test_concat_pooling_equals_numpy_on_the_exposed_states(model):
    """[h_T, max, mean] of the last layer's raw states (the backbone's hidden_states[-1]) over
    each row's last max_len real tokens; h_T at the last real token."""
    pooled = keras.Model(model.inputs, model.pooling.output).predict_on_batch(X)
    hidden = model.backbone.predict_on_batch(X)["hidden_states"][-1]
    for row, length in enumerate(MASK.sum(1)):
        span = hidden[row, max(0, length - MAX_LEN):length]
        expected = np.concatenate([hidden[row, length - 1], span.max(0), span.mean(0)])
        np.testing.assert_allclose(pooled[row], expected, atol=1e-6)
    assert pooled.shape == (3, 3 * CONFIG.embedding_dim)


def test_each_row_gets_what_it_gets_alone(model):
    batched = model.predict_on_batch(X)
    assert batched.shape == (3, 3) and batched.dtype == np.float32
    for row, length in ((1, 5), (2, 2)):
        alone = model.predict_on_batch({k: v[row:row + 1, :length] for k, v in X.items()})
        np.testing.assert_allclose(alone[0], batched[row], atol=1e-5)


def test_fit_trains_only_the_last_max_len_tokens():
    """BPT3C: after SGD steps (no dropout), words seen only before a row's last max_len tokens
    keep their embeddings (their gradient stops at the state) while the head, the LSTMs and the
    words inside the span move; with max_len=None every word moves."""
    labels = np.array([0, 2, 1])
    early, late = [5, 6, 7, 8, 13], [9, 10, 11, 12, 14, 15, 16, 17, 18, 19]
    for max_len, frozen, layers in ((MAX_LEN, early, 2), (None, [], 1)):
        config = CONFIG.with_dropouts("awd_lstm", 0.0)
        config = AwdLstmConfig.from_dict({**config.to_dict(), "num_layers": layers})
        model = UlmfitClassifier(AwdLstmBackbone(config), num_classes=3, max_len=max_len)
        model.compile(optimizer=keras.optimizers.SGD(0.5))
        table = to_numpy(model.backbone.token_embedding.embeddings).copy()
        before = [to_numpy(v).copy() for v in model.trainable_variables]
        history = model.fit(X, labels, epochs=3, batch_size=3, verbose=0).history
        assert np.isfinite(history["loss"]).all()
        assert all(not np.array_equal(b, to_numpy(v))
                   for b, v in zip(before, model.trainable_variables))
        moved = np.abs(to_numpy(model.backbone.token_embedding.embeddings) - table).max(-1)
        assert (moved[frozen] == 0).all()
        assert (moved[[w for w in early + late if w not in frozen]] > 0).all()


def test_layer_groups_add_the_head_on_top_and_cover_every_weight_once(model):
    groups = model.layer_groups()
    assert [[layer.name for layer in g] for g in groups][:-1] == [
        ["token_embedding"], ["lstm_0"]]
    assert [layer.name for layer in groups[-1]] == [
        "head_norm_0", "head_dense_0", "head_norm_1", "head_dense_1"]
    listed = [w.path for g in groups for layer in g for w in layer.weights]
    assert sorted(listed) == sorted(w.path for w in model.weights)
    assert model.dropout == (CONFIG.output_dropout, 0.1)          # fastai's head dropouts


def test_keras_and_preset_round_trips(tmp_path, model):
    expected = model.predict_on_batch(X)
    model.save(tmp_path / "clf.keras")
    loaded = keras.saving.load_model(tmp_path / "clf.keras")
    assert isinstance(loaded, UlmfitClassifier) and loaded.max_len == MAX_LEN
    np.testing.assert_array_equal(loaded.predict_on_batch(X), expected)
    preset = model.save_to_preset(tmp_path / "preset", vocabulary=[f"w{i}" for i in range(V)])
    again = UlmfitClassifier.from_preset(preset)
    arguments = lambda m: {k: v for k, v in m.get_config().items()  # noqa: E731
                           if k not in ("backbone", "name")}
    assert arguments(again) == arguments(model)
    np.testing.assert_array_equal(again.predict_on_batch(X), expected)


def test_arguments_are_checked():
    backbone = AwdLstmBackbone(CONFIG)
    with pytest.raises(ConfigError, match="two rates"):
        UlmfitClassifier(backbone, dropout=(0.1,))
    with pytest.raises(ConfigError, match="num_classes"):
        UlmfitClassifier(backbone, num_classes=0)
    with pytest.raises(ConfigError, match="max_len"):
        UlmfitClassifier(backbone, max_len=0)
