"""`kbl finetune classify | pair | choice | ner | squad` with an ELECTRA preset (what
`kbl pretrain --model electra` writes: a pretrainer whose backbone is the discriminator) — BERT's
recipes and flags through the family registry, ELECTRA's heads on the discriminator."""

import json

import keras
import numpy as np
import pytest

pytest.importorskip("tensorflow_text")

from keras_bert_lab.cli import main  # noqa: E402
from keras_bert_lab.models.electra import (ElectraBackbone, ElectraClassifier,  # noqa: E402
                                           ElectraConfig, ElectraPretrainer, ElectraSpanQA,
                                           ElectraTokenClassifier)
from keras_bert_lab.preprocessing.wordpiece_trainer import train_vocabulary  # noqa: E402
from tests.synthetic_squad import synthetic_squad  # noqa: E402

GOOD, BAD = ["great", "fine", "lovely", "superb"], ["awful", "dull", "poor", "weak"]
# The commands' plumbing (registry → adapter → task, preprocessors, presets) is the same code on
# every backend; the ELECTRA heads themselves run on every backend in tests/tasks.
plumbing_once = pytest.mark.skipif(
    keras.backend.backend() != "torch",
    reason="the commands' plumbing runs once; the heads on every backend in tests/tasks")


@pytest.fixture(scope="module")
def squad_data():
    return synthetic_squad(120, facts=1, filler=1, seed=1), synthetic_squad(30, facts=1,
                                                                             filler=1, seed=2)


@pytest.fixture(scope="module")
def electra_preset(tmp_path_factory, squad_data):
    texts = [" ".join(GOOD + BAD + ["the", "film", "was", "it"])] * 3 + [
        p["context"] + " " + qa["question"] for data in squad_data for a in data["data"]
        for p in a["paragraphs"] for qa in p["qas"]]
    vocabulary = train_vocabulary(texts, vocabulary_size=400, min_frequency=1)
    config = ElectraConfig.from_size("tiny", vocabulary_size=len(vocabulary), max_positions=64)
    path = tmp_path_factory.mktemp("electra") / "preset"
    ElectraPretrainer(ElectraBackbone(config)).save_to_preset(path, vocabulary=vocabulary)
    return path


def common(preset, epochs, length=16, held_out=True):
    return ["--preset", str(preset), "--epochs", str(epochs), "--batch-size", "8",
            "--sequence-length", str(length), "--learning-rate", "3e-3", "--patience",
            str(epochs), *(["--valid-fraction", "0.2"] if held_out else [])]


def test_classify_learns_on_the_discriminator(electra_preset, tmp_path):
    rng = np.random.default_rng(0)
    rows = [(f"the film was {w}", "pos" if w in GOOD else "neg")
            for w in rng.choice(GOOD + BAD, size=120)]
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f"{t},{y}\n" for t, y in rows))
    assert main(["finetune", "classify", "--train", str(tmp_path / "train.csv"),
                 "--output", str(tmp_path / "c"), *common(electra_preset, 6)]) == 0
    metrics = json.loads((tmp_path / "c" / "metrics.json").read_text())
    assert metrics["valid"]["accuracy"] >= 0.75, metrics["valid"]
    saved = ElectraClassifier.from_preset(tmp_path / "c" / "preset")
    assert saved.num_classes == 2 and saved.backbone.config.role == "discriminator"


@plumbing_once
def test_every_bert_task_runs_with_an_electra_preset(electra_preset, squad_data, tmp_path):
    rng = np.random.default_rng(1)
    (tmp_path / "pair.csv").write_text("sentence1,sentence2,label\n" + "".join(
        f"the film,was {w},{int(w in GOOD)}\n" for w in rng.choice(GOOD + BAD, size=40)))
    (tmp_path / "mc.jsonl").write_text("".join(
        json.dumps({"context": "the film was", "choices": [g, b] if i % 2 else [b, g],
                    "label": int(i % 2 == 0)}) + "\n"
        for i, (g, b) in enumerate(zip(rng.choice(GOOD, 16), rng.choice(BAD, 16)))))
    lines = []
    for _ in range(30):
        words = ["the", "film", "was", *rng.choice(GOOD + BAD, size=2)]
        lines += [f"{w} {'B-GOOD' if w in GOOD else 'B-BAD' if w in BAD else 'O'}"
                  for w in words] + [""]
    (tmp_path / "train.conll").write_text("\n".join(lines))
    for name, data in zip(("train", "valid"), squad_data):
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    runs = {"pair": ["--train", str(tmp_path / "pair.csv"), "--pooling", "mean",
                     *common(electra_preset, 1)],
            "choice": ["--train", str(tmp_path / "mc.jsonl"), *common(electra_preset, 1)],
            "ner": ["--train", str(tmp_path / "train.conll"), "--label-all-pieces",
                    *common(electra_preset, 1)],
            "squad": ["--train", str(tmp_path / "train.json"), "--valid",
                      str(tmp_path / "valid.json"), "--doc-stride", "8",
                      *common(electra_preset, 1, length=48, held_out=False)]}
    for task, argv in runs.items():
        assert main(["finetune", task, *argv, "--output", str(tmp_path / task)]) == 0, task
        metrics = json.loads((tmp_path / task / "metrics.json").read_text())
        assert "valid" in metrics or "best" in metrics, task
    assert isinstance(ElectraTokenClassifier.from_preset(tmp_path / "ner" / "preset"),
                      ElectraTokenClassifier)
    assert isinstance(ElectraSpanQA.from_preset(tmp_path / "squad" / "preset"), ElectraSpanQA)


@plumbing_once
def test_a_generator_preset_is_refused_for_fine_tuning(tmp_path, capsys):
    generator = ElectraConfig.from_size("tiny", vocabulary_size=40).generator()
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(35)]
    from keras_bert_lab.models.electra import ElectraMaskedLM

    preset = ElectraMaskedLM(ElectraBackbone(generator)).save_to_preset(
        tmp_path / "gen", vocabulary=vocabulary)
    (tmp_path / "train.csv").write_text("text,label\n" + "w1,x\nw2,y\n" * 5)
    assert main(["finetune", "classify", "--train", str(tmp_path / "train.csv"),
                 "--preset", str(preset), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "ElectraClassifier fine-tunes ELECTRA's discriminator" in err and "generator" in err
    assert not (tmp_path / "o").exists()
