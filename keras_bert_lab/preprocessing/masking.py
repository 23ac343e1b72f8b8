"""Dynamic masked-LM masking, vectorised in TensorFlow over whole batches.

The masked-LM task (Devlin et al. 2019, §3.1, "Task #1") hides some input tokens and asks the model
for the originals. Per sequence, 15 % of the tokens that can be masked are *selected* (never
``[CLS]``, ``[SEP]`` or ``[PAD]``), at most ``mask_selection_length``. Of the selected tokens 80 %
become ``[MASK]``, 10 % a random token and 10 % stay unchanged. Why not always ``[MASK]``?
``[MASK]`` never occurs when the model is fine-tuned, so always masking would teach the encoder
that only ``[MASK]`` positions need good representations; random and unchanged tokens force it to
keep a contextual representation of *every* token, and the random ones are rare enough (1.5 % of
all tokens) not to harm its language understanding.

google-research/bert drew the masks once, when writing the data (``dupe_factor`` = 10 copies with
different masks). RoBERTa (Liu et al. 2019, §4.1) showed that drawing them afresh every time a
sequence is fed — *dynamic masking* — is as good or better and needs no duplicated data; that is
what this module does, inside ``tf.data``. Randomness is *stateless*: every batch's masks are a pure
function of ``(seed, batch index)`` (the pretraining stream masks chunks of a few batches at once
and uses the chunk index), so a fixed seed reproduces a stream exactly, while a sequence seen again
in a later epoch (at a later index) gets new masks.

*Whole-word masking* (google-research/bert, May 2019 release) selects whole words: all WordPiece
pieces of a word (a first piece and its ``##`` continuations) are selected together, never some of
them. As in the original, words are taken in random order while they fit in the per-sequence budget
(a word that would overshoot is skipped and smaller ones after it may still fit), and the
80/10/10 choice is then made per token.

Selection count per sequence: ``min(mask_selection_length, max(1, round(n *
mask_selection_rate)))`` where ``n`` is the number of maskable tokens (the original counts
``[CLS]``/``[SEP]`` in ``n`` too; we count only what can actually be masked, so the selected share
is the stated rate). Random replacement tokens are drawn uniformly from ``random_token_ids`` (by
default every vocabulary entry that is not a bracketed special such as ``[PAD]`` … ``[MASK]`` or
``[unused7]``).

Shapes: ``B`` batch, ``L`` sequence length, ``P`` = ``mask_selection_length``.
"""

import numpy as np
import tensorflow as tf

from keras_bert_lab.errors import ConfigError, InputError

_NEVER = np.int32(2**31 - 1)   # a score larger than any real one


class MaskedLMMasker:
    """Select, replace and report masked-LM positions for a batch of packed sequences.

    Call it on ``token_ids`` ``[B, L]`` (and ``padding_mask`` ``[B, L]``, 1 = real token) with a
    ``seed`` of two integers. Returns a dict of ``token_ids`` (the corrupted input, int32
    ``[B, L]``), ``mask_positions`` (int32 ``[B, P]``, ascending, 0 where unused), ``mask_ids``
    (the original tokens there, int32 ``[B, P]``, 0 where unused) and ``mask_weights`` (float32
    ``[B, P]``, 1 for a real prediction, 0 for padding) — keras-hub's names, what
    :class:`~keras_bert_lab.models.bert.pretrainer.BertPretrainer` takes.

    Args:
        vocabulary_size: number of token ids.
        mask_token_id: id of ``[MASK]``.
        unselectable_token_ids: ids never selected (``[CLS]``, ``[SEP]``, ``[PAD]``, …).
            Positions where ``padding_mask`` is 0 are never selected either.
        mask_selection_rate: share of maskable tokens to select (0.15).
        mask_selection_length: ``P``, the most selected tokens per sequence (Google's
            ``max_predictions_per_seq``, 20 for 128-token sequences in the original recipe).
        mask_token_rate: share of selected tokens replaced by ``[MASK]`` (0.8).
        random_token_rate: share replaced by a random token (0.1); the rest are kept unchanged.
        random_token_ids: the ids random replacements are drawn from (default: all ids except
            ``unselectable_token_ids`` and ``mask_token_id``).
        whole_word_masking: select whole words (needs ``continuation_token_ids``).
        continuation_token_ids: ids of word-continuation pieces (``##…``), for
            ``whole_word_masking``.

    Example:

    >>> import tensorflow as tf
    >>> masker = MaskedLMMasker(vocabulary_size=1000, mask_token_id=4,
    ...                         unselectable_token_ids=[0, 2, 3], mask_selection_length=4)
    >>> ids = tf.constant([[2, 50, 51, 52, 53, 54, 55, 56, 57, 3, 0, 0]])   # [CLS] … [SEP] [PAD]
    >>> out = masker(ids, padding_mask=tf.cast(ids > 0, "int32"), seed=(2, 0))
    >>> out["mask_positions"].numpy(), out["mask_weights"].numpy()   # round(8 × 0.15) = 1
    (array([[2, 0, 0, 0]], dtype=int32), array([[1., 0., 0., 0.]], dtype=float32))
    >>> out["mask_ids"].numpy(), out["token_ids"].numpy()            # 51 → [MASK]
    (array([[51,  0,  0,  0]], dtype=int32),
     array([[ 2, 50,  4, 52, 53, 54, 55, 56, 57,  3,  0,  0]], dtype=int32))
    """

    def __init__(self, vocabulary_size, mask_token_id, unselectable_token_ids=(), *,
                 mask_selection_rate=0.15, mask_selection_length=20, mask_token_rate=0.8,
                 random_token_rate=0.1, random_token_ids=None, whole_word_masking=False,
                 continuation_token_ids=None):
        if not 0.0 < mask_selection_rate <= 1.0:
            raise ConfigError(f"mask_selection_rate={mask_selection_rate} must be in (0, 1].")
        if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1:
            raise ConfigError(f"mask_token_rate={mask_token_rate} and random_token_rate="
                              f"{random_token_rate} must be ≥ 0 and sum to at most 1 (the rest "
                              "of the selected tokens is kept unchanged).")
        if int(mask_selection_length) < 1:
            raise ConfigError(f"mask_selection_length={mask_selection_length} must be at least 1.")
        if whole_word_masking and continuation_token_ids is None:
            raise ConfigError("whole_word_masking=True needs continuation_token_ids (the ids of "
                              "'##' pieces); build the masker with "
                              "MaskedLMMasker.from_tokenizer().")
        self.vocabulary_size = int(vocabulary_size)
        self.mask_token_id = int(mask_token_id)
        self.unselectable_token_ids = sorted({int(i) for i in unselectable_token_ids})
        self.mask_selection_rate = float(mask_selection_rate)
        self.mask_selection_length = int(mask_selection_length)
        self.mask_token_rate = float(mask_token_rate)
        self.random_token_rate = float(random_token_rate)
        self.whole_word_masking = bool(whole_word_masking)
        if random_token_ids is None:
            excluded = set(self.unselectable_token_ids) | {self.mask_token_id}
            random_token_ids = [i for i in range(self.vocabulary_size) if i not in excluded]
        self.random_token_ids = np.asarray(random_token_ids, np.int32)
        if self.random_token_ids.size == 0:
            raise ConfigError("random_token_ids is empty; random replacements need candidates.")
        self.continuation_token_ids = (None if continuation_token_ids is None
                                       else np.asarray(continuation_token_ids, np.int64))
        # Lookup tables by token id (int8 so that they stay small for big vocabularies).
        unselectable = np.zeros(self.vocabulary_size, np.int8)
        unselectable[self.unselectable_token_ids] = 1
        self._unselectable = unselectable
        continuation = np.zeros(self.vocabulary_size, np.int8)
        if self.continuation_token_ids is not None:
            continuation[self.continuation_token_ids] = 1
        self._continuation = continuation

    @classmethod
    def from_tokenizer(cls, tokenizer, **kwargs):
        """A masker with ``tokenizer``'s ids: [CLS]/[SEP]/[PAD] unselectable, [MASK], the ``##``
        continuation pieces, and random tokens drawn from every non-bracketed vocabulary entry.

        ``kwargs`` as in the constructor (e.g. ``whole_word_masking=True``,
        ``mask_selection_length=76``).
        """
        vocabulary = list(tokenizer.vocabulary)
        suffix = getattr(tokenizer, "suffix_indicator", "##")
        specials = [tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id]
        kwargs.setdefault("unselectable_token_ids", specials)
        kwargs.setdefault("continuation_token_ids", [
            i for i, t in enumerate(vocabulary) if t.startswith(suffix) and len(t) > len(suffix)])
        kwargs.setdefault("random_token_ids", [
            i for i, t in enumerate(vocabulary)
            if not (len(t) > 2 and t.startswith("[") and t.endswith("]"))])
        return cls(len(vocabulary), tokenizer.mask_token_id, **kwargs)

    def get_config(self):
        return {"vocabulary_size": self.vocabulary_size, "mask_token_id": self.mask_token_id,
                "unselectable_token_ids": list(self.unselectable_token_ids),
                "mask_selection_rate": self.mask_selection_rate,
                "mask_selection_length": self.mask_selection_length,
                "mask_token_rate": self.mask_token_rate,
                "random_token_rate": self.random_token_rate,
                "random_token_ids": self.random_token_ids.tolist(),
                "whole_word_masking": self.whole_word_masking,
                "continuation_token_ids": (None if self.continuation_token_ids is None
                                           else self.continuation_token_ids.tolist())}

    # ---- the masking ------------------------------------------------------------------------
    def __call__(self, token_ids, padding_mask=None, seed=(0, 0)):
        """Mask one batch; ``seed`` is a pair of ints or an int tensor of shape ``[2]``."""
        ids = tf.cast(tf.convert_to_tensor(token_ids), tf.int32)
        if ids.shape.rank != 2:
            raise InputError(f"token_ids must be a batch [B, L], got shape {ids.shape}; batch "
                              "the dataset before masking.")
        maskable = tf.gather(tf.constant(self._unselectable), ids) == 0        # (B, L)
        if padding_mask is not None:
            maskable &= tf.cast(padding_mask, tf.bool)
        seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
        seeds = tf.random.experimental.stateless_split(seed, 3)
        budget = self._budget(maskable)                                        # (B,)
        if self.whole_word_masking:
            selected = self._select_words(ids, maskable, budget, seeds[0])
            positions, weights = self._positions(selected)
        else:
            positions, weights = self._select_tokens(maskable, budget, seeds[0])
        mask_ids = tf.where(weights, tf.gather(ids, positions, batch_dims=1), 0)  # (B, P)
        new_ids = self._replace(ids, positions, weights, mask_ids, seeds[1], seeds[2])
        return {"token_ids": new_ids, "mask_positions": positions, "mask_ids": mask_ids,
                "mask_weights": tf.cast(weights, tf.float32)}

    def _budget(self, maskable):
        """(B,) how many tokens to select: round(n × rate), at least 1, at most P and n."""
        n = tf.reduce_sum(tf.cast(maskable, tf.int32), axis=1)
        k = tf.cast(tf.round(tf.cast(n, tf.float64) * self.mask_selection_rate), tf.int32)
        k = tf.minimum(tf.maximum(k, 1), self.mask_selection_length)
        return tf.minimum(k, n)

    def _unique_scores(self, shape, length, seed, valid):
        """Random int32 scores, distinct within a row (ties broken by column), NEVER if invalid."""
        draw = tf.random.stateless_uniform(shape, seed, minval=0, maxval=2**20, dtype=tf.int32)
        column = tf.range(shape[1], dtype=tf.int32)[None, :]
        # draw * length + column < 2^20 * 2^11: distinct for rows of up to 2,048 entries.
        return tf.where(valid, draw * tf.cast(length, tf.int32) + column, _NEVER)

    def _pad_columns(self, x, value):
        """Pad the last axis to at least P columns (top_k needs k ≤ columns)."""
        if x.shape[1] is not None and x.shape[1] >= self.mask_selection_length:
            return x
        return tf.pad(x, [[0, 0], [0, self.mask_selection_length]], constant_values=value)

    def _select_tokens(self, maskable, budget, seed):
        """The ``budget`` maskable tokens of each row with the smallest random scores."""
        length = tf.shape(maskable)[1]
        scores = self._unique_scores(tf.shape(maskable), length, seed, maskable)
        _, index = tf.math.top_k(-self._pad_columns(scores, _NEVER), k=self.mask_selection_length)
        valid = tf.range(self.mask_selection_length)[None, :] < budget[:, None]      # (B, P)
        positions = tf.sort(tf.where(valid, index, _NEVER), axis=1)            # ascending
        valid = tf.sort(tf.cast(valid, tf.int32), axis=1, direction="DESCENDING") > 0
        return tf.where(valid, positions, 0), valid

    def _select_words(self, ids, maskable, budget, seed):
        """Whole words in random order while they fit in ``budget`` tokens (google's greedy)."""
        B, L = tf.shape(ids)[0], tf.shape(ids)[1]
        continues = tf.gather(tf.constant(self._continuation), ids) > 0
        prev_maskable = tf.pad(maskable[:, :-1], [[0, 0], [1, 0]])
        starts = maskable & ~(continues & prev_maskable)                       # (B, L)
        word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1                # (B, L) its word
        slot = tf.where(maskable, word + L * tf.range(B)[:, None], B * L)
        flat = tf.reshape(slot, [-1])
        word_len = tf.math.unsorted_segment_sum(tf.ones_like(flat), flat, B * L + 1)[:-1]
        word_len = tf.reshape(word_len, [B, L])                                # (B, W=L)
        # Words in a random order (empty slots last), then google's greedy fill.
        scores = self._unique_scores(tf.shape(word_len), L, seed, word_len > 0)
        order = tf.argsort(scores, axis=1, stable=True)                        # (B, W)
        length = tf.gather(word_len, order, batch_dims=1)                      # (B, W)
        taken = (tf.cumsum(length, axis=1) <= budget[:, None]) & (length > 0)  # the prefix
        used = tf.reduce_sum(tf.where(taken, length, 0), axis=1)
        pointer = tf.reduce_sum(tf.cast(taken, tf.int32), axis=1)              # first overshoot
        position = tf.range(L)[None, :]

        # After the first word that overshoots, google keeps scanning for words that still fit;
        # each pass takes the next one that does (a skipped word never fits later: the room left
        # only shrinks). Every pass uses at least one token of the budget, so passes ≤ P.
        def one_pass(taken, used, pointer, _):
            fits = (position > pointer[:, None]) & (length > 0) & (
                length <= (budget - used)[:, None])
            found = tf.reduce_any(fits, axis=1)
            first = tf.cast(tf.argmax(tf.cast(fits, tf.int32), axis=1), tf.int32)
            take = found[:, None] & (position == first[:, None])
            used += tf.reduce_sum(tf.where(take, length, 0), axis=1)
            return taken | take, used, tf.where(found, first, pointer), tf.reduce_any(found)

        taken, used, pointer, _ = tf.while_loop(
            lambda taken, used, pointer, more: more, one_pass,
            (taken, used, pointer, tf.constant(True)),
            maximum_iterations=self.mask_selection_length)
        # Back from random order to word index, then to tokens.
        by_word = tf.gather(taken, tf.argsort(order, axis=1, stable=True), batch_dims=1)
        return maskable & tf.gather(by_word, tf.maximum(word, 0), batch_dims=1)

    def _positions(self, selected):
        """(B, P) ascending selected positions (0 beyond the count) and their validity."""
        L = tf.shape(selected)[1]
        score = tf.where(selected, L - tf.range(L)[None, :], 0)               # earlier = larger
        top, index = tf.math.top_k(self._pad_columns(score, 0), k=self.mask_selection_length)
        valid = top > 0
        return tf.where(valid, index, 0), valid

    def _replace(self, ids, positions, valid, mask_ids, seed_choice, seed_random):
        """80 % [MASK], 10 % random, 10 % unchanged, decided per selected position."""
        shape = tf.shape(positions)
        u = tf.random.stateless_uniform(shape, seed_choice)                   # (B, P)
        pick = tf.random.stateless_uniform(shape, seed_random, minval=0,
                                           maxval=len(self.random_token_ids), dtype=tf.int32)
        random_ids = tf.gather(tf.constant(self.random_token_ids), pick)
        value = tf.where(u < self.mask_token_rate, self.mask_token_id,
                         tf.where(u < self.mask_token_rate + self.random_token_rate, random_ids,
                                  mask_ids))
        # Unused slots write to an extra column that is cut off afterwards.
        L = tf.shape(ids)[1]
        rows = tf.broadcast_to(tf.range(shape[0])[:, None], shape)
        index = tf.stack([rows, tf.where(valid, positions, L)], axis=-1)      # (B, P, 2)
        padded = tf.pad(ids, [[0, 0], [0, 1]])
        return tf.tensor_scatter_nd_update(padded, index, value)[:, :-1]
