"""Pretraining instances in sharded TFRecord files, and the stream that reads them back.

For corpora too large to tokenize in memory — or to train from the same fixed files many times —
:func:`write_tfrecords` writes instances with google-research/bert's feature names (so its own
``run_pretraining.py`` reads them too), with or without ``dupe_factor`` static masks, and
:func:`read_tfrecords` streams them back through the same masking stage as
:func:`~keras_bert_lab.pipelines.pretraining.stream.pretraining_dataset`.
"""

import glob
import logging
import os

import tensorflow as tf

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.pipelines.pretraining.corpus import tokenize_corpus
from keras_bert_lab.pipelines.pretraining.pairs import create_instances
from keras_bert_lab.pipelines.pretraining.stream import (STREAM_FIELDS, Assembler,
                                                         to_fit_inputs)
from keras_bert_lab.preprocessing.masking import MaskedLMMasker
from keras_bert_lab.preprocessing.packer import BertPacker

logger = logging.getLogger(__name__)


def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def write_tfrecords(corpus, tokenizer, output_dir, *, num_shards=4, sequence_length=128,
                    dupe_factor=1, static_masks=False, mask_selection_length=20,
                    mask_selection_rate=0.15, mask_token_rate=0.8, random_token_rate=0.1,
                    whole_word_masking=False, next_sentence=True, short_seq_prob=0.1,
                    short_seq_scope="instance", balance_next_sentence=True, seed=0,
                    prefix="pretraining", progress=True):
    """Write pre-built instances to ``num_shards`` TFRecord files; returns their paths.

    Each of the ``dupe_factor`` passes draws new pairs (and, with ``static_masks``, new masks),
    as the original's ``dupe_factor`` copies. Records use google-research/bert's feature names,
    padded to ``sequence_length``: ``input_ids``, ``input_mask``, ``segment_ids``,
    ``next_sentence_labels`` and, with ``static_masks``, ``masked_lm_positions``,
    ``masked_lm_ids``, ``masked_lm_weights`` (``input_ids`` then hold the masked input); plus our
    ``next_sentence_weights`` (0 in single-segment mode). Instances go round-robin to the shards,
    each file ``{prefix}-{i:05d}-of-{n:05d}.tfrecord``. A ``tqdm`` progress bar counts instances.

    Example:

    >>> import tempfile
    >>> from keras_bert_lab.data.registry import locate
    >>> from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> docs = [["A first sentence.", "And a second one."], ["Another document.", "It ends."]]
    >>> paths = write_tfrecords(docs, tokenizer, tempfile.mkdtemp(), num_shards=2,
    ...                         sequence_length=16, progress=False)
    >>> ds = read_tfrecords(paths, tokenizer, batch_size=2, sequence_length=16, num_epochs=1)
    >>> features, labels, weights = next(iter(ds))
    >>> features["token_ids"].shape
    TensorShape([2, 16])
    """
    from tqdm.auto import tqdm

    tokenized = tokenize_corpus(corpus, tokenizer)
    os.makedirs(output_dir, exist_ok=True)
    paths = [os.path.join(output_dir, f"{prefix}-{i:05d}-of-{num_shards:05d}.tfrecord")
             for i in range(num_shards)]
    masker = MaskedLMMasker.from_tokenizer(
        tokenizer, mask_selection_length=mask_selection_length,
        mask_selection_rate=mask_selection_rate, mask_token_rate=mask_token_rate,
        random_token_rate=random_token_rate,
        whole_word_masking=whole_word_masking) if static_masks else None
    assemble = Assembler(tokenized, BertPacker.from_tokenizer(tokenizer, sequence_length,
                                                               truncation="longest_first_google"),
                          next_sentence)
    nsp_weight = [1.0 if next_sentence else 0.0]
    passes = [create_instances(tokenized, sequence_length=sequence_length,
                               short_seq_prob=short_seq_prob, next_sentence=next_sentence,
                               seed=seed, epoch=dupe, short_seq_scope=short_seq_scope,
                               balance_next_sentence=balance_next_sentence)
              for dupe in range(dupe_factor)]
    total = sum(len(p["a_start"]) for p in passes)
    written = 0
    writers = [tf.io.TFRecordWriter(path) for path in paths]
    try:
        with tqdm(total=total, unit="instances", desc="write_tfrecords",
                  disable=not progress) as bar:
            for dupe, instances in enumerate(passes):
                for start in range(0, len(instances["a_start"]), 512):
                    rows = {name: tf.constant(instances[name][start:start + 512], tf.int64)
                            for name in STREAM_FIELDS}
                    out = assemble(rows)
                    if masker is not None:
                        out.update(masker(out["token_ids"], out["padding_mask"],
                                          (seed, dupe * 1_000_000 + start)))
                    out = {name: value.numpy() for name, value in out.items()}
                    for r in range(len(out["token_ids"])):
                        feature = {
                            "input_ids": _int_feature(out["token_ids"][r]),
                            "input_mask": _int_feature(out["padding_mask"][r]),
                            "segment_ids": _int_feature(out["segment_ids"][r]),
                            "next_sentence_labels": _int_feature([out["next_sentence_label"][r]]),
                            "next_sentence_weights": _float_feature(nsp_weight),
                        }
                        if masker is not None:
                            feature["masked_lm_positions"] = _int_feature(
                                out["mask_positions"][r])
                            feature["masked_lm_ids"] = _int_feature(out["mask_ids"][r])
                            feature["masked_lm_weights"] = _float_feature(out["mask_weights"][r])
                        example = tf.train.Example(features=tf.train.Features(feature=feature))
                        writers[written % num_shards].write(example.SerializeToString())
                        written += 1
                    bar.update(len(out["token_ids"]))
    finally:
        for writer in writers:
            writer.close()
    logger.info("Wrote %d instances (%d pass(es)) to %d shards in %s.", written, dupe_factor,
                num_shards, output_dir)
    return paths


def _record_files(files):
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    paths = []
    for item in files:
        item = os.fspath(item)
        if os.path.isdir(item):
            paths.extend(sorted(glob.glob(os.path.join(item, "*.tfrecord"))))
        elif glob.has_magic(item):
            paths.extend(sorted(glob.glob(item)))
        else:
            paths.append(item)
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing or not paths:
        raise DataError(f"No TFRecord files at {files!r}" + (f" (missing: {missing[:3]})"
                                                              if missing else "") + ".")
    return paths


def read_tfrecords(files, tokenizer=None, *, batch_size=32, sequence_length=128,
                   mask_selection_length=20, dynamic_masking=None, masker=None,
                   mask_selection_rate=0.15, mask_token_rate=0.8, random_token_rate=0.1,
                   whole_word_masking=False, shuffle_buffer=10_000, seed=0, num_epochs=None,
                   drop_remainder=True, output="fit"):
    """Stream records written by :func:`write_tfrecords` (or google-research/bert) as batches.

    Masks come from the files when they have them and ``dynamic_masking`` is not ``True``;
    otherwise they are drawn afresh per batch exactly as in :func:`pretraining_dataset` (which
    needs ``tokenizer`` or ``masker``). Files are read interleaved in a seeded random order and
    records shuffled in a ``shuffle_buffer``; a fixed ``seed`` reproduces the stream. Outputs as in
    :func:`pretraining_dataset` (see :func:`write_tfrecords` for an example).
    """
    paths = _record_files(files)
    first = next(iter(tf.data.TFRecordDataset(paths[:1]).take(1)), None)
    if first is None:
        raise DataError(f"{paths[0]} holds no record.")
    stored = set(tf.train.Example.FromString(first.numpy()).features.feature)
    has_masks = "masked_lm_positions" in stored
    dynamic = (not has_masks) if dynamic_masking is None else bool(dynamic_masking)
    if dynamic and masker is None:
        if tokenizer is None:
            raise ConfigError("Dynamic masking needs the tokenizer (or a MaskedLMMasker).")
        masker = MaskedLMMasker.from_tokenizer(
            tokenizer, mask_selection_length=mask_selection_length,
            mask_selection_rate=mask_selection_rate, mask_token_rate=mask_token_rate,
            random_token_rate=random_token_rate, whole_word_masking=whole_word_masking)
    if not dynamic and not has_masks:
        raise DataError(f"{paths[0]} has no static masks; read it with dynamic_masking=True.")
    L = sequence_length
    spec = {"input_ids": tf.io.FixedLenFeature([L], tf.int64),
            "input_mask": tf.io.FixedLenFeature([L], tf.int64),
            "segment_ids": tf.io.FixedLenFeature([L], tf.int64),
            "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64)}
    if "next_sentence_weights" in stored:
        spec["next_sentence_weights"] = tf.io.FixedLenFeature([1], tf.float32)
    if not dynamic:
        P = mask_selection_length
        spec.update({"masked_lm_positions": tf.io.FixedLenFeature([P], tf.int64),
                     "masked_lm_ids": tf.io.FixedLenFeature([P], tf.int64),
                     "masked_lm_weights": tf.io.FixedLenFeature([P], tf.float32)})
    ds = tf.data.Dataset.from_tensor_slices(paths)
    if len(paths) > 1:
        ds = ds.shuffle(len(paths), seed=seed)
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(paths), 8),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    ds = ds.repeat(num_epochs)
    if shuffle_buffer and shuffle_buffer > 1:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    seed_tensor = tf.constant(int(seed) & 0x7FFFFFFF, tf.int64)

    def build(index, records):
        parsed = tf.io.parse_example(records, spec)
        out = {"token_ids": tf.cast(parsed["input_ids"], tf.int32),
               "segment_ids": tf.cast(parsed["segment_ids"], tf.int32),
               "padding_mask": tf.cast(parsed["input_mask"], tf.int32),
               "next_sentence_label": tf.cast(parsed["next_sentence_labels"][:, 0], tf.int32)}
        if dynamic:
            out.update(masker(out["token_ids"], out["padding_mask"],
                              tf.stack([seed_tensor, index])))
        else:
            out.update({"mask_positions": tf.cast(parsed["masked_lm_positions"], tf.int32),
                        "mask_ids": tf.cast(parsed["masked_lm_ids"], tf.int32),
                        "mask_weights": parsed["masked_lm_weights"]})
        if output == "dict":
            return out
        features, labels, weights = to_fit_inputs(out)
        if "next_sentence_weights" in parsed:
            weights["nsp"] = parsed["next_sentence_weights"][:, 0]
        return features, labels, weights

    return ds.enumerate().map(build, num_parallel_calls=tf.data.AUTOTUNE,
                              deterministic=True).prefetch(tf.data.AUTOTUNE)
