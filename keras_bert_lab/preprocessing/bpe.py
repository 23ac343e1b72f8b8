"""GPT-1's byte-pair encoding (BPE): words to sub-word pieces by ranked merges, in Python and tf.data.

GPT-1 (Radford et al. 2018, §4.1) reads text as a 40,000-merge BPE vocabulary (Sennrich et al.
2016). A word starts as its characters, the last one marked ``</w>`` (end of word), and the
learned merges are applied by rank: while two neighbouring symbols form a known pair, the pair of
lowest rank (leftmost first) becomes one symbol. The final symbols are the word's pieces: ``the``
is ``the</w>``, ``lobsters`` perhaps ``lob`` ``sters</w>``. A piece that is not in the vocabulary
(a character never seen in training) becomes the unknown token. (GPT-1's code merged every
occurrence of the best pair at once; for merges in the order they were learned that is the same,
and where a file lists them out of that order, as the allennlp fixture does, we follow
``tokenizers``: one pair at a time.)

Words come from BERT's basic tokenization
(:class:`~keras_bert_lab.preprocessing.basic_tokenizer.BasicTokenizer`: clean, lower-case, strip
accents, split at whitespace, punctuation and CJK), which is exactly what ``transformers``' 5.x
``OpenAIGPTTokenizer`` does (``BertNormalizer`` + ``BertPreTokenizer`` + a ``tokenizers`` BPE
model with ``end_of_word_suffix="</w>"``). The original release used spaCy and ftfy instead.
Ids equal that tokenizer's, given the same vocabulary and merges (``tests/preprocessing/
test_bpe.py``; 0 mismatches on WikiText-2 valid, ``benchmarks/bpe_tokenizer.py``).

Two paths give the same ids: :meth:`BytePairTokenizer.encode` runs the merges in Python with a
per-word cache; calling the tokenizer runs them as TensorFlow ops (a ``tf.while_loop`` that merges
the lowest-ranked pair of every distinct word of the batch at once), so it works inside
``tf.data.Dataset.map`` on every Keras backend. Both run at about the reference's speed (≈ 0.2-0.4
M tokens/s on this 2-core machine with 40,000 merges). The loop runs as many passes as the
longest word of a batch needs, each a fixed ~30 ops, which is why a cross-batch word cache in the
graph did not pay (we tried: the words it misses are exactly the long ones).

One difference from ``OpenAIGPTTokenizer``: it finds its special tokens (``<unk>``, and
``_start_`` … once added) written in the input text; here text is always text, as in GPT-1.

Example:

>>> tokenizer = BytePairTokenizer(
...     ["l", "o", "w", "l</w>", "o</w>", "w</w>", "lo", "low</w>", "ow</w>"],
...     ["l o", "o w</w>", "lo w</w>"])
>>> tokenizer.tokenize("Low, LOW lol")
['low</w>', '<unk>', 'low</w>', 'lo', 'l</w>']
>>> tokenizer.encode("low lol"), tokenizer.decode([7, 6, 3])
([7, 6, 3], 'low lol')
>>> import tensorflow as tf                   # the TensorFlow path, for tf.data
>>> ds = tf.data.Dataset.from_tensor_slices(["low lol", "ow"]).batch(2).map(tokenizer)
>>> next(iter(ds)).to_list()
[[7, 6, 3], [8]]
>>> tokenizer.token_to_id("_start_"), tokenizer.token_to_id("<unk>")
(9, 12)
"""

import os
import warnings

import numpy as np
import tensorflow as tf

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.preprocessing.basic_tokenizer import BasicTokenizer, apply_to_text, graph_code
from keras_bert_lab.preprocessing.bpe_files import (END_OF_WORD, base_char, check_merges,
                                                    coerce_merges, coerce_vocabulary)
from keras_bert_lab.presets.vocabulary import check_tokens, write_vocabulary
from keras_bert_lab.preprocessing.tokenizer import Tokenizer

# The tokens GPT-1's fine-tuning code appends after the BPE vocabulary (Radford et al. §3.3).
GPT_SPECIAL_TOKENS = ("_start_", "_delimiter_", "_classify_")
UNK_TOKEN = "<unk>"
MERGES_HEADER = "#version: 0.2"
_NO_MERGE = np.iinfo(np.int64).max


class BytePairTokenizer(Tokenizer):
    """GPT-1's BPE tokenizer: BERT basic tokenization, then ranked merges with ``</w>`` word ends.

    Args:
        vocabulary: tokens (list, index = id; or dict token -> id) or a path: ``vocab.txt`` (one
            token per line) or GPT-1's ``encoder_bpe.json``.
        merges: ``"a b"`` strings or ``(a, b)`` pairs, rank = position; or a path to a merges file
            (``merges.txt``, GPT-1's ``vocab.bpe``; a ``#version`` first line is skipped).
        lowercase: lower-case and strip accents before splitting (GPT-1: ``True``).
        special_tokens: tokens for GPT tasks; those not in ``vocabulary`` are appended after it,
            in order (GPT-1's ``_start_``, ``_delimiter_``, ``_classify_`` by default).
        unk_token: the id of pieces outside the vocabulary; appended after the special tokens when
            the vocabulary lacks it. (GPT-1's own code sent them to id 0: pass that token.)
        cache_size: words whose pieces :meth:`encode` remembers.
    """

    def __init__(self, vocabulary, merges, *, lowercase=True, special_tokens=GPT_SPECIAL_TOKENS,
                 unk_token=UNK_TOKEN, cache_size=100_000):
        tokens, self.aliases = coerce_vocabulary(vocabulary)
        if not all(isinstance(t, str) and t for t in (*special_tokens, unk_token)):
            raise ConfigError(f"special_tokens {special_tokens!r} and unk_token {unk_token!r} "
                              "must be non-empty strings (GPT-1: '_start_', '_delimiter_', "
                              "'_classify_' and '<unk>').")
        self.unk_token = unk_token
        self.special_tokens = tuple(special_tokens)
        index = {token: i for i, token in enumerate(tokens)}
        index.update(self.aliases)
        for token in (*self.special_tokens, unk_token):
            if token not in index:
                index[token] = len(tokens)
                tokens.append(token)
        self.vocabulary = tokens
        self._index = index
        self.merges = coerce_merges(merges)
        self._ranks = check_merges(self.merges, index)
        self.unk_token_id = index[unk_token]
        self.basic = BasicTokenizer(lowercase=lowercase)
        self.cache_size = int(cache_size)
        self._cache = {}
        self._tensors = self._graph = None

    # ---- files --------------------------------------------------------------------------
    @classmethod
    def from_gpt_files(cls, encoder_path, bpe_path, **kwargs):
        """From GPT-1's release files: ``encoder_bpe_40000.json`` and ``vocab_40000.bpe``."""
        return cls(encoder_path, bpe_path, **kwargs)

    @classmethod
    def from_directory(cls, directory, **kwargs):
        """From a directory written by :meth:`save` (``vocab.txt`` + ``merges.txt``)."""
        return cls(os.path.join(directory, "vocab.txt"), os.path.join(directory, "merges.txt"),
                   **kwargs)

    @classmethod
    def from_read_preset(cls, info, task_tokens=True):
        """The tokenizer of a GPT preset (a name or a directory: ``vocab.txt`` + ``merges.txt``),
        with no id outside the model's rows: unknown pieces go to ``<unk>`` when the vocabulary
        has it, else to id 0 as GPT-1's own code did. ``task_tokens``: the preset must hold
        GPT-1's ``_start_``, ``_delimiter_`` and ``_classify_`` (fine-tuning needs them;
        generation does not)."""
        if info.merges_path is None:
            raise ConfigError(f"Preset {info.directory} has no merges.txt, so its byte-pair "
                              "tokenizer cannot be rebuilt; is it a GPT preset? Re-export it.")
        tokens = info.vocabulary()
        present = set(tokens)
        missing = [t for t in GPT_SPECIAL_TOKENS if t not in present]
        if task_tokens and missing:
            raise ConfigError(f"Preset {info.directory} has no {missing} tokens, which GPT-1's "
                              "task inputs need; import the release with `kbl preset import-gpt "
                              "--special-tokens _start_ _delimiter_ _classify_`.")
        return cls(tokens, info.merges_path, lowercase=info.tokenizer.get("lowercase", True),
                   special_tokens=[t for t in GPT_SPECIAL_TOKENS if t in present],
                   unk_token=UNK_TOKEN if UNK_TOKEN in present else tokens[0])

    def save(self, directory):
        """Write ``vocab.txt`` (special tokens included) and ``merges.txt``; return the directory.

        A token with a line break (GPT-1's ``"\\n</w>"``, which basic tokenization can never
        produce) is written with ``\\n`` escaped. Aliases (a second token for an id) are dropped.
        """
        os.makedirs(directory, exist_ok=True)
        tokens = [t.replace("\n", "\\n").replace("\r", "\\r") for t in self.vocabulary]
        check_tokens(tokens, source="(escaped for vocab.txt)")
        if self.aliases:
            warnings.warn(f"save: vocab.txt has one token per id; aliases {sorted(self.aliases)} "
                          "are not written", stacklevel=2)
        write_vocabulary(os.path.join(directory, "vocab.txt"), tokens)
        with open(os.path.join(directory, "merges.txt"), "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(f"{line}\n" for line in [MERGES_HEADER, *map(" ".join, self.merges)]))
        return directory

    def get_config(self):
        """Options besides the two files (what a preset's ``tokenizer`` entry holds)."""
        return {"lowercase": self.basic.lowercase, "special_tokens": list(self.special_tokens),
                "unk_token": self.unk_token}

    # ---- vocabulary ---------------------------------------------------------------------
    @property
    def start_token_id(self):
        return self._index[GPT_SPECIAL_TOKENS[0]]

    @property
    def delimiter_token_id(self):
        return self._index[GPT_SPECIAL_TOKENS[1]]

    @property
    def classify_token_id(self):
        return self._index[GPT_SPECIAL_TOKENS[2]]

    # ---- Python path --------------------------------------------------------------------
    def bpe(self, word):
        """The pieces of one (already normalised) word, as a tuple of tokens (cached)."""
        return tuple(s if s in self._index else self.unk_token for s in self._symbols(word))

    def _symbols(self, word):
        """The merged symbols of a word (cached); a symbol outside the vocabulary is kept as
        itself, so the letters it covers are known (``bpe`` turns it into the unknown token)."""
        symbols = self._cache.get(word)
        if symbols is not None:
            return symbols
        symbols = [*word[:-1], word[-1] + END_OF_WORD]
        ranks = self._ranks
        while len(symbols) > 1:  # merge the lowest-ranked pair, leftmost first, until none is left
            pairs = [ranks.get(pair, _NO_MERGE) for pair in zip(symbols, symbols[1:])]
            best = min(pairs)
            if best == _NO_MERGE:
                break
            i = pairs.index(best)
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        symbols = tuple(symbols)
        if len(self._cache) < self.cache_size:
            self._cache[word] = symbols
        return symbols

    def tokenize(self, text):
        """The pieces of a ``str`` (list) or of a list of them (list of lists)."""
        words = self.basic.split(text if isinstance(text, (list, tuple)) else [text])
        rows = [[piece for word in row for piece in self.bpe(word)] for row in words]
        return rows if isinstance(text, (list, tuple)) else rows[0]

    def encode(self, text):
        """Token ids of a ``str`` (list) or of a list of them (list of lists), in Python."""
        rows = self.tokenize(text if isinstance(text, (list, tuple)) else [text])
        ids = [[self._index[piece] for piece in row] for row in rows]
        return ids if isinstance(text, (list, tuple)) else ids[0]

    def encode_with_offsets(self, texts):
        """Ids of a list of ``str`` plus, for every id, the characters of the input it stands for.

        Returns ``{"token_ids", "start_offsets", "end_offsets"}``, each a list of lists:
        ``text[start:end]`` is the original text of the piece (before lower-casing and accent
        stripping; an unknown piece covers its own letters) — ``transformers``' ``offset_mapping``
        (test: ``tests/preprocessing/test_bpe.py``). Extractive QA cuts answers out of contexts
        with them. Python path (the letters' sources come from the basic tokenizer's TF ops).

        Example:
        >>> tokenizer = BytePairTokenizer(["l", "o", "w", "w</w>", "lo", "low</w>"],
        ...                               ["l o", "lo w</w>"])
        >>> out = tokenizer.encode_with_offsets(["Low lol"])   # low</w> | lo l</w> (unknown)
        >>> out["token_ids"], out["start_offsets"], out["end_offsets"]
        ([[5, 4, 9]], [[0, 4, 6]], [[3, 6, 7]])
        """
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise DataError(f"Text {i} is {type(text).__name__}, not str.")
        out = {key: [[] for _ in texts] for key in ("token_ids", "start_offsets", "end_offsets")}
        if not texts:
            return out
        words = self.basic.words(tf.constant(texts, tf.string))
        letters = words.letters
        source = words.source.numpy()
        first_letter = letters.row_starts().numpy()
        row_of = words.row.numpy()
        row_starts = words.row_starts.numpy()
        for w, codes in enumerate(letters.to_list()):
            row, letter = row_of[w], first_letter[w]
            for symbol in self._symbols("".join(map(chr, codes))):
                size = len(symbol) - (len(END_OF_WORD) if symbol.endswith(END_OF_WORD) else 0)
                out["token_ids"][row].append(self._index.get(symbol, self.unk_token_id))
                out["start_offsets"][row].append(int(source[letter] - row_starts[row]))
                out["end_offsets"][row].append(int(source[letter + size - 1] + 1 - row_starts[row]))
                letter += size
        return out

    def decode(self, token_ids, skip_special_tokens=True):
        """Ids back to text: pieces joined, ``</w>`` becomes a space (special tokens left out).

        Takes the ids of one text (list, 1-D array or tensor) -> ``str``, or of a batch (list of
        lists, 2-D array, ``RaggedTensor``) -> list of ``str``.

        ``decode(encode(text))`` is the lower-cased, accent-stripped text with one space between
        basic-tokenization words, wherever no piece was unknown.
        """
        if isinstance(token_ids, tf.RaggedTensor):
            token_ids = token_ids.to_list()
        elif not isinstance(token_ids, (list, tuple)):
            token_ids = np.asarray(token_ids).tolist()
        if token_ids and isinstance(token_ids[0], (list, tuple)):  # a batch
            return [self.decode(row, skip_special_tokens) for row in token_ids]
        skip = {self._index[t] for t in self.special_tokens} if skip_special_tokens else set()
        text = "".join(self.vocabulary[i] for i in token_ids if i not in skip)
        return text.replace(END_OF_WORD, " ").rstrip(" ")

    # ---- TensorFlow path ----------------------------------------------------------------
    @graph_code
    def __call__(self, inputs):
        """Token ids in TensorFlow, for ``tf.data``: ``[B]`` strings -> ``RaggedTensor [B, (T)]``.

        A scalar string gives a 1-D tensor, Python strings give lists (see ``apply_to_text``).
        """
        if self._graph is None:  # one traced graph for eager calls; tf.data inlines it
            self._constants()
            self._graph = tf.function(self._encode_flat, autograph=False, reduce_retracing=True)
        return apply_to_text(lambda text: {"ids": self._graph(text)}, inputs)["ids"]

    def _constants(self):
        """Lookup tables of the symbol space, made once, eagerly.

        Symbols are the vocabulary, then aliases, then merge inputs that are not in the
        vocabulary (single characters in the allennlp fixture), then one "unknown character".
        """
        if self._tensors is not None:
            return self._tensors
        symbols = list(self.vocabulary) + list(self.aliases)
        known = set(symbols)
        symbols += sorted({part for pair in self.merges for part in pair} - known)
        position = {s: i for i, s in enumerate(symbols)}
        unknown = len(symbols)
        size = unknown + 1                                       # M: pair key = a * M + b
        chars = [(s, i) for i, s in enumerate(symbols) if base_char(s) is not None]
        char_keys = [ord(base_char(s)) * 2 + s.endswith(END_OF_WORD) for s, _ in chars]
        pair_keys = [position[a] * size + position[b] for a, b in self.merges]
        pair_values = [rank * size + position[a + b] for rank, (a, b) in enumerate(self.merges)]
        to_id = [self._index.get(s, self.unk_token_id) for s in symbols] + [self.unk_token_id]
        with tf.init_scope():
            self._tensors = {
                "size": tf.constant(size, tf.int64),
                "chars": _table(char_keys, [i for _, i in chars], unknown),
                "pairs": _table(pair_keys, pair_values, _NO_MERGE),
                "to_id": tf.constant(to_id, tf.int32)}
        return self._tensors

    def _encode_flat(self, text):
        """[B] strings -> RaggedTensor [B, (T)] of ids. Each distinct word is merged once."""
        tensors = self._constants()
        words = self.basic.words(text)                           # letters [W, (C)]
        unique, which = tf.unique(tf.strings.unicode_encode(words.letters, "UTF-8"))
        first = tf.math.unsorted_segment_min(tf.range(tf.size(which, out_type=tf.int64)),
                                             which, tf.size(unique, out_type=tf.int64))
        pieces = self._merge(tf.gather(words.letters, first), tensors)   # [U, (P)]
        pieces = tf.gather(pieces, which)                        # [W, (P)]
        return tf.RaggedTensor.from_value_rowids(
            pieces.values, tf.gather(words.row, pieces.value_rowids()), nrows=words.num_rows,
            validate=False)

    @staticmethod
    def _merge(letters, tensors):
        """Letters [U, (C)] of distinct words -> their ids [U, (P)], by merges in a while loop."""
        num_words = letters.nrows()
        row = letters.value_rowids()                             # (N,) word of each symbol
        last = tf.range(tf.size(row, out_type=tf.int64)) == tf.gather(letters.row_limits(), row) - 1
        symbol = tensors["chars"].lookup(tf.cast(letters.values, tf.int64) * 2
                                         + tf.cast(last, tf.int64))

        def merge_once(symbol, row, _):
            """Every word merges its lowest-ranked pair (leftmost of equals), if it has one."""
            n = tf.size(symbol, out_type=tf.int64)
            same_word = row[:-1] == row[1:]                      # (N-1,) pairs i, i+1
            found = tensors["pairs"].lookup(symbol[:-1] * tensors["size"] + symbol[1:])
            found = tf.where(same_word, found, _NO_MERGE)        # rank * M + merged symbol
            best = tf.math.unsorted_segment_min(found, row[:-1], num_words)   # (U,)
            at_best = (found == tf.gather(best, row[:-1])) & (found != _NO_MERGE)
            where = tf.math.unsorted_segment_min(
                tf.where(at_best, tf.range(tf.maximum(n - 1, 0)), n), row[:-1], num_words)
            where = tf.boolean_mask(where, where < n)[:, None]   # (K, 1) merged pairs
            symbol = tf.tensor_scatter_nd_update(
                symbol, where, tf.math.floormod(tf.gather_nd(found, where), tensors["size"]))
            keep = tf.tensor_scatter_nd_update(tf.ones([n], tf.bool), where + 1,
                                               tf.zeros(tf.shape(where)[:1], tf.bool))
            return (tf.boolean_mask(symbol, keep), tf.boolean_mask(row, keep),
                    tf.size(where) > 0)

        vector = tf.TensorShape([None])
        symbol, row, _ = tf.while_loop(lambda symbol, row, go: go, merge_once,
                                       (symbol, row, tf.constant(True)),
                                       shape_invariants=(vector, vector, tf.TensorShape([])))
        return tf.RaggedTensor.from_value_rowids(tf.gather(tensors["to_id"], symbol), row,
                                                 nrows=num_words, validate=False)


def _table(keys, values, default):
    init = tf.lookup.KeyValueTensorInitializer(tf.constant(keys, tf.int64),
                                               tf.constant(values, tf.int64))
    return tf.lookup.StaticHashTable(init, default_value=tf.constant(default, tf.int64))
