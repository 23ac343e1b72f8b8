"""Hugging Face ELECTRA directories → presets (a discriminator, a generator, the pair) and back,
with the outputs of ``transformers`` kept; bad directories named."""

import json

import numpy as np
import pytest

from keras_bert_lab.errors import PresetError
from keras_bert_lab.models.electra.convert_hf import export_hf, import_hf
from keras_bert_lab.presets import read_preset
from keras_bert_lab.presets.vocabulary import write_vocabulary
from keras_bert_lab.tasks.base import Task
from tests.conftest import to_numpy
from tests.models.electra.conftest import ALL_POSITIONS, BATCH, VOCABULARY, hf_forward
from tests.presets.helpers import tiny_vocab

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def hf_dirs(hf_models, tmp_path_factory):
    root = tmp_path_factory.mktemp("electra-hf")
    dirs = {}
    for name, model in zip(("discriminator", "generator"), hf_models):
        model.save_pretrained(root / name)
        write_vocabulary(root / name / "vocab.txt", tiny_vocab(VOCABULARY))
        dirs[name] = root / name
    return dirs


def test_each_directory_becomes_its_task(hf_dirs, hf_models, tmp_path):
    discriminator, generator = hf_models
    for name, hf, expected_task in (("discriminator", discriminator, "ElectraDiscriminator"),
                                    ("generator", generator, "ElectraMaskedLM")):
        preset = import_hf(hf_dirs[name], tmp_path / name)
        assert read_preset(preset).task["class_name"] == expected_task
        model = Task.from_preset(preset)
        x = BATCH if name == "discriminator" else dict(BATCH, mask_positions=ALL_POSITIONS)
        got = model.predict_on_batch(x)
        got = to_numpy(got if name == "discriminator" else got["mlm"])
        np.testing.assert_allclose(got, hf_forward(hf, BATCH).logits.numpy(), atol=1e-5, rtol=0)


def test_the_pair_becomes_a_pretrainer_and_exports_back(hf_dirs, hf_models, tmp_path):
    discriminator, generator = hf_models
    preset = import_hf(hf_dirs["discriminator"], tmp_path / "pair",
                       generator=hf_dirs["generator"])
    model = Task.from_preset(preset)
    assert type(model).__name__ == "ElectraPretrainer"
    weights = np.ones(ALL_POSITIONS.shape, "float32")
    out = model.predict_on_batch(dict(BATCH, mask_positions=ALL_POSITIONS,
                                      mask_ids=BATCH["token_ids"], mask_weights=weights))
    np.testing.assert_allclose(to_numpy(out["mlm"]), hf_forward(generator, BATCH).logits.numpy(),
                               atol=1e-5, rtol=0)
    back = export_hf(preset, tmp_path / "hf")
    for name, original in (("discriminator", discriminator), ("generator", generator)):
        again = type(original).from_pretrained(back / name).eval()
        np.testing.assert_allclose(hf_forward(again, BATCH).logits.numpy(),
                                   hf_forward(original, BATCH).logits.numpy(), atol=1e-6, rtol=0)
        tokenizer = transformers.BertTokenizerFast.from_pretrained(back / name)
        assert tokenizer.convert_ids_to_tokens([5, 6, 7]) == ["[CLS]", "[SEP]", "[MASK]"]


def test_a_bare_backbone_exports_as_electra_model(hf_dirs, hf_models, tmp_path):
    preset = import_hf(hf_dirs["discriminator"], tmp_path / "d")
    from keras_bert_lab.models.electra.backbone import ElectraBackbone

    back = export_hf(ElectraBackbone.from_preset(preset), tmp_path / "hf", )
    assert json.loads((back / "config.json").read_text())["architectures"] == ["ElectraModel"]
    again = transformers.ElectraModel.from_pretrained(back).eval()
    expected = hf_forward(hf_models[0].electra, BATCH).last_hidden_state.numpy()
    np.testing.assert_allclose(hf_forward(again, BATCH).last_hidden_state.numpy(), expected,
                               atol=1e-6, rtol=0)


def test_bad_directories_are_named(hf_dirs, tmp_path):
    with pytest.raises(PresetError, match="the first directory must be the discriminator"):
        import_hf(hf_dirs["generator"], tmp_path / "x", generator=hf_dirs["discriminator"])
    with pytest.raises(PresetError, match="is not an ElectraForMaskedLM checkpoint"):
        import_hf(hf_dirs["discriminator"], tmp_path / "x", generator=hf_dirs["discriminator"])
    other = transformers.ElectraForMaskedLM.from_pretrained(hf_dirs["generator"])
    with torch.no_grad():
        other.electra.embeddings.word_embeddings.weight.add_(0.5)
    other.save_pretrained(tmp_path / "other")
    write_vocabulary(tmp_path / "other" / "vocab.txt", tiny_vocab(VOCABULARY))
    with pytest.raises(PresetError, match="differs from the discriminator's; ELECTRA shares"):
        import_hf(hf_dirs["discriminator"], tmp_path / "x", generator=tmp_path / "other")
    config = json.loads((hf_dirs["discriminator"] / "config.json").read_text())
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text(json.dumps(dict(config, model_type="bert")))
    with pytest.raises(PresetError, match="'bert' model; only 'electra' checkpoints"):
        import_hf(tmp_path / "bert", tmp_path / "x")


def test_kbl_preset_picks_the_family_from_the_directory(hf_dirs, hf_models, tmp_path, capsys):
    """`kbl preset import-hf` reads config.json's model_type and `export-hf` the preset's
    family, through the registry: the ELECTRA pair in, both HF directories out."""
    from keras_bert_lab.cli import main

    out = tmp_path / "pair"
    assert main(["preset", "import-hf", str(hf_dirs["discriminator"]), str(out),
                 "--generator", str(hf_dirs["generator"])]) == 0
    assert "task ElectraPretrainer" in capsys.readouterr().out
    assert read_preset(out).family.name == "electra"
    assert main(["preset", "export-hf", str(out), str(tmp_path / "hf")]) == 0
    again = transformers.ElectraForMaskedLM.from_pretrained(tmp_path / "hf" / "generator").eval()
    np.testing.assert_allclose(hf_forward(again, BATCH).logits.numpy(),
                               hf_forward(hf_models[1], BATCH).logits.numpy(), atol=1e-6, rtol=0)
    assert main(["preset", "import-hf", str(hf_dirs["discriminator"]), str(tmp_path / "x"),
                 "--heads", "no"]) == 2
    assert "--heads does not apply to ELECTRA checkpoints" in capsys.readouterr().err
    config = json.loads((hf_dirs["generator"] / "config.json").read_text())
    (tmp_path / "t5").mkdir()
    (tmp_path / "t5" / "config.json").write_text(json.dumps(dict(config, model_type="t5")))
    assert main(["preset", "import-hf", str(tmp_path / "t5"), str(tmp_path / "y")]) == 2
    err = capsys.readouterr().err
    assert "describes a 't5' model" in err and "'electra' (electra)" in err
    (tmp_path / "t5" / "config.json").write_text(json.dumps({"hidden_size": 8}))
    assert main(["preset", "import-hf", str(tmp_path / "t5"), str(tmp_path / "y")]) == 2
    assert "names no model_type" in capsys.readouterr().err
    assert main(["preset", "import-hf", str(tmp_path / "none"), str(tmp_path / "y")]) == 2
    assert "does not exist: such a directory holds config.json" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
