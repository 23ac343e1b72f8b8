"""``FeatureTagger``: the BERT paper's feature-based tagger, trained on frozen per-word features.

Devlin et al. (2019, §5.4, Table 7) ask how much of BERT's NER result survives without
fine-tuning: the activations of one or more layers are fed, frozen, to "a randomly initialized
two-layer 768-dimensional BiLSTM before the classification layer", and each way of combining the
layers is one row of their table (CoNLL-2003 dev F1: embeddings 91.0, second-to-last hidden 95.6,
last hidden 94.9, weighted sum of last four 95.9, concat last four 96.1, weighted sum of all
twelve 95.5; fine-tuning 96.4). ELMo (Peters et al. 2018) is used the same way, with a learned
scalar mix of its layers. The model here takes a stack of ``K`` selected layers per word and
combines them by :data:`COMBINATIONS`; the features come from any backbone (BERT pieces pooled to
words, ELMo tokens, static vectors) through :mod:`keras_bert_lab.features`.

Shapes: ``B`` batch, ``W`` words, ``K`` layers in the stack, ``H`` feature width, ``C`` labels.
"""

import keras
from keras import ops

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.layers.lstm import bidirectional_lstm
from keras_bert_lab.layers.scalar_mix import ScalarMix

# name -> (the layers it reads, counted from the end when negative; how they are combined).
# "all" reads every layer. Layer 0 is the embedding output (the input to the first block).
COMBINATIONS = {
    "embeddings": ((0,), "single"),
    "second_to_last": ((-2,), "single"),
    "last": ((-1,), "single"),
    "sum_last_four": ((-4, -3, -2, -1), "sum"),
    "concat_last_four": ((-4, -3, -2, -1), "concat"),
    "mix_last_four": ((-4, -3, -2, -1), "mix"),
    "mix_all": ("all", "mix"),
}
MODES = ("single", "sum", "concat", "mix")


def combination(name, num_layers):
    """``(layer indices ≥ 0, mode)`` of a combination for a source with ``num_layers`` layers.

    ``name`` is a key of :data:`COMBINATIONS` or ``"layer_k"`` (one layer, ``k`` counted from 0;
    negative counts from the end).

    Example:
    >>> combination("concat_last_four", 7)
    ([3, 4, 5, 6], 'concat')
    >>> combination("layer_-2", 7), combination("mix_all", 3)
    (([5], 'single'), ([0, 1, 2], 'mix'))
    """
    if name.startswith("layer_"):
        try:
            indices, mode = (int(name[len("layer_"):]),), "single"
        except ValueError:
            raise ConfigError(f"Combination {name!r}: 'layer_k' needs an integer k.") from None
    elif name in COMBINATIONS:
        indices, mode = COMBINATIONS[name]
    else:
        raise ConfigError(f"Unknown feature combination {name!r}; choose one of "
                          f"{list(COMBINATIONS)} or 'layer_k'.")
    if indices == "all":
        return list(range(num_layers)), mode
    resolved = [i % num_layers if -num_layers <= i < num_layers else None for i in indices]
    if None in resolved:
        raise ConfigError(f"Combination {name!r} reads layers {list(indices)} but the features "
                          f"have only {num_layers} layer(s) (0 … {num_layers - 1}).")
    return resolved, mode


@keras.saving.register_keras_serializable("keras_bert_lab")
class FeatureTagger(keras.Model):
    """Combine ``K`` frozen layers per word, then a BiLSTM stack and a linear tag classifier.

    Inputs (a dict): ``features`` (B, W, K, H) float — the selected layers of each word —
    and ``word_mask`` (B, W), 1 for real words. Output: float32 logits (B, W, C). ``mode``:
    ``single`` (K = 1), ``sum`` (element-wise sum), ``concat`` (K·H wide) or ``mix``
    (:class:`~keras_bert_lab.layers.scalar_mix.ScalarMix`, learned with the tagger).

    Args:
        num_layers: ``K``. feature_dim: ``H``. num_classes: ``C``.
        mode: one of :data:`MODES`. lstm_units: units per direction of each BiLSTM layer
            (the paper: 768). lstm_layers: BiLSTM layers (the paper: 2). dropout: on the
            combined features and between BiLSTM layers. layer_norm: ScalarMix's layer norm.

    Example:
    >>> import numpy as np
    >>> tagger = FeatureTagger(num_layers=4, feature_dim=8, num_classes=3, mode="mix",
    ...                        lstm_units=4)
    >>> tagger.compile()
    >>> x = {"features": np.random.rand(2, 5, 4, 8).astype("float32"),
    ...      "word_mask": np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])}
    >>> history = tagger.fit(x, np.zeros((2, 5), "int32"), sample_weight=x["word_mask"],
    ...                      verbose=0)
    >>> tuple(tagger.predict(x, verbose=0).shape)
    (2, 5, 3)
    """

    def __init__(self, num_layers, feature_dim, num_classes, mode="single", lstm_units=256,
                 lstm_layers=2, dropout=0.1, layer_norm=False, **kwargs):
        if mode not in MODES:
            raise ConfigError(f"FeatureTagger mode {mode!r}; choose one of {MODES}.")
        if mode == "single" and num_layers != 1:
            raise ConfigError(f"mode 'single' takes one layer, got num_layers={num_layers}; "
                              "use 'sum', 'concat' or 'mix' for several.")
        features = keras.Input(shape=(None, num_layers, feature_dim), name="features")
        word_mask = keras.Input(shape=(None,), name="word_mask")
        layers = [features[:, :, k, :] for k in range(num_layers)]  # K × (B, W, H)
        mix = None
        if mode == "single":
            x = layers[0]
        elif mode == "sum":
            x = ops.sum(features, axis=2)
        elif mode == "concat":
            x = ops.concatenate(layers, axis=-1)  # (B, W, K·H)
        else:
            mix = ScalarMix(layer_norm=layer_norm, name="scalar_mix")
            x = mix(layers, padding_mask=word_mask)
        x = keras.layers.Dropout(dropout, name="feature_dropout")(x)
        mask = ops.cast(word_mask, "bool")
        for i in range(lstm_layers):
            x = bidirectional_lstm(x, lstm_units, mask, f"bilstm_{i}")  # (B, W, 2·units)
            if i < lstm_layers - 1:
                x = keras.layers.Dropout(dropout, name=f"bilstm_dropout_{i}")(x)
        logits = keras.layers.Dense(num_classes, dtype="float32", name="classifier")(x)
        super().__init__(inputs={"features": features, "word_mask": word_mask}, outputs=logits,
                         **kwargs)
        self.scalar_mix = mix
        self.num_layers, self.feature_dim, self.num_classes = num_layers, feature_dim, num_classes
        self.mode, self.lstm_units, self.lstm_layers = mode, lstm_units, lstm_layers
        self.dropout, self.layer_norm = dropout, layer_norm

    def compile(self, optimizer="auto", loss="auto", weighted_metrics="auto", **kwargs):
        """Defaults: Adam (lr 1e-3, clip-norm 5), cross-entropy from logits, and word accuracy
        weighted by the sample weights (pass ``word_mask`` as ``sample_weight``)."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(1e-3, clipnorm=5.0)
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="mean_with_sample_weight")
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy("accuracy")]
        super().compile(optimizer=optimizer, loss=loss, weighted_metrics=weighted_metrics,
                        **kwargs)

    def get_config(self):
        return {"num_layers": self.num_layers, "feature_dim": self.feature_dim,
                "num_classes": self.num_classes, "mode": self.mode, "lstm_units": self.lstm_units,
                "lstm_layers": self.lstm_layers, "dropout": self.dropout,
                "layer_norm": self.layer_norm, "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "num_labels" in config:   # saved before the rename to num_classes (issue 49)
            config["num_classes"] = config.pop("num_labels")
        return cls(**config)
