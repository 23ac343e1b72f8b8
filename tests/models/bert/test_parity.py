"""Numerical parity with Hugging Face ``transformers.BertForPreTraining`` given the same weights."""

import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
from keras_bert_lab.models.bert.hf_weights import (config_to_hf, export_hf_weights,
                                                load_hf_weights)
from tests.conftest import padded_pair_batch, to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-5
CONFIG = BertConfig.from_size("tiny", num_layers=3, num_heads=4)  # heads > 2 exercises the split


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(**config_to_hf(CONFIG))
    hf = transformers.BertForPreTraining(hf_config).eval()
    # A fresh HF model has zero biases and unit LayerNorms: randomise them so a swapped or
    # transposed tensor cannot hide.
    with torch.no_grad():
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if name.endswith("LayerNorm.weight") else 0.0, std=0.1)
    ours = BertPretrainer(BertBackbone(CONFIG))
    load_hf_weights(ours, {k: v.numpy() for k, v in hf.state_dict().items()})
    return hf, ours


def hf_forward(hf, batch, **kwargs):
    with torch.no_grad():
        return hf(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                  token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
                  output_hidden_states=True, **kwargs)


def test_backbone_outputs_match_transformers(models):
    hf, ours = models
    batch = padded_pair_batch()
    expected = hf_forward(hf, batch)
    with torch.no_grad():
        hf_pooled = hf.bert.pooler(expected.hidden_states[-1]).numpy()
    got = ours.backbone(batch)
    real = batch["padding_mask"].astype(bool)
    assert len(got["hidden_states"]) == CONFIG.num_layers + 1
    for ours_state, hf_state in zip(got["hidden_states"], expected.hidden_states):
        # every position, padded ones included: both models let padding attend to real tokens only
        np.testing.assert_allclose(to_numpy(ours_state), hf_state.numpy(), atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(to_numpy(got["sequence_output"])[real],
                               expected.hidden_states[-1].numpy()[real], atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(to_numpy(got["pooled_output"]), hf_pooled, atol=TOLERANCE, rtol=0)


def test_pretraining_heads_and_loss_match_transformers(models):
    hf, ours = models
    batch = padded_pair_batch()
    positions = np.array([[1, 5, 12, 20], [2, 9, 14, 0], [3, 6, 0, 0]], "int32")
    weights = np.array([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]], "float32")
    rng = np.random.default_rng(1)
    mask_ids = rng.integers(0, CONFIG.vocabulary_size, size=positions.shape).astype("int32")
    nsp_labels = np.array([0, 1, 1], "int32")
    labels = np.full(batch["token_ids"].shape, -100, "int64")
    for row in range(len(positions)):
        for pos, label, w in zip(positions[row], mask_ids[row], weights[row]):
            if w:
                labels[row, pos] = label
    expected = hf_forward(hf, batch, labels=torch.tensor(labels),
                          next_sentence_label=torch.tensor(nsp_labels, dtype=torch.long))
    features = dict(batch, mask_positions=positions)
    got = ours(features)
    hf_mlm = np.take_along_axis(expected.prediction_logits.numpy(), positions[..., None], axis=1)
    np.testing.assert_allclose(to_numpy(got["mlm"]), hf_mlm, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(to_numpy(got["nsp"]), expected.seq_relationship_logits.numpy(),
                               atol=TOLERANCE, rtol=0)
    ours.compile()
    loss = ours.evaluate(features, {"mlm": mask_ids, "nsp": nsp_labels},
                         sample_weight={"mlm": weights, "nsp": np.ones(3, "float32")},
                         return_dict=True, verbose=0)["loss"]
    assert abs(loss - expected.loss.item()) < 1e-4 * max(1.0, abs(loss))


def test_export_round_trip_loads_into_transformers(models):
    hf, ours = models
    exported = export_hf_weights(ours)
    fresh = transformers.BertForPreTraining(transformers.BertConfig(**config_to_hf(CONFIG))).eval()
    result = fresh.load_state_dict({k: torch.from_numpy(v) for k, v in exported.items()},
                                   strict=False)
    assert not result.unexpected_keys
    assert set(result.missing_keys) <= {"bert.embeddings.position_ids"}
    batch = padded_pair_batch(seed=3)
    a, b = hf_forward(hf, batch), hf_forward(fresh, batch)
    np.testing.assert_allclose(a.prediction_logits.numpy(), b.prediction_logits.numpy(), atol=1e-6)
