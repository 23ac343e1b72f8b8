"""BERT configuration: one frozen dataclass and the named sizes of the BERT paper's family.

Sizes follow Turc et al. (2019) "Well-Read Students Learn Better" (tiny … medium) and Devlin et al.
(2019) (base, large): layers / hidden / heads, feed-forward 4 × hidden.

Four options, each off by default, turn the block into a modern encoder's (ModernBERT, Warner et
al. 2024): ``norm_first`` (pre-LN and a final LayerNorm), ``use_bias=False``,
``feedforward="geglu"`` and ``position_embedding="rotary"``.
"""

import dataclasses

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.config import TransformerConfig

# The modern options' values; the first of each is BERT's (the default).
FEEDFORWARDS = ("gelu", "geglu")
POSITION_EMBEDDINGS = ("learned", "rotary")

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
class BertConfig(TransformerConfig):
    """Hyper-parameters of a BERT encoder.

    Defaults are BERT-Base (uncased): 12 layers, hidden 768, 12 heads, feed-forward 3072, the
    30,522-token WordPiece vocabulary, 512 positions, 2 segment types, dropout 0.1, exact (erf)
    GELU and LayerNorm epsilon 1e-12, as in google-research/bert's ``bert_config.json``. The
    modern options (see the module docstring) are off: with all four on, the encoder is
    ModernBERT's with every layer global (``presets.convert.modernbert`` maps the weights).

    Args:
        vocabulary_size: number of WordPiece ids.
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
        norm_first: pre-LN blocks, ``x + f(LayerNorm(x))``, and a LayerNorm after the last block
            (``final_norm``); the first block takes the normalised embedding as it is.
        use_bias: biases in the attention projections, feed-forward layers and LayerNorms of the
            embedding and the encoder (the pooler and task heads keep theirs).
        feedforward: ``"gelu"`` (BERT) or ``"geglu"`` (gated: ``W_in`` projects to
            ``2 × intermediate_size``, ``GELU(input) ⊙ gate``, then ``W_out``).
        position_embedding: ``"learned"`` (BERT's ``(max_positions, H)`` table) or ``"rotary"``
            (queries and keys rotated by position in every layer; no table; ``max_positions``
            stays the longest sequence accepted).
        rotary_base: base ``θ`` of the rotary angles (ModernBERT's global layers: 160,000); only
            with ``position_embedding="rotary"``.

    Example:
    >>> config = BertConfig.from_size("tiny")
    >>> (config.num_layers, config.hidden_size, config.num_heads, config.intermediate_size)
    (2, 128, 2, 512)
    >>> config.num_parameters()
    4385920
    >>> modern = BertConfig.from_size("tiny", norm_first=True, use_bias=False,
    ...                               feedforward="geglu", position_embedding="rotary")
    >>> modern.num_parameters()
    4448512
    >>> BertConfig(feedforward="swiglu")
    Traceback (most recent call last):
    ...
    keras_bert_lab.errors.ConfigError: BertConfig.feedforward must be one of ['gelu', 'geglu'], got 'swiglu'.
    """

    label = "BERT"
    sizes = SIZES
    size_fields = ("num_layers", "hidden_size", "num_heads")

    vocabulary_size: int = 30522
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
    norm_first: bool = False
    use_bias: bool = True
    feedforward: str = "gelu"
    position_embedding: str = "learned"
    rotary_base: float = 10000.0

    @property
    def free_fields(self):
        """Fields a model built from a preset may change (``ModelConfig.check_matches``): they
        change no weight and not what the weights compute at inference — the dropout rates, the
        initializer, and with rotary positions (no table) the longest sequence."""
        rotary = ("max_positions",) if self.position_embedding == "rotary" else ()
        return ("dropout", "attention_dropout", "initializer_range") + rotary

    def __post_init__(self):
        if self.intermediate_size is None:
            object.__setattr__(self, "intermediate_size", 4 * self.hidden_size)
        for name in ("vocabulary_size", "hidden_size", "num_layers", "num_heads",
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
        self._check_modern_options()

    def _check_modern_options(self):
        for name in ("norm_first", "use_bias"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ConfigError(f"BertConfig.{name} must be True or False, got {value!r}.")
        for name, allowed in (("feedforward", FEEDFORWARDS),
                              ("position_embedding", POSITION_EMBEDDINGS)):
            value = getattr(self, name)
            if value not in allowed:
                raise ConfigError(f"BertConfig.{name} must be one of {list(allowed)}, got "
                                  f"{value!r}.")
        base = self.rotary_base
        if isinstance(base, bool) or not isinstance(base, (int, float)) or not base > 1:
            raise ConfigError(f"BertConfig.rotary_base must be a number > 1, got {base!r}.")
        if self.position_embedding == "learned" and base != 10000.0:
            raise ConfigError(f"BertConfig.rotary_base={base!r} has no effect with "
                              "position_embedding='learned'; set position_embedding='rotary' or "
                              "leave rotary_base at its default.")
        if self.position_embedding == "rotary" and self.head_size % 2:
            raise ConfigError(f"BertConfig.position_embedding='rotary' rotates pairs of features, "
                              f"so the head size hidden_size / num_heads must be even, got "
                              f"{self.hidden_size} / {self.num_heads} = {self.head_size}; change "
                              "num_heads.")

    def num_parameters(self, pooler=True):
        """Weights of the backbone (embeddings + encoder [+ pooler]), from the shapes alone."""
        h, i, bias = self.hidden_size, self.intermediate_size, int(self.use_bias)
        norm = (1 + bias) * h  # γ [and β]
        positions = self.max_positions if self.position_embedding == "learned" else 0
        embeddings = (self.vocabulary_size + positions + self.type_vocab_size) * h + norm
        # QKV + attention output (4H² [+ 4H]), two LayerNorms, feed-forward: H·I' [+ I'] in with
        # I' = I (GELU) or 2I (GEGLU), I·H [+ H] out.
        wide = 2 * i if self.feedforward == "geglu" else i
        block = 4 * h * h + bias * 4 * h + 2 * norm + h * wide + bias * wide + i * h + bias * h
        # Pre-LN adds a final norm and drops the first block's norm before attention: even.
        return embeddings + self.num_layers * block + (h * h + h if pooler else 0)
