"""`kbl generate` and the lineage's `kbl preset import-gpt | export-gpt-hf | import-elmo |
export-elmo`, through the command line (errors as one line, exit status 2)."""

import json

import pytest

from keras_bert_lab.cli import main
from tests.conftest import locate_or_skip
from tests.models.gpt.test_finetune import gpt_preset  # noqa: F401


def test_generate_continues_prompts_the_same_with_and_without_the_cache(gpt_preset, capsys):  # noqa: F811
    preset = str(gpt_preset / "preset")
    args = ["generate", "--preset", preset, "--prompt", "the film was", "--prompt", "it",
            "--max-length", "10", "--seed", "3"]
    assert main(args) == 0
    cached = capsys.readouterr().out
    assert main(args + ["--no-cache"]) == 0
    assert capsys.readouterr().out == cached
    assert cached.count("> ") == 2 and "the film was" in cached
    assert main(args + ["--top-k", "0"]) == 2
    assert "top_k" in capsys.readouterr().err


def test_generate_refuses_a_bert_preset_and_an_empty_prompt(gpt_preset, tmp_path, capsys):  # noqa: F811
    from keras_bert_lab.models.bert.backbone import BertBackbone
    BertBackbone("tiny").save_to_preset(tmp_path / "bert", vocabulary=[f"t{i}" for i in
                                                                       range(30522)])
    assert main(["generate", "--preset", str(tmp_path / "bert"), "--prompt", "a"]) == 2
    assert "is a BERT preset; generation needs a left-to-right decoder" in capsys.readouterr().err
    assert main(["generate", "--preset", str(gpt_preset / "preset"), "--prompt", " "]) == 2
    assert "has no tokens" in capsys.readouterr().err


def test_import_gpt_release_and_export_to_transformers(tmp_path, capsys):
    archive = locate_or_skip("openai_gpt_fixture", "archive")
    out = tmp_path / "gpt"
    assert main(["preset", "import-gpt", str(archive), str(out), "--num-heads", "2"]) == 0
    assert "GPTBackbone" in capsys.readouterr().out
    vocab = (out / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert vocab[-3:] == ["_start_", "_delimiter_", "_classify_"]
    assert main(["preset", "export-gpt-hf", str(out), str(tmp_path / "hf")]) == 0
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["n_head"] == 2
    assert main(["preset", "import-gpt", str(archive), str(out), "--num-heads", "2"]) == 2
    assert "already exists" in capsys.readouterr().err


def test_import_and_export_elmo(tmp_path, capsys):
    options = locate_or_skip("elmo_fixture", "options")
    weights = locate_or_skip("elmo_fixture", "weights")
    assert main(["preset", "import-elmo", str(options), str(weights), str(tmp_path / "p")]) == 0
    assert "ElmoBackbone" in capsys.readouterr().out
    assert main(["preset", "export-elmo", str(tmp_path / "p"), str(tmp_path / "x")]) == 0
    assert json.loads((tmp_path / "x" / "options.json").read_text())["lstm"]["dim"] == 64
    assert main(["preset", "import-elmo", str(options), str(tmp_path / "nope.hdf5"),
                 str(tmp_path / "q")]) == 2
    assert "nope.hdf5" in capsys.readouterr().err
