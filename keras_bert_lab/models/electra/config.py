"""ELECTRA configuration: one frozen dataclass for the discriminator and the generator, and the
sizes of the ELECTRA paper (Clark et al. 2020, Table 6).

ELECTRA's encoder is BERT's with one change: the token, position and segment embeddings have their
own width ``embedding_size`` (``E``), projected to ``hidden_size`` when the two differ, so that the
generator — a smaller masked LM — and the discriminator can share one embedding table. The paper's
generator is the discriminator scaled down in hidden size, feed-forward size and heads by the
*generator size* (1/4 for Small and Large, 1/3 for Base; §3.2: 1/4–1/2 works best, and a
generator as large as the discriminator is worse — it makes the task too hard):
:meth:`ElectraConfig.generator` builds it.
"""

import dataclasses
import math
from fractions import Fraction

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.config import TransformerConfig

# name: (num_layers, hidden_size, num_heads, embedding_size); small/base/large as in Table 6,
# tiny for tests and quick runs on this machine's CPU, mini with BERT-mini's encoder.
SIZES = {
    "tiny": (2, 128, 2, 64),
    "mini": (4, 256, 4, 256),      # BERT-mini's encoder: the lab's comparisons at equal weights
    "small": (12, 256, 4, 128),
    "base": (12, 768, 12, 768),
    "large": (24, 1024, 16, 1024),
}
# The paper's generator size of each (hidden, feed-forward and heads × this).
GENERATOR_SIZES = {"tiny": 0.25, "mini": 0.25, "small": 0.25, "base": 1 / 3, "large": 0.25}
ROLES = ("discriminator", "generator")


@dataclasses.dataclass(frozen=True)
class ElectraConfig(TransformerConfig):
    """Hyper-parameters of an ELECTRA encoder: a discriminator (what fine-tuning uses) or a
    generator (the small masked LM that corrupts its input during pretraining).

    Defaults are ELECTRA-Small's discriminator: 12 layers, hidden 256, 4 heads, feed-forward 1024,
    embeddings of width 128, BERT's uncased 30,522-token WordPiece vocabulary, 512 positions,
    dropout 0.1, GELU and LayerNorm epsilon 1e-12 — ``google/electra-small-discriminator``.

    Args:
        vocabulary_size: number of WordPiece ids.
        embedding_size: width ``E`` of the token, position and segment embeddings.
        hidden_size: width ``H`` of the encoder; the embeddings are projected to it when ``E ≠ H``.
        num_layers: number of encoder blocks. num_heads: attention heads (they divide ``H``).
        intermediate_size: feed-forward width; ``None`` means ``4 * hidden_size``.
        max_positions: rows of the learned position table. type_vocab_size: segment ids.
        dropout, attention_dropout: dropout on branch outputs and attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon. initializer_range: truncated-normal stddev.
        role: ``"discriminator"`` or ``"generator"`` — what the weights were trained as; a
            preset of one role is refused where the other is needed.

    Example:
    >>> config = ElectraConfig.from_size("small")
    >>> config.num_parameters(pooler=False)        # google/electra-small-discriminator
    13483008
    >>> generator = config.generator()             # the paper's 1/4
    >>> (generator.hidden_size, generator.num_heads, generator.intermediate_size, generator.role)
    (64, 1, 256, 'generator')
    >>> ElectraConfig.from_size("base").generator().hidden_size     # Base's is 1/3
    256
    >>> config.generator(2.0)
    Traceback (most recent call last):
    ...
    keras_bert_lab.errors.ConfigError: generator_size=2.0 makes the generator larger than the discriminator (hidden 512 > 256); ELECTRA's generator is a fraction of it (the paper: 1/4 for Small and Large, 1/3 for Base; 1/4–1/2 works best) — pick generator_size in (0, 1].
    """

    label = "ELECTRA"
    sizes = SIZES
    size_fields = ("num_layers", "hidden_size", "num_heads", "embedding_size")

    vocabulary_size: int = 30522
    embedding_size: int = 128
    hidden_size: int = 256
    num_layers: int = 12
    num_heads: int = 4
    intermediate_size: int | None = None
    max_positions: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    attention_dropout: float = 0.1
    layer_norm_epsilon: float = 1e-12
    initializer_range: float = 0.02
    role: str = "discriminator"

    @property
    def free_fields(self):
        """Fields a model built from a preset may change: the dropout rates and the initializer
        (they change no weight)."""
        return ("dropout", "attention_dropout", "initializer_range")

    def __post_init__(self):
        if self.intermediate_size is None:
            object.__setattr__(self, "intermediate_size", 4 * self.hidden_size)
        for name in ("vocabulary_size", "embedding_size", "hidden_size", "num_layers",
                     "num_heads", "intermediate_size", "max_positions", "type_vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"ElectraConfig.{name} must be a positive integer, got "
                                  f"{value!r}.")
        if self.hidden_size % self.num_heads:
            raise ConfigError(
                f"ElectraConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"ElectraConfig.num_heads ({self.num_heads}); pick num_heads among "
                f"{[n for n in range(1, 33) if self.hidden_size % n == 0]}.")
        for name in ("dropout", "attention_dropout"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ConfigError(f"ElectraConfig.{name} must be in [0, 1), got {value!r}.")
        for name in ("layer_norm_epsilon", "initializer_range"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"ElectraConfig.{name} must be > 0, got {value!r}.")
        if self.role not in ROLES:
            raise ConfigError(f"ElectraConfig.role must be one of {list(ROLES)}, got "
                              f"{self.role!r}.")

    @property
    def projects_embeddings(self):
        """Whether a ``Dense(E → H)`` follows the embeddings (``E ≠ H``)."""
        return self.embedding_size != self.hidden_size

    @property
    def size_name(self):
        """The named size this config has (``"small"`` …), or ``None``."""
        mine = tuple(getattr(self, name) for name in self.size_fields)
        return next((name for name, sizes in SIZES.items() if sizes == mine), None)

    def generator(self, generator_size=None, **overrides):
        """The generator of this discriminator: hidden size, feed-forward size and heads scaled
        by ``generator_size`` (at least one head), the same depth, embedding width, vocabulary
        and positions (it shares the embeddings), ``role="generator"``; ``overrides`` change
        any field. ``generator_size`` defaults to the paper's for a named size
        (:data:`GENERATOR_SIZES`), else 1/4. ``ConfigError`` when the scaled sizes are not whole
        numbers or the generator would be larger than the discriminator."""
        if generator_size is None:
            generator_size = GENERATOR_SIZES.get(self.size_name, 0.25)
        if self.role != "discriminator":
            raise ConfigError("ElectraConfig.generator() scales a discriminator's config; this "
                              "one is already a generator's (role='generator').")
        if isinstance(generator_size, bool) or not isinstance(generator_size, (int, float)) \
                or generator_size <= 0 or math.isnan(generator_size):
            raise ConfigError(f"generator_size must be a number in (0, 1], got "
                              f"{generator_size!r}; the paper uses 1/4 (Small, Large) and 1/3 "
                              "(Base).")
        hidden = self.hidden_size * generator_size
        if generator_size > 1:
            raise ConfigError(
                f"generator_size={generator_size} makes the generator larger than the "
                f"discriminator (hidden {hidden:g} > {self.hidden_size}); ELECTRA's generator is "
                "a fraction of it (the paper: 1/4 for Small and Large, 1/3 for Base; 1/4–1/2 "
                "works best) — pick generator_size in (0, 1].")
        if abs(hidden - round(hidden)) > 1e-6:
            whole = Fraction(64, self.hidden_size)
            raise ConfigError(
                f"generator_size={generator_size} gives a generator hidden size of "
                f"{self.hidden_size} × {generator_size} = {hidden:g}, not a whole number; pick a "
                f"size that divides {self.hidden_size} (e.g. {float(whole):g} for 64).")
        hidden = int(round(hidden))
        heads = max(1, int(round(self.num_heads * generator_size)))
        if hidden % heads:
            heads = max(n for n in range(1, heads + 1) if hidden % n == 0)
        fields = {**self.to_dict(), "hidden_size": hidden, "num_heads": heads,
                  "intermediate_size": max(1, int(round(self.intermediate_size * generator_size))),
                  "role": "generator", **overrides}
        return type(self).from_dict(fields)

    def num_parameters(self, pooler=True):
        """Weights of the backbone (embeddings [+ projection] + encoder [+ pooler])."""
        e, h, i = self.embedding_size, self.hidden_size, self.intermediate_size
        embeddings = (self.vocabulary_size + self.max_positions + self.type_vocab_size) * e + 2 * e
        projection = e * h + h if self.projects_embeddings else 0
        block = 4 * h * h + 4 * h + 2 * 2 * h + h * i + i + i * h + h
        return embeddings + projection + self.num_layers * block + (h * h + h if pooler else 0)
