"""Input pipelines: text and examples → the ``tf.data`` streams ``model.fit`` reads (any backend).

- :mod:`~.pretraining` — BERT pretraining, in order: ``corpus`` (read and tokenize once) →
  ``pairs`` (next-sentence pairs per epoch) → ``stream`` (pack, mask, batch) — and ``tfrecords``
  for sharded files;
- :mod:`~.masked_lm_recipe` — the masked-LM pretraining run BERT's and ELECTRA's recipes share
  (settings, stream, held-out batches, ``--time-budget``; imports TensorFlow only when it runs);
- :mod:`~.batches` — fine-tuning batches from packed NumPy arrays, each cut to its length.
"""
