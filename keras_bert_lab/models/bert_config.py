"""BERT configuration: one frozen dataclass and the named sizes of the BERT paper's family.

Sizes follow Turc et al. (2019) "Well-Read Students Learn Better" (tiny … medium) and Devlin et al.
(2019) (base, large): layers / hidden / heads, feed-forward 4 × hidden.
"""

import dataclasses

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.config import ModelConfig

# name: (num_layers, hidden_size, num_heads)
SIZES = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}


@dataclasses.dataclass(frozen=True)
class BertConfig(ModelConfig):
    """Hyper-parameters of a BERT encoder.

    Defaults are BERT-Base (uncased): 12 layers, hidden 768, 12 heads, feed-forward 3072, the
    30,522-token WordPiece vocabulary, 512 positions, 2 segment types, dropout 0.1, exact (erf)
    GELU and LayerNorm epsilon 1e-12, as in google-research/bert's ``bert_config.json``.

    Args:
        vocab_size: number of WordPiece ids.
        hidden_size: width ``H`` of every hidden state.
        num_layers: number of encoder blocks.
        num_heads: attention heads ``N``; ``hidden_size`` must be divisible by it.
        intermediate_size: feed-forward width; ``None`` means ``4 * hidden_size``.
        max_positions: rows of the learned position table (longest sequence).
        type_vocab_size: number of segment ids (2: sentence A and B).
        dropout: dropout on embeddings, attention output and feed-forward output.
        attention_dropout: dropout on the attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal initializer.

    Example:
    >>> config = BertConfig.from_size("tiny")
    >>> (config.num_layers, config.hidden_size, config.num_heads, config.intermediate_size)
    (2, 128, 2, 512)
    >>> config.num_parameters()
    4385920
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int | None = None
    max_positions: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    attention_dropout: float = 0.1
    layer_norm_epsilon: float = 1e-12
    initializer_range: float = 0.02

    def __post_init__(self):
        if self.intermediate_size is None:
            object.__setattr__(self, "intermediate_size", 4 * self.hidden_size)
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads",
                     "intermediate_size", "max_positions", "type_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"BertConfig.{name} must be a positive integer, got {value!r}."
                )
        if self.hidden_size % self.num_heads:
            raise ConfigError(
                f"BertConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"BertConfig.num_heads ({self.num_heads}); pick num_heads among "
                f"{[n for n in range(1, 33) if self.hidden_size % n == 0]}."
            )
        for name in ("dropout", "attention_dropout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ConfigError(f"BertConfig.{name} must be in [0, 1), got {value!r}.")
        for name in ("layer_norm_epsilon", "initializer_range"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"BertConfig.{name} must be > 0, got {value!r}.")

    @property
    def head_size(self):
        """Width ``D`` of one attention head."""
        return self.hidden_size // self.num_heads

    @classmethod
    def from_size(cls, name, **overrides):
        """The named size (``tiny`` … ``large``), with any field overridden."""
        if name not in SIZES:
            raise ConfigError(f"Unknown BERT size {name!r}; choose one of {list(SIZES)}.")
        layers, hidden, heads = SIZES[name]
        fields = dict(num_layers=layers, hidden_size=hidden, num_heads=heads)
        fields.update(overrides)
        return cls(**fields)

    def num_parameters(self, pooler=True):
        """Weights of the backbone (embeddings + encoder [+ pooler]), from the shapes alone."""
        h, i = self.hidden_size, self.intermediate_size
        embeddings = (self.vocab_size + self.max_positions + self.type_vocab_size) * h + 2 * h
        # QKV + attention output (4H² + 4H), two LayerNorms (4H), feed-forward (2HI + I + H).
        block = 4 * h * h + 4 * h + 4 * h + 2 * h * i + i + h
        return embeddings + self.num_layers * block + (h * h + h if pooler else 0)
