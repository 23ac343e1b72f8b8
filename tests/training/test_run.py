"""The run folder: one set of rules for every training command, --overwrite never deletes what
is not a run, and a failed run leaves nothing partial."""

import errno
import json
import re

import pytest

from keras_bert_lab.errors import TrainingError
from keras_bert_lab.training.run import (append_row, check_run_folder, guarded, is_out_of_memory,
                                         plot_curves, prepare_output, read_rows, truncate_log,
                                         write_json, write_rows)


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


def test_overwrite_deletes_only_what_a_run_writes(tmp_path):
    from keras_bert_lab.training.run import MARKER_FILE

    run = prepare_output(tmp_path / "run", {"steps": 1})
    assert (run / MARKER_FILE).is_file()
    (run / "log.csv").write_text("step\n1\n")
    (run / "checkpoints" / "ckpt-00000001.tmp").mkdir(parents=True)
    (run / "notes.txt").write_text("mine")
    prepare_output(run, {"steps": 2}, overwrite=True)
    assert sorted(p.name for p in run.iterdir()) == [MARKER_FILE, "notes.txt", "settings.json"]
    with pytest.raises(TrainingError, match="pass one of them"):
        prepare_output(run, {"steps": 2}, resume=True, overwrite=True)


def test_an_unmarked_settings_json_is_resumed_but_never_deleted(tmp_path):
    from keras_bert_lab.training.run import MARKER_FILE

    (tmp_path / "settings.json").write_text('{"steps": 1}')
    (tmp_path / "log.csv").write_text("step\n1\n")
    for overwrite in (False, True):
        with pytest.raises(TrainingError, match="no kbl-run.json marker.*--resume continues"):
            prepare_output(tmp_path, {"steps": 2}, overwrite=overwrite)
    assert (tmp_path / "log.csv").exists()
    prepare_output(tmp_path, {"steps": 1}, resume=True)    # an older keras_bert_lab's run
    assert (tmp_path / MARKER_FILE).is_file() and (tmp_path / "log.csv").exists()


def test_a_run_that_never_trained_is_taken_by_the_next_command(tmp_path):
    run = prepare_output(tmp_path / "run", {"steps": 1})    # killed before its first step
    assert check_run_folder(run, {"steps": 5}) == "restart"
    prepare_output(run, {"steps": 5})
    assert json.loads((run / "settings.json").read_text()) == {"steps": 5}
    (run / "log.csv").write_text("step\n1\n")
    with pytest.raises(TrainingError, match="already holds a run"):
        check_run_folder(run, {"steps": 6})


def test_a_file_is_not_an_output_folder(tmp_path):
    (tmp_path / "f").write_text("x")
    for path in (tmp_path / "f", tmp_path / "f" / "run"):
        with pytest.raises(TrainingError, match="is a file"):
            prepare_output(path, {"steps": 1})
    assert (tmp_path / "f").read_text() == "x"


@guarded()
def _recipe(output_dir, fail_at, trained=False):
    output = prepare_output(output_dir, {"steps": 1})
    (output / "metrics.json.tmp").write_text("half")
    if trained:
        (output / "log.csv").write_text("step\n1\n")
    raise fail_at


def test_guarded_cleans_a_failed_start_and_keeps_a_run_that_trained(tmp_path):
    with pytest.raises(ValueError):
        _recipe(tmp_path / "a" / "b" / "run", ValueError("bad label"))
    assert not (tmp_path / "a").exists()             # the folders it made are gone
    with pytest.raises(KeyboardInterrupt):
        _recipe(tmp_path / "run", KeyboardInterrupt(), trained=True)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "kbl-run.json", "log.csv", "settings.json"]  # resumable; the partial file is gone


def test_a_refused_run_cleans_nothing_in_a_folder_that_is_not_a_run(tmp_path):
    (tmp_path / "download.tmp").write_text("half a download: the user's")
    with pytest.raises(TrainingError, match="not empty and holds no run"):
        _recipe(tmp_path, ValueError("never reached"))
    assert (tmp_path / "download.tmp").exists()


def test_a_full_disk_is_one_line_naming_the_folder_and_the_space(tmp_path):
    with pytest.raises(TrainingError) as caught:
        _recipe(tmp_path / "run", OSError(errno.ENOSPC, "No space left on device"), trained=True)
    message = str(caught.value)
    assert "\n" not in message and str(tmp_path / "run") in message
    assert re.search(r"is full \([\d.,]+ [kMG]?B(ytes)? free\); free at least 4 bytes more", message)
    assert "--resume" in message and not list((tmp_path / "run").glob("*.tmp"))


def test_truncate_log_drops_the_rows_a_resumed_run_writes_again(tmp_path):
    path = tmp_path / "log.csv"
    for step, split in ((1, "train"), (2, "train"), (2, "heldout"), (3, "train")):
        append_row(path, {"step": step, "split": split})
    truncate_log(path, 2)
    assert [(r["step"], r["split"]) for r in read_rows(path)] == [
        ("1", "train"), ("2", "train"), ("2", "heldout")]
    truncate_log(tmp_path / "missing.csv", 2)        # nothing logged yet: nothing to do
