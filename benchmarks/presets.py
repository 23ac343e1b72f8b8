"""The classifier preset the serving benchmarks time (shared by export_serving and use_commands)."""


def classifier_preset(which, directory, sequence_length, **tiny_save_options):
    """A two-class, mean-pooling ``BertClassifier`` preset written to ``directory``: ``minilm``
    (the real all-MiniLM-L6-v2 backbone, a fresh head: it times the computation, not accuracy)
    or ``tiny`` (random BERT-tiny with the real uncased vocabulary, for smoke runs; saved with
    ``tiny_save_options``)."""
    from keras_bert_lab import BertBackbone, BertClassifier, BertConfig
    from keras_bert_lab.data.registry import locate

    labels = ["negative", "positive"]
    recorded = {"sequence_length": sequence_length, "pair": False}
    if which == "minilm":
        model = BertClassifier.from_preset("minilm_l6_en_uncased", labels=labels, pooling="mean")
        return model.save_to_preset(directory, preprocessor=recorded)
    model = BertClassifier(BertBackbone(BertConfig.from_size("tiny")), labels=labels,
                           pooling="mean")
    return model.save_to_preset(directory, vocabulary=locate("bert_uncased_vocab"),
                                preprocessor=recorded, **tiny_save_options)
