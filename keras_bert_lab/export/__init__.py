"""Export fine-tuned models for serving without this library.

:func:`export_saved_model` turns a fine-tuned classifier preset (of a family whose registry entry
lists the format among its ``exports``: BERT's ``BertClassifier``) — trained on any Keras
backend — into a TensorFlow SavedModel whose ``serve`` signature takes raw strings (one text, or
two for sentence-pair tasks) and returns class names and probabilities. Tokenization (BERT's
basic tokenization and WordPiece, identical to the library's tokenizer) and packing run inside the
graph with core TensorFlow ops (:mod:`.tokenizer`), so the export loads with
``tf.saved_model.load`` where neither keras_bert_lab, Keras nor tensorflow-text is installed.
The command line is ``kbl export PRESET --output DIR``. :func:`export_onnx` writes the network alone
(packed ids in, logits out) as ONNX with the vocabulary beside it (``kbl export --format onnx``).

Importing this package does not import TensorFlow; the export itself needs it (TensorFlow runs the
export in a child process when Keras runs JAX or PyTorch).
"""

from keras_bert_lab.export.saved_model import (INFO_FILE, export_onnx, export_saved_model,
                                               is_export, read_export_info)

__all__ = ["INFO_FILE", "export_onnx", "export_saved_model", "is_export", "read_export_info"]
