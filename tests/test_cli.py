"""One error type per kind of mistake, whichever command it is made in (and one readable line from
``kbl``, exit status 2): bad flag values and flag combinations are ``ConfigError``, unusable data
``DataError``, an output directory that cannot take the run ``TrainingError``."""

import pytest

from keras_bert_lab.cli import build_parser, main
from keras_bert_lab.errors import ConfigError, TrainingError


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "train.csv").write_text("text,label\n" + "good film,pos\nbad film,neg\n" * 4)
    (tmp_path / "train.conll").write_text("Ada B-PER\nwrote O\n\n" * 6)
    (tmp_path / "mc.jsonl").write_text('{"context": "He sat", "choices": ["down.", "up."], '
                                       '"label": 0}\n' * 10)
    (tmp_path / "corpus.txt").write_text("One sentence here.\nAnother one.\n\nA second doc.\n")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("not a run")
    return tmp_path


def run(argv):
    args = build_parser().parse_args(argv)
    return args.func(args)


def commands(files, *extra, output="out"):
    """The same mistake in each command that can make it."""
    out = str(files / output)
    return {
        "classify": ["finetune", "classify", "--train", str(files / "train.csv"), "--output", out,
                     *extra],
        "choice": ["finetune", "choice", "--train", str(files / "mc.jsonl"), "--output", out,
                   *extra],
        "ner": ["finetune", "ner", "--train", str(files / "train.conll"), "--output", out,
                *extra],
    }


@pytest.mark.parametrize("command", ["classify", "choice", "ner", "pretrain"])
def test_an_out_of_range_setting_is_a_config_error(files, command):
    argv = commands(files, "--epochs", "0").get(command) or [
        "pretrain", "--corpus", str(files / "corpus.txt"), "--output", str(files / "p"),
        "--steps", "0"]
    with pytest.raises(ConfigError, match="--(epochs|steps)"):
        run(argv)


@pytest.mark.parametrize("command", ["classify", "ner"])
def test_dataset_and_train_together_is_a_config_error(files, command):
    dataset = {"classify": "rotten_tomatoes", "ner": "wnut16"}[command]
    with pytest.raises(ConfigError, match="either --dataset NAME or --train FILE"):
        run(commands(files, "--dataset", dataset)[command])


@pytest.mark.parametrize("command", ["classify", "choice", "ner"])
def test_a_validation_share_out_of_range_is_a_config_error(files, command):
    with pytest.raises(ConfigError, match="--valid-fraction"):
        run(commands(files, "--valid-fraction", "1.5")[command])


@pytest.mark.parametrize("command", ["classify", "choice", "ner", "pretrain"])
def test_a_busy_output_directory_is_a_training_error_and_is_kept(files, command):
    argv = commands(files, output="busy").get(command) or [
        "pretrain", "--corpus", str(files / "corpus.txt"), "--eval-corpus", str(files /
                                                                               "corpus.txt"),
        "--output", str(files / "busy"), "--size", "tiny", "--steps", "1"]
    for extra in ([], ["--overwrite"]):
        with pytest.raises(TrainingError, match="not empty and holds no run"):
            run(argv + extra)
    assert (files / "busy" / "notes.txt").read_text() == "not a run"


def test_vocabulary_size_too_small_is_a_config_error_in_python_and_in_kbl(files, capsys):
    from keras_bert_lab.preprocessing.wordpiece_trainer import train_vocabulary

    with pytest.raises(ConfigError, match="no room"):
        train_vocabulary(["a b c"], vocabulary_size=3)
    assert main(["vocab", "--corpus", str(files / "corpus.txt"), "--vocabulary-size", "3", "--output",
                 str(files / "v.txt")]) == 2
    assert capsys.readouterr().err.startswith("kbl: error: vocabulary_size=3 leaves no room")


def test_kbl_prints_one_line_and_exits_2(files, capsys):
    assert main(commands(files, "--epochs", "0")["classify"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kbl: error: --epochs=0 is out of range") and "Traceback" not in err


def test_vocab_bpe_writes_a_tokenizer_directory_and_rejects_wordpiece_flags(files, capsys):
    from keras_bert_lab.preprocessing.bpe import BytePairTokenizer

    out = files / "bpe"
    assert main(["vocab", "--bpe", "--corpus", str(files / "corpus.txt"), "--merges", "5",
                 "--min-frequency", "1", "--quiet", "--output", str(out)]) == 0
    tokenizer = BytePairTokenizer.from_directory(out)
    assert len(tokenizer.merges) == 5
    assert tokenizer.decode(tokenizer.encode("Another one.")) == "another one ."
    assert main(["vocab", "--bpe", "--unused", "3", "--corpus", str(files / "corpus.txt"),
                 "--output", str(out)]) == 2
    assert "WordPiece options" in capsys.readouterr().err
    assert main(["vocab", "--merges", "3", "--corpus", str(files / "corpus.txt"),
                 "--output", str(out)]) == 2
    assert "add --bpe" in capsys.readouterr().err


def test_vocab_output_is_checked_before_training_and_missing_folders_are_made(files, capsys):
    corpus = ["vocab", "--corpus", str(files / "corpus.txt"), "--vocabulary-size", "60",
              "--min-frequency", "1", "--quiet"]
    assert main([*corpus, "--output", str(files / "busy")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("kbl: error: --output") and "is a directory" in error
    assert f"--output {files / 'busy' / 'vocab.txt'}" in error
    (files / "a_file").write_text("x")
    assert main([*corpus, "--output", str(files / "a_file" / "vocab.txt")]) == 2
    assert "cannot create the folder" in capsys.readouterr().err
    nested = files / "new" / "deeper" / "vocab.txt"
    assert main([*corpus, "--output", str(nested)]) == 0
    assert "[CLS]" in nested.read_text().split("\n")
