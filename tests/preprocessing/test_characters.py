"""ELMo character ids: the original's rule (bilm-tf / allennlp ELMoCharacterMapper), by hand.

allennlp cannot be imported here (it needs spacy), so the expected ids are derived from the
rule by hand: UTF-8 bytes cut to 48, 258 before, 259 after, 260 padding to 50, <S>/</S> as the
one-byte words 256/257, every id + 1. The ids are also checked end to end against the original's
own outputs in tests/models/elmo/test_convert.py (token embeddings of 457 real words).
"""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lab.errors import InputError
from keras_bert_lab.preprocessing.characters import (character_ids, tf_character_ids,
                                                     token_character_ids)
from tests.markers import backend_independent

pytestmark = backend_independent

PAD = 261  # 260 + 1


def expected(*body):
    """begin-of-word, the given ids (already +1), end-of-word, padding — 50 in all."""
    ids = [259, *body, 260]
    return ids + [PAD] * (50 - len(ids))


@pytest.mark.parametrize("token, body", [
    ("a", [98]),
    ("Hi", [73, 106]),
    ("é", [0xC3 + 1, 0xA9 + 1]),                        # 2 UTF-8 bytes
    ("€", [0xE2 + 1, 0x82 + 1, 0xAC + 1]),              # 3 bytes
    ("😀", [0xF0 + 1, 0x9F + 1, 0x98 + 1, 0x80 + 1]),   # 4 bytes
    ("", []),                                           # an empty token: begin, end, padding
    ("<S>", [257]), ("</S>", [258]),                    # the sentence markers 256, 257
    ("<s>", [ord(c) + 1 for c in "<s>"]),               # only the exact markers are special
])
def test_hand_derived_ids(token, body):
    assert token_character_ids(token) == expected(*body)


def test_long_tokens_are_cut_to_48_bytes_even_inside_a_character():
    assert token_character_ids("x" * 48) == [259] + [ord("x") + 1] * 48 + [260]
    assert token_character_ids("x" * 49) == token_character_ids("x" * 48)
    assert token_character_ids("x" * 200) == token_character_ids("x" * 48)
    # "a" + 30 × "é" is 61 bytes: the cut keeps "a", 23 "é" and the first byte of the 24th.
    ids = token_character_ids("a" + "é" * 30)
    assert ids[1:49] == [98] + [0xC4, 0xAA] * 23 + [0xC4]
    assert ids[49] == 260 and len(ids) == 50


def test_batch_layout_boundaries_and_padding():
    ids = character_ids([["Hi", "!"], ["Hello"]])
    assert ids.shape == (2, 4, 50) and ids.dtype == np.int32
    assert ids[0, 0].tolist() == expected(257) and ids[0, 3].tolist() == expected(258)
    assert ids[1, 2].tolist() == expected(258) and not ids[1, 3].any()  # </S>, then padding
    plain = character_ids([["Hi", "!"], ["Hello"]], add_boundaries=False, sequence_length=5)
    assert plain.shape == (2, 5, 50) and plain[0, 0].tolist() == expected(73, 106)
    assert not plain[1, 1:].any()
    with pytest.raises(InputError, match="sequence_length is 3"):
        character_ids([["a", "b"]], sequence_length=3)
    with pytest.raises(InputError, match="takes a batch"):
        character_ids(["a", "b"])
    with pytest.raises(InputError, match="must be str"):
        character_ids([["a", 3]])


TRICKY = [["The", "U.S.", "é", "€", "😀", "<S>", "x" * 60, "a" + "é" * 30], ["", "</S>"],
          ["Don", "'t"]]


def test_tf_ids_equal_python_ids_for_a_ragged_batch():
    got = tf_character_ids(tf.ragged.constant(TRICKY)).numpy()
    np.testing.assert_array_equal(got, character_ids(TRICKY))
    got = tf_character_ids(tf.ragged.constant(TRICKY), add_boundaries=False).numpy()
    np.testing.assert_array_equal(got, character_ids(TRICKY, add_boundaries=False))


def test_tf_ids_in_a_tf_data_pipeline():
    lines = [" ".join(TRICKY[0]), "Why does everything have to become such a big issue ?"]
    ds = tf.data.Dataset.from_tensor_slices(lines).map(
        lambda line: tf_character_ids(tf.strings.split(line))).padded_batch(2)
    batch = next(iter(ds)).numpy()
    np.testing.assert_array_equal(batch, character_ids([line.split() for line in lines]))


def test_tf_ids_reject_numbers():
    with pytest.raises(InputError, match="string tokens"):
        tf_character_ids(tf.constant([1, 2]))
