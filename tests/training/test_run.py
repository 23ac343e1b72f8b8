"""The run folder: one set of rules for every training command, and --overwrite never deletes
what is not a run."""

import json

import pytest

from keras_bert_lab.errors import TrainingError
from keras_bert_lab.training.run import (append_row, is_out_of_memory, plot_curves,
                                         prepare_output, read_rows, write_json, write_rows)


def test_a_run_folder_is_continued_only_with_the_same_settings(tmp_path):
    run = prepare_output(tmp_path / "run", {"steps": 10})
    assert json.loads((run / "settings.json").read_text()) == {"steps": 10}
    (run / "log.csv").write_text("step\n")
    with pytest.raises(TrainingError, match="already holds a run.*--resume.*--overwrite"):
        prepare_output(run, {"steps": 10})
    assert prepare_output(run, {"steps": 10}, resume=True) == run
    assert (run / "log.csv").exists()  # resuming keeps what the run wrote
    with pytest.raises(TrainingError, match=r"different settings.*'steps': \(10, 20\)"):
        prepare_output(run, {"steps": 20}, resume=True)
    prepare_output(run, {"steps": 20}, overwrite=True)  # a previous run is replaced
    assert not (run / "log.csv").exists()
    with pytest.raises(TrainingError, match="holds no run to resume"):
        prepare_output(tmp_path / "new", {"steps": 1}, resume=True)


def test_overwrite_never_deletes_a_folder_that_holds_no_run(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    for overwrite in (False, True):
        with pytest.raises(TrainingError, match="not empty and holds no run"):
            prepare_output(tmp_path, {"steps": 1}, overwrite=overwrite)
    assert (tmp_path / "precious.txt").read_text() == "keep me"
    assert not (tmp_path / "settings.json").exists()


def test_logs_metrics_and_curves(tmp_path):
    append_row(tmp_path / "log.csv", {"step": 1, "split": "train", "loss": 3.0},
               columns=("step", "split", "loss", "accuracy"))
    append_row(tmp_path / "log.csv", {"step": 2, "split": "heldout", "accuracy": 0.5},
               columns=("step", "split", "loss", "accuracy"))
    rows = read_rows(tmp_path / "log.csv")
    assert rows == [{"step": "1", "split": "train", "loss": "3.0", "accuracy": ""},
                    {"step": "2", "split": "heldout", "loss": "", "accuracy": "0.5"}]
    plot_curves(rows, "step", [("loss", "loss"), ("accuracy", "accuracy")],
                tmp_path / "curves.png", groups=("train", "heldout"), group_key="split")
    assert (tmp_path / "curves.png").stat().st_size > 0
    write_rows(tmp_path / "epochs.csv", [{"epoch": 1, "loss": 2.0}, {"epoch": 2, "f1": 0.5}])
    assert (tmp_path / "epochs.csv").read_text().splitlines()[0] == "epoch,loss,f1"
    write_json(tmp_path / "metrics.json", {"f1": 0.5})
    assert json.loads((tmp_path / "metrics.json").read_text()) == {"f1": 0.5}
    assert not (tmp_path / "metrics.json.tmp").exists()


def test_out_of_memory_errors_of_every_backend_are_recognised():
    assert is_out_of_memory(MemoryError())
    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"))
    assert is_out_of_memory(RuntimeError("RESOURCE_EXHAUSTED: OOM when allocating tensor"))
    assert not is_out_of_memory(ValueError("shapes do not match"))
