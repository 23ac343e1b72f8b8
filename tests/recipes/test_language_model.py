"""`kbl pretrain --model gpt` end to end on a small corpus: outputs, exact resume, the preset,
and flags that belong to BERT only."""

import json
import os

import numpy as np
import pytest

from keras_bert_lab.cli import main
from keras_bert_lab.errors import TrainingError
from keras_bert_lab.recipes.language_model import LanguageModelSettings, run
from tests.recipes.test_pretrain import SendSignalAt, corpus_file, final_state  # noqa: F401


def settings_for(corpus, **overrides):
    fields = dict(corpus=(corpus,), eval_corpus=corpus, size="tiny", sequence_length=16,
                  batch_size=4, steps=8, checkpoint_every=2, eval_every=4, eval_batches=2,
                  log_every=2, seed=3, bpe_merges=60, learning_rate=1e-3)
    fields.update(overrides)
    return LanguageModelSettings(**fields)


def test_run_outputs_preset_and_exact_resume(corpus_file, tmp_path):  # noqa: F811
    settings = settings_for(corpus_file)
    unbroken = str(tmp_path / "unbroken")
    metrics = run(settings, unbroken, verbose=0)
    for name in ("settings.json", "log.csv", "curves.png", "metrics.json", "tokenizer/merges.txt",
                 "preset/config.json", "preset/merges.txt", "preset/vocab.txt"):
        assert os.path.exists(os.path.join(unbroken, name)), name
    assert metrics["heldout_perplexity"] == pytest.approx(np.exp(metrics["heldout_loss"]))
    assert 1.0 < metrics["kneser_ney_trigram_perplexity"] < metrics["vocabulary_size"]
    assert len(metrics["samples"]) == 3 and all(isinstance(s, str) for s in metrics["samples"])

    broken = str(tmp_path / "broken")
    with pytest.raises(TrainingError, match="interrupted by SIGTERM at step 6"):
        run(settings, broken, verbose=0, callbacks=[SendSignalAt(5)])
    run(settings, broken, resume=True, verbose=0)
    name_a, a = final_state(unbroken)
    name_b, b = final_state(broken)
    assert name_a == name_b == "ckpt-00000008"
    for key in a:
        np.testing.assert_allclose(a[key], b[key], atol=1e-5, err_msg=key)

    from keras_bert_lab.tasks.causal_lm import GPTCausalLM
    lm = GPTCausalLM.from_preset(os.path.join(unbroken, "preset"))
    assert lm.backbone.config.vocab_size == metrics["vocabulary_size"]


def test_bert_only_flags_are_refused_for_gpt(corpus_file, tmp_path, capsys):  # noqa: F811
    assert main(["pretrain", "--model", "gpt", "--corpus", corpus_file, "--output",
                 str(tmp_path / "x"), "--whole-word-masking", "true"]) == 2
    assert "--whole-word-masking apply to --model bert only" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x")
