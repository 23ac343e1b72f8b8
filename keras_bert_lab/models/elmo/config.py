"""ELMo biLM configuration: one frozen dataclass, the released model sizes, and ``options.json``.

The released biLMs of Peters et al. (2018) are described by an ``options.json`` with two sections,
``char_cnn`` (the token encoder) and ``lstm`` (the two directions' stacks); a training run's
options add ``n_tokens_vocab`` (the softmax vocabulary) and training settings. Named sizes are
the models allennlp lists (parameter counts without the softmax: small 13.6M, medium 28.0M,
original 93.6M — the 5.5B-token model shares the original's shape); ``tiny`` is the architecture
of allennlp's test fixture; ``mini`` (3.0M) is ours, for pretraining on a laptop CPU: the
released filters of widths 1-5, one highway layer, 512 cells projected to 128.

Example:
>>> config = ElmoConfig.from_size("tiny")
>>> config.num_filters, config.projection_dim, config.num_layers
(124, 16, 2)
>>> config.num_parameters()
105124
>>> ElmoConfig.from_options(config.to_options()) == config
True
"""

import dataclasses

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.config import ModelConfig

# The char-CNN of every released model: widths 1-7, 2048 filters in all.
RELEASED_FILTERS = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))
# name: (filters, character_dim, num_highway, lstm_dim, projection_dim)
SIZES = {
    "tiny": (((1, 4), (2, 8), (3, 16), (4, 32), (5, 64)), 4, 2, 64, 16),
    "mini": (RELEASED_FILTERS[:5], 16, 1, 512, 128),
    "small": (RELEASED_FILTERS, 16, 1, 1024, 128),
    "medium": (RELEASED_FILTERS, 16, 1, 2048, 256),
    "original": (RELEASED_FILTERS, 16, 2, 4096, 512),
}
ACTIVATIONS = ("relu", "tanh")


@dataclasses.dataclass(frozen=True)
class ElmoConfig(ModelConfig):
    """Hyper-parameters of an ELMo biLM (defaults: the original 2 × 4096/512 model).

    Args:
        filters: ``(width, count)`` of each character convolution (``char_cnn.filters``).
        character_dim: character embedding size (``char_cnn.embedding.dim``).
        num_highway: highway layers after the convolutions (``char_cnn.n_highway``).
        num_characters: rows of the character embedding, the padding row 0 included
            (``char_cnn.n_characters``; 262 for the released models).
        max_characters: character ids per token (``char_cnn.max_characters_per_token``).
        activation: ``"relu"`` or ``"tanh"`` after each convolution's max-pool
            (``char_cnn.activation``).
        lstm_dim: LSTM memory cells per layer and direction (``lstm.dim``).
        projection_dim: ``P``, the size of the token representation and of each LSTM's projected
            output (``lstm.projection_dim``).
        num_layers: LSTM layers per direction (``lstm.n_layers``).
        cell_clip, projection_clip: clip the memory cell / the projected output to ``±value``
            (``lstm.cell_clip``, ``lstm.proj_clip``); ``None``: no clipping.
        use_skip_connections: add each LSTM layer's input to its output, from the second layer
            on (``lstm.use_skip_connections``).
        vocabulary_size: words of the language-model softmax (``n_tokens_vocab``); 0: none — the
            biLM is used as a feature extractor only (released weight files have no softmax).
        dropout: dropout on each LSTM layer's input and on the softmax input while training
            (bilm-tf trained with 0.1); 0 for inference.
    """

    label = "ELMo"
    sizes = SIZES
    size_fields = ("filters", "character_dim", "num_highway", "lstm_dim", "projection_dim")

    unknown_field_hint = " (An options.json goes through from_options.)"

    filters: tuple = RELEASED_FILTERS
    character_dim: int = 16
    num_highway: int = 2
    num_characters: int = 262
    max_characters: int = 50
    activation: str = "relu"
    lstm_dim: int = 4096
    projection_dim: int = 512
    num_layers: int = 2
    cell_clip: float | None = 3.0
    projection_clip: float | None = 3.0
    use_skip_connections: bool = True
    vocabulary_size: int = 0
    dropout: float = 0.0

    def __post_init__(self):
        try:
            filters = tuple((int(w), int(n)) for w, n in self.filters)
        except (TypeError, ValueError):
            raise ConfigError(f"ElmoConfig.filters must be (width, count) pairs, got "
                              f"{self.filters!r}.") from None
        if not filters or any(w < 1 or n < 1 for w, n in filters):
            raise ConfigError(f"ElmoConfig.filters needs at least one (width, count) pair of "
                              f"positive integers, got {self.filters!r}.")
        object.__setattr__(self, "filters", filters)
        for name in ("character_dim", "num_characters", "max_characters", "lstm_dim",
                     "projection_dim", "num_layers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"ElmoConfig.{name} must be a positive integer, got {value!r}.")
        for name in ("num_highway", "vocabulary_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"ElmoConfig.{name} must be an integer >= 0, got {value!r}.")
        widest = max(w for w, _ in filters)
        if widest > self.max_characters:
            raise ConfigError(f"ElmoConfig.filters has width {widest} but a token has only "
                              f"max_characters={self.max_characters} ids; use narrower filters.")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"ElmoConfig.activation must be one of {ACTIVATIONS}, got "
                              f"{self.activation!r}.")
        for name in ("cell_clip", "projection_clip"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or value <= 0):
                raise ConfigError(f"ElmoConfig.{name} must be > 0 or None (no clipping), got "
                                  f"{value!r}.")
            if value is not None:
                object.__setattr__(self, name, float(value))
        if not isinstance(self.use_skip_connections, bool):
            raise ConfigError("ElmoConfig.use_skip_connections must be True or False.")
        if not isinstance(self.dropout, (int, float)) or not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"ElmoConfig.dropout must be in [0, 1), got {self.dropout!r}.")

    @property
    def num_filters(self):
        """Width of the convolutions' concatenated output and of the highway layers."""
        return sum(n for _, n in self.filters)

    @classmethod
    def from_options(cls, options):
        """From an original ``options.json`` (a dict); errors name the option that is wrong.

        Training settings (``n_epochs``, ``batch_size``, ...) are ignored; ``n_tokens_vocab``
        becomes ``vocabulary_size``; see :func:`keras_bert_lab.models.elmo.convert.config_from_options`.
        """
        from keras_bert_lab.models.elmo.convert import config_from_options

        fields = config_from_options(options)
        try:
            return cls.from_dict(fields)
        except ConfigError as error:
            raise ConfigError(f"options.json: {error}") from None

    def to_options(self):
        """The ``options.json`` dict of this config (what the original code reads)."""
        from keras_bert_lab.models.elmo.convert import options_from_config

        return options_from_config(self.to_dict())

    def to_dict(self):
        data = super().to_dict()
        data["filters"] = [list(f) for f in self.filters]
        return data

    def num_parameters(self, softmax=False):
        """Weights of the biLM from the shapes alone; ``softmax=True`` adds the LM softmax."""
        f, p, d = self.num_filters, self.projection_dim, self.lstm_dim
        characters = self.num_characters * self.character_dim
        convolutions = sum(w * self.character_dim * n + n for w, n in self.filters)
        highway = self.num_highway * 2 * (f * f + f)
        projection = f * p + p
        # per layer and direction: [x, h] -> 4 gates (+ bias), then the cell -> P projection
        lstm = (p + p) * 4 * d + 4 * d + d * p
        total = characters + convolutions + highway + projection + 2 * self.num_layers * lstm
        return total + (p * self.vocabulary_size + self.vocabulary_size if softmax else 0)
