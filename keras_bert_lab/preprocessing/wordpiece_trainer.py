"""Training a WordPiece vocabulary (``vocab.txt``) from a corpus.

BERT's vocabulary (Devlin et al. 2019, §3; Wu et al. 2016) is a list of word pieces chosen so that
frequent words are one token and rare words split into a few frequent pieces; ``##`` marks a piece
that continues a word. The training here has two steps:

1. **Words** come from *our* basic tokenization
   (:class:`~keras_bert_lab.preprocessing.basic_tokenizer.BasicTokenizer`, in TensorFlow,
   batched), so the vocabulary is learned on exactly the words the
   tokenizer will later see — lower-cased and accent-stripped for uncased vocabularies, punctuation
   and CJK ideographs split off.
2. **Pieces** are learned by Hugging Face ``tokenizers``' ``WordPieceTrainer`` (Rust, multi-threaded),
   fed those words with a plain whitespace split. We chose it over the two alternatives in the
   environment because of speed and upkeep: on WikiText-2 train (2 M words) it learns a 30,522-piece
   vocabulary in ~3 s, while tensorflow-text's ``wordpiece_tokenizer_learner_lib.learn`` (pure
   Python; keras-hub's ``compute_word_piece_vocabulary`` wraps it) took 195 s and stopped at
   18,672 pieces with its default thresholds. ``tokenizers`` is actively maintained and already
   needed for the parity tests.

The result starts with the special tokens (``[PAD] [UNK] [CLS] [SEP] [MASK]`` by default), then
optional ``[unused0]`` … slots (room for tokens added later without changing any id), then the
learned pieces: every character seen in the corpus (by code point), then the same as ``##``
continuations, then longer pieces in the order they were learned. The same corpus and settings
always give the same list (HF's trainer alone does not guarantee that; see the code).

Example:

>>> from keras_bert_lab.data import registry
>>> vocab = train_vocabulary(registry.wikitext2_paragraphs("valid")[:500], vocabulary_size=2000)
>>> vocab[:5], len(vocab)
(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'], 2000)
"""

import collections
import gzip
import os
import warnings

from keras_bert_lab.errors import ConfigError, DataError, MissingPackageError

DEFAULT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
TOKENIZERS_INSTALL = "pip install tokenizers==0.23.3"


def read_lines(*paths):
    """Yield the non-blank lines of text files (``.gz`` read directly) as UTF-8 bytes.

    Bytes, not ``str``: invalid UTF-8 then reaches the tokenizer, which replaces and counts it.
    """
    for path in paths:
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise DataError(f"Corpus file {path!r} does not exist.")
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            for line in f:
                line = line.rstrip(b"\r\n")
                if line.strip():
                    yield line


def train_vocabulary(corpus, vocabulary_size=30522, *, lowercase=True, strip_accents=None,
                     chinese_chars=True, special_tokens=DEFAULT_SPECIAL_TOKENS, unused_tokens=0,
                     min_frequency=2, limit_alphabet=None, max_chars_per_word=100,
                     batch_size=1024, progress=False, output=None):
    """Learn a WordPiece vocabulary of ``vocabulary_size`` tokens from ``corpus``; return it.

    Args:
        corpus: texts — an iterable of ``str``/``bytes`` (e.g. :func:`read_lines` of files, or
            ``registry.wikitext2_paragraphs("train")``) or a ``tf.data.Dataset`` of strings
            (batched or not).
        vocabulary_size: total number of tokens, special and unused ones included (30,522 in
            BERT).
        lowercase, strip_accents, chinese_chars: basic tokenization, as for the tokenizer that
            will use the vocabulary (uncased by default).
        special_tokens: the first tokens, in this order, spelled as the tokenizer will look them
            up (``[UNK]`` is the unknown token if present, else the first one).
        unused_tokens: number of ``[unusedN]`` placeholders after the special tokens.
        min_frequency: a pair of pieces must occur this often to be merged.
        limit_alphabet: keep at most this many distinct characters (``None``: all).
        max_chars_per_word: longer words are skipped (the tokenizer maps them to ``[UNK]``).
        batch_size: strings per TensorFlow call of the basic tokenizer.
        progress: show progress bars (tqdm for counting words, the trainer's own for learning).
        output: if given, also write the vocabulary there as ``vocab.txt``.

    Returns:
        The vocabulary, index = id. It is shorter than ``vocabulary_size`` only when the corpus has fewer
        distinct pieces to offer.
    """
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    except ImportError:
        raise MissingPackageError(f"Vocabulary training uses Hugging Face `tokenizers`; install "
                                  f"it with `{TOKENIZERS_INSTALL}`.") from None
    special = list(special_tokens) + [f"[unused{i}]" for i in range(int(unused_tokens))]
    if len(set(special)) != len(special):
        raise ConfigError(f"special_tokens repeat a token: {special_tokens}.")
    if vocabulary_size <= len(special):
        raise ConfigError(f"vocabulary_size={vocabulary_size} leaves no room for learned pieces after {len(special)} "
                          "special and unused tokens.")
    counts = count_words(corpus, lowercase=lowercase, strip_accents=strip_accents,
                         chinese_chars=chinese_chars, max_chars_per_word=max_chars_per_word,
                         batch_size=batch_size, progress=progress)
    if not counts:
        raise DataError("The corpus has no words; pass non-empty texts.")
    # The alphabet: every character (or the `limit_alphabet` most frequent), in code-point order.
    frequency = collections.Counter()
    for word, n in counts.items():
        for ch in word:
            frequency[ch] += n
    alphabet = sorted(frequency)
    if limit_alphabet is not None and len(alphabet) > limit_alphabet:
        alphabet = sorted(sorted(frequency, key=lambda ch: (-frequency[ch], ch))[:limit_alphabet])
    # The trainer makes a "##c" piece for each character it meets inside a word, in hash-map
    # order, and breaks ties between equally frequent merges by those ids — so two runs on one
    # corpus can learn different pieces (huggingface/tokenizers#1794). Handing it the "##c"
    # pieces up front, in a fixed order, makes training deterministic.
    kept = set(alphabet)
    continuations = sorted({"##" + ch for word in counts for ch in word[1:] if ch in kept})
    unk = "[UNK]" if "[UNK]" in special else special[0]
    model = Tokenizer(models.WordPiece(unk_token=unk, max_input_chars_per_word=max_chars_per_word))
    model.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # the words are ours already
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocabulary_size, min_frequency=min_frequency, special_tokens=special + continuations,
        initial_alphabet=alphabet, limit_alphabet=len(alphabet),
        continuing_subword_prefix="##", show_progress=progress)
    model.train_from_iterator(_repeat_words(counts), trainer=trainer)
    vocab = [token for token, _ in sorted(model.get_vocab().items(), key=lambda item: item[1])]
    if vocab[:len(special)] != special:
        raise AssertionError(f"the trainer moved the special tokens: {vocab[:len(special)]}")
    learned = vocab[len(special):]
    single = set(alphabet) | set(continuations)
    vocab = special + alphabet + continuations + [t for t in learned if t not in single]
    if output is not None:
        with open(output, "w", encoding="utf-8", newline="\n") as f:
            f.write("\n".join(vocab) + "\n")
    return vocab


def count_words(corpus, *, lowercase=True, strip_accents=None, chinese_chars=True,
                max_chars_per_word=100, batch_size=1024, progress=False):
    """How often each word of BERT's basic tokenization occurs in ``corpus`` (a ``Counter``).

    Takes the same ``corpus`` kinds as :func:`train_vocabulary`; words longer than
    ``max_chars_per_word`` characters are left out.
    """
    import tensorflow as tf

    from keras_bert_lab.preprocessing.basic_tokenizer import BasicTokenizer

    basic = BasicTokenizer(lowercase, strip_accents, chinese_chars)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def words_of(texts):
        words = basic.split(texts).values                          # (W,) all words of the batch
        return tf.boolean_mask(words, tf.strings.length(words, unit="UTF8_CHAR")
                               <= max_chars_per_word)

    counts = collections.Counter()
    bar = None
    if progress:
        from tqdm.auto import tqdm

        total = len(corpus) if hasattr(corpus, "__len__") else None
        bar = tqdm(total=total, unit=" texts", desc="counting words", mininterval=0.5)
    for batch in _batches(corpus, batch_size):
        counts.update(words_of(batch).numpy().tolist())
        if bar is not None:
            bar.update(int(batch.shape[0]))
    if bar is not None:
        bar.close()
    if basic.invalid_utf8_count:
        warnings.warn(f"count_words: replaced {basic.invalid_utf8_count:,} invalid UTF-8 "
                      "sequences in the corpus", stacklevel=2)
    return collections.Counter({word.decode("utf-8"): n for word, n in counts.items()})


def _repeat_words(counts, chunk_chars=1 << 20):
    """Text for the trainer that holds each word exactly as often as the corpus does."""
    chunk, size = [], 0
    for word in sorted(counts):
        chunk.append(" ".join([word] * counts[word]))
        size += (len(word) + 1) * counts[word]
        if size >= chunk_chars:
            yield " ".join(chunk)
            chunk, size = [], 0
    if chunk:
        yield " ".join(chunk)


def _batches(corpus, batch_size):
    """[B] tf.string batches from an iterable of texts or a tf.data.Dataset."""
    import tensorflow as tf

    if isinstance(corpus, tf.data.Dataset):
        if corpus.element_spec.shape.rank == 0:
            corpus = corpus.batch(batch_size)
        for batch in corpus:
            yield tf.reshape(batch, [-1])
        return
    if isinstance(corpus, (str, bytes, os.PathLike)):
        raise DataError("train_vocabulary takes texts, not one string or path: for files pass "
                        "read_lines(path, ...).")
    chunk = []
    for text in corpus:
        chunk.append(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        if len(chunk) == batch_size:
            yield tf.constant(chunk, tf.string)
            chunk = []
    if chunk:
        yield tf.constant(chunk, tf.string)
