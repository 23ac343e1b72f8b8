"""How a Keras model is trained, whatever it is and whatever its data: optimizers with BERT's
decay rule (and layer-wise rates), learning-rate schedules, checkpoints that resume exactly,
callbacks, the run folder (settings, CSV log, curves, metrics) and the two loops — pretraining in
phases of steps, fine-tuning in epochs with the best one kept. Backend-agnostic Keras only: the
data arrive as datasets from :mod:`keras_bert_lab.pipelines`, wired by
each family's recipe (``models/<family>/pretrain.py``) and the ``kbl`` commands.
"""
