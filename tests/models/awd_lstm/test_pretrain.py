"""ULMFiT's three stages end to end — `kbl pretrain --model awd-lstm` on general text, again
from its preset on a target task's text, `kbl finetune classify` with the three techniques —
exact resume with the carried states, the count baseline's targets, flags of other models
refused."""

import json
import os

import numpy as np
import pytest

from keras_bert_lab.cli import main
from keras_bert_lab.errors import ConfigError, DataError, TrainingError
from keras_bert_lab.models.awd_lstm.config import DROPOUT_FIELDS, AwdLstmConfig
from keras_bert_lab.pipelines.language_model import tbptt_blocks
from keras_bert_lab.models.awd_lstm.pretrain import (FINETUNE, AwdPretrainSettings,
                                                 kneser_ney_baseline, read_lines, run)
from keras_bert_lab.metrics.ngram import kneser_ney_perplexity
from tests.markers import recipe_resume
from tests.models.bert.test_pretrain import SendSignalAt, corpus_file, final_state  # noqa: F401


def settings_for(corpus, **overrides):
    fields = dict(corpus=(corpus,), eval_corpus=corpus, size="tiny", sequence_length=8,
                  batch_size=4, steps=6, checkpoint_every=2, eval_batches=2, log_every=2,
                  seed=3, max_vocabulary=200, learning_rate=1e-2)
    fields.update(overrides)
    return AwdPretrainSettings(**fields)


def test_the_three_stages(corpus_file, tmp_path):  # noqa: F811
    settings = settings_for(corpus_file)
    unbroken = str(tmp_path / "unbroken")
    metrics = run(settings, unbroken, verbose=0)
    for name in ("settings.json", "log.csv", "curves.png", "metrics.json", "tokenizer/vocab.txt",
                 "preset/config.json", "preset/vocab.txt"):
        assert os.path.exists(os.path.join(unbroken, name)), name
    assert 1.0 < metrics["heldout_perplexity"] < 200
    assert 1.0 < metrics["kneser_ney_trigram_perplexity"] < 200

    # Stage 2: the target task's own text (Rotten Tomatoes' training snippets, labels unused).
    stage2 = settings_for("rotten_tomatoes", eval_corpus="rotten_tomatoes",
                          init_preset=os.path.join(unbroken, "preset"), steps=2, min_count=50)
    tuned = run(stage2, str(tmp_path / "target"), verbose=0)
    assert tuned["new_words"] > 0
    assert tuned["vocabulary_size"] == metrics["vocabulary_size"] + tuned["new_words"]
    assert tuned["heldout_perplexity_before"] > 1 and tuned["heldout_perplexity"] > 1
    words = open(os.path.join(tmp_path, "target", "preset", "vocab.txt")).read().split("\n")
    first = open(os.path.join(unbroken, "preset", "vocab.txt")).read().split("\n")
    assert words[:len(first) - 1] == first[:-1]      # old ids kept, new words appended

    # Stage 3: the classifier with ULMFiT's three techniques, through kbl finetune classify.
    out = tmp_path / "classifier"
    assert main(["finetune", "classify", "--preset", str(tmp_path / "target" / "preset"),
                 "--dataset", "rotten_tomatoes", "--output", str(out), "--limit", "32",
                 "--epochs", "2", "--batch-size", "8", "--sequence-length", "24",
                 "--unfreeze", "gradual", "--schedule", "slanted", "--layer-decay", "0.385"]) == 0
    report = json.loads((out / "metrics.json").read_text())
    # The flags given win; what no flag sets comes from the preset's recommendation.
    given = {"epochs": 2, "unfreeze": "gradual", "schedule": "slanted", "layer_decay": 0.385}
    advice = {k: v for k, v in FINETUNE.items() if k not in given}
    assert {k: report["settings"][k] for k in {**given, **advice}} == {**given, **advice}
    assert 0.0 <= report["test"]["accuracy"] <= 1.0 and report["labels"] == ["negative",
                                                                            "positive"]
    from keras_bert_lab.models.awd_lstm.ulmfit_classifier import UlmfitClassifier
    assert UlmfitClassifier.from_preset(out / "preset").backbone.config.vocabulary_size == \
        tuned["vocabulary_size"]


@recipe_resume
def test_stage_one_resumes_exactly_with_its_carried_states(corpus_file, tmp_path):  # noqa: F811
    settings = settings_for(corpus_file)
    unbroken, broken = str(tmp_path / "unbroken"), str(tmp_path / "broken")
    run(settings, unbroken, verbose=0)
    with pytest.raises(TrainingError, match="interrupted by SIGTERM at step 4"):
        run(settings, broken, verbose=0, callbacks=[SendSignalAt(3)])
    run(settings, broken, resume=True, verbose=0)
    name_a, a = final_state(unbroken)
    name_b, b = final_state(broken)
    assert name_a == name_b == "ckpt-00000006"
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


def test_a_dropout_set_for_the_language_model_and_others_for_the_classifier(corpus_file,  # noqa
                                                                            tmp_path, capsys):
    """--dropouts/--drop-mult give the run's model a published set times fastai's drop_mult
    (lighter dropouts for a short run); the preset keeps them; a task rebuilds the preset's model
    with other rates (free fields: no weight changes), and with nothing else."""
    from keras_bert_lab.presets.registry import read_preset
    from keras_bert_lab.models.awd_lstm.ulmfit_classifier import UlmfitClassifier

    assert "dropouts" not in settings_for(corpus_file).to_dict()   # earlier runs still resume
    settings = settings_for(corpus_file, dropouts="fastai_lm", drop_mult=0.5, steps=2)
    out = tmp_path / "light"
    run(settings, str(out), verbose=0)
    expected = AwdLstmConfig().with_dropouts("fastai_lm", drop_mult=0.5)
    stored = read_preset(str(out / "preset")).config
    assert {f: stored[f] for f in DROPOUT_FIELDS} == {f: getattr(expected, f)
                                                      for f in DROPOUT_FIELDS}
    model = UlmfitClassifier.from_preset(out / "preset", num_classes=2,
                                         config={"input_dropout": 0.2, "output_dropout": 0.3})
    assert model.backbone.input_dropout.rate == 0.2 and model.backbone.config.output_dropout == 0.3
    assert model.dropout == (0.3, 0.1)              # the head's first block follows the encoder
    plain = UlmfitClassifier.from_preset(out / "preset", num_classes=2)
    x = {"token_ids": np.array([[5, 6, 7, 2]], "int32"), "padding_mask": np.ones((1, 4), "int32")}
    np.testing.assert_allclose(model.backbone.predict_on_batch(x)["sequence_output"],
                               plain.backbone.predict_on_batch(x)["sequence_output"], atol=1e-6)
    with pytest.raises(ConfigError, match="hidden_dim"):
        UlmfitClassifier.from_preset(out / "preset", num_classes=2, config={"hidden_dim": 8})
    with pytest.raises(ConfigError, match="give --dropouts too"):
        settings_for(corpus_file, drop_mult=0.5)
    with pytest.raises(ConfigError, match="Unknown dropout set"):
        settings_for(corpus_file, dropouts="merity")
    assert main(["pretrain", "--model", "gpt", "--corpus", corpus_file, "--output",
                 str(tmp_path / "x"), "--drop-mult", "0.5"]) == 2
    assert "--drop-mult applies to --model awd-lstm only" in capsys.readouterr().err


def test_kneser_ney_baseline_scores_each_part_in_its_own_order():
    tokens = np.random.default_rng(0).integers(3, 40, 500)
    blocks = tbptt_blocks(tokens, batch_size=4, bptt=10)
    part = 499 // 4
    used = (part // 10) * 10 + 1
    stream = np.concatenate([tokens[b * part:b * part + used] for b in range(4)]).tolist()
    positions = [b * used + i for b in range(4) for i in range(1, used)]
    expected = kneser_ney_perplexity(tokens.tolist(), stream, positions)
    assert kneser_ney_baseline(tokens, blocks, 4) == pytest.approx(expected)


def test_bad_settings_and_foreign_flags(corpus_file, tmp_path, capsys):  # noqa: F811
    with pytest.raises(ConfigError, match="BPTT window"):
        AwdPretrainSettings(sequence_length=1)
    with pytest.raises(DataError, match="neither a file.*labelled set: rotten_tomatoes"):
        read_lines(str(tmp_path / "missing.txt"))
    assert main(["pretrain", "--model", "gpt", "--corpus", corpus_file, "--output",
                 str(tmp_path / "x"), "--init-preset", "somewhere"]) == 2
    assert "--init-preset applies to --model awd-lstm only" in capsys.readouterr().err
    assert main(["pretrain", "--model", "awd-lstm", "--corpus", corpus_file, "--output",
                 str(tmp_path / "y"), "--init-preset", str(tmp_path)]) == 2
    assert not os.path.exists(tmp_path / "x") and not os.path.exists(tmp_path / "y")
