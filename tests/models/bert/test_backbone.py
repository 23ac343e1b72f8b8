import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig
from keras_bert_lab.errors import InputError
from tests.conftest import padded_pair_batch, to_numpy

SMALL = BertConfig.from_size("tiny", vocabulary_size=1000, max_positions=64)


def test_outputs_and_padding_invariance():
    backbone = BertBackbone(SMALL)
    batch = padded_pair_batch(vocabulary_size=1000)
    out = backbone(batch)
    assert tuple(out["sequence_output"].shape) == (3, 24, 128)
    assert tuple(out["pooled_output"].shape) == (3, 128)
    assert len(out["hidden_states"]) == 3
    # The shortest row alone, unpadded, gives the same real-token states as inside the batch.
    alone = {k: v[2:3, :9] for k, v in batch.items()}
    np.testing.assert_allclose(to_numpy(backbone(alone)["sequence_output"])[0],
                               to_numpy(out["sequence_output"])[2, :9], atol=1e-5)


def test_functional_model_is_inspectable():
    backbone = BertBackbone(SMALL)
    assert sorted(t.name for t in backbone.inputs) == ["padding_mask", "segment_ids", "token_ids"]
    assert backbone.get_layer("encoder_layer_1") is backbone.encoder_layers[1]
    assert backbone.token_embedding.embeddings.shape == (1000, 128)


def test_sequence_longer_than_position_table():
    backbone = BertBackbone(SMALL)
    batch = {k: np.zeros((1, 65), "int32") for k in ("token_ids", "segment_ids", "padding_mask")}
    with pytest.raises(InputError, match="65 exceeds the position table"):
        backbone(batch)


@pytest.mark.parametrize("name, value, upper", [("token_ids", 1000, 1000),
                                                ("token_ids", -1, 1000),
                                                ("segment_ids", 2, 2)])
def test_out_of_range_ids_in_eager_mode(name, value, upper):
    backbone = BertBackbone(SMALL)
    batch = padded_pair_batch(vocabulary_size=1000)
    batch[name] = batch[name].copy()
    batch[name][0, 3] = value
    with pytest.raises(InputError, match=rf"'{name}' holds id {value} outside \[0, {upper}\)"):
        backbone(batch)


def test_missing_input_and_wrong_dtype():
    backbone = BertBackbone(SMALL)
    batch = padded_pair_batch(vocabulary_size=1000)
    with pytest.raises(InputError, match="lack \\['padding_mask'\\]"):
        backbone({k: v for k, v in batch.items() if k != "padding_mask"})
    with pytest.raises(InputError, match="'token_ids' must hold integer ids"):
        backbone(dict(batch, token_ids=batch["token_ids"].astype("float32")))
    with pytest.raises(InputError, match="takes a dict"):
        backbone(batch["token_ids"])
    with pytest.raises(InputError, match="disagree in shape"):
        backbone(dict(batch, segment_ids=batch["segment_ids"][:, :5]))


def test_keras_round_trip(tmp_path):
    backbone = BertBackbone(SMALL)
    batch = padded_pair_batch(vocabulary_size=1000)
    path = str(tmp_path / "backbone.keras")
    backbone.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, BertBackbone) and restored.config == SMALL
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(to_numpy(restored(batch)[key]), to_numpy(backbone(batch)[key]))


def test_out_of_range_ids_inside_compiled_predict():
    """The behaviour documented in BertBackbone's docstring, per backend."""
    backbone = BertBackbone(SMALL)
    batch = padded_pair_batch(vocabulary_size=1000)
    batch["token_ids"] = batch["token_ids"].copy()
    batch["token_ids"][0, 3] = 1500
    with pytest.raises(InputError, match="id 1500 outside"):   # NumPy: checked before tracing
        backbone.predict(batch, verbose=0)
    tensors = {k: keras.ops.convert_to_tensor(v) for k, v in batch.items()}
    backend = keras.backend.backend()
    if backend == "jax":
        out = backbone.predict(tensors, verbose=0)["sequence_output"]
        assert np.isnan(out[0]).all() and np.isfinite(out[1:]).all()
    else:
        expected = InputError if backend == "torch" else Exception
        with pytest.raises(expected):
            backbone.predict(tensors, verbose=0)


def test_predict_only_the_outputs_asked_for(tmp_path):
    """``predict(..., outputs=names)`` returns those outputs alone, equal to the full predict's;
    the weights are shared (a change shows in both), ids are still checked, a saved backbone
    holds no extra weights, and an unknown name lists the outputs there are."""
    from keras_bert_lab.errors import ConfigError

    backbone = BertBackbone(SMALL)
    batch = padded_pair_batch(vocabulary_size=1000)
    full = backbone.predict(batch, verbose=0)
    two = backbone.predict(batch, verbose=0, outputs=("sequence_output", "pooled_output"))
    assert sorted(two) == ["pooled_output", "sequence_output"]
    for key in two:
        np.testing.assert_allclose(two[key], full[key], atol=1e-6)
    one = backbone.predict_on_batch(batch, outputs="pooled_output")
    np.testing.assert_allclose(one["pooled_output"], full["pooled_output"], atol=1e-6)
    assert backbone.output_model(["pooled_output"]) is backbone.output_model("pooled_output")
    backbone.pooler.bias.assign(np.ones(128, "float32"))
    changed = backbone.predict_on_batch(batch, outputs="pooled_output")["pooled_output"]
    np.testing.assert_allclose(changed, backbone.predict_on_batch(batch)["pooled_output"],
                               atol=1e-6)
    assert np.abs(changed - one["pooled_output"]).max() > 1e-3
    bad = dict(batch, token_ids=np.where(batch["token_ids"] > 0, 1500, 0).astype("int32"))
    with pytest.raises(InputError, match="id 1500 outside"):
        backbone.predict(bad, verbose=0, outputs="pooled_output")
    with pytest.raises(ConfigError, match=r"outputs=\['pooler'\]: BertBackbone has the outputs "
                                          r"\['sequence_output', 'pooled_output', 'hidden_states'\]"):
        backbone.output_model("pooler")
    assert len(backbone.weights) == len(BertBackbone(SMALL).weights)
    path = str(tmp_path / "backbone.keras")
    backbone.save(path)
    restored = keras.saving.load_model(path)
    np.testing.assert_allclose(restored.predict_on_batch(batch)["pooled_output"], changed,
                               atol=1e-6)
