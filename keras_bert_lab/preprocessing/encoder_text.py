"""The encoders' text preprocessor: raw texts (or text pairs) → a BERT-style backbone's three inputs
(BERT's and ELECTRA's, which read text alike; ``BertTextPreprocessor`` derives it).

WordPiece tokenization (:class:`~keras_bert_lab.preprocessing.wordpiece.WordPieceTokenizer`) then
``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]`` packing with longest-first truncation
(:class:`~keras_bert_lab.preprocessing.packer.BertPacker`): what every sentence and sentence-pair
task and the sentence embedder read. It runs on Python strings (NumPy out, in chunks) and inside
``tf.data`` (tensors out), so one preprocessor feeds ``predict`` and ``fit`` on every backend.

Shapes: ``N`` texts, ``C`` choices, ``L`` sequence length.
"""

import numpy as np
import tensorflow as tf

from keras_bert_lab import families
from keras_bert_lab.errors import DataError
from keras_bert_lab.preprocessing.packer import BertPacker
from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer
from keras_bert_lab.presets.registry import read_preset

FEATURES = ("token_ids", "segment_ids", "padding_mask")


class EncoderTextPreprocessor:
    """Texts (and optional second texts) → ``{token_ids, segment_ids, padding_mask}`` ``(N, L)``.

    Args:
        tokenizer: a ``WordPieceTokenizer``.
        sequence_length: ``L``; longer inputs are cut longest-first (a short question keeps its
            words while a long passage is trimmed), shorter ones padded.
        chunk_size: Python texts go through the in-graph tokenizer this many at a time.

    Example:
    >>> from keras_bert_lab.data.registry import locate
    >>> preprocessor = EncoderTextPreprocessor(WordPieceTokenizer(locate("bert_uncased_vocab")),
    ...                                        sequence_length=8)
    >>> out = preprocessor(["Is it?"], ["Yes."])
    >>> out["token_ids"].tolist(), out["segment_ids"].tolist()
    ([[101, 2003, 2009, 1029, 102, 2748, 1012, 102]], [[0, 0, 0, 0, 0, 1, 1, 1]])
    >>> preprocessor.pack_choices(["He sat"], [["down.", "up.", "still."]])["token_ids"].shape
    (1, 3, 8)

    In ``tf.data`` (tensors in, tensors out):

    >>> ds = tf.data.Dataset.from_tensor_slices(["first text", "a second one"]).batch(2)
    >>> next(iter(ds.map(preprocessor)))["padding_mask"].numpy().tolist()
    [[1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0]]
    """

    def __init__(self, tokenizer, sequence_length=128, chunk_size=2048):
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)
        self.packer = BertPacker.from_tokenizer(tokenizer, self.sequence_length)
        self.chunk_size = int(chunk_size)

    @classmethod
    def from_preset(cls, preset, sequence_length=None, **kwargs):
        """The preset's tokenizer (vocabulary and casing) and its recorded length (default 128)."""
        info = read_preset(preset, verify=False)
        families.preprocessor_for(info, "classify", cls)   # a GPT preset: GPTTaskPacker
        length = sequence_length or (info.preprocessor or {}).get("sequence_length", 128)
        return cls(WordPieceTokenizer.from_preset(info.directory), length, **kwargs)

    def __call__(self, texts, texts_pair=None):
        if tf.is_tensor(texts):
            second = None if texts_pair is None else self.tokenizer(texts_pair)
            return self.packer.pack(self.tokenizer(texts), second)
        texts = [texts] if isinstance(texts, str) else list(texts)
        if texts_pair is not None:
            texts_pair = [texts_pair] if isinstance(texts_pair, str) else list(texts_pair)
            if len(texts_pair) != len(texts):
                raise DataError(f"{len(texts)} texts but {len(texts_pair)} second texts; pairs "
                                "need one second text per text.")
        parts = []
        for start in range(0, len(texts), self.chunk_size):
            end = start + self.chunk_size
            first = self.tokenizer(tf.constant(texts[start:end], tf.string))
            second = None if texts_pair is None else self.tokenizer(
                tf.constant(texts_pair[start:end], tf.string))
            parts.append({k: v.numpy() for k, v in self.packer.pack(first, second).items()})
        if not parts:
            return {k: np.zeros((0, self.sequence_length), "int32") for k in FEATURES}
        return {k: np.concatenate([p[k] for p in parts]).astype("int32") for k in FEATURES}

    def pack_choices(self, contexts, choices):
        """Multiple-choice inputs ``(N, C, L)``: each context paired with each of its C choices."""
        contexts = list(contexts)
        if len(choices) != len(contexts):
            raise DataError(f"{len(contexts)} contexts but {len(choices)} choice lists.")
        counts = {len(c) for c in choices}
        if len(counts) > 1:
            raise DataError(f"Examples have different numbers of choices ({sorted(counts)}); "
                            "every example needs the same number.")
        c = counts.pop() if counts else 0
        flat = self([ctx for ctx in contexts for _ in range(c)],
                    [option for options in choices for option in options])
        return {k: v.reshape(len(contexts), c, -1) for k, v in flat.items()}
