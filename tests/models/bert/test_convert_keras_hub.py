"""keras-hub ``BertBackbone`` presets out and back in; keras-hub itself is the reference."""

import json

import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone
from keras_bert_lab.models.bert.convert_keras_hub import export_keras_hub, import_keras_hub
from keras_bert_lab.errors import PresetError
from tests.presets.helpers import (CONFIG, assert_outputs_close, batch, max_abs_diff, outputs,
                                   random_pretrainer, tiny_vocab)

keras_hub = pytest.importorskip("keras_hub")


def exact_gelu(x):
    return keras.activations.gelu(x, approximate=False)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    ours = random_pretrainer(seed=3).backbone
    path = export_keras_hub(ours, tmp_path_factory.mktemp("kh") / "preset",
                            vocabulary=tiny_vocab(), lowercase=True)
    return ours, path


def test_keras_hub_loads_our_export_and_computes_the_same(exported):
    ours, path = exported
    kh = keras_hub.models.BertBackbone.from_preset(str(path))
    x = batch()
    expected = outputs(ours, x)
    got = {k: keras.ops.convert_to_numpy(v) for k, v in kh(x).items()}
    # keras-hub's BERT uses the tanh approximation of GELU: close, not equal ...
    assert 1e-6 < max_abs_diff(got["sequence_output"], expected["sequence_output"]) < 2e-2
    # ... and with the exact GELU swapped in, equal: every tensor went to its place.
    for layer in kh.transformer_layers:
        layer._feedforward_intermediate_dense.activation = exact_gelu
    got = {k: keras.ops.convert_to_numpy(v) for k, v in kh(x).items()}
    assert_outputs_close(got, expected, what="keras-hub (exact GELU)")
    tokenizer = keras_hub.models.BertTokenizer.from_preset(str(path))
    assert tokenizer.vocabulary_size() == CONFIG.vocabulary_size
    assert tokenizer.token_to_id("[CLS]") == 5 and tokenizer.lowercase


def test_ours_to_keras_hub_to_ours(exported, tmp_path):
    ours, path = exported
    preset = import_keras_hub(path, tmp_path / "preset")
    loaded = BertBackbone.from_preset(preset)
    assert loaded.config == ours.config
    for a, b in zip(ours.weights, loaded.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))
    x = batch(seed=1)
    assert loaded.preset_info.vocabulary == tuple(tiny_vocab())
    assert loaded.preset_info.tokenizer == {"lowercase": True, "class_name": "WordPieceTokenizer"}
    assert_outputs_close(outputs(loaded, x), outputs(ours, x))


def test_bad_keras_hub_presets(exported, tmp_path):
    ours, path = exported
    with pytest.raises(PresetError, match="not a keras-hub preset: no config.json"):
        import_keras_hub(tmp_path, tmp_path / "out")
    other = tmp_path / "other"
    other.mkdir()
    spec = json.loads((path / "config.json").read_text())
    (other / "config.json").write_text(json.dumps(dict(spec, class_name="GPT2Backbone")))
    with pytest.raises(PresetError, match="'GPT2Backbone'; only BertBackbone"):
        import_keras_hub(other, tmp_path / "out")
    (other / "config.json").write_text(json.dumps(spec))
    with pytest.raises(PresetError, match="lacks assets/tokenizer/vocabulary.txt"):
        import_keras_hub(other, tmp_path / "out")
    odd = BertBackbone(CONFIG.__class__.from_dict(dict(CONFIG.to_dict(), layer_norm_epsilon=1e-6)))
    with pytest.raises(PresetError, match="fixes LayerNorm epsilon at 1e-12"):
        export_keras_hub(odd, tmp_path / "odd", vocabulary=tiny_vocab())
    assert not (tmp_path / "odd").exists()
