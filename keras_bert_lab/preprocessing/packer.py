"""Packing token ids into BERT's fixed-length model inputs.

BERT reads one or two segments as a single sequence, ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``
(Devlin et al. 2019, §3 and Fig. 2): ``[CLS]``'s final state summarises the input for
classification, ``[SEP]`` closes each segment, and ``segment_ids`` (0 for ``[CLS]``, A and its
``[SEP]``; 1 for B and the last ``[SEP]``) select the segment embedding. Batches are padded with
``[PAD]`` to one ``sequence_length``; ``padding_mask`` is 1 on real tokens and 0 on padding.

Segments that do not fit are cut at the end. For a pair, tokens come off the longer segment first,
so a short question keeps all its words while a long passage is trimmed — the rule of
google-research/bert's ``_truncate_seq_pair`` and of HF's ``truncation="longest_first"``. When
both segments are longer than half the room and the room is odd, one token is left over: HF gives
it to the longer segment (B on a tie), Google's loop to A. ``truncation="longest_first"`` follows
HF (our parity reference); ``"longest_first_google"`` follows the original code.

Shapes: ``B`` batch, ``T`` tokens of a segment (ragged), ``L`` sequence length.
"""

import numpy as np
import tensorflow as tf

from keras_bert_lab.errors import ConfigError, InputError

TRUNCATIONS = ("longest_first", "longest_first_google")


class BertPacker:
    """``[CLS] A [SEP] (B [SEP])`` + ``segment_ids`` + ``padding_mask``, padded to a fixed length.

    Takes token ids as a ``tf.RaggedTensor`` ``[B, (T)]`` (a batch, e.g. after ``dataset.batch``
    and the tokenizer), a 1-D tensor ``[T]`` (one example, e.g. inside ``dataset.map`` before
    batching) or Python lists (``list[int]`` or ``list[list[int]]``, giving NumPy arrays). Returns a
    dict of int32 ``token_ids``, ``segment_ids`` and ``padding_mask``, each ``[B, L]`` (or ``[L]``) —
    the inputs of :class:`keras_bert_lab.models.bert.backbone.BertBackbone`.

    Args:
        sequence_length: ``L``, at least 2 for single segments and 3 for pairs.
        cls_token_id, sep_token_id, pad_token_id: the special token ids (see :meth:`from_tokenizer`).
        truncation: ``"longest_first"`` (HF, default) or ``"longest_first_google"`` (see module doc).

    Example:

    >>> packer = BertPacker(8, cls_token_id=101, sep_token_id=102, pad_token_id=0)
    >>> out = packer([7592, 2088], [2129, 2024, 2017, 1029, 999])
    >>> out["token_ids"].tolist()
    [101, 7592, 2088, 102, 2129, 2024, 2017, 102]
    >>> out["segment_ids"].tolist(), out["padding_mask"].tolist()
    ([0, 0, 0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1])

    In ``tf.data``, after the tokenizer (batched here; per example works the same):

    >>> import tensorflow as tf
    >>> from keras_bert_lab.data.registry import locate
    >>> from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> packer = BertPacker.from_tokenizer(tokenizer, sequence_length=8)
    >>> ds = tf.data.Dataset.from_tensor_slices((["Is it?", "Yes"], ["It is.", "No"])).batch(2)
    >>> batch = next(iter(ds.map(lambda a, b: packer.pack(tokenizer(a), tokenizer(b)))))
    >>> batch["token_ids"].numpy().tolist()  # 3 + 3 tokens in 5 places: a tie, B keeps 3 (HF)
    [[101, 2003, 2009, 102, 2009, 2003, 1012, 102], [101, 2748, 102, 2053, 102, 0, 0, 0]]
    """

    def __init__(self, sequence_length, cls_token_id, sep_token_id, pad_token_id,
                 truncation="longest_first"):
        if int(sequence_length) < 2:
            raise ConfigError(f"sequence_length={sequence_length} leaves no room for [CLS] and "
                              "[SEP]; use at least 2 (3 for sentence pairs).")
        if truncation not in TRUNCATIONS:
            raise ConfigError(f"truncation={truncation!r}; choose one of {TRUNCATIONS}.")
        self.sequence_length = int(sequence_length)
        self.cls_token_id = int(cls_token_id)
        self.sep_token_id = int(sep_token_id)
        self.pad_token_id = int(pad_token_id)
        self.truncation = truncation

    @classmethod
    def from_tokenizer(cls, tokenizer, sequence_length, **kwargs):
        """A packer using ``tokenizer``'s [CLS], [SEP] and [PAD] ids."""
        return cls(sequence_length, tokenizer.cls_token_id, tokenizer.sep_token_id,
                   tokenizer.pad_token_id, **kwargs)

    def get_config(self):
        return {"sequence_length": self.sequence_length, "cls_token_id": self.cls_token_id,
                "sep_token_id": self.sep_token_id, "pad_token_id": self.pad_token_id,
                "truncation": self.truncation}

    def truncated_lengths(self, first_length, second_length=None):
        """Lengths A and B keep after truncation (works on ints, NumPy arrays and tensors)."""
        if second_length is None:
            return _minimum(first_length, self.sequence_length - 2), None
        budget = self.sequence_length - 3
        if self.sequence_length < 3:
            raise ConfigError(f"sequence_length={self.sequence_length} is too short for a pair: "
                              "[CLS] A [SEP] B [SEP] needs at least 3.")
        return longest_first(first_length, second_length, budget,
                             odd_token_to_first=self.truncation == "longest_first_google")

    @tf.autograph.experimental.do_not_convert
    def __call__(self, first, second=None):
        if _is_python_ids(first) and (second is None or _is_python_ids(second)):
            return self._call_python(first, second)
        return self.pack(first, second)

    def _call_python(self, first, second):
        single = not first or not isinstance(first[0], (list, tuple, np.ndarray))
        a = _ragged_from_lists([first] if single else first)
        b = None if second is None else _ragged_from_lists([second] if single else second)
        if b is not None and b.nrows() != a.nrows():
            raise InputError(f"first has {a.nrows()} rows but second has {b.nrows()}.")
        out = {key: value.numpy() for key, value in self.pack(a, b).items()}
        return {key: value[0] for key, value in out.items()} if single else out

    @tf.autograph.experimental.do_not_convert
    def pack(self, first, second=None):
        """Tensor version of ``__call__`` (graph-safe; what ``tf.data.Dataset.map`` calls)."""
        unbatched = not isinstance(first, tf.RaggedTensor) and tf.convert_to_tensor(
            first).shape.rank == 1
        a = _as_ragged(first)
        b = None if second is None else _as_ragged(second)
        la = a.row_lengths()                                    # (B,)
        lb = None if b is None else b.row_lengths()
        ta, tb = self.truncated_lengths(la, lb)
        L = self.sequence_length
        p = tf.range(L, dtype=tf.int64)[None, :]                # (1, L) position
        ta_ = ta[:, None]
        # Dense layout by position: 0 [CLS] | 1..ta A | ta+1 [SEP] | ta+2.. B | [SEP] | [PAD]…
        ids = tf.fill(tf.shape(p + ta_), tf.constant(self.pad_token_id, tf.int32))
        ids = tf.where(p == 0, self.cls_token_id, ids)
        ids = tf.where((p >= 1) & (p <= ta_), _take(a, p - 1), ids)
        ids = tf.where(p == ta_ + 1, self.sep_token_id, ids)
        total = ta_ + 2
        segment = tf.zeros_like(ids)
        if b is not None:
            tb_ = tb[:, None]
            in_b = (p >= ta_ + 2) & (p < ta_ + 2 + tb_)
            ids = tf.where(in_b, _take(b, p - ta_ - 2), ids)
            ids = tf.where(p == ta_ + 2 + tb_, self.sep_token_id, ids)
            total = ta_ + tb_ + 3
            segment = tf.cast((p >= ta_ + 2) & (p < total), tf.int32)
        mask = tf.cast(p < total, tf.int32)
        out = {"token_ids": ids, "segment_ids": segment, "padding_mask": mask}
        if unbatched:
            out = {key: value[0] for key, value in out.items()}
        return out


def longest_first(la, lb, budget, odd_token_to_first=False):
    """Lengths segments A and B keep when cut longest-first to ``budget`` tokens together.

    The closed form of 'drop one token from the longer segment until both fit' — the one
    truncation rule of the lab (packing here, pretraining pairs, task data). If the shorter
    segment fits in half the budget (rounded down), only the longer one is cut. Otherwise both are
    cut to half, and an odd budget leaves one token over: HF gives it to the longer segment (B on
    a tie), google-research/bert's ``truncate_seq_pair`` loop always to A
    (``odd_token_to_first=True``). Works on ints, NumPy arrays and tensors.

    >>> longest_first(np.array([3, 10, 10, 2]), np.array([4, 10, 3, 9]), 7, odd_token_to_first=True)
    (array([3, 4, 4, 2]), array([4, 3, 3, 5]))
    """
    if isinstance(la, int) and isinstance(lb, int):
        ta, tb = longest_first(np.int64(la), np.int64(lb), budget, odd_token_to_first)
        return int(ta), int(tb)
    w = tf if tf.is_tensor(la) else np
    budget = la * 0 + budget       # same dtype and shape as the lengths
    half = budget // 2
    a_first = (la <= lb)
    one_ta = w.where(a_first, la, budget - lb)            # only the longer one is cut
    one_tb = w.where(a_first, budget - la, lb)
    a_extra = (la >= 0) if odd_token_to_first else (la > lb)
    both_ta = w.where(a_extra, budget - half, half)       # both cut to half
    both_tb = budget - both_ta
    one = w.minimum(la, lb) <= half
    fits = la + lb <= budget
    ta = w.where(fits, la, w.where(one, one_ta, both_ta))
    tb = w.where(fits, lb, w.where(one, one_tb, both_tb))
    return ta, tb


def _minimum(x, limit):
    if isinstance(x, int):
        return min(x, limit)
    return tf.minimum(x, limit) if tf.is_tensor(x) else np.minimum(x, limit)


def _take(ragged, index):
    """ragged[b, index[b, l]] for a (B, L) index (clipped; positions outside are masked later)."""
    values = tf.concat([ragged.values, tf.zeros([1], ragged.dtype)], 0)   # never gather from empty
    starts = ragged.row_starts()[:, None]
    lengths = ragged.row_lengths()[:, None]
    flat = tf.where((index >= 0) & (index < lengths), starts + index, tf.size(
        ragged.values, out_type=tf.int64))
    return tf.cast(tf.gather(values, flat), tf.int32)


def _ragged_from_lists(rows):
    """``[B, (T)]`` int32 RaggedTensor from Python lists of ids (one concatenation, not per row)."""
    rows = [np.asarray(row, np.int64).reshape(-1) for row in rows]
    lengths = np.array([len(row) for row in rows], np.int64)
    values = np.concatenate(rows) if rows else np.zeros([0], np.int64)
    return tf.RaggedTensor.from_row_lengths(tf.constant(values, tf.int32), lengths, validate=False)


def _as_ragged(ids):
    if isinstance(ids, tf.RaggedTensor):
        if ids.ragged_rank != 1:
            raise InputError(f"Expected token ids [B, (T)], got a RaggedTensor of rank "
                             f"{ids.shape.rank}.")
        return ids.with_row_splits_dtype(tf.int64)
    ids = tf.convert_to_tensor(ids)
    if ids.shape.rank == 1:
        return tf.RaggedTensor.from_tensor(ids[None, :]).with_row_splits_dtype(tf.int64)
    if ids.shape.rank == 2:  # dense [B, T]: every token counts (pass a RaggedTensor to drop padding)
        return tf.RaggedTensor.from_tensor(ids).with_row_splits_dtype(tf.int64)
    raise InputError(f"Expected token ids [T] or [B, (T)], got shape {ids.shape}.")


def _is_python_ids(x):
    return isinstance(x, (list, tuple)) and not tf.is_tensor(x)
