"""GPT-1's task heads: multiple-choice parity with transformers' OpenAIGPTDoubleHeadsModel, the
auxiliary LM loss, the similarity transformation, padding, serialisation; the tagging and span-QA
heads GPT-1 did not have."""

import keras
import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.gpt.backbone import GPTBackbone
from keras_bert_lab.models.gpt.config import GPTConfig
from keras_bert_lab.models.gpt.convert import config_to_hf, load_hf_weights
from keras_bert_lab.models.gpt.causal_lm import GPTCausalLM
from keras_bert_lab.pipelines.language_model import next_token_batch
from keras_bert_lab.models.gpt.classifier import GPTClassifier
from keras_bert_lab.models.gpt import GPTMultipleChoice, GPTSpanQA, GPTTokenClassifier
from tests.conftest import to_numpy

CONFIG = GPTConfig.from_size("tiny", vocabulary_size=300, num_layers=2, num_heads=4, max_positions=24,
                             dropout=0.0, attention_dropout=0.0, embedding_dropout=0.0)


def rows(batch, length, lengths, seed=0, vocab=300):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(batch, length)).astype("int32")
    mask = (np.arange(length)[None, :] < np.asarray(lengths)[:, None]).astype("int32")
    return ids * mask, mask


def test_multiple_choice_matches_transformers_double_heads():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    hf = transformers.OpenAIGPTDoubleHeadsModel(
        transformers.OpenAIGPTConfig(**config_to_hf(CONFIG))).eval()
    with torch.no_grad():
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if ".ln_" in name and name.endswith("weight") else 0.0,
                              std=0.1)
    state = {k: v.detach().numpy() for k, v in hf.state_dict().items()}
    model = GPTMultipleChoice(GPTBackbone(CONFIG))
    load_hf_weights(model, state, allow_partial=True)
    head = {k.split("multiple_choice_head.")[1]: v for k, v in state.items()
            if k.startswith("multiple_choice_head.")}
    model.classifier.set_weights([head["summary.weight"].T, head["summary.bias"]])
    ids, mask = rows(6, 12, [12, 9, 5, 11, 7, 3])
    ids, mask = ids.reshape(2, 3, 12), mask.reshape(2, 3, 12)
    with torch.no_grad():
        expected = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                      mc_token_ids=torch.tensor(mask.sum(-1) - 1, dtype=torch.long)).mc_logits
    got = to_numpy(model({"token_ids": ids, "padding_mask": mask}))
    np.testing.assert_allclose(got, expected.numpy(), atol=1e-5, rtol=0)


def test_auxiliary_lm_loss_adds_lambda_times_the_lm_loss():
    backbone = GPTBackbone(CONFIG)
    model = GPTClassifier(backbone, num_classes=3, lm_loss_weight=0.5)
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    ids, mask = rows(4, 10, [10, 6, 8, 4], seed=1)
    labels = np.array([0, 2, 1, 2])
    x = {"token_ids": ids, "padding_mask": mask}
    classification = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        labels, model(x))
    lm = GPTCausalLM(backbone)
    lm_x, lm_y, lm_w = next_token_batch(ids, mask)
    lm_loss = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight")(lm_y, lm(lm_x), sample_weight=lm_w)
    got = model.train_on_batch(x, labels, return_dict=True)["loss"]
    want = float(to_numpy(classification)) + 0.5 * float(to_numpy(lm_loss))
    assert got == pytest.approx(want, rel=1e-5)
    plain = GPTClassifier(backbone, num_classes=3)
    plain.compile(optimizer=keras.optimizers.SGD(0.0))
    plain.classifier.set_weights(model.classifier.get_weights())
    assert plain.train_on_batch(x, labels, return_dict=True)["loss"] == pytest.approx(
        float(to_numpy(classification)), rel=1e-5)


def test_auxiliary_lm_head_keeps_a_pretrained_output_bias(tmp_path):
    """From a GPTCausalLM preset pretrained with an output bias, the auxiliary LM loss is that
    language model's loss (bias included), and the fine-tuned preset keeps the bias."""
    pretrained = GPTCausalLM(GPTBackbone(CONFIG), output_bias=True)
    bias = np.random.default_rng(3).normal(0, 2, CONFIG.vocabulary_size).astype("float32")
    pretrained.lm_head.bias.assign(bias)
    vocab = [f"t{i}" for i in range(CONFIG.vocabulary_size)]
    preset = pretrained.save_to_preset(tmp_path / "lm", vocabulary=vocab, merges=["t 1"])
    ids, mask = rows(4, 10, [10, 6, 8, 4], seed=1)
    x, labels = {"token_ids": ids, "padding_mask": mask}, np.array([0, 2, 1, 2])
    lm_x, lm_y, lm_w = next_token_batch(ids, mask)
    lm_loss = float(to_numpy(keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight")(
            lm_y, pretrained(lm_x), sample_weight=lm_w)))
    model = GPTClassifier.from_preset(preset, num_classes=3, lm_loss_weight=0.5)
    assert model.lm_output_bias
    np.testing.assert_array_equal(to_numpy(model.auxiliary_lm.lm_head.bias), bias)
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    classification = float(to_numpy(keras.losses.SparseCategoricalCrossentropy(
        from_logits=True)(labels, model(x))))
    got = model.train_on_batch(x, labels, return_dict=True)["loss"]
    assert got == pytest.approx(classification + 0.5 * lm_loss, rel=1e-5)
    choice = GPTMultipleChoice.from_preset(preset, lm_loss_weight=0.5)
    np.testing.assert_array_equal(to_numpy(choice.auxiliary_lm.lm_head.bias), bias)
    again = GPTClassifier.from_preset(model.save_to_preset(tmp_path / "clf", vocabulary=vocab,
                                                           merges=["t 1"]))
    assert again.lm_output_bias and again.lm_loss_weight == 0.5
    np.testing.assert_array_equal(to_numpy(again.auxiliary_lm.lm_head.bias), bias)
    assert GPTClassifier.from_preset(preset, num_classes=3, lm_loss_weight=0.5,
                                     lm_output_bias=False).auxiliary_lm.lm_head.bias is None


def test_similarity_is_symmetric_and_padding_changes_nothing(tmp_path):
    model = GPTClassifier(GPTBackbone(CONFIG), num_classes=1, num_sequences=2)
    ids, mask = rows(4, 10, [10, 7, 7, 10], seed=2)
    x = {"token_ids": ids.reshape(2, 2, 10), "padding_mask": mask.reshape(2, 2, 10)}
    swapped = {k: v[:, ::-1] for k, v in x.items()}
    out = to_numpy(model(x))
    np.testing.assert_allclose(to_numpy(model(swapped)), out, atol=1e-5)
    padded = {k: np.pad(v, [(0, 0), (0, 0), (0, 5)]) for k, v in x.items()}
    np.testing.assert_allclose(to_numpy(model(padded)), out, atol=1e-5)
    model.compile()
    model.fit(x, np.array([[0.5], [4.0]], "float32"), verbose=0)
    path = str(tmp_path / "similarity.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(to_numpy(restored(x)), to_numpy(model(x)), atol=1e-6)


def test_bad_arguments():
    with pytest.raises(ConfigError, match="num_sequences"):
        GPTClassifier(GPTBackbone(CONFIG), num_classes=2, num_sequences=3)


def test_token_classifier_reads_only_the_left_context_learns_and_round_trips(tmp_path):
    labels = ["O", "B-X", "I-X"]
    pretrained = GPTCausalLM(GPTBackbone(CONFIG), output_bias=True)  # its preset: a new head
    vocab = [f"t{i}" for i in range(CONFIG.vocabulary_size)]
    preset = pretrained.save_to_preset(tmp_path / "lm", vocabulary=vocab, merges=["t 1"])
    model = GPTTokenClassifier.from_preset(preset, labels=labels, dropout=0.0)
    ids, mask = rows(4, 10, [10, 6, 8, 4], seed=4)
    x = {"token_ids": ids, "padding_mask": mask}
    out = to_numpy(model(x))
    assert out.shape == (4, 10, 3) and out.dtype == np.float32
    later = {"token_ids": ids.copy(), "padding_mask": mask}
    later["token_ids"][:, 5:] = (later["token_ids"][:, 5:] + 7) % CONFIG.vocabulary_size
    np.testing.assert_allclose(to_numpy(model(later))[:, :5], out[:, :5], atol=1e-6)
    assert np.abs(to_numpy(model(later))[0, 5:] - out[0, 5:]).max() > 1e-4
    y = ids % 3                       # the label is a function of the token itself
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = model.fit(x, y, sample_weight=mask.astype("float32"), epochs=30, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert history.history["accuracy"][-1] > 0.9
    saved = model.save_to_preset(tmp_path / "tagger", vocabulary=vocab, merges=["t 1"])
    again = GPTTokenClassifier.from_preset(saved)
    assert again.labels == labels
    np.testing.assert_allclose(to_numpy(again(x)), to_numpy(model(x)), atol=1e-5)
    with pytest.raises(ConfigError, match="duplicates"):
        GPTTokenClassifier(GPTBackbone(CONFIG), labels=["O", "O"])


def test_span_qa_reads_only_the_left_context_learns_and_round_trips(tmp_path):
    pretrained = GPTCausalLM(GPTBackbone(CONFIG), output_bias=True)
    vocab = [f"t{i}" for i in range(CONFIG.vocabulary_size)]
    preset = pretrained.save_to_preset(tmp_path / "lm", vocabulary=vocab, merges=["t 1"])
    model = GPTSpanQA.from_preset(preset, lm_loss_weight=0.5)
    assert model.lm_output_bias and model.auxiliary_lm.lm_head.bias is not None
    ids, mask = rows(8, 12, [12, 9, 11, 7, 12, 10, 8, 12], seed=5)
    x = {"token_ids": ids, "padding_mask": mask}
    out = {k: to_numpy(v) for k, v in model(x).items()}
    assert {k: (v.shape, v.dtype) for k, v in out.items()} == \
        {k: ((8, 12), np.float32) for k in ("start_logits", "end_logits")}
    later = {"token_ids": ids.copy(), "padding_mask": mask}
    later["token_ids"][:, 6:] = (later["token_ids"][:, 6:] + 7) % CONFIG.vocabulary_size
    changed = {k: to_numpy(v) for k, v in model(later).items()}
    for key in out:
        np.testing.assert_allclose(changed[key][:, :6], out[key][:, :6], atol=1e-6)
        assert np.abs(changed[key][0, 6:] - out[key][0, 6:]).max() > 1e-4
    # the span is where a marker token stands: the start at it, the end one after it
    start = np.array([2, 5, 3, 1, 7, 4, 6, 2])
    ids[np.arange(8), start] = 1
    y = {"start_logits": start, "end_logits": start + 1}
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = model.fit(x, y, epochs=40, verbose=0)
    assert history.history["start_logits_accuracy"][-1] == 1.0
    assert history.history["end_logits_accuracy"][-1] == 1.0
    saved = model.save_to_preset(tmp_path / "qa", vocabulary=vocab, merges=["t 1"])
    again = GPTSpanQA.from_preset(saved)
    assert again.lm_loss_weight == 0.5
    for key, value in again(x).items():
        np.testing.assert_allclose(to_numpy(value), to_numpy(model(x)[key]), atol=1e-5)
