"""ElectraPretrainer: the joint loss (checked against a NumPy computation of the paper's
formula), the replaced-token labels, shared embeddings through a preset, reproducible
held-out metrics, and the bad pairings named with their fix."""

import numpy as np
import pytest

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.electra.backbone import ElectraBackbone
from keras_bert_lab.models.electra.config import ElectraConfig
from keras_bert_lab.models.electra.discriminator import ElectraDiscriminator
from keras_bert_lab.models.electra.heads import ReplaceTokens
from keras_bert_lab.models.electra.masked_lm import ElectraMaskedLM
from keras_bert_lab.models.electra.pretrainer import ElectraPretrainer
from tests.conftest import padded_pair_batch, to_numpy
from tests.presets.helpers import tiny_vocab

CONFIG = ElectraConfig.from_size("tiny", vocabulary_size=300, max_positions=32)


def batch():
    x = padded_pair_batch(vocabulary_size=300, lengths=(14, 9, 5), first_lengths=(6, 3, 2),
                          cls_id=5, sep_id=6, first_word_id=8)
    positions = np.array([[1, 3, 4, 9], [2, 5, 7, 0], [1, 3, 0, 0]], "int32")
    weights = np.array([[1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 0]], "float32")
    original = np.take_along_axis(x["token_ids"], positions, axis=1)
    x["token_ids"] = x["token_ids"].copy()
    for row in range(3):   # [MASK] (id 7) at most selected positions, one left as it was
        x["token_ids"][row, positions[row][weights[row] > 0][1:]] = 7
    return dict(x, mask_positions=positions, mask_ids=original, mask_weights=weights)


def log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_loss_is_mlm_plus_fifty_times_the_discriminators():
    model = ElectraPretrainer(ElectraBackbone(CONFIG), seed=1)
    model.compile()
    x = batch()
    out = {k: to_numpy(v).astype("float64") for k, v in model.predict_on_batch(x).items()}
    w, real = x["mask_weights"], x["padding_mask"].astype("float64")
    mlm = -np.take_along_axis(log_softmax(out["mlm"]), x["mask_ids"][..., None], -1)[..., 0]
    y, z = out["replaced"], out["rtd"]
    bce = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
    expected = (mlm * w).sum() / w.sum() + 50 * (bce * real).sum() / real.sum()
    result = model.evaluate(x, return_dict=True, verbose=0, batch_size=3)
    assert result["loss"] == pytest.approx(expected, rel=1e-4)
    assert result["mlm_loss"] == pytest.approx((mlm * w).sum() / w.sum(), rel=1e-4)
    accuracy = (((z > 0) == (y > 0)) * real).sum() / real.sum()
    assert result["rtd_accuracy"] == pytest.approx(accuracy, abs=1e-6)
    # held out, the generator's sample is a function of the input: the same twice
    assert model.evaluate(x, return_dict=True, verbose=0, batch_size=3) == result


def test_replaced_labels_follow_the_sampled_tokens():
    """Certain logits: position 1 samples the original (label 0), position 2 another token
    (label 1); a masked position of weight 0 and every unmasked one keep their token."""
    logits = np.full((1, 3, 10), -1e4, "float32")
    logits[0, 0, 4], logits[0, 1, 9], logits[0, 2, 1] = 0.0, 0.0, 0.0
    ids, replaced = ReplaceTokens(seed=0)(
        np.array([[2, 7, 7, 3, 3]]), np.array([[1, 2, 4]]), np.array([[4, 5, 3]]),
        np.array([[1.0, 1.0, 0.0]]), logits, training=True)
    assert to_numpy(ids).tolist() == [[2, 4, 9, 3, 3]]
    assert to_numpy(replaced).tolist() == [[0.0, 0.0, 1.0, 0.0, 0.0]]


@pytest.mark.parametrize("training", [True, False])
def test_samples_follow_the_generators_softmax(training):
    """Training (Gumbel-max) and held out (inverse CDF at a hashed uniform) both draw from
    softmax(logits): 8,000 draws land within 4 standard errors of each probability; held out,
    a position's draw does not depend on the positions beside it."""
    n, z = 8000, np.array([0.0, 1.0, 2.0, -1.0, -3.0], "float32")
    logits = np.broadcast_to(z, (1, n, 5)).copy()
    positions, originals = np.arange(n)[None], np.zeros((1, n), "int32")
    layer = ReplaceTokens(seed=3)
    ids, _ = layer(np.zeros((1, n), "int32"), positions, originals, np.ones((1, n)), logits,
                   training=training)
    frequencies = np.bincount(to_numpy(ids)[0], minlength=5) / n
    probabilities = np.exp(z) / np.exp(z).sum()
    assert np.all(np.abs(frequencies - probabilities)
                  <= 4 * np.sqrt(probabilities * (1 - probabilities) / n)), frequencies
    if not training:
        alone, _ = layer(np.zeros((1, 50), "int32"), positions[:, :50], originals[:, :50],
                         np.ones((1, 50)), logits[:, :50])
        assert to_numpy(alone)[0].tolist() == to_numpy(ids)[0, :50].tolist()


def test_a_position_listed_twice_still_writes_a_vocabulary_id():
    """Both entries at position 2 sample token 9: it is written once (a sum of the two wrote 18,
    outside the vocabulary, and the embedding lookup failed)."""
    logits = np.full((1, 2, 10), -1e4, "float32")
    logits[0, :, 9] = 0.0
    ids, replaced = ReplaceTokens(seed=0)(
        np.array([[2, 7, 7, 3]]), np.array([[2, 2]]), np.array([[7, 7]]), np.ones((1, 2)),
        logits, training=True)
    assert to_numpy(ids).tolist() == [[2, 7, 9, 3]]
    assert to_numpy(replaced).tolist() == [[0.0, 0.0, 1.0, 0.0]]


def test_generator_shares_the_embeddings_through_a_preset(tmp_path):
    model = ElectraPretrainer(ElectraBackbone(CONFIG), generator_size=0.5, seed=2)
    x = batch()
    path = model.save_to_preset(tmp_path / "p", vocabulary=tiny_vocab(300))
    loaded = ElectraPretrainer.from_preset(path)
    assert loaded.generator.embeddings is loaded.backbone.embeddings
    assert loaded.generator.config == model.generator.config
    for key, value in model.predict_on_batch(x).items():
        np.testing.assert_allclose(to_numpy(loaded.predict_on_batch(x)[key]), to_numpy(value),
                                   atol=1e-5, rtol=0)
    # the discriminator (and its head) of a pretraining preset, for fine-tuning or detection
    detector = ElectraDiscriminator.from_preset(path)
    np.testing.assert_allclose(
        to_numpy(detector.backbone(x)["sequence_output"]),
        to_numpy(model.backbone(x)["sequence_output"]), atol=1e-5, rtol=0)
    with pytest.raises(ConfigError, match="needs a generator, but the backbone's config has "
                                          "role='discriminator'"):
        ElectraMaskedLM.from_preset(path)


def test_a_generator_preset_is_refused_where_a_discriminator_is_needed(tmp_path):
    generator = ElectraMaskedLM(ElectraBackbone(CONFIG.generator()))
    path = generator.save_to_preset(tmp_path / "g", vocabulary=tiny_vocab(300))
    for cls in (ElectraDiscriminator, ElectraPretrainer):
        with pytest.raises(ConfigError, match="role='generator'") as error:
            cls.from_preset(path)
        assert "\n" not in str(error.value)


@pytest.mark.parametrize("generator, words", [
    (CONFIG.generator(1.0, hidden_size=256, num_heads=2), ["larger than the discriminator"]),
    (CONFIG.generator(embedding_size=32), ["embedding_size (32)", "must be equal"]),
    (CONFIG, ["generator= has role='discriminator'"]),
])
def test_bad_generators_name_the_field_and_the_fix(generator, words):
    with pytest.raises(ConfigError) as error:
        ElectraPretrainer(ElectraBackbone(CONFIG), generator=generator)
    for word in words:
        assert word in str(error.value), str(error.value)
