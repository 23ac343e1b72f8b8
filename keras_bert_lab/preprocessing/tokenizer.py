"""``Tokenizer``: what the lab's tokenizers share — a vocabulary (an id is a position in it), its
lookups, ``vocab.txt`` and ``from_preset``.

WordPiece (:class:`~keras_bert_lab.preprocessing.wordpiece.WordPieceTokenizer`, BERT), byte
pairs (:class:`~keras_bert_lab.preprocessing.bpe.BytePairTokenizer`, GPT-1) and words
(:class:`~keras_bert_lab.preprocessing.word_tokenizer.WordTokenizer`, the AWD-LSTM) split text
their own ways; each sets ``vocabulary`` (the tokens, in id order) and ``_index`` (token → id,
which may hold aliases) and implements :meth:`from_read_preset`. A preset records which class
reads its ``vocab.txt`` (``config.json`` ``tokenizer.class_name``; the family registry's
``tokenizer`` for presets written before that).

Example:
>>> from keras_bert_lab.preprocessing.word_tokenizer import WordTokenizer
>>> tokenizer = WordTokenizer(["<pad>", "<unk>", "<eos>", "film"])
>>> tokenizer.vocabulary_size, tokenizer.token_to_id("film"), tokenizer.id_to_token(3)
(4, 3, 'film')
"""

from keras_bert_lab.presets.vocabulary import write_vocabulary


class Tokenizer:
    """Base class of the tokenizers (see the module docstring)."""

    vocabulary = ()   # the tokens, id order (set by each subclass)
    _index = {}       # token -> id

    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    def token_to_id(self, token):
        """The id of ``token``; ``KeyError`` if it is not in the vocabulary."""
        return self._index[token]

    def id_to_token(self, token_id):
        return self.vocabulary[token_id]

    def save_vocabulary(self, path):
        """Write the vocabulary as ``vocab.txt`` (one token per line) and return the path."""
        write_vocabulary(path, list(self.vocabulary))
        return path

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """The tokenizer of a preset (a directory or a registered name): its ``vocab.txt`` and
        the options its ``config.json`` records; ``kwargs`` override them."""
        from keras_bert_lab.presets.registry import read_preset

        return cls.from_read_preset(read_preset(preset, verify=False), **kwargs)

    @classmethod
    def from_read_preset(cls, preset, **kwargs):
        """:meth:`from_preset` of a checked :class:`~keras_bert_lab.presets.format.Preset`."""
        raise NotImplementedError(f"{cls.__name__} does not read presets.")
