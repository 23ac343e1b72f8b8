"""BERT's text preprocessor: the shared
:class:`~keras_bert_lab.preprocessing.encoder_text.EncoderTextPreprocessor` for BERT presets
(``[CLS] A [SEP] (B [SEP])``, WordPiece, longest-first truncation)."""

from keras_bert_lab.preprocessing.encoder_text import EncoderTextPreprocessor


class BertTextPreprocessor(EncoderTextPreprocessor):
    """Texts (and optional second texts) → ``{token_ids, segment_ids, padding_mask}`` ``(N, L)``
    for a BERT backbone; see :class:`EncoderTextPreprocessor`."""
