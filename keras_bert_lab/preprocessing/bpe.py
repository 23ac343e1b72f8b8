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

import json
import os
import warnings

import numpy as np
import tensorflow as tf

from keras_bert_lab.errors import ConfigError, DataError
from keras_bert_lab.preprocessing.basic_tokenizer import BasicTokenizer, apply_to_text, graph_code
from keras_bert_lab.presets.vocabulary import check_tokens, read_vocabulary, write_vocabulary

END_OF_WORD = "</w>"
# The tokens GPT-1's fine-tuning code appends after the BPE vocabulary (Radford et al. §3.3).
GPT_SPECIAL_TOKENS = ("_start_", "_delimiter_", "_classify_")
UNK_TOKEN = "<unk>"
MERGES_HEADER = "#version: 0.2"
_NO_MERGE = np.iinfo(np.int64).max


class BytePairTokenizer:
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
        tokens, self.aliases = _coerce_vocabulary(vocabulary)
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
        self.merges = _coerce_merges(merges)
        self._ranks = _check_merges(self.merges, index)
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
    def vocabulary_size(self):
        return len(self.vocabulary)

    def token_to_id(self, token):
        """The id of ``token``; ``KeyError`` if it is not in the vocabulary."""
        return self._index[token]

    def id_to_token(self, token_id):
        return self.vocabulary[token_id]

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
        pieces = self._cache.get(word)
        if pieces is not None:
            return pieces
        symbols = [*word[:-1], word[-1] + END_OF_WORD]
        ranks = self._ranks
        while len(symbols) > 1:  # merge the lowest-ranked pair, leftmost first, until none is left
            pairs = [ranks.get(pair, _NO_MERGE) for pair in zip(symbols, symbols[1:])]
            best = min(pairs)
            if best == _NO_MERGE:
                break
            i = pairs.index(best)
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        pieces = tuple(s if s in self._index else self.unk_token for s in symbols)
        if len(self._cache) < self.cache_size:
            self._cache[word] = pieces
        return pieces

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
        chars = [(s, i) for i, s in enumerate(symbols) if _base_char(s) is not None]
        char_keys = [ord(_base_char(s)) * 2 + s.endswith(END_OF_WORD) for s, _ in chars]
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


# ---- reading and checking the two files -----------------------------------------------------
def read_merges(path):
    """A merges file (``merges.txt``, GPT-1's ``vocab.bpe``) as a list of ``(a, b)`` by rank."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataError(f"Merges file {path!r} does not exist; pass GPT-1's vocab.bpe or a "
                        "merges.txt written by BytePairTokenizer.save.")
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[0].startswith("#version"):
        lines = lines[1:]
    while lines and lines[-1].strip() == "":
        lines.pop()  # GPT-1's vocab.bpe ends with a blank line
    return _coerce_merges(lines, source=path, first_line=2)


def read_encoder(path):
    """GPT-1's ``encoder_bpe.json`` (token -> id) as a dict, checked like a vocabulary."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataError(f"Encoder file {path!r} does not exist; pass GPT-1's encoder_bpe.json.")
    try:
        with open(path, encoding="utf-8") as f:
            encoder = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"Encoder file {path!r} is not UTF-8 JSON ({error}).") from None
    if not isinstance(encoder, dict):
        raise DataError(f"Encoder file {path!r} holds a {type(encoder).__name__}, not a "
                        "{token: id} object.")
    return encoder


def _coerce_vocabulary(vocabulary):
    """(tokens by id, {alias: id}) from a path, a list or a dict token -> id."""
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        vocabulary = read_encoder(path) if path.endswith(".json") else read_vocabulary(path)
    if not isinstance(vocabulary, dict):
        return check_tokens(list(vocabulary), source="(list)"), {}
    tokens, aliases = {}, {}
    for token, i in vocabulary.items():
        if not isinstance(i, int) or i < 0:
            raise DataError(f"Vocabulary entry {token!r}: id {i!r} is not an integer >= 0.")
        if i in tokens:
            aliases[token] = i  # a second token for an id (the allennlp fixture's "<unk>": 0)
        else:
            tokens[i] = token
    missing = sorted(set(range(len(tokens))) - set(tokens))
    if missing or len(tokens) != max(tokens, default=-1) + 1:
        raise DataError(f"Vocabulary ids must be 0 .. n-1 without gaps; id {missing[:1] or ['?']} "
                        f"is missing (ids run to {max(tokens, default=-1)}).")
    return check_tokens([tokens[i] for i in range(len(tokens))], source="(dict)"), aliases


def _coerce_merges(merges, source="(list)", first_line=1):
    if isinstance(merges, (str, os.PathLike)):
        return read_merges(merges)
    pairs = []
    for n, merge in enumerate(merges, first_line):
        parts = tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge)
        if len(parts) != 2 or not all(isinstance(p, str) and p and " " not in p for p in parts):
            raise DataError(f"Merges {source}, line {n}: {merge!r} is not two symbols separated "
                            "by one space (like 't h' or 'th e</w>').")
        pairs.append(parts)
    if not pairs:
        raise DataError(f"Merges {source} has no merges; pass GPT-1's vocab.bpe or a merges.txt "
                        "with one 'a b' pair per line (train one with bpe_trainer.train_bpe).")
    return pairs


def _check_merges(merges, index):
    """{(a, b): rank}, after checking that the merges can run and fit the vocabulary."""
    ranks, made = {}, {a + b for a, b in merges}
    for rank, (a, b) in enumerate(merges):
        where = f"merge {rank + 1} ({a} {b})"
        for part in (a, b):
            if part not in made and _base_char(part) is None:
                raise DataError(f"{where}: {part!r} is neither a character (optionally + "
                                f"{END_OF_WORD!r}) nor made by any merge; the merges belong to "
                                "another vocabulary or were cut short.")
        if a.endswith(END_OF_WORD):
            raise DataError(f"{where}: {a!r} ends a word, so nothing can follow it.")
        if a + b not in index:
            raise DataError(f"{where} makes {a + b!r}, which is not in the vocabulary; the "
                            "vocabulary and merges files do not belong together.")
        if (a, b) in ranks:
            raise DataError(f"{where} repeats merge {ranks[a, b] + 1}; remove one of them.")
        ranks[a, b] = rank
    return ranks


def _base_char(symbol):
    """The character of a one-character symbol (``"a"`` or ``"a</w>"``), else ``None``."""
    core = symbol[:-len(END_OF_WORD)] if symbol.endswith(END_OF_WORD) else symbol
    return core if len(core) == 1 else None


def _table(keys, values, default):
    init = tf.lookup.KeyValueTensorInitializer(tf.constant(keys, tf.int64),
                                               tf.constant(values, tf.int64))
    return tf.lookup.StaticHashTable(init, default_value=tf.constant(default, tf.int64))
