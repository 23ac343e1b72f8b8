"""WordPiece tokenization for BERT, in-graph so it runs inside ``tf.data`` on every Keras backend.

BERT (Devlin et al. 2019, §3; google-research/bert ``tokenization.py``) reads text in two steps.
*Basic tokenization* cleans the text and cuts it into words: control characters go, whitespace
separates, accents come off and letters are lower-cased for uncased vocabularies, and every
punctuation mark and CJK ideograph is a word of its own. *WordPiece* (Wu et al. 2016) then covers
each word greedily with the longest vocabulary entry that fits, continuing with ``##`` pieces; a word
that cannot be covered, or is longer than 100 characters, becomes one ``[UNK]``.

Here basic tokenization is a single table lookup per character (built in
:mod:`keras_bert_lab.text.normalization`), followed by a few vectorised TensorFlow ops that find the
word boundaries; WordPiece is tensorflow-text's ``FastWordpieceTokenizer`` (linear-time
longest-match-first) applied to the words. Strings that are printable ASCII (four in five English
paragraphs) skip the table: ``tf.strings.lower`` and the WordPiece op's own splitting, which on
ASCII are exactly BERT's. The result is identical, id for id and offset for offset, to Hugging
Face's ``BertTokenizerFast`` with the same vocabulary and casing (tests check every Unicode code
point and every WikiText-2 valid/test paragraph), at several times its speed inside ``tf.data``
(``benchmarks/tokenization.py``).

Shapes: a scalar string gives a 1-D ``tf.Tensor`` of ids, a batch ``[B]`` of strings a
``tf.RaggedTensor`` ``[B, (T)]``; Python strings and lists give Python lists.
"""

import os
import typing

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_lab.errors import DataError
from keras_bert_lab.text import normalization as norm

# Our TensorFlow code has no Python control flow on tensors: tell autograph (tf.data.map,
# tf.function) not to convert it, which saves seconds on the first trace.
_graph_code = tf.autograph.experimental.do_not_convert


def read_vocabulary(path):
    """Read a ``vocab.txt`` (one token per line, id = line number) into a list of tokens.

    Raises ``DataError`` naming the file for a missing or empty file, text that is not UTF-8, an
    empty line, or a token listed twice.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataError(f"Vocabulary file {path!r} does not exist; pass the path of a vocab.txt "
                        "(one token per line) or a list of tokens.")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise DataError(f"Vocabulary file {path!r} is not UTF-8 (bad bytes on line {line}); "
                        "re-save it as UTF-8.") from None
    tokens = text.split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()  # the newline that ends the last line
    tokens = [t[:-1] if t.endswith("\r") else t for t in tokens]
    return _check_vocabulary(tokens, source=path)


def _check_vocabulary(tokens, source):
    if not tokens:
        raise DataError(f"Vocabulary {source} is empty; a BERT vocab.txt lists one token per line, "
                        "special tokens ([PAD], [UNK], [CLS], [SEP], [MASK]) included.")
    seen = {}
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise DataError(f"Vocabulary {source}: entry {i} is {type(token).__name__}, not str.")
        if token == "":
            raise DataError(f"Vocabulary {source}: line {i + 1} is empty; remove it (an empty "
                            "token can never be produced and would shift every later id).")
        if token in seen:
            raise DataError(f"Vocabulary {source}: token {token!r} appears twice (lines "
                            f"{seen[token] + 1} and {i + 1}); ids must be unique, remove one.")
        seen[token] = i
    return list(tokens)


class BasicTokenizer:
    """BERT's basic tokenization in TensorFlow: text to words, no vocabulary needed.

    Cleans the text, optionally lower-cases and strips accents, and splits on whitespace,
    punctuation and CJK ideographs exactly as ``BertTokenizerFast``'s normaliser and pre-tokeniser
    do (see :mod:`keras_bert_lab.text.normalization`). :class:`WordPieceTokenizer` builds on it, and
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

    @_graph_code
    def split(self, inputs):
        """The words of a string (list of ``str``) or of a batch (``RaggedTensor [B, (W)]``)."""
        return _apply(lambda text: {"words": self._split_flat(text, False)["words"]},
                      inputs)["words"]

    @_graph_code
    def split_with_offsets(self, inputs):
        """Words plus ``start_offsets`` / ``end_offsets``: character offsets in the input."""
        return _apply(lambda text: self._split_flat(text, True), inputs)

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

    @_graph_code
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


class WordPieceTokenizer:
    """BERT's tokenizer: basic tokenization + greedy longest-match-first WordPiece, in TensorFlow.

    Matches ``transformers.BertTokenizerFast`` (same ``vocab.txt``, ``do_lower_case``,
    ``strip_accents`` and ``tokenize_chinese_chars``) on ids, character offsets and word ids, and
    runs inside ``tf.data.Dataset.map`` — so one input pipeline feeds ``model.fit`` on TensorFlow,
    JAX and PyTorch. Bytes that are not valid UTF-8 are treated like U+FFFD (dropped) and counted
    in :attr:`invalid_utf8_count` instead of failing mid-epoch.

    Args:
        vocabulary: path of a ``vocab.txt`` or a list of tokens (index = id).
        lowercase: lower-case the text (uncased vocabularies). Default ``True``.
        strip_accents: remove accents (NFD, drop nonspacing marks); ``None`` follows ``lowercase``.
        chinese_chars: isolate CJK ideographs as one-character words. Default ``True``.
        max_chars_per_word: longer words become a single unknown token. Default 100.
        suffix_indicator: prefix of word-continuation pieces. Default ``"##"``.
        unk_token, cls_token, sep_token, pad_token, mask_token: the special tokens, looked up by
            name; each must be in the vocabulary (pass ``None`` to do without one, but not ``unk``).

    Example:

    >>> from keras_bert_lab.datasets import locate
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> tokenizer("Hello, Ångström!")
    [7592, 1010, 17076, 15687, 999]
    >>> tokenizer.detokenize([7592, 1010, 17076, 15687, 999])
    'hello , angstrom !'
    >>> out = tokenizer.tokenize_with_offsets("Ångström")   # "ang" + "##strom"
    >>> out["start_offsets"], out["end_offsets"], out["word_ids"]
    ([0, 3], [3, 8], [0, 0])
    >>> import tensorflow as tf
    >>> ds = tf.data.Dataset.from_tensor_slices(["first text", "a second one"]).batch(2)
    >>> ds = ds.map(tokenizer)  # RaggedTensor [2, (T)] of int32 ids
    >>> next(iter(ds)).to_list()
    [[2034, 3793], [1037, 2117, 2028]]
    """

    def __init__(self, vocabulary, *, lowercase=True, strip_accents=None, chinese_chars=True,
                 max_chars_per_word=100, suffix_indicator="##", unk_token="[UNK]",
                 cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", mask_token="[MASK]"):
        if isinstance(vocabulary, (str, os.PathLike)):
            self._vocabulary_file = os.fspath(vocabulary)
            self.vocabulary = read_vocabulary(vocabulary)
        else:
            self._vocabulary_file = None
            self.vocabulary = _check_vocabulary(list(vocabulary), source="(list)")
        if unk_token is None:
            raise ValueError("unk_token is required: WordPiece needs it for uncoverable words.")
        if int(max_chars_per_word) < 1:
            raise ValueError(f"max_chars_per_word must be at least 1, got {max_chars_per_word}.")
        self.basic = BasicTokenizer(lowercase, strip_accents, chinese_chars)
        self.max_chars_per_word = int(max_chars_per_word)
        self.suffix_indicator = suffix_indicator
        self.special_tokens = {"pad": pad_token, "unk": unk_token, "cls": cls_token,
                               "sep": sep_token, "mask": mask_token}
        self._index = {token: i for i, token in enumerate(self.vocabulary)}
        for name, token in self.special_tokens.items():
            if token is not None and token not in self._index:
                where = self._vocabulary_file or "the vocabulary list"
                raise DataError(f"{where} lacks the {name} token {token!r}; add it (BERT vocabs "
                                f"start with [PAD] … [UNK] [CLS] [SEP] [MASK]) or pass "
                                f"{name}_token=<the token your vocab uses>.")
        self._tensors = None  # TensorFlow state, made on first use (see _constants)

    # ---- vocabulary -------------------------------------------------------------------------
    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    def token_to_id(self, token):
        """The id of ``token``; ``KeyError`` if it is not in the vocabulary."""
        return self._index[token]

    def id_to_token(self, token_id):
        return self.vocabulary[token_id]

    def _special_id(self, name):
        token = self.special_tokens[name]
        if token is None:
            raise DataError(f"This tokenizer was built without a {name} token "
                            f"({name}_token=None); rebuild it with the token your vocab uses.")
        return self._index[token]

    @property
    def pad_token_id(self):
        return self._special_id("pad")

    @property
    def unk_token_id(self):
        return self._special_id("unk")

    @property
    def cls_token_id(self):
        return self._special_id("cls")

    @property
    def sep_token_id(self):
        return self._special_id("sep")

    @property
    def mask_token_id(self):
        return self._special_id("mask")

    @property
    def lowercase(self):
        return self.basic.lowercase

    @property
    def invalid_utf8_count(self):
        """How many invalid UTF-8 sequences this tokenizer has replaced so far (all calls)."""
        return self.basic.invalid_utf8_count

    def get_config(self):
        return {"vocabulary": self._vocabulary_file or list(self.vocabulary),
                "lowercase": self.basic.lowercase, "strip_accents": self.basic.strip_accents,
                "chinese_chars": self.basic.chinese_chars,
                "max_chars_per_word": self.max_chars_per_word,
                "suffix_indicator": self.suffix_indicator,
                **{f"{name}_token": token for name, token in self.special_tokens.items()}}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """The tokenizer of a preset (a directory or a name): its vocabulary and casing."""
        from keras_bert_lab.presets import load_tokenizer

        return load_tokenizer(preset, **kwargs)

    def save_vocabulary(self, path):
        """Write the vocabulary as ``vocab.txt`` (one token per line) and return the path."""
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(self.vocabulary) + "\n")
        return path

    # ---- TensorFlow state -------------------------------------------------------------------
    def _constants(self):
        """Vocabulary tables and WordPiece models, made eagerly (never inside a traced function)."""
        if self._tensors is not None:
            return self._tensors
        suffix = self.suffix_indicator
        # Characters each piece covers in its word (for offsets); [UNK] covers the whole word.
        continues_word = np.array([t.startswith(suffix) and t != suffix for t in self.vocabulary])
        piece_chars = np.array([len(t) for t in self.vocabulary], np.int64)
        piece_chars[continues_word] -= len(suffix)
        piece_chars[self.unk_token_id] = -1
        continues_word[self.unk_token_id] = False
        common = dict(vocab=self.vocabulary, suffix_indicator=suffix, token_out_type=tf.int32,
                      unknown_token=self.special_tokens["unk"])
        with tf.init_scope():
            self._tensors = {
                "piece_chars": tf.constant(piece_chars),
                "continues_word": tf.constant(continues_word),
                "vocabulary": tf.constant(self.vocabulary, tf.string),
                # Words from our basic tokenization. A word has more than 4 bytes per allowed
                # character only if it is too long, and too-long words are swapped for `too_long`.
                "wordpiece": tf_text.FastWordpieceTokenizer(
                    max_bytes_per_word=4 * self.max_chars_per_word, no_pretokenization=True,
                    **common),
                "too_long": tf.constant("x" * (4 * self.max_chars_per_word + 1)),
                # Printable-ASCII text, split by tensorflow-text itself: on ASCII its whitespace
                # and punctuation are exactly BERT's, and bytes are characters.
                "ascii_wordpiece": tf_text.FastWordpieceTokenizer(
                    max_bytes_per_word=self.max_chars_per_word, no_pretokenization=False,
                    **common),
            }
        return self._tensors

    # ---- tokenization -----------------------------------------------------------------------
    @_graph_code
    def __call__(self, inputs):
        return self.tokenize(inputs)

    @_graph_code
    def tokenize(self, inputs):
        """Token ids of a string or a batch of strings (see the module docstring for shapes)."""
        return _apply(lambda text: self._tokenize_flat(text, False), inputs)["token_ids"]

    @_graph_code
    def tokenize_with_offsets(self, inputs):
        """Ids plus, for each token, where it came from in the input.

        Returns a dict of equally shaped ``token_ids``, ``start_offsets`` and ``end_offsets``
        (character offsets into the *original* string: ``text[start:end]`` is the text the token
        stands for, before lower-casing and accent stripping; HF's ``offset_mapping``) and
        ``word_ids`` (index of the basic-tokenization word in its string; HF's ``word_ids()``).
        For byte-string inputs a character is a decoded UTF-8 code point.
        """
        return _apply(lambda text: self._tokenize_flat(text, True), inputs)

    def _tokenize_flat(self, text, with_offsets):
        """[B] strings -> dict of RaggedTensor [B, (T)].

        Printable-ASCII strings (most of English text) take a short path; the rest go through the
        code-point table. Both give the same result on ASCII; the split is only for speed.
        """
        tensors = self._constants()
        ascii_only = tf.cast(tf.strings.regex_full_match(text, "[\\t\\n\\r -~]*"), tf.int32)
        rows = tf.range(tf.size(text))
        other_rows, ascii_rows = tf.dynamic_partition(rows, ascii_only, 2)
        other_text, ascii_text = tf.dynamic_partition(text, ascii_only, 2)
        parts = (self._tokenize_any(other_text, tensors, with_offsets),
                 self._tokenize_ascii(ascii_text, tensors, with_offsets))
        # Back to input order: row i of the output is row order[i] of [other; ascii].
        order = tf.math.invert_permutation(tf.concat([other_rows, ascii_rows], 0))
        return {key: tf.gather(tf.concat([parts[0][key], parts[1][key]], 0), order)
                for key in parts[0]}

    def _tokenize_ascii(self, text, tensors, with_offsets):
        if self.basic.lowercase:
            text = tf.strings.lower(text)  # ASCII only, which is all there is here
        if not with_offsets:
            return {"token_ids": tensors["ascii_wordpiece"].tokenize(text)}
        ids, start, end = tensors["ascii_wordpiece"].tokenize_with_offsets(text)
        # A word is a first piece followed by its "##" pieces; [UNK] is a whole word.
        first = tf.cast(tf.logical_not(tf.gather(tensors["continues_word"], ids.values)), tf.int64)
        word_ids = tf.cumsum(ids.with_values(first), axis=1) - 1
        return {"token_ids": ids, "start_offsets": tf.cast(start, tf.int32),
                "end_offsets": tf.cast(end, tf.int32), "word_ids": tf.cast(word_ids, tf.int32)}

    def _tokenize_any(self, text, tensors, with_offsets):
        """Any UTF-8 (valid or not): basic tokenization on code points, then WordPiece."""
        words = self.basic.words(text)
        word_chars = words.letters.row_lengths()
        word_text = tf.strings.unicode_encode(words.letters, "UTF-8")
        word_text = tf.where(word_chars > self.max_chars_per_word, tensors["too_long"], word_text)
        pieces = tensors["wordpiece"].tokenize(word_text)             # [W, (P)]
        piece_word = pieces.value_rowids()
        token_row = tf.gather(words.row, piece_word)
        ids = tf.RaggedTensor.from_value_rowids(pieces.values, token_row, nrows=words.num_rows,
                                                validate=False)
        if not with_offsets:
            return {"token_ids": ids}
        # Pieces cover consecutive characters of their word ([UNK] all of it).
        length = tf.gather(tensors["piece_chars"], pieces.values)
        length = tf.where(length < 0, tf.gather(word_chars, piece_word), length)
        before = tf.concat([[0], tf.cumsum(length)], 0)
        in_word = before[:-1] - tf.gather(tf.gather(before, pieces.row_starts()), piece_word)
        first = tf.gather(words.letters.row_starts(), piece_word) + in_word  # index of a letter
        row_start = tf.gather(words.row_starts, token_row)
        start = tf.gather(words.source, first) - row_start
        end = tf.gather(words.source, first + length - 1) + 1 - row_start
        words_per_row = tf.math.bincount(words.row, minlength=words.num_rows,
                                         maxlength=words.num_rows, dtype=tf.int64)
        word_id = piece_word - tf.gather(tf.cumsum(words_per_row, exclusive=True), token_row)
        return {"token_ids": ids, **{key: ids.with_values(tf.cast(value, tf.int32)) for key, value
                                     in (("start_offsets", start), ("end_offsets", end),
                                         ("word_ids", word_id))}}

    # ---- detokenization ---------------------------------------------------------------------
    @_graph_code
    def detokenize(self, token_ids, skip_special_tokens=True):
        """Ids back to text: pieces joined, words separated by one space.

        The text is the normalised words (lower-cased, accents stripped, punctuation spaced), so
        ``detokenize(tokenize(text))`` equals ``" ".join(basic tokenization of text)`` when no word
        became ``[UNK]``. With ``skip_special_tokens``, [PAD] [CLS] [SEP] [MASK] are left out.
        Takes ids as a Python list (→ ``str``), a list of lists (→ list of ``str``), or a tensor
        (dense or ragged, last axis = tokens → ``tf.string`` tensor).
        """
        python = isinstance(token_ids, (list, tuple))
        tensors = self._constants()
        if python:
            single = not token_ids or not isinstance(token_ids[0], (list, tuple))
            ids = tf.ragged.constant([token_ids] if single else token_ids, dtype=tf.int32)
        else:
            ids = token_ids
            if not isinstance(ids, tf.RaggedTensor):
                ids = tf.convert_to_tensor(ids)
        if skip_special_tokens:
            special = [self._index[t] for name, t in self.special_tokens.items()
                       if t is not None and name != "unk"]
            keep = tf.reduce_all(tf.cast(ids, tf.int32)[..., None] != special, axis=-1)
            ids = tf.ragged.boolean_mask(ids, keep)
        tokens = tf.gather(tensors["vocabulary"], ids)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        text = tf.strings.regex_replace(text, " " + _re_escape(self.suffix_indicator), "")
        if python:
            values = [t.decode("utf-8", "replace") for t in text.numpy().tolist()]
            return values[0] if single else values
        return text


def _apply(fn, inputs):
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
            raise TypeError(f"Expected strings, got a {tensor.dtype.name} tensor; tokenize text, "
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


def _re_escape(text):
    return "".join("\\" + c if not c.isalnum() else c for c in text)
