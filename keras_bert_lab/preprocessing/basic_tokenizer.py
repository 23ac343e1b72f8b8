"""BERT's basic tokenization — text to words, no vocabulary — in TensorFlow, for ``tf.data``.

BERT (Devlin et al. 2019, §3; google-research/bert ``tokenization.py``) reads text in two steps;
this is the first. It cleans the text (control characters go), optionally lower-cases and strips
accents, and cuts the text into words at whitespace, around every punctuation mark and around
every CJK ideograph. Here it is a single table lookup per character (built in
:mod:`keras_bert_lab.preprocessing.normalization`) followed by a few vectorised TensorFlow ops
that find the word boundaries — identical to Hugging Face's Rust normaliser and pre-tokeniser.
:class:`~keras_bert_lab.preprocessing.wordpiece.WordPieceTokenizer` builds on it, and vocabulary
training uses it to count words.

Shapes: a scalar string gives 1-D tensors, a batch ``[B]`` of strings ``tf.RaggedTensor``\\ s
``[B, (W)]``; Python strings and lists give Python lists.
"""

import typing

import tensorflow as tf

from keras_bert_lab.errors import InputError
from keras_bert_lab.preprocessing import normalization as norm

# Our TensorFlow code has no Python control flow on tensors: tell autograph (tf.data.map,
# tf.function) not to convert it, which saves seconds on the first trace.
graph_code = tf.autograph.experimental.do_not_convert


class BasicTokenizer:
    """BERT's basic tokenization in TensorFlow: text to words, no vocabulary needed.

    Cleans the text, optionally lower-cases and strips accents, and splits on whitespace,
    punctuation and CJK ideographs exactly as ``BertTokenizerFast``'s normaliser and pre-tokeniser
    do (see :mod:`keras_bert_lab.preprocessing.normalization`).
    :class:`~keras_bert_lab.preprocessing.wordpiece.WordPieceTokenizer` builds on it, and
    vocabulary training uses it to count words. Invalid UTF-8 is replaced, not fatal, and counted
    in :attr:`invalid_utf8_count`.

    Example:

    >>> basic = BasicTokenizer(lowercase=True)
    >>> basic.split("Hello,  Ångström! 中文")
    ['hello', ',', 'angstrom', '!', '中', '文']
    >>> basic.split_with_offsets("Ångström!")["end_offsets"]
    [8, 9]
    """

    def __init__(self, lowercase=True, strip_accents=None, chinese_chars=True):
        self.lowercase = bool(lowercase)
        self.strip_accents = strip_accents
        self.chinese_chars = bool(chinese_chars)
        self._tensors = None

    @property
    def invalid_utf8_count(self):
        """How many invalid UTF-8 sequences have been replaced so far (all calls, all datasets)."""
        return 0 if self._tensors is None else int(self._tensors["invalid_utf8"].numpy())

    def _constants(self):
        """The lookup table and the counter, made eagerly even when first called while tracing."""
        if self._tensors is None:
            table, expansions = norm.build_table(self.lowercase, self.strip_accents,
                                                 self.chinese_chars)
            with tf.init_scope():
                self._tensors = {
                    "table": tf.constant(table), "expansions": tf.constant(expansions),
                    "invalid_utf8": tf.Variable(0, dtype=tf.int64, trainable=False,
                                                name="invalid_utf8_count")}
        return self._tensors

    @graph_code
    def split(self, inputs):
        """The words of a string (list of ``str``) or of a batch (``RaggedTensor [B, (W)]``)."""
        return apply_to_text(lambda text: {"words": self._split_flat(text, False)["words"]},
                      inputs)["words"]

    @graph_code
    def split_with_offsets(self, inputs):
        """Words plus ``start_offsets`` / ``end_offsets``: character offsets in the input."""
        return apply_to_text(lambda text: self._split_flat(text, True), inputs)

    def _split_flat(self, text, with_offsets):
        words = self.words(text)
        out = {"words": tf.RaggedTensor.from_value_rowids(
            tf.strings.unicode_encode(words.letters, "UTF-8"), words.row, nrows=words.num_rows,
            validate=False)}
        if with_offsets:
            first = words.letters.row_starts()
            last = words.letters.row_limits() - 1
            for key, value in (("start_offsets", tf.gather(words.source, first)),
                               ("end_offsets", tf.gather(words.source, last) + 1)):
                value -= tf.gather(words.row_starts, words.row)
                out[key] = out["words"].with_values(tf.cast(value, tf.int32))
        return out

    @graph_code
    def words(self, text):
        """The flat form of basic tokenization for a ``[B]`` batch of strings (for builders).

        Returns :class:`Words`: ``letters`` (RaggedTensor ``[W, (chars)]`` of the normalised code
        points of every word of the batch, in order), ``row`` ``(W,)`` the string each word is in,
        ``source`` ``(K,)`` for each letter the index of the input character it came from (in the
        flat code-point sequence of the batch, where string ``b`` starts at ``row_starts[b]``) and
        ``num_rows``.
        """
        tensors = self._constants()
        # A trailing space per string, so no word runs from one string into the next.
        chars = tf.strings.unicode_decode(tf.strings.join([text, " "]), "UTF-8", errors="replace",
                                          replacement_char=norm.INVALID_UTF8)
        code = chars.values                                           # (C,) every character
        tensors["invalid_utf8"].assign_add(
            tf.reduce_sum(tf.cast(code == norm.INVALID_UTF8, tf.int64)))
        # 1. One table entry per character -> 0..n output characters (mostly exactly one).
        entry = tf.gather(tensors["table"], code)
        count = tf.bitwise.right_shift(entry, norm.COUNT_SHIFT)
        out, source = tf.cond(tf.reduce_all(count == 1),
                              lambda: (entry, tf.range(tf.size(code, out_type=tf.int64))),
                              lambda: _expand(entry, count, tensors["expansions"]))
        kind = tf.bitwise.bitwise_and(tf.bitwise.right_shift(out, norm.KIND_SHIFT), 3)  # (M,)
        # 2. A word starts at an isolated character, or at a letter after a non-letter.
        prev_kind = tf.concat([[norm.SPACE], kind[:-1]], 0)
        starts = (kind == norm.ISOLATE) | ((kind == norm.WORD) & (prev_kind != norm.WORD))
        kept = tf.where(kind != norm.SPACE)[:, 0]                     # (K,) non-space characters
        letters = tf.gather(tf.bitwise.bitwise_and(out, norm.PAYLOAD_MASK), kept)
        word_start = tf.where(tf.gather(starts, kept))[:, 0]          # (W,) position in `letters`
        source = tf.gather(source, kept)
        row = tf.searchsorted(chars.row_splits, tf.gather(source, word_start), side="right",
                              out_type=tf.int64) - 1                  # (W,) its string
        return Words(letters=tf.RaggedTensor.from_row_starts(letters, word_start, validate=False),
                     row=row, source=source, row_starts=chars.row_starts(),
                     num_rows=tf.shape(text, out_type=tf.int64)[0])


class Words(typing.NamedTuple):
    """Basic tokenization of a batch in flat form (see :meth:`BasicTokenizer.words`)."""

    letters: tf.RaggedTensor
    row: tf.Tensor
    source: tf.Tensor
    row_starts: tf.Tensor
    num_rows: tf.Tensor


def apply_to_text(fn, inputs):
    """Run ``fn`` ([B] strings -> dict of RaggedTensor [B, (N)]) on any supported input.

    Python ``str``/``bytes`` -> lists; a list of them -> lists of lists; a ``tf.string`` tensor of
    rank 0 -> dense 1-D tensors, of rank r >= 1 -> RaggedTensors ``[*shape, (N)]``.
    """
    python = _is_python_text(inputs)
    if python:
        single = isinstance(inputs, (str, bytes))
        batch = [inputs] if single else list(inputs)
        tensor = tf.constant([_to_utf8(x) for x in batch], tf.string, shape=[len(batch)])
    else:
        tensor = tf.convert_to_tensor(inputs)
        if tensor.dtype != tf.string:
            raise InputError(f"Expected strings, got a {tensor.dtype.name} tensor; tokenize text, "
                             "not ids.")
    out = fn(tf.reshape(tensor, [-1]))
    if python:
        lists = {key: _decoded(value.to_list()) for key, value in out.items()}
        return {key: value[0] for key, value in lists.items()} if single else lists
    if tensor.shape.rank == 0:
        return {key: value.values for key, value in out.items()}
    if tensor.shape.rank != 1:
        shape = tf.shape(tensor, out_type=tf.int64)
        out = {key: _unflatten(value, shape, tensor.shape.rank) for key, value in out.items()}
    return out


def _decoded(rows):
    return [[x.decode("utf-8") if isinstance(x, bytes) else x for x in row] for row in rows]


def _expand(entry, count, expansions):
    """Characters with 0 or several outputs: repeat each entry `count` times and look it up."""
    source = tf.repeat(tf.range(tf.size(entry, out_type=tf.int64)), tf.cast(count, tf.int64))
    first = tf.cumsum(tf.cast(count, tf.int64), exclusive=True)
    k = tf.range(tf.size(source, out_type=tf.int64)) - tf.gather(first, source)
    entry = tf.gather(entry, source)
    multi = tf.gather(count, source) > 1
    index = tf.where(multi, tf.cast(tf.bitwise.bitwise_and(entry, norm.PAYLOAD_MASK), tf.int64) + k,
                     0)
    return tf.where(multi, tf.gather(expansions, index), entry), source


def _unflatten(ragged, shape, rank):
    """RaggedTensor [prod(shape), (T)] -> [*shape, (T)]."""
    for axis in range(rank - 1, 0, -1):
        ragged = tf.RaggedTensor.from_uniform_row_length(ragged, shape[axis], validate=False)
    return ragged


def _is_python_text(inputs):
    if isinstance(inputs, (str, bytes)):
        return True
    if isinstance(inputs, (list, tuple)):
        return all(isinstance(x, (str, bytes)) for x in inputs)
    return False


def _to_utf8(text):
    if isinstance(text, bytes):
        return text
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: one U+FFFD each, so offsets stay in characters
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text).encode()
