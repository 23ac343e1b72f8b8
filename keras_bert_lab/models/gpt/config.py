"""GPT configuration: one frozen dataclass and the named sizes of the GPT-1 family.

GPT-1 (Radford et al. 2018, "Improving Language Understanding by Generative Pre-Training") is a
12-layer decoder-only Transformer, hidden 768, 12 heads, feed-forward 3072, 512 learned positions
and a 40,478-token BPE vocabulary (40,000 merges plus the base symbols). The smaller sizes reuse
the BERT family's layer / hidden / head triples so that the two can be compared at equal size.
"""

import dataclasses

from keras_bert_lab.errors import ConfigError
from keras_bert_lab.models.config import TransformerConfig

# name: (num_layers, hidden_size, num_heads)
SIZES = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "base": (12, 768, 12),  # the paper's model
}
# Feed-forward activations, named as in Hugging Face's OpenAIGPTConfig.afn: its "gelu" is the tanh
# approximation (`gelu_new`), which the original TensorFlow code of GPT-1 wrote out by hand.
ACTIVATIONS = ("gelu", "gelu_exact", "relu", "silu", "swish")


@dataclasses.dataclass(frozen=True)
class GPTConfig(TransformerConfig):
    """Hyper-parameters of a GPT-1 decoder.

    Defaults are the released GPT-1: 12 layers, hidden 768, 12 heads, feed-forward 3072, 512
    positions, the 40,478-token BPE vocabulary, dropout 0.1 on embeddings, residual branches and
    attention probabilities, LayerNorm epsilon 1e-5, N(0, 0.02) initialisation and the tanh
    approximation of GELU (``activation="gelu"``, as ``transformers``' ``OpenAIGPTConfig.afn``).
    Fine-tuning adds special tokens (``_start_``, ``_delimiter_``, ``_classify_``): raise
    ``vocabulary_size`` by their number.

    Args:
        vocabulary_size: number of BPE ids (special tokens included).
        hidden_size: width ``H`` of every hidden state.
        num_layers: number of decoder blocks.
        num_heads: attention heads ``N``; ``hidden_size`` must be divisible by it.
        intermediate_size: feed-forward width; ``None`` means ``4 * hidden_size``.
        max_positions: rows of the learned position table (the context, ``n_ctx``).
        dropout: dropout on the residual branches (attention and feed-forward outputs).
        embedding_dropout: dropout on the summed token + position embeddings.
        attention_dropout: dropout on the attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: stddev of the normal initializer.
        activation: feed-forward activation, one of ``ACTIVATIONS`` (``"gelu"``: tanh
            approximation; ``"gelu_exact"``: erf).

    Example:
    >>> config = GPTConfig.from_size("tiny")
    >>> (config.num_layers, config.hidden_size, config.num_heads, config.intermediate_size)
    (2, 128, 2, 512)
    >>> config.num_parameters()
    5643264
    """

    label = "GPT"
    sizes = SIZES
    size_fields = ("num_layers", "hidden_size", "num_heads")

    vocabulary_size: int = 40478
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int | None = None
    max_positions: int = 512
    dropout: float = 0.1
    embedding_dropout: float = 0.1
    attention_dropout: float = 0.1
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    activation: str = "gelu"

    def __post_init__(self):
        if self.intermediate_size is None:
            object.__setattr__(self, "intermediate_size", 4 * self.hidden_size)
        for name in ("vocabulary_size", "hidden_size", "num_layers", "num_heads",
                     "intermediate_size", "max_positions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"GPTConfig.{name} must be a positive integer, got {value!r}.")
        if self.hidden_size % self.num_heads:
            raise ConfigError(
                f"GPTConfig.hidden_size ({self.hidden_size}) must be divisible by "
                f"GPTConfig.num_heads ({self.num_heads}); pick num_heads among "
                f"{[n for n in range(1, 33) if self.hidden_size % n == 0]}.")
        for name in ("dropout", "embedding_dropout", "attention_dropout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0.0 <= value < 1.0:
                raise ConfigError(f"GPTConfig.{name} must be in [0, 1), got {value!r}.")
        for name in ("layer_norm_epsilon", "initializer_range"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"GPTConfig.{name} must be > 0, got {value!r}.")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"GPTConfig.activation must be one of {list(ACTIVATIONS)}, got "
                              f"{self.activation!r}.")

    def num_parameters(self):
        """Weights of the backbone (token + position tables and the blocks), from the shapes.

        The language-model head adds none: it is tied to the token table and has no bias.
        """
        h, i = self.hidden_size, self.intermediate_size
        embeddings = (self.vocabulary_size + self.max_positions) * h
        # QKV + attention output (4H² + 4H), two LayerNorms (4H), feed-forward (2HI + I + H).
        block = 4 * h * h + 4 * h + 4 * h + 2 * h * i + i + h
        return embeddings + self.num_layers * block
