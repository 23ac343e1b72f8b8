"""Numerical parity with Hugging Face ``transformers``' ELECTRA classes given the same weights:
``ElectraModel`` hidden states, ``ElectraForPreTraining`` logits, ``ElectraForMaskedLM`` logits,
and both inside ``ElectraPretrainer``; export back to ``transformers`` too."""

import numpy as np
import pytest

from keras_bert_lab.models.electra.backbone import ElectraBackbone
from keras_bert_lab.models.electra.convert_hf import export_hf, load_hf_weights
from keras_bert_lab.models.electra.discriminator import ElectraDiscriminator
from keras_bert_lab.models.electra.masked_lm import ElectraMaskedLM
from keras_bert_lab.models.electra.pretrainer import ElectraPretrainer
from tests.conftest import to_numpy
from tests.models.electra.conftest import (ALL_POSITIONS, BATCH, CONFIG, GENERATOR, VOCABULARY,
                                           hf_forward, state)
from tests.presets.helpers import tiny_vocab

pytest.importorskip("torch")
pytest.importorskip("transformers")

TOLERANCE = 1e-5


def test_backbone_hidden_states_match_electra_model(hf_models):
    discriminator, _ = hf_models
    ours = ElectraBackbone(CONFIG)
    report = load_hf_weights(ours, state(discriminator.electra))
    assert not report["missing"]
    expected = hf_forward(discriminator.electra, BATCH).hidden_states
    got = ours(BATCH)["hidden_states"]
    assert len(got) == len(expected) == CONFIG.num_layers + 1
    for mine, theirs in zip(got, expected):
        np.testing.assert_allclose(to_numpy(mine), theirs.numpy(), atol=TOLERANCE, rtol=0)


def test_discriminator_logits_match_electra_for_pretraining(hf_models):
    discriminator, _ = hf_models
    ours = ElectraDiscriminator(ElectraBackbone(CONFIG))
    report = load_hf_weights(ours, state(discriminator))
    assert not report["new_heads"] and not report["missing"]
    expected = hf_forward(discriminator, BATCH).logits.numpy()
    np.testing.assert_allclose(to_numpy(ours(BATCH)), expected, atol=TOLERANCE, rtol=0)


def test_generator_logits_match_electra_for_masked_lm(hf_models):
    _, generator = hf_models
    ours = ElectraMaskedLM(ElectraBackbone(GENERATOR))
    report = load_hf_weights(ours, state(generator))
    assert not report["new_heads"] and not report["missing"]
    expected = hf_forward(generator, BATCH).logits.numpy()                 # (B, T, V)
    got = to_numpy(ours(dict(BATCH, mask_positions=ALL_POSITIONS))["mlm"])
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)


def test_pretrainer_holds_both_models(hf_models):
    """Both checkpoints in one ElectraPretrainer: its generator predicts as ElectraForMaskedLM,
    its discriminator, on the tokens the generator put in, as ElectraForPreTraining."""
    discriminator, generator = hf_models
    ours = ElectraPretrainer(ElectraBackbone(CONFIG), generator=GENERATOR, seed=3)
    report = load_hf_weights(ours, state(discriminator), state(generator))
    assert not report["new_heads"] and not report["missing"]
    weights = np.ones(ALL_POSITIONS.shape, "float32") * BATCH["padding_mask"]
    out = ours(dict(BATCH, mask_positions=ALL_POSITIONS, mask_ids=BATCH["token_ids"],
                    mask_weights=weights))
    np.testing.assert_allclose(to_numpy(out["mlm"]), hf_forward(generator, BATCH).logits.numpy(),
                               atol=TOLERANCE, rtol=0)
    replaced = to_numpy(out["replaced"]).astype(bool)
    # outside training the sample is a function of the input: the model's own corrupted input
    corrupted = to_numpy(ours.replace_tokens(BATCH["token_ids"], ALL_POSITIONS,
                                             BATCH["token_ids"], weights, out["mlm"])[0])
    assert replaced.any() and not replaced[BATCH["padding_mask"] == 0].any()
    np.testing.assert_array_equal(replaced, corrupted != BATCH["token_ids"])
    expected = hf_forward(discriminator, dict(BATCH, token_ids=corrupted)).logits.numpy()
    np.testing.assert_allclose(to_numpy(out["rtd"]), expected, atol=TOLERANCE, rtol=0)


def test_export_loads_in_transformers_with_the_same_outputs(hf_models, tmp_path):
    discriminator, generator = hf_models
    ours = ElectraPretrainer(ElectraBackbone(CONFIG), generator=GENERATOR)
    load_hf_weights(ours, state(discriminator), state(generator))
    out = export_hf(ours.save_to_preset(tmp_path / "preset", vocabulary=tiny_vocab(VOCABULARY)),
                    tmp_path / "hf")
    for name, original in (("discriminator", discriminator), ("generator", generator)):
        cls = type(original)
        reloaded = cls.from_pretrained(out / name).eval()
        np.testing.assert_allclose(hf_forward(reloaded, BATCH).logits.numpy(),
                                   hf_forward(original, BATCH).logits.numpy(), atol=1e-6, rtol=0)
