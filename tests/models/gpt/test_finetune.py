"""`kbl finetune classify | pair | choice` with a GPT preset: GPT-1's input transformations and
heads behind the same commands, flags and readers as BERT."""

import json

import numpy as np
import pytest

from keras_bert_lab.cli import main
from keras_bert_lab.models.gpt.backbone import GPTBackbone
from keras_bert_lab.models.gpt.config import GPTConfig
from keras_bert_lab.preprocessing.bpe_trainer import train_bpe
from keras_bert_lab.models.gpt.causal_lm import GPTCausalLM

GOOD, BAD = ["great", "fine", "lovely", "superb"], ["awful", "dull", "poor", "weak"]


@pytest.fixture(scope="module")
def gpt_preset(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpt")
    tokenizer = train_bpe([" ".join(GOOD + BAD + ["film", "the", "was", "it"])] * 3,
                          num_merges=200, min_frequency=2)
    config = GPTConfig.from_size("tiny", vocabulary_size=tokenizer.vocabulary_size, max_positions=32)
    GPTCausalLM(GPTBackbone(config)).save_to_preset(
        root / "preset", vocabulary=tokenizer.vocabulary, merges=tokenizer.merges)
    return root


def test_classify_and_choice_run_with_a_gpt_preset(gpt_preset, tmp_path):
    rng = np.random.default_rng(0)
    rows = [(f"the film was {w}", "pos" if w in GOOD else "neg")
            for w in rng.choice(GOOD + BAD, size=120)]
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f"{t},{y}\n" for t, y in rows))
    (tmp_path / "mc.jsonl").write_text("".join(
        json.dumps({"context": "the film was", "choices": [g, b] if i % 2 else [b, g],
                    "label": int(i % 2 == 0)}) + "\n"
        for i, (g, b) in enumerate(zip(rng.choice(GOOD, 16), rng.choice(BAD, 16)))))
    common = ["--preset", str(gpt_preset / "preset"), "--epochs", "6", "--batch-size", "8",
              "--sequence-length", "16", "--learning-rate", "3e-3", "--patience", "6",
              "--valid-fraction", "0.2"]
    assert main(["finetune", "classify", "--train", str(tmp_path / "train.csv"),
                 "--lm-loss-weight", "0.5", "--output", str(tmp_path / "c"), *common]) == 0
    metrics = json.loads((tmp_path / "c" / "metrics.json").read_text())
    assert metrics["valid"]["accuracy"] >= 0.75, metrics["valid"]
    plumbing = [*common, "--epochs", "1"]   # the heads' learning is tests/tasks' job
    assert main(["finetune", "choice", "--train", str(tmp_path / "mc.jsonl"),
                 "--output", str(tmp_path / "m"), *plumbing]) == 0
    from keras_bert_lab.models.gpt.classifier import GPTClassifier
    saved = GPTClassifier.from_preset(tmp_path / "c" / "preset")
    assert saved.lm_loss_weight == 0.5 and saved.num_classes == 2


def test_ner_runs_with_a_gpt_preset(gpt_preset, tmp_path, capsys):
    rng = np.random.default_rng(1)
    lines = []
    for _ in range(50):   # "the film was great": the judgement word is tagged by its kind
        words = ["the", "film", "was", *rng.choice(GOOD + BAD, size=2)]
        lines += [f"{w} {'B-GOOD' if w in GOOD else 'B-BAD' if w in BAD else 'O'}"
                  for w in words] + [""]
    (tmp_path / "train.conll").write_text("\n".join(lines))
    argv = ["finetune", "ner", "--train", str(tmp_path / "train.conll"),
            "--preset", str(gpt_preset / "preset"), "--epochs", "6", "--batch-size", "8",
            "--sequence-length", "16", "--learning-rate", "3e-3", "--patience", "8",
            "--output", str(tmp_path / "n")]
    assert main(argv) == 0
    metrics = json.loads((tmp_path / "n" / "metrics.json").read_text())
    assert metrics["valid"]["f1"] >= 0.8, metrics["valid"]
    from keras_bert_lab.models.gpt import GPTTokenClassifier
    assert GPTTokenClassifier.from_preset(tmp_path / "n" / "preset").labels == \
        metrics["labels"]
    assert main([*argv[:-1], str(tmp_path / "m"), "--label-all-pieces"]) == 2
    assert "--label-all-pieces applies to BERT and ELECTRA presets" in capsys.readouterr().err


def test_gpt_flags_are_refused_with_bert_and_bert_flags_with_gpt(gpt_preset, tmp_path, capsys):
    (tmp_path / "train.csv").write_text("text,label\n" + "a,x\nb,y\n" * 5)
    assert main(["finetune", "classify", "--train", str(tmp_path / "train.csv"),
                 "--preset", str(gpt_preset / "preset"), "--pooling", "mean",
                 "--output", str(tmp_path / "o")]) == 2
    assert "--pooling applies to BERT and ELECTRA presets" in capsys.readouterr().err
    (tmp_path / "mc.jsonl").write_text(json.dumps({"context": "a", "choices": ["b", "c"],
                                                   "label": 0}) + "\n")
    assert main(["finetune", "choice", "--train", str(tmp_path / "mc.jsonl"),
                 "--valid", str(tmp_path / "mc.jsonl"), "--preset", str(gpt_preset / "preset"), "--pooling", "mean",
                 "--output", str(tmp_path / "c")]) == 2
    assert "--pooling applies to BERT and ELECTRA presets" in capsys.readouterr().err


def test_squad_learns_templated_questions_with_a_gpt_preset(tmp_path, capsys):
    from tests.synthetic_squad import synthetic_squad

    train, valid = synthetic_squad(300, facts=1, filler=2, seed=1), \
        synthetic_squad(60, facts=1, filler=2, seed=2)
    texts = [p["context"] + " " + qa["question"] for data in (train, valid)
             for a in data["data"] for p in a["paragraphs"] for qa in p["qas"]]
    tokenizer = train_bpe(texts, num_merges=300, min_frequency=2)
    config = GPTConfig.from_size("tiny", vocabulary_size=tokenizer.vocabulary_size, max_positions=64)
    preset = GPTCausalLM(GPTBackbone(config)).save_to_preset(
        tmp_path / "lm", vocabulary=tokenizer.vocabulary, merges=tokenizer.merges)
    for name, data in (("train", train), ("valid", valid)):
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    argv = ["finetune", "squad", "--train", str(tmp_path / "train.json"),
            "--valid", str(tmp_path / "valid.json"), "--preset", str(preset),
            "--epochs", "4", "--batch-size", "16", "--sequence-length", "48", "--doc-stride", "16",
            "--learning-rate", "2e-3", "--patience", "6", "--output", str(tmp_path / "qa")]
    assert main(argv) == 0
    metrics = json.loads((tmp_path / "qa" / "metrics.json").read_text())
    assert metrics["best"]["exact_match"] >= 80.0, metrics["best"]
    from keras_bert_lab.models.gpt import GPTSpanQA
    assert isinstance(GPTSpanQA.from_preset(tmp_path / "qa" / "preset"), GPTSpanQA)
    bert_preset = ["--preset", "minilm_l6_en_uncased", "--lm-loss-weight", "0.5"]
    assert main([*argv[:6], *bert_preset, "--output", str(tmp_path / "b")]) == 2
    assert "--lm-loss-weight applies to GPT presets" in capsys.readouterr().err
