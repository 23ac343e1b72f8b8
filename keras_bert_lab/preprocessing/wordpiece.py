"""WordPiece tokenization for BERT, in-graph so it runs inside ``tf.data`` on every Keras backend.

BERT (Devlin et al. 2019, §3; google-research/bert ``tokenization.py``) reads text in two steps.
*Basic tokenization* cleans the text and cuts it into words: control characters go, whitespace
separates, accents come off and letters are lower-cased for uncased vocabularies, and every
punctuation mark and CJK ideograph is a word of its own. *WordPiece* (Wu et al. 2016) then covers
each word greedily with the longest vocabulary entry that fits, continuing with ``##`` pieces; a word
that cannot be covered, or is longer than 100 characters, becomes one ``[UNK]``.

Basic tokenization is :class:`~keras_bert_lab.preprocessing.basic_tokenizer.BasicTokenizer` (one
table lookup per character, then a few vectorised TensorFlow ops); WordPiece is tensorflow-text's
``FastWordpieceTokenizer`` (linear-time longest-match-first) applied to the words. Strings that are
printable ASCII (four in five English paragraphs) skip the table: ``tf.strings.lower`` and the
WordPiece op's own splitting, which on ASCII are exactly BERT's. The result is identical, id for id
and offset for offset, to Hugging Face's ``BertTokenizerFast`` with the same vocabulary and casing
(tests check every Unicode code point and every WikiText-2 valid/test paragraph), at several times
its speed inside ``tf.data`` (``benchmarks/tokenization.py``).

Shapes: a scalar string gives a 1-D ``tf.Tensor`` of ids, a batch ``[B]`` of strings a
``tf.RaggedTensor`` ``[B, (T)]``; Python strings and lists give Python lists.
"""

import os

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.preprocessing.basic_tokenizer import BasicTokenizer, apply_to_text, graph_code
from keras_bert_lab.presets.vocabulary import check_tokens, read_vocabulary
from keras_bert_lab.preprocessing.tokenizer import Tokenizer


class WordPieceTokenizer(Tokenizer):
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

    >>> from keras_bert_lab.data.registry import locate
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
            self.vocabulary = check_tokens(list(vocabulary), source="(list)")
        if unk_token is None:
            raise ConfigError("unk_token is required: WordPiece needs it for uncoverable words.")
        if int(max_chars_per_word) < 1:
            raise ConfigError(f"max_chars_per_word must be at least 1, got {max_chars_per_word}.")
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
    def from_read_preset(cls, preset, **kwargs):
        """The tokenizer of a checked preset: its vocabulary and casing."""
        options = {k: v for k, v in preset.tokenizer.items()
                   if k in ("lowercase", "strip_accents", "chinese_chars")}
        return cls(str(preset.vocabulary_path), **{**options, **kwargs})

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
    @graph_code
    def __call__(self, inputs):
        return self.tokenize(inputs)

    @graph_code
    def tokenize(self, inputs):
        """Token ids of a string or a batch of strings (see the module docstring for shapes)."""
        return apply_to_text(lambda text: self._tokenize_flat(text, False), inputs)["token_ids"]

    @graph_code
    def tokenize_with_offsets(self, inputs):
        """Ids plus, for each token, where it came from in the input.

        Returns a dict of equally shaped ``token_ids``, ``start_offsets`` and ``end_offsets``
        (character offsets into the *original* string: ``text[start:end]`` is the text the token
        stands for, before lower-casing and accent stripping; HF's ``offset_mapping``) and
        ``word_ids`` (index of the basic-tokenization word in its string; HF's ``word_ids()``).
        For byte-string inputs a character is a decoded UTF-8 code point.
        """
        return apply_to_text(lambda text: self._tokenize_flat(text, True), inputs)

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
    @graph_code
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


def _re_escape(text):
    return "".join("\\" + c if not c.isalnum() else c for c in text)
