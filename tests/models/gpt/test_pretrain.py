"""`kbl pretrain --model gpt` and `--model elmo` end to end on a small corpus: outputs, exact
resume, the preset, GPT's output bias (log-unigram start, off, runs from before it), the count
baselines' targets, and flags that belong to BERT only."""

import json
import os

import keras
import numpy as np
import pytest

from keras_bert_lab.cli import main
from keras_bert_lab.errors import ConfigError, TrainingError
from keras_bert_lab.commands.finetune.common import recommended
from keras_bert_lab.models.gpt.pretrain import FINETUNE, LanguageModelSettings, run
from tests.conftest import to_numpy
from tests.markers import recipe_resume
from tests.models.bert.test_pretrain import SendSignalAt, corpus_file, final_state  # noqa: F401


def settings_for(corpus, **overrides):
    fields = dict(corpus=(corpus,), eval_corpus=corpus, size="tiny", sequence_length=16,
                  batch_size=4, steps=8, checkpoint_every=2, eval_every=4, eval_batches=2,
                  log_every=2, seed=3, bpe_merges=60, learning_rate=1e-3)
    fields.update(overrides)
    return LanguageModelSettings(**fields)


class BiasAtStart(keras.callbacks.Callback):
    """Keeps the LM-head bias as it is when training first begins."""

    def on_train_begin(self, logs=None):
        if not hasattr(self, "bias"):
            self.bias = to_numpy(self.model.lm_head.bias)


def training_ids(corpus, tokenizer_dir):
    """The training stream's ids, tokenized again sentence by sentence with the run's BPE."""
    from keras_bert_lab.data.corpora import load_corpus
    from keras_bert_lab.preprocessing.bpe import BytePairTokenizer

    tokenizer = BytePairTokenizer.from_directory(tokenizer_dir)
    sentences = [s for document in load_corpus(corpus).documents for s in document]
    return np.concatenate([np.asarray(row, "int64") for row in tokenizer.encode(sentences)])


def test_gpt_run_outputs_and_preset(corpus_file, tmp_path):  # noqa: F811
    """Also: the LM-head bias (on by default) starts at the add-one log unigram of the training
    ids, and trains from there."""
    settings = settings_for(corpus_file)
    unbroken = str(tmp_path / "unbroken")
    start = BiasAtStart()
    metrics = run(settings, unbroken, verbose=0, callbacks=[start])
    for name in ("settings.json", "log.csv", "curves.png", "metrics.json", "tokenizer/merges.txt",
                 "preset/config.json", "preset/merges.txt", "preset/vocab.txt"):
        assert os.path.exists(os.path.join(unbroken, name)), name
    assert metrics["heldout_perplexity"] == pytest.approx(np.exp(metrics["heldout_loss"]))
    assert 1.0 < metrics["kneser_ney_trigram_perplexity"] < metrics["vocabulary_size"]
    assert len(metrics["samples"]) == 3 and all(isinstance(s, str) for s in metrics["samples"])
    from keras_bert_lab.models.gpt.causal_lm import GPTCausalLM
    lm = GPTCausalLM.from_preset(os.path.join(unbroken, "preset"))
    assert lm.backbone.config.vocabulary_size == metrics["vocabulary_size"]
    ids = training_ids(corpus_file, os.path.join(unbroken, "tokenizer"))
    assert len(ids) == metrics["train_tokens"]
    counts = np.bincount(ids, minlength=metrics["vocabulary_size"]) + 1.0
    np.testing.assert_allclose(start.bias, np.log(counts / counts.sum()), atol=1e-5, rtol=0)
    trained = to_numpy(lm.lm_head.bias)
    assert lm.output_bias and 1e-4 < np.abs(trained - start.bias).max() < 1.0
    stored = json.loads(open(os.path.join(unbroken, "settings.json")).read())
    assert stored["output_bias"] is True
    assert recommended(os.path.join(unbroken, "preset")) == FINETUNE   # kbl finetune's defaults


def test_no_output_bias_and_runs_from_before_it(corpus_file, tmp_path):  # noqa: F811
    """``output_bias=False`` (--no-output-bias) trains GPT-1 exactly: no bias in the model or
    the preset. A run whose settings.json predates the field trained without the bias, and
    resumes with today's settings without it."""
    from keras_bert_lab.presets import read_preset
    from keras_bert_lab.models.gpt.causal_lm import GPTCausalLM

    with pytest.raises(ConfigError, match="output_bias must be true or false"):
        settings_for(corpus_file, output_bias="false")
    output, short = tmp_path / "plain", dict(steps=2, eval_corpus=None)   # no held-out pass
    run(settings_for(corpus_file, output_bias=False, **short), str(output), verbose=0)
    stored = json.loads((output / "settings.json").read_text())
    assert stored["output_bias"] is False
    assert GPTCausalLM.from_preset(output / "preset").lm_head.bias is None
    assert not [n for n in read_preset(output / "preset").weights() if n.startswith("task/")]
    del stored["output_bias"]   # as an older keras_bert_lab wrote it
    (output / "settings.json").write_text(json.dumps(stored))
    with pytest.raises(TrainingError, match="different settings"):   # other settings still count
        run(settings_for(corpus_file, steps=3, eval_corpus=None), str(output), resume=True,
            verbose=0)
    run(settings_for(corpus_file, **short), str(output), resume=True, verbose=0)
    assert "output_bias" not in json.loads((output / "settings.json").read_text())
    assert GPTCausalLM.from_preset(output / "preset").lm_head.bias is None


@recipe_resume
def test_gpt_run_resumes_exactly(corpus_file, tmp_path):  # noqa: F811
    settings = settings_for(corpus_file)
    unbroken = str(tmp_path / "unbroken")
    run(settings, unbroken, verbose=0)
    broken = str(tmp_path / "broken")
    with pytest.raises(TrainingError, match="interrupted by SIGTERM at step 6"):
        run(settings, broken, verbose=0, callbacks=[SendSignalAt(5)])
    run(settings, broken, resume=True, verbose=0)
    name_a, a = final_state(unbroken)
    name_b, b = final_state(broken)
    assert name_a == name_b == "ckpt-00000008"
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


@pytest.mark.parametrize("flags, expected", [
    ([], True), (["--no-output-bias"], False), (["--output-bias"], True),
    (["--output-bias", "false"], False), (["--output-bias", "true"], True)])
def test_output_bias_flags(flags, expected):
    import argparse

    from keras_bert_lab.commands import pretrain as pretrain_cli

    parser = argparse.ArgumentParser()
    pretrain_cli.add_arguments(parser)
    args = parser.parse_args(["--model", "gpt", "--output", "x", *flags])
    assert pretrain_cli.recipe_settings(args).output_bias is expected


def test_output_bias_flags_are_strict(corpus_file, tmp_path, capsys):  # noqa: F811
    base = ["pretrain", "--corpus", corpus_file, "--output", str(tmp_path / "x")]
    with pytest.raises(SystemExit):   # an argparse error, as for every boolean flag
        main([*base, "--model", "gpt", "--output-bias", "maybe"])
    assert "'maybe' is not a boolean" in capsys.readouterr().err
    assert main([*base, "--model", "elmo", "--no-output-bias"]) == 2
    assert "--output-bias applies to --model gpt only" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x")


def test_bert_only_flags_are_refused_for_gpt(corpus_file, tmp_path, capsys):  # noqa: F811
    assert main(["pretrain", "--model", "gpt", "--corpus", corpus_file, "--output",
                 str(tmp_path / "x"), "--whole-word-masking", "true"]) == 2
    assert "--whole-word-masking apply to --model bert or electra only" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x")


# ---- kbl pretrain --model elmo -----------------------------------------------------------------
def elmo_settings_for(corpus, **overrides):
    from keras_bert_lab.models.elmo.pretrain import ElmoPretrainSettings

    fields = dict(corpus=(corpus,), eval_corpus=corpus, size="tiny", sequence_length=8,
                  batch_size=4, steps=8, checkpoint_every=2, eval_every=8, eval_batches=2,
                  log_every=2, seed=3, min_count=7)
    fields.update(overrides)
    return ElmoPretrainSettings(**fields)


def test_elmo_run_outputs_and_preset(corpus_file, tmp_path):  # noqa: F811
    import csv

    from keras_bert_lab.models.elmo import pretrain as elmo_pretrain
    from keras_bert_lab.models.elmo.language_model import ElmoLanguageModel

    settings = elmo_settings_for(corpus_file)
    unbroken = str(tmp_path / "unbroken")
    metrics = elmo_pretrain.run(settings, unbroken, verbose=0)
    for name in ("settings.json", "log.csv", "curves.png", "metrics.json", "vocab.txt",
                 "preset/config.json", "preset/vocab.txt", "preset/model.weights.h5"):
        assert os.path.exists(os.path.join(unbroken, name)), name
    words = open(os.path.join(unbroken, "vocab.txt"), encoding="utf-8").read().split("\n")[:-1]
    # bilm-tf's layout; "the" ties with "of", "document", "." (once a sentence) and comes first;
    # document numbers (6 sentences each) are below --min-count 7.
    assert words[:4] == ["<S>", "</S>", "<UNK>", "the"] and "17" not in words
    assert len(words) == metrics["vocabulary_size"] and metrics["train_unk_rate"] > 0.0
    rows = list(csv.DictReader(open(os.path.join(unbroken, "log.csv"))))
    assert {r["split"] for r in rows} == {"train", "heldout"}
    assert all(float(r["forward_loss"]) > 0 and float(r["backward_loss"]) > 0 for r in rows)
    for d in ("forward", "backward"):
        perplexity = metrics[f"heldout_{d}_perplexity"]
        assert np.isfinite(perplexity) and 1.0 < perplexity < metrics["vocabulary_size"]
        assert perplexity == pytest.approx(np.exp(metrics[f"heldout_{d}_loss"]))
        assert 1.0 < metrics[f"kneser_ney_trigram_{d}_perplexity"] < metrics["vocabulary_size"]
        # the baseline scores exactly as many targets as the network (weight-1 positions)
        assert metrics[f"kneser_ney_trigram_{d}_targets"] == metrics[f"heldout_{d}_targets"]
    assert metrics["heldout_forward_targets"] < 2 * 4 * 8   # <S> after </S> is no target
    assert [b["text"] for b in metrics["blanks"]] == list(elmo_pretrain.PROBES)
    assert all(len(b["forward"]) == len(b["backward"]) == 5 for b in metrics["blanks"])
    assert not any({"<S>", "</S>"} & {*b["forward"], *b["backward"]} for b in metrics["blanks"])
    lm = ElmoLanguageModel.from_preset(os.path.join(unbroken, "preset"))
    assert lm.backbone.config.vocabulary_size == metrics["vocabulary_size"]
    assert list(lm.preset_info.vocabulary) == words


@recipe_resume
@pytest.mark.parametrize("sampled", [0, 5], ids=["full", "sampled"])
def test_elmo_run_resumes_exactly(corpus_file, tmp_path, sampled):  # noqa: F811
    """Sampled: the sampler's state is in the checkpoint, so the resumed run draws the same
    words."""
    from keras_bert_lab.models.elmo import pretrain as elmo_pretrain

    settings = elmo_settings_for(corpus_file, sampled_softmax=sampled)
    unbroken = str(tmp_path / "unbroken")
    elmo_pretrain.run(settings, unbroken, verbose=0)
    broken = str(tmp_path / "broken")
    with pytest.raises(TrainingError, match="interrupted by SIGTERM at step 6"):
        elmo_pretrain.run(settings, broken, verbose=0, callbacks=[SendSignalAt(5)])
    elmo_pretrain.run(settings, broken, resume=True, verbose=0)
    name_a, a = final_state(unbroken)
    name_b, b = final_state(broken)
    assert name_a == name_b == "ckpt-00000008"
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)


def test_sampled_softmax_is_for_elmo_only(corpus_file, tmp_path, capsys):  # noqa: F811
    base = ["pretrain", "--corpus", corpus_file, "--output", str(tmp_path / "x")]
    assert main([*base, "--model", "gpt", "--sampled-softmax", "8"]) == 2
    assert "--sampled-softmax applies to --model elmo only" in capsys.readouterr().err
    assert main([*base, "--model", "elmo", "--sampled-softmax", "-1"]) == 2
    assert "--sampled-softmax must be 0 (the full softmax)" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x")


def test_elmo_count_baselines_score_the_networks_targets(corpus_file):  # noqa: F811
    """Each direction's Kneser-Ney targets are, in order, the weight-1 targets of the held-out
    batches the network is scored on."""
    from keras_bert_lab.pipelines.language_model import elmo_dataset, lm_blocks
    from keras_bert_lab.models.elmo.pretrain import baseline_targets, load_words

    data = load_words(elmo_settings_for(corpus_file), "", resume=False)
    blocks = lm_blocks(data.heldout, 8, context=2)[:12]
    seen = {"forward": [], "backward": []}
    for _, y, w in elmo_dataset(blocks, data.characters, data.word_ids, 4, shuffle=False,
                                bos_id=data.bos_id, eos_id=data.eos_id).as_numpy_iterator():
        for d in seen:
            seen[d] += y[d].ravel()[w[d].ravel() > 0].tolist()
    targets = baseline_targets(data, blocks)
    train, stream, positions = targets["forward"]
    assert [stream[i] for i in positions] == seen["forward"]
    assert train == data.word_ids[data.train].tolist()
    train, stream, positions = targets["backward"]   # reversed: read back to front
    assert [stream[i] for i in positions][::-1] == seen["backward"]
    assert train[::-1] == data.word_ids[data.train].tolist()


@pytest.mark.parametrize("flags, message", [
    (["--whole-word-masking", "true"], "--whole-word-masking apply to --model bert or electra only"),
    (["--optimizer", "lamb"], "--model elmo trains with adamw or adagrad"),
])
def test_bert_only_flags_are_refused_for_elmo(corpus_file, tmp_path, capsys, flags,  # noqa: F811
                                               message):
    assert main(["pretrain", "--model", "elmo", "--corpus", corpus_file, "--output",
                 str(tmp_path / "x"), *flags]) == 2
    assert message in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x")


def test_elmo_blanks_are_each_sides_best_words_whatever_the_padding():
    """The batched guesses equal each context run alone: the forward LM's scores after the
    words before the blank, the backward LM's before the words after it."""
    import keras

    from keras_bert_lab.models.elmo.backbone import ElmoBackbone
    from keras_bert_lab.models.elmo.config import ElmoConfig
    from keras_bert_lab.preprocessing.characters import character_ids
    from keras_bert_lab.models.elmo.pretrain import guess_blanks
    from keras_bert_lab.models.elmo.language_model import ElmoLanguageModel

    words = ["<S>", "</S>", "<UNK>"] + [f"w{i}" for i in range(40)]
    keras.utils.set_random_seed(1)
    lm = ElmoLanguageModel(ElmoBackbone(ElmoConfig.from_size("tiny", vocabulary_size=len(words))))
    probes = ("a much longer left side ___ x", "b ___ and a much longer right side .")
    guesses = guess_blanks(lm, words, probes, top_k=3)

    def alone(tokens, direction, position):
        scores = keras.ops.convert_to_numpy(lm.predict_on_batch(
            {"character_ids": character_ids([tokens], add_boundaries=False)})[direction])
        ranked = [j for j in np.argsort(-scores[0, position]) if j > 1]   # markers left out
        return [words[j] for j in ranked[:3]]

    for probe, guess in zip(probes, guesses):
        left, right = probe.split("___")
        assert guess["forward"] == alone(["<S>"] + left.split(), "forward", -1)
        assert guess["backward"] == alone(right.split() + ["</S>"], "backward", 0)
    with pytest.raises(ConfigError, match="one blank"):
        guess_blanks(lm, words, ("no blank here",))


def test_gpt_dropout_setting(tmp_path):
    """``kbl pretrain --model gpt --dropout R`` sets all three of the decoder's dropouts; unset, it
    keeps the size's 0.1 and stays out of settings.json (older runs still resume); a rate
    outside [0, 1) is refused with the range."""
    import argparse

    from keras_bert_lab.models.gpt import pretrain as language_model
    from keras_bert_lab.commands import pretrain as pretrain_cli

    parser = argparse.ArgumentParser()
    pretrain_cli.add_arguments(parser)
    settings = pretrain_cli.recipe_settings(parser.parse_args(
        ["--model", "gpt", "--output", "x", "--size", "tiny", "--dropout", "0"]))
    assert settings.dropout == 0 and settings.to_dict()["dropout"] == 0
    config = language_model.build_model(settings, vocabulary_size=50,
                                        train_ids=np.arange(50)).backbone.config
    assert (config.dropout, config.embedding_dropout, config.attention_dropout) == (0, 0, 0)
    default = LanguageModelSettings(size="tiny")
    assert "dropout" not in default.to_dict()
    config = language_model.build_model(default, 50, np.arange(50)).backbone.config
    assert (config.dropout, config.embedding_dropout, config.attention_dropout) == (0.1,) * 3
    with pytest.raises(ConfigError, match=r"--dropout 1.0 is out of range: use a rate in \[0, 1\)"):
        LanguageModelSettings(dropout=1.0)
