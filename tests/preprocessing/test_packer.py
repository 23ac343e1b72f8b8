"""BertPacker: [CLS] A [SEP] (B [SEP]) packing, truncation, padding — against HF, per example and
batched, in tf.data feeding model.fit on the backend under test."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lab.preprocessing.packer import BertPacker

KEYS = (("token_ids", "input_ids"), ("segment_ids", "token_type_ids"),
        ("padding_mask", "attention_mask"))


def google_truncate_seq_pair(a, b, max_length):
    """google-research/bert run_classifier.py's loop, restated: pop from the longer (ties: B)."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_length:
        (a if len(a) > len(b) else b).pop()
    return a, b


def test_pair_truncation_grid_matches_hf(hf_uncased):
    """Every (len A, len B) in 1..9 for every sequence length 3..13, against HF's longest_first."""
    grid = [(la, lb) for la in range(1, 10) for lb in range(1, 10)]
    a = [[1037] * la for la, _ in grid]   # "a a a"
    b = [[1038] * lb for _, lb in grid]   # "b b"
    for length in range(3, 14):
        ours = BertPacker(length, 101, 102, 0)(a, b)
        theirs = hf_uncased([" ".join(["a"] * la) for la, _ in grid],
                            [" ".join(["b"] * lb) for _, lb in grid], truncation=True,
                            max_length=length, padding="max_length")
        for key, hf_key in KEYS:
            for row, (la, lb) in enumerate(grid):
                assert ours[key][row].tolist() == theirs[hf_key][row], (la, lb, length, key)


def test_google_truncation_matches_the_original_loop():
    for la in range(0, 12):
        for lb in range(0, 12):
            for length in range(3, 16):
                packer = BertPacker(length, 101, 102, 0, truncation="longest_first_google")
                ta, tb = packer.truncated_lengths(la, lb)
                a, b = google_truncate_seq_pair(range(la), range(lb), length - 3)
                assert (ta, tb) == (len(a), len(b)), (la, lb, length)


def test_hf_and_google_differ_only_on_the_odd_token():
    hf, google = BertPacker(128, 1, 2, 0), BertPacker(128, 1, 2, 0, "longest_first_google")
    assert hf.truncated_lengths(100, 100) == (62, 63)        # a tie: HF favours B
    assert google.truncated_lengths(100, 100) == (63, 62)    # Google: always A
    assert hf.truncated_lengths(70, 100) == (62, 63) and google.truncated_lengths(70, 100) == (63, 62)
    assert hf.truncated_lengths(100, 90) == google.truncated_lengths(100, 90) == (63, 62)
    assert hf.truncated_lengths(10, 200) == google.truncated_lengths(10, 200) == (10, 115)
    assert hf.truncated_lengths(200, 62) == google.truncated_lengths(200, 62) == (63, 62)
    assert BertPacker(129, 1, 2, 0).truncated_lengths(100, 100) == (63, 63)


@pytest.mark.parametrize("pairs", [False, True])
def test_wikitext_packed_matches_hf(tokenizer, hf_uncased, wikitext_valid_test, pairs):
    """All WikiText-2 valid + test paragraphs (consecutive ones as pairs), packed to 128."""
    texts = wikitext_valid_test
    a, b = (texts[:-1], texts[1:]) if pairs else (texts, None)
    packer = BertPacker.from_tokenizer(tokenizer, 128)
    ours = packer.pack(tokenizer(tf.constant(a)), None if b is None else tokenizer(tf.constant(b)))
    theirs = hf_uncased(a, b, truncation=True, max_length=128, padding="max_length",
                        return_tensors="np")
    differs = np.zeros(len(a), bool)
    for key, hf_key in KEYS:
        differs |= (ours[key].numpy() != theirs[hf_key]).any(axis=1)
    assert len(a) == len(texts) - pairs
    assert not differs.any(), f"{differs.sum()} of {len(a)} sequences differ"


def test_layout():
    packer = BertPacker(10, cls_token_id=101, sep_token_id=102, pad_token_id=0)
    out = packer([5, 6], [7, 8, 9])
    assert out["token_ids"].tolist() == [101, 5, 6, 102, 7, 8, 9, 102, 0, 0]
    assert out["segment_ids"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 0, 0]
    assert out["padding_mask"].tolist() == [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]
    single = packer([5, 6, 7, 8, 9, 10, 11, 12, 13, 14])   # truncated to 8 + 2
    assert single["token_ids"].tolist() == [101, 5, 6, 7, 8, 9, 10, 11, 12, 102]
    assert single["segment_ids"].tolist() == [0] * 10
    empty = packer([], [])
    assert empty["token_ids"].tolist() == [101, 102, 102] + [0] * 7
    for value in out.values():
        assert value.dtype == np.int32


def test_batched_ragged_dense_and_lists_agree():
    packer = BertPacker(6, 101, 102, 0)
    a = [[5], [6, 7, 8, 9, 10], []]
    b = [[11, 12], [13], [14, 15, 16, 17]]
    lists = packer(a, b)
    ragged = packer.pack(tf.ragged.constant(a), tf.ragged.constant(b))
    rows = [packer(x, y) for x, y in zip(a, b)]
    for key in lists:
        assert lists[key].shape == (3, 6)
        assert ragged[key].numpy().tolist() == lists[key].tolist() == [r[key].tolist()
                                                                       for r in rows]
    dense = packer.pack(tf.constant([[5, 6], [7, 8]]))  # dense [B, T]: every entry is a token
    assert dense["token_ids"].numpy().tolist() == [[101, 5, 6, 102, 0, 0], [101, 7, 8, 102, 0, 0]]


def test_per_example_tf_data(tokenizer):
    """Inside dataset.map before batching: 1-D ids in, [L] features out."""
    texts = ["A first sentence.", "Ångström units", "中文", ""]
    seconds = ["and its pair", "", "second segment here", "x"]
    packer = BertPacker.from_tokenizer(tokenizer, 12)
    ds = tf.data.Dataset.from_tensor_slices((texts, seconds))
    x = next(iter(ds.map(lambda x, y: packer.pack(tokenizer(x), tokenizer(y))).batch(4)))
    expected = packer(tokenizer(texts), tokenizer(seconds))
    for key in expected:
        assert x[key].shape == (4, 12)
        assert x[key].numpy().tolist() == expected[key].tolist()


def test_too_short_sequence_length_is_a_value_error():
    with pytest.raises(ValueError, match="no room for"):
        BertPacker(1, 101, 102, 0)
    packer = BertPacker(2, 101, 102, 0)
    assert packer([5, 6])["token_ids"].tolist() == [101, 102]
    with pytest.raises(ValueError, match="too short for a pair"):
        packer([5], [6])
    with pytest.raises(ValueError, match="truncation"):
        BertPacker(8, 101, 102, 0, truncation="only_first")


def test_tf_data_feeds_model_fit_on_this_backend(tokenizer):
    """Text -> tokenizer -> packer in tf.data -> model.fit of a tiny BERT classifier."""
    import keras

    from keras_bert_lab.models.bert.backbone import BertBackbone
    from keras_bert_lab.models.bert.config import BertConfig

    texts = ["a good film", "a bad film", "great acting, loved it", "dull and far too long"] * 4
    labels = [1, 0, 1, 0] * 4
    packer = BertPacker.from_tokenizer(tokenizer, 16)
    ds = (tf.data.Dataset.from_tensor_slices((texts, labels)).batch(8)
          .map(lambda x, y: (packer.pack(tokenizer(x)), y)))
    backbone = BertBackbone(BertConfig.from_size("tiny", num_layers=1, dropout=0.0,
                                                 attention_dropout=0.0))
    inputs = {name: keras.Input((16,), dtype="int32", name=name)
              for name in ("token_ids", "segment_ids", "padding_mask")}
    logits = keras.layers.Dense(2)(backbone(inputs)["pooled_output"])
    model = keras.Model(inputs, logits)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(ds, epochs=8, verbose=0, shuffle=False)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
