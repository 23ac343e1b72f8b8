"""GPT-1 presets: OpenAI's original release format (the allennlp test release), Hugging Face
directories both ways, and the optional ``merges.txt`` of the preset format."""

import importlib.util
import json
import pathlib
import sys
import tarfile
import types

import numpy as np
import pytest

from keras_bert_lab.errors import PresetError
from keras_bert_lab.models.gpt.backbone import GPTBackbone
from keras_bert_lab.presets import read_preset, write_preset
from keras_bert_lab.models.gpt.convert import (export_hf, export_hf_weights, import_hf,
                                                       import_openai, read_openai_release)
from keras_bert_lab.models.gpt.causal_lm import GPTCausalLM
from tests.conftest import locate_or_skip
from tests.models.gpt.test_backbone import predict

TOLERANCE = 1e-5
# The test release of allennlp: 2 layers, hidden 10, 50 tokens, 50 positions; its configs use 2
# heads (the heads are not stored in the release).
HEADS = 2


@pytest.fixture(scope="module")
def archive():
    return locate_or_skip("openai_gpt_fixture", "archive")


@pytest.fixture(scope="module")
def preset(archive, tmp_path_factory):
    with pytest.warns(UserWarning, match="<unk>"):  # it maps both 'ee</w>' and '<unk>' to 0
        return import_openai(archive, tmp_path_factory.mktemp("gpt") / "preset", num_heads=HEADS)


def allennlp_transformer(archive):
    """allennlp 0.9's ``OpenaiTransformer`` — an independent port of OpenAI's code that reads
    the release itself — loaded from its file with stand-ins for the three allennlp helpers it
    imports (the allennlp package needs spacy and old pins)."""
    torch = pytest.importorskip("torch")
    spec = importlib.util.find_spec("allennlp")
    if spec is None:
        pytest.skip("allennlp fixtures are not installed")
    path = pathlib.Path(spec.submodule_search_locations[0]) / "modules" / "openai_transformer.py"
    stubs = {name: types.ModuleType(name) for name in (
        "allennlp", "allennlp.common", "allennlp.common.checks", "allennlp.common.file_utils",
        "allennlp.common.from_params")}
    stubs["allennlp.common.checks"].ConfigurationError = ValueError
    stubs["allennlp.common.file_utils"].cached_path = str
    stubs["allennlp.common.from_params"].FromParams = object
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        module_spec = importlib.util.spec_from_file_location("_allennlp_openai", path)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous
    model = module.OpenaiTransformer(vocab_size=50, n_ctx=50, embedding_dim=10,
                                     num_heads=HEADS, num_layers=2, model_path=str(archive))
    return torch, model.eval()


def test_release_loads_and_agrees_with_allennlp(archive, preset):
    torch, reference = allennlp_transformer(archive)
    rng = np.random.default_rng(0)
    token_ids = rng.integers(0, 50, (2, 50)).astype("int32")  # allennlp runs n_ctx tokens
    positions = np.arange(50)[None].repeat(2, 0) + 50  # its positions sit after the tokens
    with torch.no_grad():
        expected = reference(torch.tensor(np.stack([token_ids, positions], -1)))
    backbone = GPTBackbone.from_preset(preset)
    got = predict(backbone, {"token_ids": token_ids, "padding_mask": np.ones_like(token_ids)})
    assert len(got["hidden_states"]) == len(expected) == 3
    for ours, theirs in zip(got["hidden_states"], expected):
        np.testing.assert_allclose(ours, theirs.numpy(), atol=TOLERANCE, rtol=0)


def test_release_layout(archive, preset):
    arrays, encoder, merges = read_openai_release(archive)
    shapes = json.loads(tarfile.open(archive).extractfile("model/params_shapes.json").read())
    assert [list(a.shape) for a in arrays] == shapes and len(arrays) == 2 + 12 * 2
    loaded = read_preset(preset)
    weights = loaded.weights()
    # positions first, then the tokens (the original code's order in params_shapes.json)
    np.testing.assert_array_equal(weights["backbone/embeddings/position_embedding"], arrays[0])
    np.testing.assert_array_equal(
        weights["backbone/embeddings/token_embedding/embeddings"], arrays[1])
    assert loaded.config["num_layers"] == 2 and loaded.config["num_heads"] == HEADS
    assert loaded.vocabulary()[:3] == ["ee</w>", "ee", "ew</w>"] and len(loaded.vocabulary()) == 50
    assert loaded.merges()[:2] == ["e e</w>", "e e"] and loaded.merges() == merges
    assert "merges.txt" in loaded.metadata["files"]
    assert loaded.task["class_name"] == "GPTCausalLM"
    assert loaded.task["config"] == {"output_bias": False}   # GPT-1 has no LM-head bias


def test_special_tokens_and_heads(archive, tmp_path):
    with pytest.warns(UserWarning):
        path = import_openai(archive, tmp_path / "p", num_heads=HEADS,
                             special_tokens=("_start_", "_delimiter_", "_classify_"))
    loaded = read_preset(path)
    assert loaded.config["vocabulary_size"] == 53 and loaded.vocabulary()[-1] == "_classify_"
    extra = loaded.weights()["backbone/embeddings/token_embedding/embeddings"][50:]
    assert extra.shape == (3, 10) and 0.001 < extra.std() < 0.1
    with pytest.raises(PresetError, match="num_heads 3"):
        import_openai(archive, tmp_path / "q", num_heads=3)


def test_broken_release(tmp_path):
    (tmp_path / "model").mkdir()
    with pytest.raises(PresetError, match="params_shapes.json"):
        read_openai_release(tmp_path)
    (tmp_path / "model" / "params_shapes.json").write_text("[[2, 3]]")
    np.save(tmp_path / "model" / "params_0.npy", np.zeros(5, "float32"))
    with pytest.raises(PresetError, match="incomplete or corrupt"):
        read_openai_release(tmp_path)


def test_preset_round_trip_keeps_merges(preset, tmp_path):
    lm = GPTCausalLM.from_preset(preset)
    x = {"token_ids": np.array([[1, 2, 3, 4]]), "padding_mask": np.ones((1, 4), "int32")}
    again = lm.save_to_preset(tmp_path / "again")
    assert (again / "merges.txt").read_text() == (preset / "merges.txt").read_text()
    np.testing.assert_allclose(predict(GPTCausalLM.from_preset(again), x), predict(lm, x),
                               atol=1e-6)
    (again / "merges.txt").write_text("e e\n")  # tampered: the checksum catches it
    with pytest.raises(PresetError, match="merges.txt does not match"):
        read_preset(again)


def test_wordpiece_presets_have_no_merges(tmp_path):
    path = write_preset(tmp_path / "bert", backbone_class="BertBackbone", config={},
                        vocabulary=["[PAD]", "a"], weights={"backbone/w": np.zeros(2)})
    loaded = read_preset(path)
    assert loaded.merges_path is None and loaded.merges() is None
    assert sorted(loaded.metadata["files"]) == ["config.json", "model.weights.h5", "vocab.txt"]
    with pytest.raises(PresetError, match="merge 0"):
        write_preset(tmp_path / "bad", backbone_class="X", config={}, vocabulary=["a"],
                     weights={}, merges=["a b c"])


def test_hugging_face_directory_both_ways(preset, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    directory = export_hf(preset, tmp_path / "hf")
    hf = transformers.OpenAIGPTLMHeadModel.from_pretrained(directory).eval()
    token_ids = np.array([[3, 1, 4, 1, 5, 9, 2, 6]])
    with torch.no_grad():
        expected = hf(torch.tensor(token_ids)).logits.numpy()
    lm = GPTCausalLM.from_preset(preset)
    got = predict(lm, {"token_ids": token_ids, "padding_mask": np.ones_like(token_ids)})
    np.testing.assert_allclose(got, expected, atol=TOLERANCE, rtol=0)
    back = import_hf(directory, tmp_path / "back")
    original, returned = read_preset(preset), read_preset(back)
    assert returned.vocabulary() == original.vocabulary()
    assert returned.merges() == original.merges() and returned.config == original.config
    for name, value in original.weights().items():
        np.testing.assert_array_equal(returned.weights()[name], value, err_msg=name)
    with pytest.raises(PresetError, match="vocab.json"):
        import_hf(tmp_path, tmp_path / "nothing")


def test_an_lm_head_bias_is_refused_on_export(preset, tmp_path):
    """transformers' OpenAIGPTLMHeadModel has no LM-head bias: exporting one is an error naming
    the fix, not a silent drop; the imported (bias-free) model is unaffected."""
    lm = GPTCausalLM.from_preset(preset)
    assert lm.lm_head.bias is None and "lm_head.weight" in export_hf_weights(lm)
    biased = GPTCausalLM.from_preset(preset, output_bias=True)
    biased.lm_head.bias.assign(np.full(50, 0.5, "float32"))
    with pytest.raises(PresetError, match="output bias.*--no-output-bias"):
        export_hf_weights(biased)
    path = biased.save_to_preset(tmp_path / "biased")
    with pytest.raises(PresetError, match="OpenAIGPTLMHeadModel lacks"):
        export_hf(path, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()
