"""Task models: a backbone plus a head, its loss and metrics — model inputs in, logits out. No
text handling here: preprocessors (:mod:`keras_bert_lab.preprocessing`) make the inputs."""
