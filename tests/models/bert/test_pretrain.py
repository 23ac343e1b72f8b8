"""`kbl pretrain` end to end on a small corpus: outputs, exact resume after SIGTERM, refusals."""

import os
import signal

import keras
import numpy as np
import pytest

pytest.importorskip("tensorflow_text")

from keras_bert_lab.presets import read_preset  # noqa: E402
from keras_bert_lab.errors import TrainingError  # noqa: E402
from keras_bert_lab.models.bert.pretrain import PretrainSettings, run  # noqa: E402
from keras_bert_lab.training.run import prepare_output  # noqa: E402
from tests.markers import recipe_resume  # noqa: E402

WORDS = ("river city music album team season film station school bridge war king "
         "history church island song road league army village").split()


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    """40 documents of 6 sentences each, Google format (blank line between documents)."""
    rng = np.random.default_rng(0)
    lines = []
    for doc in range(40):
        for sentence in range(6):
            words = rng.choice(WORDS, size=rng.integers(5, 12))
            lines.append(f"the {' '.join(words)} of document {doc} .")
        lines.append("")
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(lines))
    return str(path)


def settings_for(corpus, **overrides):
    fields = dict(corpus=(corpus,), eval_corpus=None, size="tiny", sequence_length=32, batch_size=4,
                  steps=8, checkpoint_every=2, eval_every=4, log_every=2, seed=3,
                  learning_rate=1e-3)
    fields.update(overrides)
    return PretrainSettings(**fields)


def final_state(output_dir):
    from keras_bert_lab.training.checkpoints import list_checkpoints

    newest = list_checkpoints(os.path.join(output_dir, "checkpoints"))[-1]
    with np.load(os.path.join(newest, "state.npz")) as data:
        return os.path.basename(newest), {k: data[k] for k in data.files}


class SendSignalAt(keras.callbacks.Callback):
    def __init__(self, step):
        super().__init__()
        self.step = step

    def on_train_batch_end(self, batch, logs=None):
        if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == self.step:
            os.kill(os.getpid(), signal.SIGTERM)


def test_run_outputs(corpus_file, tmp_path):
    settings = settings_for(corpus_file, eval_corpus=corpus_file, eval_batches=2)
    unbroken = str(tmp_path / "unbroken")
    metrics = run(settings, unbroken, verbose=0)
    for name in ("settings.json", "log.csv", "curves.png", "metrics.json", "preset/config.json",
                 "preset/model.weights.h5", "preset/vocab.txt"):
        assert os.path.exists(os.path.join(unbroken, name)), name
    assert 0.0 <= metrics["heldout_mlm_accuracy"] <= 1.0 and "unigram_mlm_accuracy" in metrics
    # NSP trained the pooler: the preset recommends no other pooling for fine-tuning
    assert "finetune" not in read_preset(os.path.join(unbroken, "preset")).preprocessor


@recipe_resume
def test_run_resumes_exactly(corpus_file, tmp_path):
    settings = settings_for(corpus_file, eval_corpus=corpus_file, eval_batches=2)
    unbroken = str(tmp_path / "unbroken")
    run(settings, unbroken, verbose=0)
    broken = str(tmp_path / "broken")
    # The signal arrives during step 5; the checkpoint callback acts at the next step boundary.
    with pytest.raises(TrainingError, match="interrupted by SIGTERM at step 6"):
        run(settings, broken, verbose=0, callbacks=[SendSignalAt(5)])
    with pytest.raises(TrainingError, match="already holds a run"):
        run(settings, broken, verbose=0)
    run(settings, broken, resume=True, verbose=0)

    name_a, a = final_state(unbroken)
    name_b, b = final_state(broken)
    assert name_a == name_b == "ckpt-00000008"
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


def test_accumulation_counts_updates(corpus_file, tmp_path):
    """--steps counts optimizer updates: with --accumulation 2, 4 steps are 8 batches,
    checkpoints fall on updates only, and log rows are one per update."""
    import csv

    from keras_bert_lab.training.checkpoints import list_checkpoints

    unbroken = str(tmp_path / "unbroken")
    run(accumulated_settings(corpus_file), unbroken, verbose=0)
    names = [os.path.basename(c) for c in list_checkpoints(os.path.join(unbroken, "checkpoints"))]
    assert names == ["ckpt-00000002", "ckpt-00000004"]
    steps = [int(row["step"]) for row in csv.DictReader(open(os.path.join(unbroken, "log.csv")))
             if row["split"] == "train"]
    assert steps == [1, 2, 3, 4]


@recipe_resume
def test_accumulation_resumes_exactly(corpus_file, tmp_path):
    """A signal between the two batches of an update waits for the update; the resumed run
    ends with the unbroken run's weights."""
    settings = accumulated_settings(corpus_file)
    unbroken, broken = str(tmp_path / "unbroken"), str(tmp_path / "broken")
    run(settings, unbroken, verbose=0)
    with pytest.raises(TrainingError, match="interrupted by SIGTERM at step 2"):
        run(settings, broken, verbose=0, callbacks=[SendSignalAt(1)])  # signalled mid-update 2
    run(settings, broken, resume=True, verbose=0)
    name_a, a = final_state(unbroken)
    name_b, b = final_state(broken)
    assert name_a == name_b == "ckpt-00000004"
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


class KeepModel(keras.callbacks.Callback):
    def on_train_end(self, logs=None):
        KeepModel.model_seen = self.model


def test_time_budget_sizes_the_steps_and_the_schedule_ends_with_them(corpus_file, tmp_path):
    """--time-budget: the step is timed, the steps and warm-up sized from it (budget.json), and
    the learning rate reaches 0 exactly at the last step; settings.json keeps the budget."""
    import json

    out = tmp_path / "budget"
    settings = settings_for(corpus_file, eval_corpus=corpus_file, eval_batches=2,
                            time_budget="12s", checkpoint_every=1000, eval_every=1000)
    metrics = run(settings, str(out), verbose=0, callbacks=[KeepModel()])
    sizing = json.loads((out / "budget.json").read_text())
    assert sizing["steps"] == metrics["steps"] >= 1 and sizing["budget_seconds"] == 12.0
    assert sizing["warmup_steps"] == min(max(1, sizing["steps"] // 10), sizing["steps"] - 1)
    assert 0 < sizing["step_seconds"] < 12 and sizing["spent_seconds"] > 0
    model = KeepModel.model_seen
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == sizing["steps"]
    assert float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)) == 0.0
    stored = json.loads((out / "settings.json").read_text())
    assert stored["time_budget"] == "12s" and stored["steps"] == settings.steps
    assert metrics["time_budget_seconds"] == 12.0 and metrics["trained_seconds"] > 0


@recipe_resume
def test_time_budget_run_resumes_with_its_sizing(corpus_file, tmp_path, monkeypatch):
    """A resumed budget run reads budget.json instead of timing again, and ends with the weights
    of the same run given its sized --steps and --warmup-steps outright."""
    from keras_bert_lab.training import budget

    monkeypatch.setattr(budget, "steps_for_budget", lambda *args, **kwargs: 8)
    settings = settings_for(corpus_file, time_budget="1m")
    broken = str(tmp_path / "broken")
    with pytest.raises(TrainingError, match="interrupted by SIGTERM at step 4"):
        run(settings, broken, verbose=0, callbacks=[SendSignalAt(3)])

    def timed_again(*args, **kwargs):
        raise AssertionError("a resumed budget run timed the step again")

    monkeypatch.setattr(budget, "measure", timed_again)
    run(settings, broken, resume=True, verbose=0)
    explicit = str(tmp_path / "explicit")
    run(settings_for(corpus_file, steps=8, warmup_steps=1), explicit, verbose=0)
    name_a, a = final_state(explicit)
    name_b, b = final_state(broken)
    assert name_a == name_b == "ckpt-00000008"
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


def accumulated_settings(corpus_file):
    """4 optimizer updates of 2 batches each, a checkpoint every 2 updates."""
    return settings_for(corpus_file, steps=4, accumulation=2, checkpoint_every=2, log_every=1,
                        eval_every=4)


def test_resume_with_other_settings_is_refused(corpus_file, tmp_path):
    out = str(tmp_path / "run")
    prepare_output(out, settings_for(corpus_file, steps=2).to_dict())   # what a run starts with
    with pytest.raises(TrainingError, match="different settings"):
        run(settings_for(corpus_file, steps=2, learning_rate=1e-2), out, resume=True, verbose=0)
    with pytest.raises(TrainingError, match="holds no run"):
        run(settings_for(corpus_file), str(tmp_path / "empty"), resume=True, verbose=0)


def test_nan_loss_stops_and_names_the_last_good_checkpoint(corpus_file, tmp_path):
    out = str(tmp_path / "nan")
    with pytest.raises(TrainingError, match=r"step 3.*ckpt-00000002"):
        run(settings_for(corpus_file, steps=6), out, verbose=0, callbacks=[PoisonAt(3)])


class PoisonAt(keras.callbacks.Callback):
    """Makes the weights NaN after ``step - 1`` so that step ``step`` reports a NaN loss."""

    def __init__(self, step):
        super().__init__()
        self.step = step

    def on_train_batch_begin(self, batch, logs=None):
        if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == self.step - 1:
            table = self.model.backbone.token_embedding.embeddings
            table.assign(table * np.nan)


def test_missing_corpus_is_a_clear_error(tmp_path):
    from keras_bert_lab.errors import KblError

    with pytest.raises(KblError, match="does-not-exist"):
        run(settings_for(str(tmp_path / "does-not-exist.txt")), str(tmp_path / "x"), verbose=0)


def test_modern_encoder_options_reach_the_model_and_the_preset(corpus_file, tmp_path):
    """MosaicBERT / Cramming's model choices through the recipe: pre-LN, no biases, GEGLU,
    rotary positions, no dropout, masked LM only at a 30 % mask rate on packed blocks."""
    import json

    from keras_bert_lab.models.bert.backbone import BertBackbone

    modern = dict(norm_first=True, use_bias=False, feedforward="geglu",
                  position_embedding="rotary", dropout=0.0)
    settings = settings_for(corpus_file, steps=4, next_sentence=False, mask_selection_rate=0.3,
                            eval_corpus=corpus_file, eval_batches=2, packing=True, **modern)
    out = tmp_path / "modern"
    metrics = run(settings, str(out), verbose=0)
    assert np.isfinite(metrics["heldout_loss"])
    config = BertBackbone.from_preset(out / "preset").config
    assert {k: getattr(config, k) for k in modern} == modern and config.attention_dropout == 0.0
    assert json.loads((out / "settings.json").read_text())["position_embedding"] == "rotary"
    # no NSP: the pooler never trained, so fine-tuning is advised to pool the mean
    assert read_preset(out / "preset").preprocessor["finetune"] == {"pooling": "mean"}


def test_runs_saved_before_the_modern_options_still_resume(corpus_file, tmp_path):
    """A settings.json without the fields added later resumes with their defaults (BERT's)."""
    import json

    out = tmp_path / "old"
    settings = settings_for(corpus_file, steps=2)
    stored = settings.to_dict()
    assert not {"dropout", "norm_first", "use_bias", "feedforward",
                "position_embedding"} & set(stored)                        # at BERT's defaults
    prepare_output(str(out), {**stored})
    (out / "settings.json").write_text(json.dumps(stored))
    run(settings, str(out), resume=True, verbose=0)
    with pytest.raises(TrainingError, match="different settings"):
        run(settings_for(corpus_file, steps=2, norm_first=True), str(out), resume=True, verbose=0)


@pytest.mark.parametrize("flags, message", [
    (["--feedforward", "swiglu"], "feedforward must be one of ['gelu', 'geglu']"),
    (["--dropout", "1.5"], "--dropout 1.5 must be in [0, 1)"),
    (["--norm-first", "maybe"], None),
    (["--packing", "true"], "add --next-sentence false"),
    (["--time-budget", "soon"], "--time-budget 'soon' is not a duration"),
    (["--time-budget", "1m", "--steps", "5"], "either --steps or --time-budget"),
    (["--time-budget", "1m", "--phase2-steps", "5"], "sizes one phase of training"),
    (["--time-budget", "1m", "--model", "gpt"], "--time-budget apply to --model bert or electra only"),
])
def test_modern_flags_are_checked(corpus_file, tmp_path, capsys, flags, message):
    from keras_bert_lab.cli import main

    argv = ["pretrain", "--corpus", corpus_file, "--output", str(tmp_path / "x"), *flags]
    if message is None:                       # an argparse error, as for every boolean flag
        with pytest.raises(SystemExit):
            main(argv)
        assert "'maybe' is not a boolean" in capsys.readouterr().err
    else:
        assert main(argv) == 2
        assert message in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x")
