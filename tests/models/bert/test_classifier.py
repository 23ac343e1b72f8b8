"""BertClassifier: parity with transformers.BertForSequenceClassification (all three problem
types), training, presets, raw-text prediction and argument errors."""

import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig
from keras_bert_lab.models.bert.hf_weights import config_to_hf, load_hf_weights
from keras_bert_lab.data.registry import locate
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.bert.classifier import BertClassifier
from keras_bert_lab.tasks.heads import decode_logits
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from tests.conftest import padded_pair_batch, to_numpy

TOLERANCE = 1e-5
CONFIG = BertConfig.from_size("tiny", num_layers=2, num_heads=4, vocabulary_size=2000,
                              max_positions=64)
HF_PROBLEMS = {"single_label": "single_label_classification", "regression": "regression",
               "multi_label": "multi_label_classification"}


def hf_pair(problem, num_classes):
    """A randomised HF BertForSequenceClassification and ours with the same weights."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(**config_to_hf(CONFIG), num_labels=num_classes,
                                        problem_type=HF_PROBLEMS[problem])
    hf = transformers.BertForSequenceClassification(hf_config).eval()
    with torch.no_grad():  # non-trivial biases and LayerNorms, so a swapped tensor cannot hide
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if name.endswith("LayerNorm.weight") else 0.0, std=0.1)
    ours = BertClassifier(BertBackbone(CONFIG), num_classes=num_classes, problem=problem)
    state = {k: v.numpy() for k, v in hf.state_dict().items()}
    leftover = load_hf_weights(ours, state, allow_partial=True)
    assert leftover["missing"] == [] and leftover["unexpected"] == ["classifier.bias",
                                                                    "classifier.weight"]
    ours.classifier.kernel.assign(state["classifier.weight"].T)  # HF Linear is [out, in]
    ours.classifier.bias.assign(state["classifier.bias"])
    return hf, ours


def hf_forward(hf, batch, labels):
    import torch

    with torch.no_grad():
        return hf(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                  token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
                  labels=torch.tensor(labels))


@pytest.mark.parametrize("problem,num_classes", [("single_label", 3), ("regression", 1),
                                                 ("multi_label", 4)])
def test_logits_and_loss_match_transformers(problem, num_classes):
    hf, ours = hf_pair(problem, num_classes)
    batch = padded_pair_batch(vocabulary_size=CONFIG.vocabulary_size)
    rng = np.random.default_rng(0)
    labels = {"single_label": np.array([0, 2, 1], "int64"),
              "regression": rng.uniform(0, 5, size=3).astype("float32"),
              "multi_label": rng.integers(0, 2, size=(3, num_classes)).astype("float32")}[problem]
    expected = hf_forward(hf, batch, labels)
    logits = to_numpy(ours(batch))
    assert logits.dtype == np.float32 and logits.shape == (3, num_classes)
    np.testing.assert_allclose(logits, expected.logits.numpy(), atol=TOLERANCE, rtol=0)
    ours.compile()
    loss = ours.evaluate(batch, labels, batch_size=3, return_dict=True, verbose=0)["loss"]
    assert abs(loss - expected.loss.item()) < 1e-5 * max(1.0, abs(loss)), (loss, expected.loss)


@pytest.mark.parametrize("problem,num_classes", [("single_label", 2), ("regression", 1)])
def test_fit_on_a_tiny_batch_reduces_the_loss(problem, num_classes):
    model = BertClassifier(BertBackbone(CONFIG), num_classes=num_classes, problem=problem,
                           dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    x = padded_pair_batch(vocabulary_size=CONFIG.vocabulary_size, lengths=(12, 10, 8, 12),
                          first_lengths=(5, 4, 3, 6))
    y = {"single_label": np.array([0, 1, 1, 0]),
         "regression": np.array([0.5, 4.0, 2.5, 1.0], "float32")}[problem]
    # train_on_batch reports the loss before its update: the first is the untrained loss
    losses = [float(model.train_on_batch(x, y, return_dict=True)["loss"]) for _ in range(25)]
    assert losses[-1] < 0.3 * losses[0], losses


def test_labels_from_raw_text_and_a_new_head_for_new_classes(tmp_path):
    model = BertClassifier(BertBackbone("tiny"), labels=["neg", "neu", "pos"], dropout=0.2)
    path = model.save_to_preset(tmp_path / "clf", vocabulary=locate("bert_uncased_vocab"),
                                preprocessor={"sequence_length": 32})
    loaded = BertClassifier.from_preset(path)
    assert (loaded.num_classes, loaded.labels, loaded.dropout) == (3, ["neg", "neu", "pos"], 0.2)
    preprocessor = BertTextPreprocessor.from_preset(path)
    assert preprocessor.sequence_length == 32
    texts = ["A gripping, funny film.", "Nothing happens for two hours."]
    out = loaded.predict_labels(preprocessor(texts))
    np.testing.assert_allclose(out["logits"], to_numpy(model(preprocessor(texts))), atol=1e-5)
    assert out["probabilities"].shape == (2, 3)
    np.testing.assert_allclose(out["probabilities"].sum(axis=1), 1.0, atol=1e-6)
    assert out["labels"] == [["neg", "neu", "pos"][i] for i in out["ids"]]
    # a new number of classes starts a fresh head on the same backbone
    with pytest.warns(UserWarning, match="freshly initialised"):
        other = BertClassifier.from_preset(path, num_classes=2, labels=None)
    assert other.num_classes == 2


def test_pairs_pack_like_transformers():
    transformers = pytest.importorskip("transformers")
    reference = transformers.BertTokenizerFast(vocab=str(locate("bert_uncased_vocab")),
                                               do_lower_case=True)
    first, second = ["A man plays.", "Two dogs run on the grass."], ["Someone is playing.", "Dogs."]
    preprocessor = BertTextPreprocessor(WordPieceTokenizer(locate("bert_uncased_vocab")), 16)
    features = preprocessor(first, second)
    expected = reference(first, second, max_length=16, padding="max_length", truncation=True)
    assert features["token_ids"].tolist() == expected["input_ids"]
    assert features["segment_ids"].tolist() == expected["token_type_ids"]
    assert features["padding_mask"].tolist() == expected["attention_mask"]
    model = BertClassifier(BertBackbone("tiny"), problem="regression")
    assert model.predict_packed(features).shape == (2, 1)


def test_padding_does_not_change_logits():
    model = BertClassifier(BertBackbone(CONFIG), num_classes=2)
    batch = padded_pair_batch(vocabulary_size=CONFIG.vocabulary_size)
    longer = {k: np.pad(v, ((0, 0), (0, 8))) for k, v in batch.items()}
    np.testing.assert_allclose(to_numpy(model(batch)), to_numpy(model(longer)), atol=1e-5)


@pytest.mark.parametrize("kwargs,match", [
    ({"problem": "ranking"}, "choose one of"),
    ({"problem": "regression", "num_classes": 3}, "must be 1"),
    ({"num_classes": 1}, "num_classes >= 2"),
    ({"num_classes": 3, "labels": ["a", "b"]}, "3 distinct names"),
    ({"labels": ["a", "a"]}, "distinct"),
    ({"num_classes": 2.5}, "integer"),
    ({"pooling": "max"}, "pooling"),
])
def test_bad_head_arguments_raise_config_error(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        BertClassifier(BertBackbone(CONFIG), **kwargs)


def test_mean_pooling_head_reads_the_mean_of_real_tokens():
    """pooling="mean": the head sees the mean of the last layer over real tokens (not [CLS]);
    the unused pooler is frozen so it takes no weight decay and gets no update."""
    model = BertClassifier(BertBackbone(CONFIG), num_classes=3, pooling="mean", dropout=0.0)
    batch = padded_pair_batch(vocabulary_size=CONFIG.vocabulary_size)
    sequence = to_numpy(model.backbone(batch)["sequence_output"])
    mask = batch["padding_mask"][:, :, None]
    mean = (sequence * mask).sum(1) / mask.sum(1)
    kernel, bias = to_numpy(model.classifier.kernel), to_numpy(model.classifier.bias)
    np.testing.assert_allclose(to_numpy(model(batch)), mean @ kernel + bias, atol=1e-5)
    assert not any("pooler" in v.path for v in model.trainable_variables)
    assert BertClassifier.from_config(model.get_config()).pooling == "mean"


def test_decode_logits():
    logits = np.array([[2.0, 0.0], [-1.0, 1.0]])
    out = decode_logits(logits, "single_label", ["neg", "pos"])
    assert out["labels"] == ["neg", "pos"]
    np.testing.assert_allclose(out["probabilities"][0, 0], 1 / (1 + np.exp(-2.0)))
    multi = decode_logits(logits, "multi_label", ["a", "b"])
    assert multi["labels"] == [["a", "b"], ["b"]]
    assert decode_logits(np.array([[1.5]]), "regression")["scores"].tolist() == [1.5]

