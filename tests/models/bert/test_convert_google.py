"""Google's original TF1 checkpoints: written here with the release's variable names, read by us,
compared with the same weights loaded into ``transformers``."""

import json

import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertPretrainer
from keras_bert_lab.presets import read_preset
from keras_bert_lab.models.bert.convert_google import import_google, read_google_checkpoint
from keras_bert_lab.models.bert.hf_weights import config_to_hf, weights_from_hf
from keras_bert_lab.errors import PresetError
from tests.presets.helpers import (CONFIG, assert_outputs_close, batch, load_converted, outputs,
                                   tiny_vocab)
from tests.models.bert.test_convert_hf import POSITIONS, hf_outputs

tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def google_variables(hf):
    """``{TF1 variable name: array}`` of google-research/bert's ``modeling.py`` and
    ``run_pretraining.py``, written out by hand from a transformers BertForPreTraining."""
    sd = {k: v.numpy() for k, v in hf.state_dict().items()}
    out = {
        "bert/embeddings/word_embeddings": sd["bert.embeddings.word_embeddings.weight"],
        "bert/embeddings/token_type_embeddings": sd["bert.embeddings.token_type_embeddings.weight"],
        "bert/embeddings/position_embeddings": sd["bert.embeddings.position_embeddings.weight"],
        "bert/embeddings/LayerNorm/gamma": sd["bert.embeddings.LayerNorm.weight"],
        "bert/embeddings/LayerNorm/beta": sd["bert.embeddings.LayerNorm.bias"],
        "bert/pooler/dense/kernel": sd["bert.pooler.dense.weight"].T,  # TF kernels are [in, out]
        "bert/pooler/dense/bias": sd["bert.pooler.dense.bias"],
        "cls/predictions/transform/dense/kernel": sd["cls.predictions.transform.dense.weight"].T,
        "cls/predictions/transform/dense/bias": sd["cls.predictions.transform.dense.bias"],
        "cls/predictions/transform/LayerNorm/gamma":
            sd["cls.predictions.transform.LayerNorm.weight"],
        "cls/predictions/transform/LayerNorm/beta": sd["cls.predictions.transform.LayerNorm.bias"],
        "cls/predictions/output_bias": sd["cls.predictions.bias"],
        # a raw tf.matmul(..., transpose_b=True) weight: [2, H], not a dense kernel
        "cls/seq_relationship/output_weights": sd["cls.seq_relationship.weight"],
        "cls/seq_relationship/output_bias": sd["cls.seq_relationship.bias"],
    }
    for i in range(CONFIG.num_layers):
        g, h = f"bert/encoder/layer_{i}/", f"bert.encoder.layer.{i}."
        for part in ("query", "key", "value"):
            out[f"{g}attention/self/{part}/kernel"] = sd[f"{h}attention.self.{part}.weight"].T
            out[f"{g}attention/self/{part}/bias"] = sd[f"{h}attention.self.{part}.bias"]
        for gname, hname in (("attention/output/dense", "attention.output.dense"),
                             ("intermediate/dense", "intermediate.dense"),
                             ("output/dense", "output.dense")):
            out[f"{g}{gname}/kernel"] = sd[f"{h}{hname}.weight"].T
            out[f"{g}{gname}/bias"] = sd[f"{h}{hname}.bias"]
        for gname, hname in (("attention/output/LayerNorm", "attention.output.LayerNorm"),
                             ("output/LayerNorm", "output.LayerNorm")):
            out[f"{g}{gname}/gamma"] = sd[f"{h}{hname}.weight"]
            out[f"{g}{gname}/beta"] = sd[f"{h}{hname}.bias"]
    return out


def write_google_checkpoint(directory, variables, optimizer_slots=True):
    """bert_config.json + vocab.txt + bert_model.ckpt.{index,data-00000-of-00001}."""
    directory.mkdir(parents=True, exist_ok=True)
    variables = dict(variables)
    if optimizer_slots:  # what a checkpoint saved during pretraining also holds
        for name in list(variables):
            variables[f"{name}/adam_m"] = np.full_like(variables[name], 7.0)
            variables[f"{name}/adam_v"] = np.full_like(variables[name], 9.0)
        variables["global_step"] = np.array(1000, "int64")
    names = sorted(variables)
    tf.raw_ops.SaveV2(prefix=str(directory / "bert_model.ckpt"), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(variables[n]) for n in names])
    google_config = {k: v for k, v in config_to_hf(CONFIG).items()
                     if k not in ("architectures", "model_type", "layer_norm_eps", "pad_token_id",
                                  "position_embedding_type")}
    (directory / "bert_config.json").write_text(json.dumps(google_config))
    (directory / "vocab.txt").write_text("".join(t + "\n" for t in tiny_vocab()))
    return directory


@pytest.fixture(scope="module")
def reference():
    torch.manual_seed(1)
    hf = transformers.BertForPreTraining(transformers.BertConfig(**config_to_hf(CONFIG))).eval()
    with torch.no_grad():
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if name.endswith("LayerNorm.weight") else 0.0, std=0.1)
    return hf, google_variables(hf)


def test_google_checkpoint_matches_transformers(reference, tmp_path):
    hf, variables = reference
    path = write_google_checkpoint(tmp_path / "uncased_L-3_H-128_A-4", variables)
    _, _, _, skipped = read_google_checkpoint(path)
    assert len(skipped) == 2 * len(variables) + 1  # adam_m, adam_v, global_step
    model = load_converted(import_google(path, tmp_path / "preset"))
    assert isinstance(model, BertPretrainer)
    x = batch(seed=4)
    expected = hf_outputs(hf, x)
    assert_outputs_close(outputs(model, x, POSITIONS), expected, what="google")
    assert model.preset_info.tokenizer == {"lowercase": True, "class_name": "WordPieceTokenizer"}
    # from the checkpoint prefix instead of the directory, without the heads
    backbone = load_converted(import_google(path / "bert_model.ckpt", tmp_path / "backbone",
                                            heads=False))
    assert isinstance(backbone, BertBackbone)
    assert_outputs_close(outputs(backbone, x), {k: expected[k] for k in ("sequence_output",
                                                                         "pooled_output")})


def test_missing_unexpected_and_mismatched_variables(reference, tmp_path):
    _, variables = reference
    partial = {k: v for k, v in variables.items() if not k.startswith("cls/seq_relationship")}
    partial["bert/encoder/layer_0/attention/self/relative_bias"] = np.zeros(3, "float32")
    path = write_google_checkpoint(tmp_path / "partial", partial, optimizer_slots=False)
    with pytest.raises(PresetError) as info:
        import_google(path, tmp_path / "strict")
    assert "cls.seq_relationship.weight" in str(info.value)
    assert "bert.encoder.layer.0.attention.self.relative_bias" in str(info.value)
    config, state, _, _ = read_google_checkpoint(path)
    _, report = weights_from_hf(state, config, heads=True, allow_partial=True)
    assert read_preset(import_google(path, tmp_path / "partial_preset", allow_partial=True)).task
    assert sorted(report["missing"]) == ["cls.seq_relationship.bias",
                                         "cls.seq_relationship.weight"]
    wrong = dict(variables, **{"bert/encoder/layer_1/intermediate/dense/kernel":
                               np.zeros((128, 64), "float32")})
    path = write_google_checkpoint(tmp_path / "wrong", wrong, optimizer_slots=False)
    with pytest.raises(PresetError, match=r"encoder_layer_1/ffn_in/kernel: the config needs "
                                          r"\(128, 512\), the checkpoint has "
                                          r".*intermediate.dense.weight \(64, 128\)"):
        import_google(path, tmp_path / "out")


def test_bad_checkpoint_files(reference, tmp_path):
    _, variables = reference
    path = write_google_checkpoint(tmp_path / "ckpt", variables, optimizer_slots=False)
    with pytest.raises(PresetError, match="no TensorFlow checkpoint"):
        import_google(tmp_path, tmp_path / "out")
    (path / "vocab.txt").write_text("".join(t + "\n" for t in tiny_vocab() + ["extra"]))
    with pytest.raises(PresetError, match="301 tokens but the token embedding has 300 rows"):
        import_google(path, tmp_path / "out")
    data = next(path.glob("bert_model.ckpt.data-*"))
    data.write_bytes(data.read_bytes()[:1000])
    with pytest.raises(PresetError, match="truncated"):
        import_google(path, tmp_path / "out")
    (path / "bert_config.json").unlink()
    with pytest.raises(PresetError, match="lacks bert_config.json"):
        import_google(path, tmp_path / "out")


def test_docstring_examples():
    import doctest

    import keras_bert_lab.models.bert.convert_google as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
