"""BERT's WordPiece and packing in core TensorFlow ops only, for a self-contained SavedModel.

The library's :class:`~keras_bert_lab.preprocessing.wordpiece.WordPieceTokenizer` runs its
WordPiece step with tensorflow-text's ``FastWordpieceTokenizer``, whose custom ops a SavedModel
can only load in a process that has imported ``tensorflow_text``. Here the same two steps are
written with ``tf.strings``, ``tf.lookup`` and a ``tf.while_loop``, which every TensorFlow has:

1. *basic tokenization* is the library's own
   :class:`~keras_bert_lab.preprocessing.basic_tokenizer.BasicTokenizer` (already pure TF: one
   table lookup per character, then vectorised boundary finding), so lower-casing, accent
   stripping, CJK and punctuation splitting are the training-time ones by construction;
2. *WordPiece* (Wu et al. 2016; google-research/bert ``WordpieceTokenizer``) is the greedy
   longest-match-first rule, applied to all words of the batch at once: at each step every
   unfinished word looks up its candidates ``word[pos:pos + l]`` (``"##"``-prefixed after the first
   piece) for every ``l`` up to the longest vocabulary entry, keeps the longest that is in the
   vocabulary and moves on; a word with no match at some step, or longer than
   ``max_chars_per_word`` characters, is one ``[UNK]``. This is Hugging Face's rule, which the
   library's tokenizer matches id for id (tests compare the two);
3. packing is :meth:`~keras_bert_lab.preprocessing.packer.BertPacker.pack` (pure TF).

Shapes: ``B`` texts, ``W`` words of the batch, ``M`` longest vocabulary entry in characters,
``L`` sequence length.
"""

import tensorflow as tf

from keras_bert_lab.preprocessing.basic_tokenizer import graph_code
from keras_bert_lab.preprocessing.packer import BertPacker


class GraphWordPiece(tf.Module):
    """A ``WordPieceTokenizer``'s exact ids with core TensorFlow ops (no tensorflow-text).

    Built from a library tokenizer (vocabulary, casing, special tokens), so the two cannot drift
    apart. A ``tf.Module``: its vocabulary table is tracked and saved with a SavedModel.

    Args:
        tokenizer: a :class:`~keras_bert_lab.preprocessing.wordpiece.WordPieceTokenizer`.

    Example:
    >>> from keras_bert_lab.data.registry import locate
    >>> from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(locate("bert_uncased_vocab"))
    >>> graph = GraphWordPiece(tokenizer)
    >>> graph.tokenize(tf.constant(["Hello, Ångström!", ""])).to_list()
    [[7592, 1010, 17076, 15687, 999], []]
    """

    def __init__(self, tokenizer, name="wordpiece"):
        super().__init__(name=name)
        vocabulary = list(tokenizer.vocabulary)
        self.basic = tokenizer.basic
        self.max_chars_per_word = tokenizer.max_chars_per_word
        self.suffix_indicator = tokenizer.suffix_indicator
        self.unk_token_id = tokenizer.unk_token_id
        self.max_token_chars = max(len(token) for token in vocabulary)  # M
        self.table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(vocabulary, tf.string), tf.range(len(vocabulary), dtype=tf.int32)),
            default_value=-1)

    @graph_code
    def tokenize(self, text):
        """``[B]`` strings → ``tf.RaggedTensor [B, (T)]`` of int32 token ids."""
        words = self.basic.words(tf.reshape(tf.convert_to_tensor(text, tf.string), [-1]))
        chars = words.letters.row_lengths()                               # (W,)
        word_text = tf.strings.unicode_encode(words.letters, "UTF-8")     # (W,)
        piece_word, piece_id = self._wordpiece(word_text, chars)
        return tf.RaggedTensor.from_value_rowids(
            piece_id, tf.gather(words.row, piece_word), nrows=words.num_rows, validate=False)

    def _wordpiece(self, word_text, chars):
        """Greedy longest-match-first over all words: ``(word index, id)`` of every piece, in
        order (pieces of one word consecutive, words in input order)."""
        suffix = tf.constant(self.suffix_indicator)

        def step(i, pos, bad, words_ta, ids_ta):
            todo = tf.where((pos < chars) & ~bad)[:, 0]                   # (n,) unfinished
            at, end = tf.gather(pos, todo), tf.gather(chars, todo)
            # Candidates l = 1..m, m = min(M, the most characters any word has left).
            m = tf.minimum(tf.reduce_max(end - at), self.max_token_chars)
            size = tf.range(1, m + 1)[None, :] + tf.zeros_like(at)[:, None]   # (n, m)
            start = at[:, None] + tf.zeros_like(size)
            text = tf.gather(word_text, todo)[:, None] + tf.zeros_like(size, tf.string)
            piece = tf.strings.substr(text, start, size, unit="UTF8_CHAR")
            piece = tf.strings.join([tf.where(start > 0, suffix, ""), piece])
            ids = tf.where(start + size <= end[:, None], self.table.lookup(piece), -1)
            found = ids >= 0
            # The longest match: the last True of each row (m - 1 - first True of the reverse).
            longest = m - 1 - tf.argmax(tf.cast(tf.reverse(found, [1]), tf.int32), axis=1,
                                        output_type=tf.int64)
            ok = tf.reduce_any(found, axis=1)                             # (n,)
            best = tf.gather(ids, longest, batch_dims=1)
            pos = tf.tensor_scatter_nd_add(pos, todo[:, None], tf.where(ok, longest + 1, 0))
            bad = tf.tensor_scatter_nd_update(bad, todo[:, None], ~ok)
            return (i + 1, pos, bad, words_ta.write(i, tf.boolean_mask(todo, ok)),
                    ids_ta.write(i, tf.boolean_mask(best, ok)))

        bad = chars > self.max_chars_per_word                             # too long: [UNK]
        # Most words are in the vocabulary whole, which is then their longest match: one lookup.
        whole = tf.where(bad, -1, self.table.lookup(word_text))
        done = tf.where(whole >= 0)[:, 0]
        words_ta = tf.TensorArray(tf.int64, size=1, dynamic_size=True, infer_shape=False)
        ids_ta = tf.TensorArray(tf.int32, size=1, dynamic_size=True, infer_shape=False)
        words_ta = words_ta.write(0, done)
        ids_ta = ids_ta.write(0, tf.gather(whole, done))
        _, _, bad, words_ta, ids_ta = tf.while_loop(
            lambda i, pos, bad, *_: tf.reduce_any((pos < chars) & ~bad),
            step, (tf.constant(1), tf.where(whole >= 0, chars, 0), bad, words_ta, ids_ta))
        piece_word = tf.reshape(words_ta.concat(), [-1])
        piece_id = tf.reshape(ids_ta.concat(), [-1])
        # A word that failed at any step is one [UNK]: drop its pieces, add the [UNK].
        keep = ~tf.gather(bad, piece_word)
        unk_word = tf.where(bad)[:, 0]
        piece_word = tf.concat([tf.boolean_mask(piece_word, keep), unk_word], 0)
        piece_id = tf.concat([tf.boolean_mask(piece_id, keep),
                              tf.fill(tf.shape(unk_word), tf.constant(self.unk_token_id))], 0)
        # Pieces were written step by step; a stable sort by word restores reading order.
        order = tf.argsort(piece_word, stable=True)
        return tf.gather(piece_word, order), tf.gather(piece_id, order)


class GraphPreprocessor(tf.Module):
    """Texts (or text pairs) → the backbone's three ``(B, L)`` int32 inputs, in core TF ops.

    The in-graph twin of :class:`~keras_bert_lab.models.bert.preprocessor.BertTextPreprocessor`:
    :class:`GraphWordPiece` then ``[CLS] A [SEP] (B [SEP])`` packing with the same longest-first
    truncation and padding to ``sequence_length``.

    Args:
        tokenizer: a :class:`~keras_bert_lab.preprocessing.wordpiece.WordPieceTokenizer`.
        sequence_length: ``L``.
    """

    def __init__(self, tokenizer, sequence_length, name="preprocessor"):
        super().__init__(name=name)
        self.wordpiece = GraphWordPiece(tokenizer)
        self.packer = BertPacker.from_tokenizer(tokenizer, sequence_length)

    @graph_code
    def __call__(self, text, text_pair=None):
        first = self.wordpiece.tokenize(text)
        second = None if text_pair is None else self.wordpiece.tokenize(text_pair)
        return self.packer.pack(first, second)
