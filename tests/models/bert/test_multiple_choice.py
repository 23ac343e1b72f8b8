"""BertMultipleChoice: parity with transformers.BertForMultipleChoice, training, presets."""

import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig
from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.bert.hf_weights import config_to_hf, load_hf_weights
from keras_bert_lab.data.registry import locate
from keras_bert_lab.models.bert.preprocessor import BertTextPreprocessor
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from keras_bert_lab.models.bert.multiple_choice import BertMultipleChoice
from tests.conftest import padded_pair_batch, to_numpy

TOLERANCE = 1e-5
CONFIG = BertConfig.from_size("tiny", num_layers=2, num_heads=4, vocabulary_size=2000,
                              max_positions=64)


def choice_batch(batch=2, choices=3, seed=0):
    """(B, C, T) pairs of different lengths: row-major over (example, choice)."""
    rng = np.random.default_rng(seed)
    lengths = tuple(int(n) for n in rng.integers(8, 20, size=batch * choices))
    flat = padded_pair_batch(vocabulary_size=CONFIG.vocabulary_size, lengths=lengths,
                             first_lengths=tuple(n // 2 - 1 for n in lengths), seed=seed)
    return {k: v.reshape(batch, choices, -1) for k, v in flat.items()}


def test_logits_and_loss_match_transformers():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    hf = transformers.BertForMultipleChoice(
        transformers.BertConfig(**config_to_hf(CONFIG))).eval()
    with torch.no_grad():
        for name, param in hf.named_parameters():
            if param.ndim == 1:
                param.normal_(mean=1.0 if name.endswith("LayerNorm.weight") else 0.0, std=0.1)
    ours = BertMultipleChoice(BertBackbone(CONFIG))
    state = {k: v.numpy() for k, v in hf.state_dict().items()}
    leftover = load_hf_weights(ours, state, allow_partial=True)
    assert leftover["missing"] == [] and leftover["unexpected"] == ["classifier.bias",
                                                                    "classifier.weight"]
    ours.classifier.kernel.assign(state["classifier.weight"].T)
    ours.classifier.bias.assign(state["classifier.bias"])
    batch = choice_batch()
    labels = np.array([2, 0])
    with torch.no_grad():
        expected = hf(input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
                      token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
                      attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
                      labels=torch.tensor(labels))
    logits = to_numpy(ours(batch))
    assert logits.shape == (2, 3) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, expected.logits.numpy(), atol=TOLERANCE, rtol=0)
    ours.compile()
    loss = ours.evaluate(batch, labels, return_dict=True, verbose=0)["loss"]
    assert abs(loss - expected.loss.item()) < 1e-5 * max(1.0, abs(loss))


def test_mean_pooling_scores_each_pairs_mean_state():
    model = BertMultipleChoice(BertBackbone(CONFIG), dropout=0.0, pooling="mean")
    assert model.pooling == "mean" and not model.backbone.pooler.trainable
    batch = choice_batch()
    flat = {k: v.reshape(-1, v.shape[-1]) for k, v in batch.items()}       # (B·C, T)
    states = to_numpy(model.backbone(flat)["sequence_output"])
    mask = flat["padding_mask"][..., None].astype("float32")
    means = (states * mask).sum(axis=1) / mask.sum(axis=1)                 # real tokens only
    expected = means @ to_numpy(model.classifier.kernel) + to_numpy(model.classifier.bias)
    np.testing.assert_allclose(to_numpy(model(batch)), expected.reshape(2, 3), atol=1e-5,
                               rtol=0)
    with pytest.raises(ConfigError, match="pooling='max'; choose one of"):
        BertMultipleChoice(BertBackbone(CONFIG), pooling="max")


def test_fit_on_a_tiny_batch_reduces_the_loss():
    model = BertMultipleChoice(BertBackbone(CONFIG), dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    x, y = choice_batch(batch=4, choices=2, seed=1), np.array([0, 1, 1, 0])
    losses = [float(model.train_on_batch(x, y, return_dict=True)["loss"]) for _ in range(25)]
    assert losses[-1] < 0.3 * losses[0], losses


def test_number_of_choices_is_free(tmp_path):
    model = BertMultipleChoice(BertBackbone("tiny"))
    preprocessor = BertTextPreprocessor(WordPieceTokenizer(locate("bert_uncased_vocab")),
                                        sequence_length=24)
    contexts = ["She opened the umbrella", "The cake came out of the oven"]
    choices = [["because it rained.", "and ate it.", "then sang."],
               ["golden and warm.", "and flew away.", "in a hurry."]]
    out = model.predict_choices(preprocessor.pack_choices(contexts, choices))
    assert out["logits"].shape == (2, 3) and out["ids"].shape == (2,)
    np.testing.assert_allclose(out["probabilities"].sum(axis=1), 1.0, atol=1e-6)
    two = model.predict_choices(preprocessor.pack_choices(contexts, [c[:2] for c in choices]))
    np.testing.assert_allclose(two["logits"], out["logits"][:, :2], atol=1e-5)  # per choice
