"""The original ELMo release format: parity with the original biLM's activations, conversion both
ways, and clear errors for weights that do not fit.

References are allennlp 0.9.0's test fixtures, computed by the original TensorFlow biLM:
``lm_embeddings_{k}.hdf5`` holds, for sentence ``i`` of ``sentences.json[k]``, the top layer's
forward and backward outputs (2, n_tokens, P) without ``<S>``/``</S>``. They were computed in 10
batches of 3 — batch ``i`` is ``(sentences[0][i], sentences[1][i], sentences[2][i])`` — by a
model that carries each row's LSTM states from one batch to the next (allennlp's
``test_elmo_bilm`` reproduces them the same way). ``elmo_token_embeddings.hdf5`` holds the token encoder's output for
each word of ``vocab_test.txt``.
"""

import json
import shutil

import h5py
import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError, PresetError
from keras_bert_lab.models.elmo.backbone import ElmoBackbone
from keras_bert_lab.preprocessing.characters import character_ids
from keras_bert_lab.models.elmo.convert import (export_original, import_original,
                                                 read_original, weight_table)
from keras_bert_lab.presets.weights import named_variables
from tests.conftest import locate_or_skip, to_numpy

TOLERANCE = 1e-5
LENGTH = 64  # every fixture batch padded to one length: one compilation per model


@pytest.fixture(scope="module")
def fixture():
    paths = {part: locate_or_skip("elmo_fixture", part)
             for part in ("options", "weights", "sentences", "vocab", "token_embeddings")}
    paths["embeddings"] = [locate_or_skip("elmo_fixture", f"embeddings_{k}") for k in range(3)]
    return paths


@pytest.fixture(scope="module")
def bilm(fixture):
    return ElmoBackbone.from_original(fixture["options"], fixture["weights"])


def expected_top_layers(fixture):
    """``expected[k][i]``: (n_tokens, 2P) — forward and backward top outputs side by side."""
    expected = []
    for path in fixture["embeddings"]:
        with h5py.File(path, "r") as f:
            expected.append([np.concatenate([f[str(i)][0], f[str(i)][1]], -1)
                             for i in range(len(f))])
    return expected


def test_activations_equal_the_original_for_every_fixture_sentence(fixture, bilm):
    sentences = json.loads(fixture["sentences"].read_text())
    expected = expected_top_layers(fixture)
    stateful = bilm.stateful_model()
    states = np.zeros((3, bilm.state_size), "float32")
    errors = []
    for i in range(10):
        batch = [sentences[k][i].split() for k in range(3)]
        out = stateful.predict_on_batch({"character_ids": character_ids(batch,
                                                                         sequence_length=LENGTH),
                                         "states": states})
        states = out["states"]
        lengths = out["padding_mask"].sum(1)
        assert lengths.tolist() == [len(s) + 2 for s in batch]
        for k, tokens in enumerate(batch):
            got = out["hidden_states"][2][k, 1:len(tokens) + 1]   # without <S>, </S>
            assert got.shape == expected[k][i].shape
            errors.append(np.abs(got - expected[k][i]).max())
    assert len(errors) == 30 and max(errors) <= TOLERANCE, max(errors)
    # The first batch starts from zero states: the plain backbone gives the same.
    first = [sentences[k][0].split() for k in range(3)]
    out = bilm.predict_on_batch(character_ids(first, sequence_length=LENGTH))
    for k, tokens in enumerate(first):
        np.testing.assert_allclose(out["hidden_states"][2][k, 1:len(tokens) + 1], expected[k][0],
                                   atol=TOLERANCE, rtol=0)


def test_token_embeddings_equal_the_original_for_458_words(fixture, bilm):
    """Character ids and the token encoder: <S>, </S>, <UNK>, "•" and 454 words."""
    words = fixture["vocab"].read_text(encoding="utf-8").strip().split("\n")
    with h5py.File(fixture["token_embeddings"], "r") as f:
        expected = f["embedding"][...]
    assert len(words) == len(expected) == 458 and "•" in words and "<S>" in words
    ids = character_ids([words], add_boundaries=False, sequence_length=LENGTH * 8)
    got = to_numpy(bilm.char_cnn(ids))[0, :len(words)]
    assert np.abs(got - expected).max() <= TOLERANCE


def test_weight_table_names_every_variable_of_the_model(bilm):
    table = weight_table(bilm.config)
    assert sorted(e.name for e in table.values()) == sorted(n for n, _ in named_variables(bilm))


def test_preset_and_export_round_trip(fixture, bilm, tmp_path):
    vocabulary = fixture["vocab"].read_text(encoding="utf-8").strip().split("\n")
    preset = import_original(fixture["options"], fixture["weights"], tmp_path / "preset",
                             vocabulary=vocabulary)
    loaded = ElmoBackbone.from_preset(preset)
    assert loaded.config.vocabulary_size == 458
    for (name, got), (_, ref) in zip(named_variables(loaded), named_variables(bilm)):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(ref), err_msg=name)
    for source in (preset, loaded):   # a preset directory and a model both export
        out = export_original(source, tmp_path / f"export_{type(source).__name__}")
        assert json.loads((out / "options.json").read_text()) == {
            **json.loads(fixture["options"].read_text()), "n_tokens_vocab": 458}
        with h5py.File(fixture["weights"], "r") as original, \
                h5py.File(out / "lm_weights.hdf5", "r") as exported:
            names = []
            original.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset)
                                else None)
            assert len(names) == 33
            for name in names:
                np.testing.assert_array_equal(exported[name][...], original[name][...])


def test_preset_without_a_softmax_vocabulary(fixture, bilm, tmp_path):
    preset = import_original(fixture["options"], fixture["weights"], tmp_path / "preset")
    loaded = ElmoBackbone.from_preset(preset)
    assert loaded.config.vocabulary_size == 0
    assert ElmoBackbone.from_preset(loaded.save_to_preset(tmp_path / "again")).config == bilm.config


# ---- weights that do not fit ------------------------------------------------------------------
def edited(fixture, tmp_path, edit=None, options=None):
    """A copy of the fixture with its hdf5 edited and/or other options."""
    weights = tmp_path / "lm_weights.hdf5"
    shutil.copy(fixture["weights"], weights)
    if edit:
        with h5py.File(weights, "r+") as f:
            edit(f)
    base = json.loads(fixture["options"].read_text())
    for section, key, value in options or ():
        base[section][key] = value
    return base, weights


def test_missing_dataset_names_its_path(fixture, tmp_path):
    path = "RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_P_0"
    options, weights = edited(fixture, tmp_path, lambda f: f.__delitem__(path))
    with pytest.raises(PresetError, match=f"lacks dataset\\(s\\) {path}"):
        read_original(options, weights)


def test_wrong_shape_names_the_path(fixture, tmp_path):
    def edit(f):
        del f["CNN_high_1/b_carry"]
        f["CNN_high_1/b_carry"] = np.zeros(100, "float32")

    options, weights = edited(fixture, tmp_path, edit)
    with pytest.raises(PresetError,
                       match=r"CNN_high_1/b_carry \(124,\), but the file holds \(100,\)"):
        read_original(options, weights)


@pytest.mark.parametrize("section, key, value, message", [
    ("lstm", "dim", 32, r"lstm.dim makes dataset RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"),
    ("lstm", "projection_dim", 8, r"lstm.projection_dim makes dataset CNN_proj/W_proj"),
    ("char_cnn", "filters", [[1, 4], [2, 8], [3, 16], [4, 32], [6, 64]],
     r"char_cnn.filters\[4\] \(width\) makes dataset CNN/W_cnn_4"),
    ("char_cnn", "embedding", {"dim": 8}, r"char_cnn.embedding.dim makes dataset char_embed"),
    ("lstm", "n_layers", 3, r"Cell2/LSTMCell/W_0 \(lstm.n_layers is 3 in options.json\)"),
    ("lstm", "n_layers", 1, r"holds dataset\(s\) .*Cell1.* \(lstm.n_layers is 1\)"),
    ("char_cnn", "n_highway", 1, r"CNN_high_1/W_carry.*\(char_cnn.n_highway is 1\)"),
])
def test_options_that_disagree_with_the_weights_name_the_option(fixture, tmp_path, section, key,
                                                                value, message):
    options, weights = edited(fixture, tmp_path, options=[(section, key, value)])
    with pytest.raises(PresetError, match=message):
        read_original(options, weights)


def test_unreadable_files_and_bad_options(fixture, tmp_path):
    broken = tmp_path / "lm_weights.hdf5"
    broken.write_bytes(fixture["weights"].read_bytes()[:1000])
    with pytest.raises(PresetError, match="not a readable HDF5 file"):
        read_original(fixture["options"], broken)
    with pytest.raises(PresetError, match="does not exist"):
        read_original(fixture["options"], tmp_path / "missing.hdf5")
    options = json.loads(fixture["options"].read_text())
    with pytest.raises(PresetError, match="n_tokens_vocab=10 but the vocabulary given has 0"):
        import_original({**options, "n_tokens_vocab": 10}, fixture["weights"], tmp_path / "p")
    options["char_cnn"]["activation"] = "sigmoid"
    with pytest.raises(ConfigError, match="char_cnn.activation must be one of"):
        import_original(options, fixture["weights"], tmp_path / "p")
    with pytest.raises(ConfigError, match="activation must be one of"):
        ElmoBackbone.from_original(options, fixture["weights"])
