"""Next-sentence instances, the tf.data pretraining stream, static TFRecords, BertPretrainer.fit.

Statistics use fixed seeds over ≥ 10,000 instances. Tolerances: NSP labels 50 % ± 2 pt; short
targets 10 % ± 2 pt (σ ≈ 0.3 pt at this size); front/back trimming 50 % ± 2 pt.
"""

import collections
import doctest
import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.pipelines import pretraining as pretraining_data
from keras_bert_lab.pipelines.pretraining import (INSTANCE_FIELDS, TokenizedCorpus,
                                                  create_instances, pretraining_dataset,
                                                  read_tfrecords, write_tfrecords)
from keras_bert_lab.pipelines.pretraining.pairs import _truncate
from keras_bert_lab.preprocessing.packer import longest_first
from tests.conftest import locate_or_skip


def synthetic_corpus(num_documents=1500, seed=0):
    """Documents of 1–60 sentences of 1–40 tokens; token value = 1000 + sentence index % 1000."""
    rng = np.random.default_rng(seed)
    sentences = rng.integers(1, 61, num_documents)
    sentences[:20] = 1  # some one-sentence documents
    lengths = rng.integers(1, 41, sentences.sum())
    splits = np.concatenate([[0], np.cumsum(lengths)])
    sentence_of_token = np.repeat(np.arange(len(lengths)), lengths)
    return TokenizedCorpus((1000 + sentence_of_token % 1000).astype(np.int32), splits,
                           np.concatenate([[0], np.cumsum(sentences)]))


@pytest.fixture(scope="module")
def synthetic():
    return synthetic_corpus()


@pytest.fixture(scope="module")
def nsp_instances(synthetic):
    parts = [create_instances(synthetic, sequence_length=128, seed=3, epoch=e) for e in range(2)]
    return {k: np.concatenate([p[k] for p in parts]) for k in INSTANCE_FIELDS}


# ---- instances ------------------------------------------------------------------------------
def test_nsp_statistics(nsp_instances):
    inst = nsp_instances
    n = len(inst["a_start"])
    assert n >= 10_000
    assert abs(inst["next_sentence_label"].mean() - 0.5) < 0.02
    short = inst["target_length"] < 125
    assert abs(short.mean() - 0.10) < 0.02
    assert set(np.unique(inst["target_length"][short])) <= set(range(2, 125))
    length = inst["a_end"] - inst["a_start"] + inst["b_end"] - inst["b_start"]
    # Short-target examples really are shorter than the full ones.
    assert length[short].mean() < 0.75 * length[~short].mean()
    assert length[~short].mean() > 110


def test_segments_come_from_the_right_place(synthetic, nsp_instances):
    inst = nsp_instances
    la = inst["a_end"] - inst["a_start"]
    lb = inst["b_end"] - inst["b_start"]
    assert (la >= 1).all() and (lb >= 1).all() and (la + lb <= 125).all()
    doc_a0 = synthetic.document_of(inst["a_start"])
    doc_a1 = synthetic.document_of(inst["a_end"] - 1)
    doc_b0 = synthetic.document_of(inst["b_start"])
    doc_b1 = synthetic.document_of(inst["b_end"] - 1)
    np.testing.assert_array_equal(doc_a0, inst["document"])
    np.testing.assert_array_equal(doc_a1, inst["document"])
    np.testing.assert_array_equal(doc_b0, doc_b1)
    is_next = inst["next_sentence_label"] == 0
    # IsNext: B continues A in the same document, right after the sentence where A's chunk ended
    # (only truncation may have taken tokens from A's end and B's start).
    assert (doc_b0[is_next] == inst["document"][is_next]).all()
    assert np.isin(inst["boundary"], synthetic.sentence_splits).all()
    assert (inst["a_end"][is_next] <= inst["boundary"][is_next]).all()
    assert (inst["boundary"][is_next] <= inst["b_start"][is_next]).all()
    assert (inst["boundary"][is_next] - inst["a_end"][is_next] < la[is_next] + 125).all()
    # NotNext: B from another document, always.
    assert (doc_b0[~is_next] != inst["document"][~is_next]).all()
    # One-sentence documents only ever give NotNext.
    one = np.isin(inst["document"], np.arange(20))
    assert one.any() and (inst["next_sentence_label"][one] == 1).all()


def test_untruncated_segments_start_and_end_at_sentences(synthetic):
    """Without truncation (big budget) every segment is whole sentences."""
    inst = create_instances(synthetic, sequence_length=100_000, seed=1)
    for name in ("a_start", "a_end", "b_start", "b_end"):
        assert np.isin(inst[name], synthetic.sentence_splits).all()
    is_next = inst["next_sentence_label"] == 0
    np.testing.assert_array_equal(inst["a_end"][is_next], inst["b_start"][is_next])


def google_truncate_seq_pair(la, lb, budget):
    """create_pretraining_data.py's loop on lengths: trim the longer, B on ties."""
    while la + lb > budget:
        if la > lb:
            la -= 1
        else:
            lb -= 1
    return la, lb


def test_the_one_truncation_rule_matches_googles_loop():
    grid = list(itertools.product(range(1, 40), range(1, 40), range(2, 30)))
    la, lb, budget = (np.array(x) for x in zip(*grid))
    for b in np.unique(budget):
        sel = budget == b
        ta, tb = longest_first(la[sel], lb[sel], int(b), odd_token_to_first=True)
        expected = np.array([google_truncate_seq_pair(x, y, int(b))
                             for x, y in zip(la[sel], lb[sel])])
        np.testing.assert_array_equal(np.stack([ta, tb], 1), expected)


def test_trimmed_tokens_come_off_front_and_back_at_random():
    inst = {"a_start": np.zeros(20_000, np.int64), "a_end": np.full(20_000, 60, np.int64),
            "b_start": np.full(20_000, 1000, np.int64), "b_end": np.full(20_000, 1030, np.int64)}
    _truncate(inst, 50, True, np.random.default_rng(0))
    assert ((inst["a_end"] - inst["a_start"]) == 25).all()  # longest_first(60, 30, 50)
    assert ((inst["b_end"] - inst["b_start"]) == 25).all()
    front_share = (inst["a_start"].sum() + (inst["b_start"] - 1000).sum()) / (20_000 * 40)
    assert abs(front_share - 0.5) < 0.02
    assert (inst["a_start"] > 0).mean() > 0.99 and (inst["a_end"] < 60).mean() > 0.99


def test_seed_and_epoch(synthetic):
    a = create_instances(synthetic, seed=5, epoch=0)
    b = create_instances(synthetic, seed=5, epoch=0)
    c = create_instances(synthetic, seed=5, epoch=1)
    for key in INSTANCE_FIELDS:
        np.testing.assert_array_equal(a[key], b[key])
    assert len(a["a_start"]) != len(c["a_start"]) or (a["a_start"] != c["a_start"]).any()


def test_original_scope_and_coin(synthetic):
    """short_seq_scope="document" and balance_next_sentence=False are the original's choices."""
    inst = create_instances(synthetic, seed=2, short_seq_scope="document",
                            balance_next_sentence=False)
    targets = {}
    for doc, target in zip(inst["document"], inst["target_length"]):
        assert targets.setdefault(doc, target) == target  # one target per document
    short_docs = np.mean([t < 125 for t in targets.values()])
    assert abs(short_docs - 0.10) < 0.03
    assert inst["next_sentence_label"].mean() > 0.5  # forced NotNext of one-sentence chunks


def test_single_segment_mode(synthetic):
    inst = create_instances(synthetic, sequence_length=64, next_sentence=False, seed=0,
                            short_seq_prob=0.0)
    la = inst["a_end"] - inst["a_start"]
    assert (la >= 1).all() and (la <= 62).all() and la.mean() > 40
    assert (inst["b_end"] == inst["b_start"]).all() and (inst["next_sentence_label"] == 0).all()
    np.testing.assert_array_equal(synthetic.document_of(inst["a_end"] - 1), inst["document"])
    # Whole sentences (none here is longer than 62 tokens), and no sentence is lost.
    assert np.isin(inst["a_start"], synthetic.sentence_splits).all()
    assert np.isin(inst["a_end"], synthetic.sentence_splits).all()
    assert la.sum() == synthetic.num_tokens
    one_document = TokenizedCorpus.from_token_lists([[[5, 6, 7], [8, 9]]])
    assert len(create_instances(one_document, next_sentence=False)["a_start"]) == 1


def test_packed_blocks_cover_the_stream_once_and_cross_only_into_the_next_document(synthetic):
    """pack=True: every token from the epoch's cut on is in exactly one block; A stays in one
    document, B (only at a document's end) in the next one of the epoch's order; a block is
    full (126 tokens alone, 125 with B) unless the next document ends inside it."""
    inst = create_instances(synthetic, sequence_length=128, next_sentence=False, pack=True,
                            seed=4, shuffle=False)
    la, lb = inst["a_end"] - inst["a_start"], inst["b_end"] - inst["b_start"]
    has_b = lb > 0
    assert (la >= 1).all() and (la[~has_b] <= 126).all() and (la + lb)[has_b].max() <= 125
    covered = np.zeros(synthetic.num_tokens, int)
    for begin, end in itertools.chain(zip(inst["a_start"], inst["a_end"]),
                                      zip(inst["b_start"], inst["b_end"])):
        covered[begin:end] += 1
    doc_a, doc_b = synthetic.document_of(inst["a_start"]), synthetic.document_of(inst["b_start"])
    starts = synthetic.sentence_splits[synthetic.document_splits]
    cut = inst["a_start"][0] - starts[doc_a[0]]                     # skipped in the first one
    assert 0 <= cut < 126 and covered.max() == 1
    assert covered.sum() == synthetic.num_tokens - cut
    np.testing.assert_array_equal(synthetic.document_of(inst["a_end"] - 1), doc_a)
    assert np.isin(inst["a_end"][has_b], starts).all()            # A ran to its document's end
    assert np.isin(inst["b_start"][has_b], starts).all()          # B began the next one
    np.testing.assert_array_equal(synthetic.document_of(inst["b_end"][has_b] - 1), doc_b[has_b])
    short = (la < 126) & ~has_b
    # A block is short only where a document ended (or the epoch's stream did).
    assert np.isin(inst["a_end"][short], np.append(starts, synthetic.num_tokens)).all()
    assert ((la + lb)[has_b] == 125).mean() > 0.9 and has_b.mean() > 0.05
    other = create_instances(synthetic, sequence_length=128, next_sentence=False, pack=True,
                             seed=4, epoch=1, shuffle=False)
    assert not np.array_equal(other["a_start"][:50], inst["a_start"][:50])   # a new cut
    with pytest.raises(ConfigError, match="next_sentence=False"):
        create_instances(synthetic, pack=True)


def test_packed_stream_has_no_padding_and_marks_the_document_change(wikitext_valid, tokenizer):
    ds = pretraining_dataset(wikitext_valid, tokenizer, batch_size=64, sequence_length=64,
                             next_sentence=False, pack=True, output="dict")
    batch = next(iter(ds))
    ids, segments = batch["token_ids"].numpy(), batch["segment_ids"].numpy()
    assert (batch["padding_mask"].numpy() == 1).all()
    seps = (ids == tokenizer.sep_token_id).sum(axis=1)
    assert set(seps) <= {1, 2} and (seps == 2).any()
    assert (ids[:, -1] == tokenizer.sep_token_id).all()
    assert (ids[:, 0] == tokenizer.cls_token_id).all()
    for row, n in zip(range(len(ids)), seps):     # B (segment 1) follows the first [SEP]
        first = int(np.argmax(ids[row] == tokenizer.sep_token_id))
        assert (segments[row, :first + 1] == 0).all()
        assert (segments[row, first + 1:] == (1 if n == 2 else 0)).all()


def test_fewer_than_two_documents_is_a_clear_error(tokenizer):
    one_document = TokenizedCorpus.from_token_lists([[[5, 6, 7], [8, 9]]])
    with pytest.raises(DataError, match="at least two documents.*next_sentence=False"):
        create_instances(one_document)
    with pytest.raises(DataError, match="at least two documents"):
        pretraining_dataset([["Only one document.", "With two sentences."]], tokenizer)
    with pytest.raises(DataError, match="at least two documents"):
        pretraining_dataset([["One."], ["\x00\x01"]], tokenizer)  # the 2nd has no token


def test_tokenized_corpus_drops_empty_sentences_and_documents(tokenizer):
    corpus = TokenizedCorpus.from_documents(
        [["Hello world.", "\u200b", "Again."], ["\x07"], ["Bye."]], tokenizer)
    assert corpus.num_documents == 2 and corpus.num_sentences == 3
    assert corpus.dropped_sentences == 2 and corpus.dropped_documents == 1
    assert tokenizer.detokenize(corpus.token_ids.tolist()) == "hello world . again . bye ."


# ---- the tf.data stream ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def wikitext_valid(tokenizer):
    locate_or_skip("wikitext2", "valid")
    return pretraining_data.tokenize_corpus("wikitext2:valid", tokenizer)


def test_stream_has_the_structure_fit_takes(wikitext_valid, tokenizer):
    ds = pretraining_dataset(wikitext_valid, tokenizer, batch_size=16, sequence_length=128)
    features, labels, weights = ds.element_spec
    assert {k: (v.shape.as_list(), v.dtype) for k, v in features.items()} == {
        "token_ids": ([16, 128], tf.int32), "segment_ids": ([16, 128], tf.int32),
        "padding_mask": ([16, 128], tf.int32), "mask_positions": ([16, 20], tf.int32)}
    assert {k: (v.shape.as_list(), v.dtype) for k, v in labels.items()} == {
        "mlm": ([16, 20], tf.int32), "nsp": ([16], tf.int32)}
    assert {k: (v.shape.as_list(), v.dtype) for k, v in weights.items()} == {
        "mlm": ([16, 20], tf.float32), "nsp": ([16], tf.float32)}
    features, labels, weights = next(iter(ds))
    ids = features["token_ids"].numpy()
    seg, pad = features["segment_ids"].numpy(), features["padding_mask"].numpy()
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    assert (ids[:, 0] == cls).all() and ((ids == sep).sum(axis=1) == 2).all()
    for row in range(16):
        n = pad[row].sum()
        first_sep = np.argmax(ids[row] == sep)
        assert (seg[row, :first_sep + 1] == 0).all() and (seg[row, first_sep + 1:n] == 1).all()
        assert (seg[row, n:] == 0).all() and (ids[row, n:] == 0).all() and ids[row, n - 1] == sep
    assert set(np.unique(labels["nsp"].numpy())) <= {0, 1}
    assert (weights["nsp"].numpy() == 1).all()


def test_stream_text_is_the_instances_text(wikitext_valid, tokenizer):
    """Undoing the masks gives back exactly [CLS] A [SEP] B [SEP] of the epoch's instances."""
    ds = pretraining_dataset(wikitext_valid, tokenizer, batch_size=8, sequence_length=64, seed=4,
                             output="dict")
    inst = create_instances(wikitext_valid, sequence_length=64, seed=4, epoch=0)
    batch = next(iter(ds))
    ids = batch["token_ids"].numpy().copy()
    w = batch["mask_weights"].numpy() > 0
    rows = np.repeat(np.arange(8)[:, None], w.shape[1], 1)
    ids[rows[w], batch["mask_positions"].numpy()[w]] = batch["mask_ids"].numpy()[w]
    tokens = wikitext_valid.token_ids
    for r in range(8):
        a = tokens[inst["a_start"][r]:inst["a_end"][r]]
        b = tokens[inst["b_start"][r]:inst["b_end"][r]]
        expected = np.concatenate([[tokenizer.cls_token_id], a, [tokenizer.sep_token_id], b,
                                   [tokenizer.sep_token_id]])
        np.testing.assert_array_equal(ids[r, :len(expected)], expected)
        assert batch["next_sentence_label"].numpy()[r] == inst["next_sentence_label"][r]


def _unmasked(batch):
    ids = batch["token_ids"].numpy().copy()
    w = batch["mask_weights"].numpy() > 0
    rows = np.repeat(np.arange(len(ids))[:, None], w.shape[1], 1)
    ids[rows[w], batch["mask_positions"].numpy()[w]] = batch["mask_ids"].numpy()[w]
    return ids


def test_masks_are_dynamic_and_the_seed_reproduces_the_stream(wikitext_valid, tokenizer):
    kwargs = dict(batch_size=64, sequence_length=64, next_sentence=False, short_seq_prob=0.0,
                  output="dict")
    ds = pretraining_dataset(wikitext_valid, tokenizer, num_epochs=2, seed=1,
                             drop_remainder=False, **kwargs)
    masks = {}
    for batch in ds:
        original = _unmasked(batch)
        positions = batch["mask_positions"].numpy()
        for r in range(len(original)):
            masks.setdefault(original[r].tobytes(), []).append(positions[r].tobytes())
    seen_twice = [m for m in masks.values() if len(m) == 2]
    assert len(seen_twice) > 0.9 * len(masks) > 1000  # the same sequences in both epochs...
    assert np.mean([a == b for a, b in seen_twice]) < 0.02  # ...with new masks
    first = [next(iter(pretraining_dataset(wikitext_valid, tokenizer, seed=s, **kwargs)))
             for s in (7, 7, 8)]
    for key in first[0]:
        np.testing.assert_array_equal(first[0][key].numpy(), first[1][key].numpy())
    assert (first[0]["token_ids"].numpy() != first[2]["token_ids"].numpy()).any()


def test_whole_word_stream_never_splits_words(wikitext_valid, tokenizer):
    ds = pretraining_dataset(wikitext_valid, tokenizer, batch_size=128, sequence_length=128,
                             whole_word_masking=True, output="dict")
    vocab = np.array(tokenizer.vocabulary, object)
    for batch in ds.take(4):
        original = _unmasked(batch)
        positions = batch["mask_positions"].numpy()
        w = batch["mask_weights"].numpy() > 0
        for r in range(len(original)):
            chosen = set(positions[r][w[r]].tolist())
            pieces = vocab[original[r]]
            for p in chosen:
                if pieces[p].startswith("##"):
                    assert p - 1 in chosen or pieces[p - 1] in ("[CLS]", "[SEP]")
                if p + 1 < len(pieces) and pieces[p + 1].startswith("##"):
                    assert p + 1 in chosen


def test_single_segment_stream_turns_nsp_off(wikitext_valid, tokenizer):
    ds = pretraining_dataset(wikitext_valid, tokenizer, batch_size=8, sequence_length=64,
                             next_sentence=False)
    features, labels, weights = next(iter(ds))
    assert (features["segment_ids"].numpy() == 0).all()
    assert (weights["nsp"].numpy() == 0).all()
    assert ((features["token_ids"].numpy() == tokenizer.sep_token_id).sum(axis=1) == 1).all()


def small_wordpiece(corpus, size=2000):
    """A WordPiece vocabulary of ``size`` entries for ``corpus``: specials, every character (alone
    and as ``##`` piece) and the most frequent words — so a tiny model trains in a few steps."""
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    words = collections.Counter(w for d in corpus for s in d for w in s.lower().split())
    chars = sorted({c for w in words for c in w})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
    known = set(vocab)
    vocab += [w for w, _ in words.most_common(size) if w not in known][:size - len(vocab)]
    return WordPieceTokenizer(vocab)


def test_fit_on_a_wikitext2_stream_lowers_the_mlm_loss():
    from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
    from keras_bert_lab.data.corpora import load_corpus

    locate_or_skip("wikitext2", "valid")
    corpus = load_corpus("wikitext2:valid")
    tokenizer = small_wordpiece(corpus)
    ds = pretraining_dataset(corpus, tokenizer, batch_size=16, sequence_length=64, seed=0)
    config = BertConfig.from_size("tiny", vocabulary_size=tokenizer.vocabulary_size, max_positions=64)
    model = BertPretrainer(BertBackbone(config))
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = model.fit(ds, epochs=2, steps_per_epoch=5, shuffle=False, verbose=0)
    mlm = history.history["mlm_loss"]  # epoch means; ln(2000) ≈ 7.6 at the start
    assert np.isfinite(mlm).all() and np.isfinite(history.history["nsp_loss"]).all()
    assert mlm[1] < mlm[0] - 0.5, mlm


# ---- static TFRecords -----------------------------------------------------------------------
def test_tfrecords_static_and_dynamic(tmp_path, tokenizer, wikitext_valid):
    paths = write_tfrecords(wikitext_valid, tokenizer, tmp_path / "static", num_shards=3,
                            sequence_length=64, dupe_factor=2, static_masks=True, progress=False)
    assert len(paths) == 3
    total = sum(1 for _ in tf.data.TFRecordDataset([str(p) for p in paths]))
    expected = sum(len(create_instances(wikitext_valid, sequence_length=64, epoch=e)["a_start"])
                   for e in range(2))
    assert total == expected
    record = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(paths[:1]))).numpy())
    assert {"input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
            "masked_lm_weights", "next_sentence_labels"} <= set(record.features.feature)
    static = read_tfrecords(paths, batch_size=32, sequence_length=64, shuffle_buffer=0,
                            num_epochs=1, output="dict")
    again = read_tfrecords(paths, batch_size=32, sequence_length=64, shuffle_buffer=0,
                           num_epochs=1, output="dict")
    a, b = next(iter(static)), next(iter(again))
    np.testing.assert_array_equal(a["mask_positions"].numpy(), b["mask_positions"].numpy())
    w = a["mask_weights"].numpy() > 0
    assert abs(w.sum() / ((a["padding_mask"].numpy() == 1).sum() - 3 * 32) - 0.15) < 0.03
    # Without masks in the files, the same masking stage draws them per batch.
    plain = write_tfrecords(wikitext_valid, tokenizer, tmp_path / "plain", num_shards=2,
                            sequence_length=64, progress=False)
    ds = read_tfrecords(tmp_path / "plain", tokenizer, batch_size=32, sequence_length=64,
                        shuffle_buffer=0, num_epochs=2)
    features, labels, weights = next(iter(ds))
    assert features["token_ids"].shape == (32, 64) and labels["mlm"].shape == (32, 20)
    masks = {}
    for batch in read_tfrecords(plain, tokenizer, batch_size=32, sequence_length=64,
                                num_epochs=2, drop_remainder=False, output="dict"):
        for row, positions in zip(_unmasked(batch), batch["mask_positions"].numpy()):
            masks.setdefault(row.tobytes(), []).append(positions.tobytes())
    one_pass = len(create_instances(wikitext_valid, sequence_length=64, epoch=0)["a_start"])
    assert {len(m) for m in masks.values()} == {2} and len(masks) == one_pass
    assert np.mean([a == b for a, b in masks.values()]) < 0.05  # each epoch draws new masks
    with pytest.raises(DataError, match="dynamic_masking=True"):
        read_tfrecords(plain, tokenizer, sequence_length=64, dynamic_masking=False)
    with pytest.raises(DataError, match="No TFRecord files"):
        read_tfrecords(tmp_path / "nothing-*.tfrecord", tokenizer)


def test_docstring_examples():
    result = doctest.testmod(pretraining_data,
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
