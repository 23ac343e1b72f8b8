"""AWD-LSTM configuration: one frozen dataclass, the named sizes and the published dropout sets.

The AWD-LSTM of Merity et al. (2017, "Regularizing and Optimizing LSTM Language Models") is a
3-layer LSTM language model, embedding 400 and 1150 cells, whose last layer is as wide as the
embedding so the decoder can be tied to it (§4.5); ULMFiT (Howard & Ruder 2018) pretrains and
fine-tunes exactly this model. The parameter count is the paper's: 24M on the Penn Treebank
(V = 10,000) and 33M on WikiText-2 (V = 33,278). ``mini``, ``small`` and ``medium`` are ours: a
third, half and three quarters of the paper's widths (``mini`` for runs of a few minutes on a CPU).
Dropout rates are the config's free fields: a preset's model may be rebuilt with others
(``Task.from_preset(preset, config={"input_dropout": 0.2})``), since they change no weight.

Dropout sets (``DROPOUTS``; :meth:`AwdLstmConfig.with_dropouts`), each ``(embedding, input,
hidden, output, weight)``:

- ``"awd_lstm"`` (the defaults): the released code's defaults (``main.py``: ``dropoute`` 0.1,
  ``dropouti`` 0.65, ``dropouth`` 0.3, ``dropout`` 0.4, ``wdrop`` 0.5), the paper's WikiText-2
  setting;
- ``"ulmfit"``: ULMFiT §4 (0.05, 0.4, 0.3, 0.4, 0.5) — fastai's ``awd_lstm_clas_config``;
- ``"fastai_lm"``: fastai's ``awd_lstm_lm_config`` (0.02, 0.25, 0.15, 0.1, 0.2), which fastai
  scales by a ``drop_mult`` when fine-tuning a language model.

Example:
>>> config = AwdLstmConfig.from_size("paper", vocabulary_size=10000)
>>> config.layer_dims()
[(400, 1150), (1150, 1150), (1150, 400)]
>>> round(config.num_parameters() / 1e6, 1)
24.2
>>> config.with_dropouts("ulmfit", drop_mult=0.5).input_dropout
0.2
"""

import dataclasses

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.config import ModelConfig

# name: (num_layers, embedding_dim, hidden_dim)
SIZES = {
    "tiny": (2, 16, 32),
    "mini": (3, 128, 384),
    "small": (3, 200, 575),
    "medium": (3, 300, 860),
    "paper": (3, 400, 1150),
}
DROPOUT_FIELDS = ("embedding_dropout", "input_dropout", "hidden_dropout", "output_dropout",
                  "weight_dropout")
DROPOUTS = {
    "awd_lstm": (0.1, 0.65, 0.3, 0.4, 0.5),
    "ulmfit": (0.05, 0.4, 0.3, 0.4, 0.5),
    "fastai_lm": (0.02, 0.25, 0.15, 0.1, 0.2),
}


@dataclasses.dataclass(frozen=True)
class AwdLstmConfig(ModelConfig):
    """Hyper-parameters of an AWD-LSTM (defaults: the paper's 3 × 400/1150 model, WikiText-2's
    vocabulary and the released code's dropouts; see the module docstring).

    Args:
        vocabulary_size: rows ``V`` of the embedding table (and logits of the tied decoder).
        embedding_dim: ``E``, the embedding width and the last LSTM layer's width.
        hidden_dim: ``H``, the width of every other LSTM layer.
        num_layers: LSTM layers ``L``: E → H, H → H, …, H → E (one layer: E → E).
        embedding_dropout: fraction of word types (embedding rows) dropped per batch.
        input_dropout: locked dropout on the embeddings (the first layer's input).
        hidden_dropout: locked dropout between LSTM layers.
        output_dropout: locked dropout on the last layer's output (``sequence_output``).
        weight_dropout: DropConnect on each layer's hidden-to-hidden matrix.
    """

    label = "AWD-LSTM"
    sizes = SIZES
    size_fields = ("num_layers", "embedding_dim", "hidden_dim")

    vocabulary_size: int = 33278
    embedding_dim: int = 400
    hidden_dim: int = 1150
    num_layers: int = 3
    embedding_dropout: float = 0.1
    input_dropout: float = 0.65
    hidden_dropout: float = 0.3
    output_dropout: float = 0.4
    weight_dropout: float = 0.5

    free_fields = DROPOUT_FIELDS

    def __post_init__(self):
        for name in ("vocabulary_size", "embedding_dim", "hidden_dim", "num_layers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"AwdLstmConfig.{name} must be a positive integer, got "
                                  f"{value!r}.")
        for name in DROPOUT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0.0 <= value < 1.0:
                raise ConfigError(f"AwdLstmConfig.{name} must be in [0, 1), got {value!r}.")
            object.__setattr__(self, name, float(value))

    def with_dropouts(self, name, drop_mult=1.0):
        """This config with a published dropout set (``DROPOUTS``) times ``drop_mult``."""
        if name not in DROPOUTS:
            raise ConfigError(f"Unknown dropout set {name!r}; choose one of {list(DROPOUTS)}.")
        if isinstance(drop_mult, bool) or not isinstance(drop_mult, (int, float)) \
                or drop_mult < 0 or max(DROPOUTS[name]) * drop_mult >= 1.0:
            raise ConfigError(f"drop_mult={drop_mult!r} must be >= 0 and keep every rate of "
                              f"{name!r} {DROPOUTS[name]} below 1.")
        rates = {f: round(r * drop_mult, 6) for f, r in zip(DROPOUT_FIELDS, DROPOUTS[name])}
        return dataclasses.replace(self, **rates)

    def layer_dims(self):
        """``[(input width, output width)]`` of each LSTM layer, bottom-up."""
        widths = [self.embedding_dim] + [self.hidden_dim] * (self.num_layers - 1) \
            + [self.embedding_dim]
        return list(zip(widths[:-1], widths[1:]))

    def num_parameters(self, decoder_bias=False):
        """Weights of the backbone from the shapes: the table and, per layer, ``W`` (in + out,
        4·out) and one bias (4·out) — the LSTM's two biases of cuDNN/PyTorch summed into one.
        ``decoder_bias=True`` adds the language model's ``V`` decoder biases (its weight is the
        tied table)."""
        lstm = sum(4 * out * (inp + out) + 4 * out for inp, out in self.layer_dims())
        return self.vocabulary_size * self.embedding_dim + lstm + (self.vocabulary_size if decoder_bias
                                                              else 0)
