"""BertSpanQA: parity with ``transformers.BertForQuestionAnswering`` (logits and loss), training,
serialisation."""

import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig
from keras_bert_lab.models.bert.hf_weights import config_to_hf, load_hf_weights
from keras_bert_lab.models.bert.span_qa import BertSpanQA
from keras_bert_lab.tasks.losses import SpanCrossEntropy
from tests.conftest import padded_pair_batch, to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-5
CONFIG = BertConfig.from_size("tiny", num_layers=2, num_heads=4)


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    hf = transformers.BertForQuestionAnswering(
        transformers.BertConfig(**config_to_hf(CONFIG))).eval()
    with torch.no_grad():  # non-trivial biases and LayerNorms, so a swapped tensor cannot hide
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if name.endswith("LayerNorm.weight") else 0.0, std=0.1)
    ours = BertSpanQA(BertBackbone(CONFIG))
    state = {k: v.numpy() for k, v in hf.state_dict().items()}
    result = load_hf_weights(ours.backbone, {k: v for k, v in state.items()
                                             if not k.startswith("qa_outputs.")},
                             allow_partial=True)
    # HF's QA model has no pooler; ours keeps its (unused) pooler as initialised.
    assert all("pooler" in k for k in result["missing"]) and not result["unexpected"]
    ours.span_head.kernel.assign(state["qa_outputs.weight"].T)
    ours.span_head.bias.assign(state["qa_outputs.bias"])
    return hf, ours


def hf_forward(hf, batch, **kwargs):
    with torch.no_grad():
        return hf(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                  token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long), **kwargs)


def test_logits_match_transformers_at_every_position(models):
    hf, ours = models
    batch = padded_pair_batch(vocabulary_size=CONFIG.vocabulary_size, cls_id=2, sep_id=3, first_word_id=5)
    expected = hf_forward(hf, batch)
    got = ours(batch)
    for key in ("start_logits", "end_logits"):
        assert to_numpy(got[key]).dtype == np.float32
        # raw scores, padding included: the tensors HF's loss normalises over
        np.testing.assert_allclose(to_numpy(got[key]), getattr(expected, key).numpy(),
                                   atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize("starts, ends", [
    ([3, 1, 0], [7, 4, 0]),          # in range, one "no answer" ([CLS])
    ([3, 30, 2], [40, 5, 99]),       # ≥ T: ignored by HF (clamped to the ignore index T)
])
def test_loss_matches_transformers(models, starts, ends):
    hf, ours = models
    batch = padded_pair_batch(vocabulary_size=CONFIG.vocabulary_size, cls_id=2, sep_id=3, first_word_id=5)
    starts, ends = np.array(starts, "int32"), np.array(ends, "int32")
    expected = hf_forward(hf, batch, start_positions=torch.tensor(starts, dtype=torch.long),
                          end_positions=torch.tensor(ends, dtype=torch.long)).loss.item()
    ours.compile()
    loss = ours.evaluate(batch, {"start_logits": starts, "end_logits": ends}, return_dict=True,
                         verbose=0)["loss"]
    assert abs(loss - expected) < 1e-5 * max(1.0, abs(expected))


def test_span_loss_negative_positions_clamp_to_cls():
    logits = np.random.default_rng(0).normal(size=(2, 6)).astype("float32")
    expected = torch.nn.CrossEntropyLoss(ignore_index=6)(
        torch.tensor(logits), torch.tensor([-4, 2]).clamp(0, 6)).item()
    got = float(to_numpy(SpanCrossEntropy()(np.array([-4, 2]), logits)))
    assert abs(got - expected) < 1e-6
    assert float(to_numpy(SpanCrossEntropy()(np.array([6, 9]), logits))) == 0.0  # none counts


def test_unused_pooler_is_frozen():
    model = BertSpanQA(BertBackbone(BertConfig.from_size("tiny", vocabulary_size=64)))
    assert not any("pooler" in v.path for v in model.trainable_variables)
