"""Hugging Face directories in and out, checked against ``transformers`` itself."""

import json

import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertPretrainer
from keras_bert_lab.errors import PresetError
from keras_bert_lab.presets import read_preset
from keras_bert_lab.models.bert.convert_hf import export_hf, import_hf, read_hf_checkpoint
from keras_bert_lab.models.bert.hf_weights import config_to_hf, weights_from_hf
from keras_bert_lab.presets.convert.tensor_files import read_safetensors, write_safetensors
from tests.presets.helpers import (CONFIG, assert_outputs_close, batch, load_converted, outputs,
                                   random_pretrainer, tiny_vocab)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

POSITIONS = np.array([[1, 2, 3]] * 3, "int32")


def hf_outputs(hf, x):
    """Our output names from a transformers BertModel / BertForPreTraining."""
    inputs = dict(input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
                  token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long))
    with torch.no_grad():
        if isinstance(hf, transformers.BertModel):
            out = hf(**inputs)
            return {"sequence_output": out.last_hidden_state.numpy(),
                    "pooled_output": out.pooler_output.numpy()}
        out = hf(**inputs, output_hidden_states=True)
        sequence = out.hidden_states[-1]
        return {"sequence_output": sequence.numpy(),
                "pooled_output": hf.bert.pooler(sequence).numpy(),
                "mlm": np.take_along_axis(out.prediction_logits.numpy(), POSITIONS[..., None], 1),
                "nsp": out.seq_relationship_logits.numpy()}


@pytest.fixture(scope="module")
def hf_model():
    """A transformers BertForPreTraining with every tensor random (biases and norms included)."""
    torch.manual_seed(0)
    hf = transformers.BertForPreTraining(transformers.BertConfig(**config_to_hf(CONFIG))).eval()
    with torch.no_grad():
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if name.endswith("LayerNorm.weight") else 0.0, std=0.1)
    return hf


def write_hf_dir(path, state_dict, config=None, vocab=None, weights="model.safetensors"):
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config or config_to_hf(CONFIG)))
    (path / "vocab.txt").write_text("".join(t + "\n" for t in (vocab or tiny_vocab())))
    arrays = {k: v.detach().numpy() if hasattr(v, "detach") else v for k, v in state_dict.items()}
    if weights.endswith(".safetensors"):
        write_safetensors(path / weights, arrays)
    else:
        torch.save({k: torch.from_numpy(np.array(v)) for k, v in arrays.items()}, path / weights)
    return path


def test_ours_to_hf_to_ours(tmp_path):
    ours = random_pretrainer()
    x = batch()
    expected = outputs(ours, x, POSITIONS)
    out = export_hf(ours, tmp_path / "hf", vocabulary=tiny_vocab())
    hf, info = transformers.BertForPreTraining.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert_outputs_close(hf_outputs(hf.eval(), x), expected, what="transformers")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(out)
    assert len(tokenizer) == CONFIG.vocabulary_size and tokenizer.do_lower_case
    assert tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]", "w1"]) == [5, 6, 9]
    back = load_converted(import_hf(out, tmp_path / "preset"))
    assert isinstance(back, BertPretrainer)
    assert_outputs_close(outputs(back, x, POSITIONS), expected, what="ours -> HF -> ours")


def test_backbone_exports_as_bert_model(tmp_path):
    ours = random_pretrainer().backbone
    out = export_hf(ours, tmp_path / "hf", vocabulary=tiny_vocab(), lowercase=False)
    assert json.loads((out / "config.json").read_text())["architectures"] == ["BertModel"]
    assert not any(k.startswith("bert.") for k in read_safetensors(out / "model.safetensors"))
    hf, info = transformers.BertModel.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert_outputs_close(hf_outputs(hf.eval(), batch()), outputs(ours, batch()))
    assert not transformers.BertTokenizerFast.from_pretrained(out).do_lower_case
    back = load_converted(import_hf(out, tmp_path / "back"))
    assert isinstance(back, BertBackbone) and back.preset_info.tokenizer == {"lowercase": False,
                                                                         "class_name": "WordPieceTokenizer"}


def test_sentence_embedding_recipe_survives_export(tmp_path):
    from keras_bert_lab.models.bert.sentence_embedder import SentenceEmbedder

    backbone = random_pretrainer().backbone
    preset = SentenceEmbedder(backbone).save_to_preset(
        tmp_path / "p", vocabulary=tiny_vocab(), preprocessor={"sequence_length": 48})
    out = export_hf(preset, tmp_path / "hf")
    modules = json.loads((out / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == ["Transformer", "Pooling",
                                                              "Normalize"]
    assert json.loads((out / "1_Pooling" / "config.json").read_text())[
        "pooling_mode_mean_tokens"]
    back = read_preset(import_hf(out, tmp_path / "back"))
    assert back.sentence_embedding == {"pooling": "mean", "normalize": True}
    assert back.preprocessor == {"sequence_length": 48}


@pytest.mark.parametrize("layout", ["pretraining_safetensors", "pretraining_bin", "bert_model",
                                    "legacy_gamma_beta_bin"])
def test_hf_layouts_match_transformers(hf_model, tmp_path, layout):
    state = hf_model.state_dict()
    if layout in ("bert_model", "legacy_gamma_beta_bin"):
        state = {k[len("bert."):]: v for k, v in state.items() if k.startswith("bert.")}
    if layout == "legacy_gamma_beta_bin":
        state = {k.replace("LayerNorm.weight", "LayerNorm.gamma")
                 .replace("LayerNorm.bias", "LayerNorm.beta"): v for k, v in state.items()}
    weights = "pytorch_model.bin" if layout.endswith("bin") else "model.safetensors"
    path = write_hf_dir(tmp_path / layout, state, weights=weights)
    model = load_converted(import_hf(path, tmp_path / "preset"))
    reference = hf_model if layout.startswith("pretraining") else hf_model.bert
    assert isinstance(model, BertPretrainer if reference is hf_model else BertBackbone)
    x = batch(seed=2)
    assert_outputs_close(outputs(model, x, POSITIONS), hf_outputs(reference, x), what=layout)


def test_save_pretrained_directory(hf_model, tmp_path):
    hf_model.save_pretrained(tmp_path)
    (tmp_path / "vocab.txt").write_text("".join(t + "\n" for t in tiny_vocab()))
    model = load_converted(import_hf(tmp_path, tmp_path / "preset"))
    assert_outputs_close(outputs(model, batch(), POSITIONS), hf_outputs(hf_model, batch()))


def test_a_fast_tokenizer_without_vocab_txt(hf_model, tmp_path):
    """transformers' save_pretrained of a fast tokenizer may write tokenizer.json only: its
    WordPiece vocabulary and lower-casing are read from there."""
    hf_model.save_pretrained(tmp_path)
    vocab = tmp_path.parent / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t in tiny_vocab()))
    fast = transformers.BertTokenizerFast(str(vocab), do_lower_case=False)   # 5.x: not vocab_file=
    fast.backend_tokenizer.save(str(tmp_path / "tokenizer.json"))
    assert not (tmp_path / "vocab.txt").exists()
    info = read_preset(import_hf(tmp_path, tmp_path / "preset"))
    assert info.vocabulary() == tiny_vocab()
    assert read_hf_checkpoint(tmp_path).lowercase is False
    data = json.loads((tmp_path / "tokenizer.json").read_text())
    data["model"] = {"type": "BPE", "vocab": {"a": 0}}
    (tmp_path / "tokenizer.json").write_text(json.dumps(data))
    with pytest.raises(PresetError, match="'BPE' tokenizer, not a WordPiece vocabulary"):
        read_hf_checkpoint(tmp_path)


# ---- bad input ---------------------------------------------------------------------------------
@pytest.fixture()
def hf_dir(hf_model, tmp_path):
    return write_hf_dir(tmp_path / "hf", hf_model.state_dict())


@pytest.mark.parametrize("name, message", [
    ("config.json", "lacks config.json"), ("model.safetensors", "has no weights: expected one of"),
    ("vocab.txt", "lacks vocab.txt")])
def test_missing_file(hf_dir, name, message):
    (hf_dir / name).unlink()
    with pytest.raises(PresetError, match=message):
        import_hf(hf_dir, hf_dir.parent / "out")


def test_truncated_weights(hf_dir):
    path = hf_dir / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-1000])
    with pytest.raises(PresetError, match="model.safetensors' is truncated or corrupt"):
        import_hf(hf_dir, hf_dir.parent / "out")


def test_config_shape_mismatch_names_tensor_and_shapes(hf_dir):
    config = dict(config_to_hf(CONFIG), intermediate_size=256)
    (hf_dir / "config.json").write_text(json.dumps(config))
    with pytest.raises(PresetError) as info:
        import_hf(hf_dir, hf_dir.parent / "out")
    message = str(info.value)
    assert "encoder_layer_0/ffn_in/kernel: the config needs (128, 256)" in message
    assert "bert.encoder.layer.0.intermediate.dense.weight (512, 128)" in message


def test_missing_and_unexpected_keys(hf_model, tmp_path):
    # BertForMaskedLM has no pooler and no NSP head; and a stray tensor is added.
    state = {k: v for k, v in hf_model.state_dict().items()
             if not k.startswith(("bert.pooler.", "cls.seq_relationship."))}
    state["bert.encoder.layer.0.attention.self.rotary.weight"] = torch.zeros(4)
    path = write_hf_dir(tmp_path / "mlm", state)
    with pytest.raises(PresetError) as info:
        import_hf(path, tmp_path / "strict")
    message = str(info.value)
    for key in ("bert.pooler.dense.weight", "bert.pooler.dense.bias",
                "cls.seq_relationship.weight", "cls.seq_relationship.bias",
                "bert.encoder.layer.0.attention.self.rotary.weight"):
        assert key in message
    assert "allow_partial=True" in message
    checkpoint = read_hf_checkpoint(path)
    _, report = weights_from_hf(checkpoint.state_dict, checkpoint.config, heads=True,
                                allow_partial=True)
    with pytest.warns(UserWarning, match="pooler"):
        model = load_converted(import_hf(path, tmp_path / "partial", allow_partial=True),
                               allow_partial=True)
    assert sorted(report["missing"]) == ["bert.pooler.dense.bias", "bert.pooler.dense.weight",
                                         "cls.seq_relationship.bias", "cls.seq_relationship.weight"]
    assert report["unexpected"] == ["bert.encoder.layer.0.attention.self.rotary.weight"]
    got, expected = outputs(model, batch(), POSITIONS), hf_outputs(hf_model, batch())
    assert_outputs_close(got, {k: expected[k] for k in ("sequence_output", "mlm")})


def test_untied_decoder_is_refused(hf_model, tmp_path):
    state = dict(hf_model.state_dict())
    state["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"] + 1
    path = write_hf_dir(tmp_path / "untied", state)
    with pytest.raises(PresetError, match="untied decoder"):
        import_hf(path, tmp_path / "tied")
    backbone = load_converted(import_hf(path, tmp_path / "backbone", heads=False))
    assert isinstance(backbone, BertBackbone)


def test_vocab_size_mismatch(hf_dir):
    (hf_dir / "vocab.txt").write_text("".join(t + "\n" for t in tiny_vocab()[:250]))
    with pytest.raises(PresetError, match="has 250 tokens but the token embedding has 300 rows"):
        import_hf(hf_dir, hf_dir.parent / "out")


def test_not_bert(hf_dir):
    (hf_dir / "config.json").write_text(json.dumps(dict(config_to_hf(CONFIG), model_type="gpt2")))
    with pytest.raises(PresetError, match="'gpt2' model; only 'bert' checkpoints"):
        import_hf(hf_dir, hf_dir.parent / "out")


def test_docstring_examples():
    import doctest

    import keras_bert_lab.models.bert.hf_weights as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
