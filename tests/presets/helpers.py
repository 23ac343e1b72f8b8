"""Shared pieces of the converter and preset tests: tiny configs, vocabularies, random weights."""

import keras
import numpy as np

from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
from keras_bert_lab.presets import read_preset
from tests.conftest import padded_pair_batch

TOLERANCE = 1e-5
# Small but not degenerate: 3 layers, 4 heads (the head split is exercised), a short vocab.
CONFIG = BertConfig.from_size("tiny", vocabulary_size=300, num_layers=3, num_heads=4, max_positions=64)


def tiny_vocab(size=CONFIG.vocabulary_size):
    """A WordPiece-shaped vocabulary: the BERT specials, then words and ## pieces."""
    specials = ["[PAD]"] + [f"[unused{i}]" for i in range(3)] + ["[UNK]", "[CLS]", "[SEP]",
                                                                 "[MASK]"]
    words = [f"w{i}" if i % 3 else f"##p{i}" for i in range(size - len(specials))]
    return specials + words


def batch(vocabulary_size=CONFIG.vocabulary_size, seed=0):
    """A padded batch of sentence pairs with the tiny vocab's [CLS]=5 and [SEP]=6."""
    return padded_pair_batch(vocabulary_size, lengths=(14, 9, 5), first_lengths=(6, 3, 2), seed=seed,
                             cls_id=5, sep_id=6, first_word_id=8)


def randomize(model, seed=0):
    """Give every variable random values (LayerNorm scales near 1): a fresh model's zero biases
    and unit norms would hide a swapped or untransposed tensor."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        shape = tuple(variable.shape)
        if variable.path.endswith("gamma"):
            value = rng.normal(1.0, 0.1, shape)
        else:
            value = rng.normal(0.0, 0.1 if len(shape) == 1 else 0.05, shape)
        variable.assign(value.astype("float32"))
    return model


def random_pretrainer(config=CONFIG, seed=0):
    return randomize(BertPretrainer(BertBackbone(config)), seed=seed)


def outputs(model, x, positions=None):
    """NumPy outputs of a backbone or a pretrainer (pretrainer: backbone outputs + heads)."""
    backbone = getattr(model, "backbone", model)
    out = {k: keras.ops.convert_to_numpy(v) for k, v in backbone(x).items()
           if k != "hidden_states"}
    if model is not backbone:
        positions = np.array([[1, 2, 3]] * len(x["token_ids"]), "int32") if positions is None \
            else positions
        heads = model(dict(x, mask_positions=positions))
        out.update({k: keras.ops.convert_to_numpy(v) for k, v in heads.items()})
    return out


def assert_outputs_close(got, expected, atol=TOLERANCE, what=""):
    assert set(expected) <= set(got), (sorted(got), sorted(expected))
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], atol=atol, rtol=0,
                                   err_msg=f"{what} {key}")


def max_abs_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, "float64") - np.asarray(b, "float64"))))


def load_converted(preset, allow_partial=False):
    """The model a converted preset holds: its ``BertPretrainer`` when it kept the heads, else the
    ``BertBackbone``."""
    cls = BertPretrainer if read_preset(preset).task else BertBackbone
    return cls.from_preset(preset, allow_partial=allow_partial)
