"""A count-based language model: interpolated Kneser-Ney n-grams, the baseline a neural LM must beat.

Before neural language models, the best perplexities came from smoothed n-gram counts, and
interpolated Kneser-Ney (Kneser & Ney 1995; Chen & Goodman 1998) was the strongest of them. It
discounts every seen n-gram by ``d`` and gives the freed mass to the lower order, whose counts are
*continuation* counts — in how many different contexts a word follows — so that "Francisco",
frequent but only after "San", gets little probability after other words. The recursion ends in
a uniform distribution over the vocabulary, so every token has a probability and perplexities are
finite. The ELMo and GPT recipes quote this model's held-out perplexity, on the same tokens, as the
bar their networks must clear; run it backwards (``reversed``) for a backward LM's baseline.

Each order ``n`` uses the discount ``d_n = N1 / (N1 + 2·N2)`` (Ney et al. 1994) from its counts of
n-grams seen once and twice.

Example:
>>> text = "the cat sat on the mat . the dog sat on the log .".split()
>>> model = KneserNey(order=2).fit(text)
>>> unseen = model.probability(("the",), "zebra")         # the uniform floor's share
>>> round(sum(model.probability(("the",), w) for w in model.vocabulary) + unseen, 6)
1.0
>>> model.probability(("the",), "cat") > model.probability(("the",), "sat")
True
>>> model.perplexity("the cat sat on the log .".split()) < model.perplexity(
...     "log the on sat cat the .".split())
True
"""

import collections
import math

from keras_bert_lab.errors import ConfigError, DataError

BOS = "<s>"


class KneserNey:
    """Interpolated Kneser-Ney of order ``n`` over any hashable tokens (words or ids).

    Args:
        order: the ``n`` of the n-grams (2 = bigram, 3 = trigram).
        vocabulary_size: size of the uniform base distribution; default the distinct training
            tokens plus one for unseen tokens.

    The stream's start is padded with ``order - 1`` :data:`BOS` tokens, so the first tokens are
    predicted from shorter real contexts as a language model over a stream would.
    """

    def __init__(self, order=3, vocabulary_size=None):
        if not isinstance(order, int) or order < 1:
            raise ConfigError(f"KneserNey order must be a positive integer, got {order!r}.")
        self.order, self.vocabulary_size = order, vocabulary_size

    def fit(self, tokens):
        """Count the n-grams of a token stream; returns ``self``."""
        tokens = list(tokens)
        if not tokens:
            raise DataError("KneserNey.fit got no tokens; pass the training text's tokens.")
        n = self.order
        stream = [BOS] * (n - 1) + tokens
        self.vocabulary = sorted(set(tokens), key=str)
        size = self.vocabulary_size or len(self.vocabulary) + 1
        if size < len(self.vocabulary):
            raise ConfigError(f"vocabulary_size={size} is below the {len(self.vocabulary)} "
                              "distinct training tokens.")
        self.uniform = 1.0 / size
        # counts[k]: n-grams of length k+1 -> count. The highest order uses raw counts, lower
        # orders continuation counts (distinct left contexts), as Kneser-Ney prescribes.
        highest = collections.Counter(tuple(stream[i - n + 1:i + 1]) for i in range(n - 1,
                                                                                     len(stream)))
        counts = [None] * n
        counts[n - 1] = highest
        for k in range(n - 2, -1, -1):
            counts[k] = collections.Counter(gram[1:] for gram in counts[k + 1])
        self.counts = counts
        self.context_totals, self.context_types, self.discounts = [], [], []
        for grams in counts:
            totals, types = collections.Counter(), collections.Counter()
            for gram, c in grams.items():
                totals[gram[:-1]] += c
                types[gram[:-1]] += 1
            once = sum(1 for c in grams.values() if c == 1)
            twice = sum(1 for c in grams.values() if c == 2)
            self.discounts.append(once / (once + 2 * twice) if once else 0.5)
            self.context_totals.append(totals)
            self.context_types.append(types)
        return self

    def probability(self, context, token):
        """``P(token | context)``; only the last ``order - 1`` tokens of ``context`` matter."""
        context = tuple(context)[-(self.order - 1):] if self.order > 1 else ()
        context = (BOS,) * (self.order - 1 - len(context)) + context
        return self._probability(context, token)

    def _probability(self, context, token):
        p = self.uniform
        for k in range(0, len(context) + 1):   # from unigrams up to the full context
            ctx = context[len(context) - k:]
            total = self.context_totals[k].get(ctx, 0)
            if not total:
                continue   # unseen context: the lower order stands alone
            d = self.discounts[k]
            seen = self.counts[k].get(ctx + (token,), 0)
            p = max(seen - d, 0.0) / total + d * self.context_types[k][ctx] / total * p
        return p

    def log_likelihood(self, tokens):
        """Natural-log probability of a token stream (started as in training)."""
        stream = [BOS] * (self.order - 1) + list(tokens)
        width = self.order - 1
        return sum(math.log(self._probability(tuple(stream[i - width:i]), stream[i]))
                   for i in range(width, len(stream)))

    def perplexity(self, tokens):
        """``exp(-mean log P)`` over the tokens of a held-out stream."""
        tokens = list(tokens)
        if not tokens:
            raise DataError("perplexity of an empty stream; pass the held-out tokens.")
        return math.exp(-self.log_likelihood(tokens) / len(tokens))


def kneser_ney_perplexity(train_tokens, stream, positions, order=3):
    """Perplexity of interpolated Kneser-Ney, fit on ``train_tokens``, on ``stream[i]`` for each
    ``i`` in ``positions``, each predicted from the ``order - 1`` tokens before it in ``stream``
    (a direction's targets: the backward LM's baseline gets both reversed)."""
    model = KneserNey(order=order, vocabulary_size=None).fit(list(train_tokens))
    stream, width = list(stream), order - 1
    total = sum(math.log(model.probability(tuple(stream[max(0, i - width):i]), stream[i]))
                for i in positions)
    return math.exp(-total / len(positions))
