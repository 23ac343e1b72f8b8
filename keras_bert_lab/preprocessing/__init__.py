"""Text → model inputs, in TensorFlow so it runs inside ``tf.data`` on every Keras backend.

Tokenizers (BERT's basic tokenization and WordPiece, vocabulary training), the packer with the
lab's one truncation rule, masked-LM masking, and one preprocessor per task shape: sentences and
pairs (:mod:`~.bert`), span QA windows (:mod:`~.span_qa`), word tagging (:mod:`~.tagging`).
Models and tasks never import this package; recipes put the two together.
"""
