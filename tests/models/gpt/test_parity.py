"""Numerical parity with ``transformers.OpenAIGPTModel`` / ``OpenAIGPTLMHeadModel`` given the same
(random) weights, and the weight conversion both ways."""

import numpy as np
import pytest

from keras_bert_lab.models.gpt.backbone import GPTBackbone
from keras_bert_lab.models.gpt.config import GPTConfig
from keras_bert_lab.models.gpt.convert import (config_to_hf, export_hf_weights,
                                                       load_hf_weights, weights_from_hf,
                                                       weights_to_hf)
from keras_bert_lab.models.gpt.causal_lm import GPTCausalLM
from keras_bert_lab.pipelines.language_model import next_token_batch
from tests.conftest import to_numpy
from tests.models.gpt.test_backbone import predict

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-5
CONFIG = GPTConfig.from_size("tiny", vocabulary_size=400, num_layers=3, num_heads=4,
                             max_positions=40)  # heads > 2 exercises the split


def random_hf_lm(config=CONFIG, seed=0):
    """An ``OpenAIGPTLMHeadModel`` in eval mode whose biases and LayerNorms are random too (a
    fresh one has zero biases and unit norms, which would hide a swapped tensor)."""
    torch.manual_seed(seed)
    hf = transformers.OpenAIGPTLMHeadModel(
        transformers.OpenAIGPTConfig(**config_to_hf(config))).eval()
    with torch.no_grad():
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if ".ln_" in name and name.endswith("weight") else 0.0,
                              std=0.1)
    return hf


def hf_state(hf):
    return {k: v.detach().numpy() for k, v in hf.state_dict().items()}


def padded_batch(vocabulary_size=CONFIG.vocabulary_size, lengths=(17, 11, 4), seed=0):
    rng = np.random.default_rng(seed)
    token_ids = np.zeros((len(lengths), max(lengths)), "int32")
    padding_mask = np.zeros_like(token_ids)
    for row, length in enumerate(lengths):
        token_ids[row, :length] = rng.integers(0, vocabulary_size, length)
        padding_mask[row, :length] = 1
    return {"token_ids": token_ids, "padding_mask": padding_mask}


@pytest.fixture(scope="module")
def models():
    hf = random_hf_lm()
    ours = GPTCausalLM(GPTBackbone(CONFIG))
    report = load_hf_weights(ours, hf_state(hf))
    assert report == {"missing": [], "unexpected": []}
    return hf, ours


def hf_forward(hf, batch, **kwargs):
    with torch.no_grad():
        return hf(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
                  output_hidden_states=True, **kwargs)


def test_hidden_states_match_openai_gpt_model(models):
    hf_lm, ours = models
    base = transformers.OpenAIGPTModel(hf_lm.config).eval()
    base.load_state_dict(hf_lm.transformer.state_dict())  # the bare model, no prefix
    batch = padded_batch()
    with torch.no_grad():
        expected = base(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                        attention_mask=torch.tensor(batch["padding_mask"]),
                        output_hidden_states=True).hidden_states
    got = predict(ours.backbone, batch)
    assert len(got["hidden_states"]) == len(expected) == CONFIG.num_layers + 1
    for ours_state, hf_state_ in zip(got["hidden_states"], expected):
        # every position, padded ones included: both let a pad attend to the real tokens only
        np.testing.assert_allclose(ours_state, hf_state_.numpy(), atol=TOLERANCE, rtol=0)


def test_logits_and_loss_match_lm_head_model(models):
    hf, ours = models
    batch = padded_batch(seed=1)
    labels = np.where(batch["padding_mask"] > 0, batch["token_ids"], -100)
    expected = hf_forward(hf, batch, labels=torch.tensor(labels, dtype=torch.long))
    logits = predict(ours, batch)
    assert logits.dtype == np.float32
    np.testing.assert_allclose(logits, expected.logits.numpy(), atol=TOLERANCE, rtol=0)
    # The training loss: next-token cross-entropy averaged over real tokens (HF shifts inside).
    x, y, weights = next_token_batch(batch["token_ids"], batch["padding_mask"])
    ours.compile()
    loss = ours.loss(y, predict(ours, x), sample_weight=weights.astype("float32"))
    np.testing.assert_allclose(float(to_numpy(loss)), float(expected.loss), atol=TOLERANCE)


def test_state_dict_round_trip(models):
    hf, ours = models
    exported = export_hf_weights(ours)  # as OpenAIGPTLMHeadModel.state_dict() has it
    state = hf_state(hf)
    assert sorted(exported) == sorted(state)
    for key, value in state.items():
        np.testing.assert_array_equal(exported[key], value, err_msg=key)
    bare = weights_to_hf(weights_from_hf(state, CONFIG)[0], CONFIG)  # OpenAIGPTModel's names
    assert "tokens_embed.weight" in bare and "lm_head.weight" not in bare
    fresh = transformers.OpenAIGPTModel(hf.config)
    fresh.load_state_dict({k: torch.tensor(v) for k, v in bare.items()}, strict=True)


def test_conversion_errors_name_the_tensor(models):
    hf, _ = models
    state = hf_state(hf)
    with pytest.raises(ValueError, match="h.0.attn.c_attn.weight"):
        weights_from_hf({k: v for k, v in state.items() if "h.0.attn.c_attn.weight" not in k},
                        CONFIG)
    with pytest.raises(ValueError, match="multiple_choice_head"):
        weights_from_hf(dict(state, **{"multiple_choice_head.summary.bias": np.zeros(1)}), CONFIG)
    wide = dict(state, **{"transformer.h.1.mlp.c_fc.bias": np.zeros(7, "float32")})
    with pytest.raises(ValueError, match="Shape mismatch.*ffn_in/bias"):
        weights_from_hf(wide, CONFIG)
    weights, report = weights_from_hf(dict(state, extra=np.zeros(1)), CONFIG, allow_partial=True)
    assert report["unexpected"] == ["extra"] and len(weights) == 2 + 12 * CONFIG.num_layers
