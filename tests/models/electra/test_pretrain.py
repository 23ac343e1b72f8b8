"""`kbl pretrain --model electra` end to end on a small corpus: outputs, exact resume, refusals."""

import csv
import json
import os

import numpy as np
import pytest

pytest.importorskip("tensorflow_text")

from keras_bert_lab.errors import ConfigError, TrainingError  # noqa: E402
from keras_bert_lab.models.electra.pretrain import ElectraPretrainSettings, run  # noqa: E402
from keras_bert_lab.presets import read_preset  # noqa: E402
from tests.markers import recipe_resume  # noqa: E402
from tests.models.bert.test_pretrain import SendSignalAt, corpus_file, final_state  # noqa: E402,F401


def settings_for(corpus, **overrides):
    fields = dict(corpus=(corpus,), eval_corpus=corpus, eval_batches=2, size="tiny",
                  sequence_length=32, batch_size=4, steps=8, checkpoint_every=2, eval_every=4,
                  log_every=2, seed=3, learning_rate=1e-3)
    fields.update(overrides)
    return ElectraPretrainSettings(**fields)


@pytest.fixture(scope="module")
def unbroken(corpus_file, tmp_path_factory):   # noqa: F811
    output = str(tmp_path_factory.mktemp("electra") / "unbroken")
    return output, run(settings_for(corpus_file), output, verbose=0)


def test_run_writes_the_run_and_a_discriminator_preset(unbroken):
    from keras_bert_lab.models.electra import ElectraBackbone, ElectraPretrainer

    output, metrics = unbroken
    for name in ("settings.json", "log.csv", "curves.png", "metrics.json", "preset/config.json",
                 "preset/model.weights.h5", "preset/vocab.txt"):
        assert os.path.exists(os.path.join(output, name)), name
    for name in ("heldout_mlm_accuracy", "heldout_rtd_accuracy", "heldout_rtd_auc",
                 "heldout_replaced_rate", "unigram_mlm_accuracy", "all_original_accuracy"):
        assert 0.0 <= metrics[name] <= 1.0, name
    assert metrics["all_original_accuracy"] == pytest.approx(
        1 - metrics["heldout_replaced_rate"])
    # the generator replaced some masked tokens, and never a token it was not given
    assert 0.0 < metrics["heldout_replaced_rate"] < 0.15
    with open(os.path.join(output, "log.csv")) as f:
        rows = list(csv.DictReader(f))
    assert {r["split"] for r in rows} == {"train", "heldout"}
    assert all(0.0 <= float(r["rtd_auc"]) <= 1.0 for r in rows)
    assert [int(r["step"]) for r in rows if r["split"] == "train"] == [2, 4, 6, 8]
    stored = json.load(open(os.path.join(output, "settings.json")))
    assert stored["next_sentence"] is False and stored["packing"] is True
    # its pooler never trained: the preset advises fine-tuning on mean pooling, as BERT MLM-only
    assert read_preset(os.path.join(output, "preset")).preprocessor["finetune"] == {
        "pooling": "mean"}

    preset = os.path.join(output, "preset")
    assert read_preset(preset).family.name == "electra"
    backbone = ElectraBackbone.from_preset(preset)
    assert backbone.config.role == "discriminator" and backbone.config.size_name == "tiny"
    model = ElectraPretrainer.from_preset(preset)
    assert model.generator.config.hidden_size == backbone.config.hidden_size // 4


@recipe_resume
def test_run_resumes_exactly(corpus_file, unbroken, tmp_path):   # noqa: F811
    """The sampling generator's state is in the checkpoint: a run stopped at step 6 and resumed
    draws the same replacements, and ends with an unbroken run's weights."""
    settings = settings_for(corpus_file)
    broken = str(tmp_path / "broken")
    with pytest.raises(TrainingError, match="interrupted by SIGTERM at step 6"):
        run(settings, broken, verbose=0, callbacks=[SendSignalAt(5)])
    run(settings, broken, resume=True, verbose=0)
    name_a, a = final_state(unbroken[0])
    name_b, b = final_state(broken)
    assert name_a == name_b == "ckpt-00000008"
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


@pytest.mark.parametrize("fields, message", [
    ({"next_sentence": True}, "ELECTRA has no next-sentence task"),
    ({"generator_size": 0.3}, "--generator-size 0.3: .*not a whole number"),
    ({"generator_size": 2.0}, "--generator-size 2.0: .*larger than the discriminator"),
    ({"discriminator_weight": 0.0}, "--discriminator-weight 0.0 must be above 0"),
    ({"size": "medium"}, "--size 'medium': choose one of tiny, mini, small, base, large"),
    ({"sequence_length": 600}, "ELECTRA-small has 512 positions"),
])
def test_bad_settings_are_refused_by_name(fields, message):
    with pytest.raises(ConfigError, match=message):
        ElectraPretrainSettings(**fields)


def test_kbl_pretrain_takes_electra_and_its_flags(tmp_path):
    import argparse

    from keras_bert_lab.commands.pretrain import add_arguments, recipe_settings

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--model", "electra", "--output", str(tmp_path), "--size", "tiny",
                              "--generator-size", "0.5", "--discriminator-weight", "20"])
    settings = recipe_settings(args)
    assert isinstance(settings, ElectraPretrainSettings)
    assert (settings.generator_size, settings.discriminator_weight) == (0.5, 20.0)
    with pytest.raises(ConfigError, match="--generator-size applies to --model electra only"):
        recipe_settings(parser.parse_args(["--model", "bert", "--output", str(tmp_path),
                                           "--generator-size", "0.5"]))
    with pytest.raises(ConfigError, match="--norm-first apply to --model bert only"):
        recipe_settings(parser.parse_args(["--model", "electra", "--output", str(tmp_path),
                                           "--norm-first", "true"]))
