"""Every task passes the same checks (tests/tasks/helpers.py): outputs, fit with the compile()
defaults, config, the .keras file, the preset round trip — and its preset loads under the other
two backends with the same outputs. BERT's heads, GPT's (classification with the auxiliary LM
loss, similarity, multiple choice, tagging, span QA) and ELECTRA's (the joint pretrainer, the
discriminator, the generator, and BERT's four fine-tuning heads on its discriminator). Task-specific behaviour (parity with
transformers, losses, arguments) is in each task's own test file."""

import keras
import numpy as np
import pytest

from keras_bert_lab import (BertBackbone, BertClassifier, BertConfig, BertMultipleChoice,
                            BertPretrainer, BertSpanQA, BertTokenClassifier, ElectraBackbone,
                            ElectraClassifier, ElectraConfig, ElectraDiscriminator,
                            ElectraMaskedLM, ElectraMultipleChoice, ElectraPretrainer,
                            ElectraSpanQA, ElectraTokenClassifier, GPTBackbone,
                            GPTClassifier, GPTConfig, GPTMultipleChoice, GPTSpanQA,
                            GPTTokenClassifier, SentenceEmbedder)
from tests.conftest import padded_pair_batch
from tests.presets.helpers import tiny_vocab
from tests.tasks.helpers import check_presets_in_other_backends, run_task_test

CONFIG = BertConfig.from_size("tiny", vocabulary_size=300, num_heads=4, max_positions=32)
GPT_CONFIG = GPTConfig.from_size("tiny", vocabulary_size=300, num_heads=4, max_positions=32)
ELECTRA_CONFIG = ElectraConfig.from_size("tiny", vocabulary_size=300, max_positions=32)
GPT_VOCABULARY = [f"t{i}" for i in range(GPT_CONFIG.vocabulary_size)]   # "t1" made by the one merge
B = 3


def pair_batch(seed=0):
    return padded_pair_batch(vocabulary_size=CONFIG.vocabulary_size, lengths=(14, 9, 5),
                             first_lengths=(6, 3, 2), seed=seed, cls_id=5, sep_id=6,
                             first_word_id=8)


def gpt_rows(seed=0):
    """``[start] … [extract]``-shaped right-padded rows (the heads read the last real token)."""
    x = pair_batch(seed)
    return {k: x[k] for k in ("token_ids", "padding_mask")}


def gpt_case(name):
    backbone = GPTBackbone(GPT_CONFIG)
    x = gpt_rows()
    T = x["token_ids"].shape[1]
    both = {k: np.stack([v, gpt_rows(seed=1)[k]], axis=1) for k, v in x.items()}   # S = C = 2
    if name == "gpt_classifier":
        return (GPTClassifier(backbone, num_classes=3, lm_loss_weight=0.5), x,
                np.array([0, 2, 1]), None, (B, 3), True)
    if name == "gpt_similarity":
        return (GPTClassifier(backbone, num_classes=1, num_sequences=2), both,
                np.array([0.5, 3.0, 1.5], "float32"), None, (B, 1), True)
    if name == "gpt_multiple_choice":
        return GPTMultipleChoice(backbone), both, np.array([1, 0, 1]), None, (B, 2), True
    if name == "gpt_token_classifier":
        y = np.random.default_rng(0).integers(0, 3, size=(B, T))
        return (GPTTokenClassifier(backbone, labels=["O", "B-X", "I-X"]), x, y,
                x["padding_mask"].astype("float32"), (B, T, 3), True)
    if name == "gpt_span_qa":
        y = {"start_logits": np.array([3, 8, 2]), "end_logits": np.array([4, 8, 2])}   # 8: extract
        return (GPTSpanQA(backbone, lm_loss_weight=0.5), x, y, None,
                {"end_logits": (B, T), "start_logits": (B, T)}, True)
    raise ValueError(name)


ENCODER_HEADS = ("classifier", "multiple_choice", "span_qa", "token_classifier")
BERT_HEADS = dict(zip(ENCODER_HEADS, (BertClassifier, BertMultipleChoice, BertSpanQA,
                                      BertTokenClassifier)))
ELECTRA_HEADS = dict(zip(ENCODER_HEADS, (ElectraClassifier, ElectraMultipleChoice, ElectraSpanQA,
                                         ElectraTokenClassifier)))


def encoder_head_case(name, backbone, classes):
    """A fine-tuning head that BERT-style encoders share, on ``backbone``."""
    x = pair_batch()
    T = x["token_ids"].shape[1]
    if name == "classifier":
        return (classes[name](backbone, labels=["a", "b", "c"]), x, np.array([0, 2, 1]), None,
                (B, 3), True)
    if name == "multiple_choice":
        x = {k: np.stack([v, pair_batch(seed=1)[k]], axis=1) for k, v in x.items()}  # C = 2
        return classes[name](backbone), x, np.array([1, 0, 1]), None, (B, 2), True
    if name == "span_qa":
        y = {"start_logits": np.array([3, 0, 2]), "end_logits": np.array([4, 0, 2])}
        return (classes[name](backbone), x, y, None,
                {"end_logits": (B, T), "start_logits": (B, T)}, True)
    y = np.random.default_rng(0).integers(0, 3, size=(B, T))
    return (classes[name](backbone, labels=["O", "B-X", "I-X"]), x, y,
            x["padding_mask"].astype("float32"), (B, T, 3), True)


def electra_case(name):
    if name[len("electra_"):] in ENCODER_HEADS:
        return encoder_head_case(name[len("electra_"):], ElectraBackbone(ELECTRA_CONFIG),
                                 ELECTRA_HEADS)
    x = pair_batch()
    T, V = x["token_ids"].shape[1], ELECTRA_CONFIG.vocabulary_size
    masked = dict(x, mask_positions=np.array([[1, 2, 3]] * B, "int32"))
    if name == "electra_pretrainer":
        x = dict(masked, mask_ids=np.array([[9, 10, 11]] * B, "int32"),
                 mask_weights=np.array([[1, 1, 0]] * B, "float32"))
        return (ElectraPretrainer(ElectraBackbone(ELECTRA_CONFIG)), x, None, None,
                {"mlm": (B, 3, V), "replaced": (B, T), "rtd": (B, T)}, True)
    if name == "electra_discriminator":
        y = np.random.default_rng(0).integers(0, 2, size=(B, T)).astype("float32")
        return (ElectraDiscriminator(ElectraBackbone(ELECTRA_CONFIG)), x, y,
                x["padding_mask"].astype("float32"), (B, T), True)
    if name == "electra_masked_lm":
        generator = ElectraBackbone(ELECTRA_CONFIG.generator())
        return (ElectraMaskedLM(generator), masked, {"mlm": np.array([[9, 10, 11]] * B)},
                {"mlm": np.array([[1, 1, 0]] * B, "float32")}, {"mlm": (B, 3, V)}, True)
    raise ValueError(name)


def case(name):
    """``(model, x, y, sample_weight, expected_shapes, train)`` of one task."""
    if name.startswith("gpt_"):
        return gpt_case(name)
    if name.startswith("electra_"):
        return electra_case(name)
    backbone = BertBackbone(CONFIG)
    x = pair_batch()
    T = x["token_ids"].shape[1]
    if name == "pretrainer":
        x = dict(x, mask_positions=np.array([[1, 2, 3]] * B, "int32"))
        y = {"mlm": np.array([[9, 10, 11]] * B), "nsp": np.array([0, 1, 0])}
        weights = {"mlm": np.array([[1, 1, 0]] * B, "float32"), "nsp": np.ones(B, "float32")}
        return (BertPretrainer(backbone), x, y, weights,
                {"mlm": (B, 3, CONFIG.vocabulary_size), "nsp": (B, 2)}, True)
    if name in ENCODER_HEADS:
        return encoder_head_case(name, backbone, BERT_HEADS)
    if name == "sentence_embedder":
        return SentenceEmbedder(backbone), x, None, None, (B, CONFIG.hidden_size), False
    raise ValueError(name)


TASKS = ["pretrainer", "classifier", "multiple_choice", "span_qa", "token_classifier",
         "sentence_embedder", "gpt_classifier", "gpt_similarity", "gpt_multiple_choice",
         "gpt_token_classifier", "gpt_span_qa", "electra_pretrainer", "electra_discriminator",
         "electra_masked_lm"]
# ELECTRA's fine-tuning heads are the shared encoder heads (tasks/), which BERT's cases above run
# on every backend; their ELECTRA subclasses (a backbone check) run the contract once — their
# presets still load under the other two backends.
if keras.backend.backend() == "torch":
    TASKS += [f"electra_{name}" for name in ENCODER_HEADS]


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """Each task built, checked by run_task_test and saved as a preset (shared by the tests)."""
    results = {}
    for name in TASKS:
        model, x, y, weights, shapes, train = case(name)
        tmp = tmp_path_factory.mktemp(name)
        gpt = name.startswith("gpt_")
        try:
            preset = run_task_test(model, x, y, weights, expected_shapes=shapes,
                                   vocabulary=GPT_VOCABULARY if gpt else tiny_vocab(),
                                   merges=["t 1"] if gpt else None, tmp_path=tmp, train=train,
                                   # one score per choice, softmaxed: the bias cancels
                                   shift_invariant=("classifier/bias",)
                                   if name.endswith("multiple_choice") else ())
            results[name] = (model, preset, x, None)
        except AssertionError as error:  # reported by that task's test
            results[name] = (model, None, x, error)
    return results


@pytest.mark.parametrize("name", TASKS)
def test_task_contract(checked, name):
    *_, error = checked[name]
    if error is not None:
        raise error


def test_task_presets_load_under_the_other_backends(checked, tmp_path):
    cases = [(model, preset, x) for model, preset, x, error in checked.values() if preset]
    assert len(cases) == len(TASKS)
    check_presets_in_other_backends(cases, tmp_path)
