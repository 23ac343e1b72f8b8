"""BertTokenClassifier: parity with HF BertForTokenClassification (logits and -100 loss), training,
presets and tag prediction."""

import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig
from keras_bert_lab.models.bert.hf_weights import config_to_hf, load_hf_weights
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.bert.token_classifier import BertTokenClassifier
from keras_bert_lab.tasks.losses import TokenClassificationLoss
from keras_bert_lab.preprocessing.tagging import TaggingPreprocessor
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from tests.conftest import padded_pair_batch, to_numpy
from tests.presets.helpers import tiny_vocab

TOLERANCE = 1e-5
CONFIG = BertConfig.from_size("tiny", vocabulary_size=300, num_layers=2, num_heads=4, max_positions=64)
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def batch():
    return padded_pair_batch(CONFIG.vocabulary_size, lengths=(14, 9, 5), first_lengths=(12, 7, 3),
                             seed=0, cls_id=5, sep_id=6, first_word_id=8)


def hf_labels(x, seed=0):
    """Random labels on real word pieces, -100 on [CLS], padding and every third piece."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(LABELS), size=x["token_ids"].shape).astype("int64")
    ignore = (x["padding_mask"] == 0) | (x["token_ids"] == 5) | (x["token_ids"] == 6)
    ignore[:, 2::3] = True
    labels[ignore] = -100
    return labels


@pytest.fixture(scope="module")
def models():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    hf = transformers.BertForTokenClassification(
        transformers.BertConfig(**config_to_hf(CONFIG), num_labels=len(LABELS))).eval()
    with torch.no_grad():  # non-trivial biases and norms, so a swapped tensor cannot hide
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if name.endswith("LayerNorm.weight") else 0.0, std=0.1)
    state = {k: v.numpy() for k, v in hf.state_dict().items()}
    ours = BertTokenClassifier(BertBackbone(CONFIG), labels=LABELS)
    report = load_hf_weights(ours, state, allow_partial=True)
    assert all("pooler" in key for key in report["missing"])  # HF's tagger has no pooler
    assert report["unexpected"] == ["classifier.bias", "classifier.weight"]
    ours.classifier.kernel.assign(state["classifier.weight"].T)
    ours.classifier.bias.assign(state["classifier.bias"])
    return hf, ours, torch


def test_logits_and_loss_match_transformers(models):
    hf, ours, torch = models
    x = batch()
    labels = hf_labels(x)
    with torch.no_grad():
        expected = hf(input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
                      token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
                      attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long),
                      labels=torch.tensor(labels))
    logits = ours(x)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert tuple(logits.shape) == (3, 14, len(LABELS))
    real = x["padding_mask"].astype(bool)
    np.testing.assert_allclose(to_numpy(logits)[real], expected.logits.numpy()[real],
                               atol=TOLERANCE, rtol=0)
    hf_loss = float(expected.loss)
    loss = TokenClassificationLoss()
    # -100 labels, as HF takes them
    assert abs(float(to_numpy(loss(labels, logits))) - hf_loss) < TOLERANCE
    # the same as sample weights, as our data pipeline gives them
    weights = (labels != -100).astype("float32")
    zeroed = np.where(labels == -100, 0, labels)
    assert abs(float(to_numpy(loss(zeroed, logits, sample_weight=weights))) - hf_loss) < TOLERANCE
    # and through compile()/evaluate() (one batch, dropout off in evaluation)
    ours.compile()
    result = ours.evaluate(x, zeroed, sample_weight=weights, batch_size=3, verbose=0,
                           return_dict=True)
    assert abs(result["loss"] - hf_loss) < TOLERANCE
    chosen = np.argmax(expected.logits.numpy(), -1)[weights > 0]
    assert abs(result["accuracy"] - np.mean(chosen == labels[weights > 0])) < 1e-6


def test_loss_with_no_labelled_token_is_zero():
    logits = np.zeros((2, 3, 4), "float32")
    assert float(to_numpy(TokenClassificationLoss()(np.full((2, 3), -100), logits))) == 0.0


def test_fit_lowers_the_loss_and_keeps_the_pooler_frozen():
    model = BertTokenClassifier(BertBackbone(CONFIG), labels=LABELS, dropout=0.0)
    model.compile(optimizer="adam")
    x = batch()
    y = np.where(hf_labels(x, seed=1) < 0, 0, hf_labels(x, seed=1))
    weights = (hf_labels(x, seed=1) >= 0).astype("float32")
    before = model.evaluate(x, y, sample_weight=weights, verbose=0, return_dict=True)["loss"]
    # 15 steps on the same batch in one epoch (epoch ends are slow on TensorFlow)
    repeat = lambda a: np.concatenate([a] * 15)  # noqa: E731
    model.fit({k: repeat(v) for k, v in x.items()}, repeat(y), sample_weight=repeat(weights),
              epochs=1, batch_size=3, shuffle=False, verbose=0)
    after = model.evaluate(x, y, sample_weight=weights, verbose=0, return_dict=True)["loss"]
    assert after < 0.5 * before
    assert not model.backbone.pooler.trainable


def test_tags_per_word_through_the_preprocessor():
    vocab = tiny_vocab(CONFIG.vocabulary_size)
    model = BertTokenClassifier(BertBackbone(CONFIG), labels=LABELS)
    preprocessor = TaggingPreprocessor(WordPieceTokenizer(vocab), model.labels, sequence_length=16)
    words = [["w1", "w2p3", "w5"], ["w7"], [f"w{i}" for i in range(1, 40)]]
    data = preprocessor(words)
    tags = preprocessor.decode(model.predict_packed(data.features), data)
    assert [len(t) for t in tags] == [3, 1, 39]
    assert all(tag in LABELS for sentence in tags for tag in sentence)
    assert tags[2][14:] == ["O"] * 25  # words past the 16-piece window are tagged O


def test_config_errors():
    backbone = BertBackbone(CONFIG)
    with pytest.raises(ConfigError, match="num_classes"):
        BertTokenClassifier(backbone)
    with pytest.raises(ConfigError, match="agree"):
        BertTokenClassifier(backbone, num_classes=3, labels=LABELS)
    with pytest.raises(ConfigError, match="duplicates"):
        BertTokenClassifier(backbone, labels=["O", "O"])
    with pytest.raises(ConfigError, match="dropout"):
        BertTokenClassifier(backbone, num_classes=2, dropout=1.5)


def test_the_old_argument_name_num_labels_still_works_with_a_warning():
    backbone = BertBackbone(BertConfig.from_size("tiny", vocabulary_size=50))
    with pytest.warns(FutureWarning, match="num_labels is now num_classes"):
        model = BertTokenClassifier(backbone, num_labels=3)
    assert model.num_classes == 3 and model.get_config()["num_classes"] == 3
