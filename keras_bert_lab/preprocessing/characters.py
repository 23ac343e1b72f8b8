"""ELMo's character ids: each token as 50 UTF-8 byte ids, for the biLM's character CNN.

Peters et al. (2018) build a token's context-free representation from its characters, so the
biLM has no out-of-vocabulary words. The original implementation (bilm-tf's
``UnicodeCharsVocabulary`` and ``Batcher``, reproduced by allennlp's ``ELMoCharacterMapper``)
spells a token as:

* ids 0–255: the bytes of its UTF-8 encoding, cut to the first ``max_characters - 2`` (48)
  *bytes* — a cut may split a multi-byte character, exactly as the original does;
* 258 begin-of-word before the bytes, 259 end-of-word after them, 260 padding up to 50;
* the sentence markers ``<S>`` and ``</S>`` are the one-"byte" words 256 and 257
  (``[258, 256, 259, 260, …]``); the literal tokens ``"<S>"``/``"</S>"`` map to them too;
* then every id is shifted by **+1**, so that 0 means "no token here": a padded position is 50
  zeros, which the biLM reads as its padding mask. The character embedding therefore has 262 rows
  (261 + the zero row).

Two implementations of the same rule: :func:`character_ids` (Python/NumPy, a batch of token lists)
and :func:`tf_character_ids` (TensorFlow ops, for ``tf.data`` pipelines); a test checks they agree.

Example:
>>> ids = character_ids([["Hi", "!"], ["Hello"]])
>>> ids.shape, ids.dtype
((2, 4, 50), dtype('int32'))
>>> ids[0, :, :5].tolist()   # <S>, "Hi", "!", </S> (each id + 1)
[[259, 257, 260, 261, 261], [259, 73, 106, 260, 261],
 [259, 34, 260, 261, 261], [259, 258, 260, 261, 261]]
>>> int(ids[1, 3].sum()), int(ids[0, 3].sum()) > 0   # row 1 is shorter: its last slot is padding
(0, True)
"""

import numpy as np

from keras_bert_lab.errors import InputError

MAX_CHARACTERS = 50
BOS_CHARACTER, EOS_CHARACTER = 256, 257   # the sentence markers' one "byte"
BOW_CHARACTER, EOW_CHARACTER = 258, 259   # begin / end of word
PADDING_CHARACTER = 260                   # fills a word's 50 slots after end-of-word
NUM_CHARACTERS = 262                      # 0 (no token) + 261 ids above, shifted by one
BOS_TOKEN, EOS_TOKEN = "<S>", "</S>"


def _check(max_characters):
    if isinstance(max_characters, bool) or not isinstance(max_characters, int) \
            or max_characters < 3:
        raise InputError(f"max_characters must be an integer >= 3 (begin, one byte, end), got "
                         f"{max_characters!r}; ELMo's models use 50.")


def _marker(character, max_characters):
    ids = [PADDING_CHARACTER] * max_characters
    ids[0], ids[1], ids[2] = BOW_CHARACTER, character, EOW_CHARACTER
    return ids


def token_character_ids(token, max_characters=MAX_CHARACTERS):
    """The ``max_characters`` ids of one token (already shifted by +1), as a list.

    >>> token_character_ids("a")[:4]
    [259, 98, 260, 261]
    >>> token_character_ids("é")[:5]   # two UTF-8 bytes
    [259, 196, 170, 260, 261]
    """
    _check(max_characters)
    if not isinstance(token, str):
        raise InputError(f"Tokens must be str, got {type(token).__name__} ({token!r}).")
    if token == BOS_TOKEN:
        ids = _marker(BOS_CHARACTER, max_characters)
    elif token == EOS_TOKEN:
        ids = _marker(EOS_CHARACTER, max_characters)
    else:
        encoded = token.encode("utf-8", "ignore")[:max_characters - 2]
        ids = [BOW_CHARACTER, *encoded, EOW_CHARACTER]
        ids += [PADDING_CHARACTER] * (max_characters - len(ids))
    return [i + 1 for i in ids]


def character_ids(sentences, add_boundaries=True, max_characters=MAX_CHARACTERS,
                  sequence_length=None):
    """A batch of token lists as ``(B, T, max_characters)`` int32 character ids.

    Args:
        sentences: a list of sentences, each a list of tokens (str). Tokenize first — the
            original biLM was trained on whitespace-separated, Moses-style tokens.
        add_boundaries: put ``<S>`` before and ``</S>`` after each sentence (the biLM was trained
            with them; the fixture activations include them).
        max_characters: ids per token (50 in every released model).
        sequence_length: ``T``; default: the longest sentence (boundaries included). Longer
            sentences raise ``InputError`` (cut them first: a cut changes the activations).

    Padded token positions are all zeros.
    """
    _check(max_characters)
    if isinstance(sentences, str) or (len(sentences) and isinstance(sentences[0], str)):
        raise InputError("character_ids takes a batch: a list of sentences, each a list of "
                         "tokens, e.g. [['Hello', 'world']]; wrap a single sentence in a list.")
    rows = [([BOS_TOKEN] if add_boundaries else []) + list(s) + ([EOS_TOKEN] if add_boundaries
                                                                  else []) for s in sentences]
    longest = max((len(r) for r in rows), default=0)
    length = longest if sequence_length is None else int(sequence_length)
    if longest > length:
        raise InputError(f"A sentence has {longest} tokens (boundaries included) but "
                         f"sequence_length is {length}; cut sentences first or raise it.")
    out = np.zeros((len(rows), length, max_characters), "int32")
    cache = {}
    for b, row in enumerate(rows):
        for t, token in enumerate(row):
            if token not in cache:
                cache[token] = token_character_ids(token, max_characters)
            out[b, t] = cache[token]
    return out


def tf_character_ids(tokens, add_boundaries=True, max_characters=MAX_CHARACTERS):
    """:func:`character_ids` with TensorFlow ops, for ``tf.data`` pipelines.

    Args:
        tokens: a string tensor of one sentence's tokens ``(T,)`` — e.g.
            ``tf.strings.split(line)`` inside ``dataset.map`` — or a ``tf.RaggedTensor``
            ``(B, None)`` of a batch of sentences.
        add_boundaries, max_characters: as in :func:`character_ids`.

    Returns int32 ``(T', max_characters)`` for one sentence, or ``(B, T', max_characters)``
    (zero-padded) for a ragged batch; ``T'`` counts ``<S>``/``</S>`` when ``add_boundaries``.
    One sentence per element composes with ``dataset.padded_batch``, whose zero padding is the
    padding the biLM expects.

    >>> import tensorflow as tf
    >>> ds = tf.data.Dataset.from_tensor_slices(["Hi !", "Hello"]).map(
    ...     lambda line: tf_character_ids(tf.strings.split(line))).padded_batch(2)
    >>> batch = next(iter(ds)).numpy()
    >>> batch.shape, bool((batch == character_ids([["Hi", "!"], ["Hello"]])).all())
    ((2, 4, 50), True)
    """
    import tensorflow as tf

    _check(max_characters)
    tokens = tokens if isinstance(tokens, tf.RaggedTensor) else tf.convert_to_tensor(tokens)
    if tokens.dtype != tf.string:
        raise InputError(f"tf_character_ids takes string tokens, got dtype {tokens.dtype.name}.")
    if tokens.shape.rank == 2 and isinstance(tokens, tf.RaggedTensor):
        ids = tf.ragged.map_flat_values(_flat_ids, tokens, add_boundaries=False,
                                        max_characters=max_characters)
        if add_boundaries:
            rows = tf.shape(ids.row_splits)[0] - 1
            bos = tf.tile(_marker_tensor(BOS_CHARACTER, max_characters)[None, None], [rows, 1, 1])
            eos = tf.tile(_marker_tensor(EOS_CHARACTER, max_characters)[None, None], [rows, 1, 1])
            ids = tf.concat([tf.RaggedTensor.from_tensor(bos), ids,
                             tf.RaggedTensor.from_tensor(eos)], axis=1)
        return ids.to_tensor(default_value=0, shape=[None, None, max_characters])
    if tokens.shape.rank != 1:
        raise InputError(f"tf_character_ids takes one sentence (T,) or a RaggedTensor (B, None) "
                         f"of tokens, got shape {tokens.shape}.")
    return _flat_ids(tokens, add_boundaries=add_boundaries, max_characters=max_characters)


def _marker_tensor(character, max_characters):
    import tensorflow as tf

    return tf.constant([i + 1 for i in _marker(character, max_characters)], tf.int32)


def _flat_ids(tokens, add_boundaries, max_characters):
    """``(T,)`` strings -> ``(T [+2], max_characters)`` int32 ids (the rule of the docstring)."""
    import tensorflow as tf

    cut = tf.strings.substr(tokens, 0, max_characters - 2, unit="BYTE")      # (T,)
    chars = tf.strings.bytes_split(cut)                                       # (T, None) bytes
    values = tf.cast(tf.reshape(tf.io.decode_raw(chars.flat_values, tf.uint8), [-1]), tf.int32)
    chars = chars.with_flat_values(values)
    count = tf.shape(tokens)[0]
    bow = tf.fill([count, 1], BOW_CHARACTER)
    eow = tf.fill([count, 1], EOW_CHARACTER)
    words = tf.concat([bow, chars, eow], axis=1)                              # (T, None)
    ids = words.to_tensor(default_value=PADDING_CHARACTER, shape=[None, max_characters]) + 1
    for token, character in ((BOS_TOKEN, BOS_CHARACTER), (EOS_TOKEN, EOS_CHARACTER)):
        ids = tf.where((tokens == token)[:, None], _marker_tensor(character, max_characters)[None],
                       ids)
    if add_boundaries:
        ids = tf.concat([_marker_tensor(BOS_CHARACTER, max_characters)[None], ids,
                         _marker_tensor(EOS_CHARACTER, max_characters)[None]], axis=0)
    return ids
