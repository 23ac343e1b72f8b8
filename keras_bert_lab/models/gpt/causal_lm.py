"""``GPTCausalLM``: the GPT backbone with its tied language-model head, loss and text generation.

Shapes: ``B`` batch, ``T`` tokens, ``L`` generated length (prompt included), ``V`` vocabulary.
"""

import warnings
import weakref

import keras
import numpy as np
from keras import ops

from keras_bert_lab.errors import InputError
from keras_bert_lab.layers.decoder import TiedLMHead
from keras_bert_lab.models.gpt.backbone import INPUT_NAMES, GPTBackbone
from keras_bert_lab.tasks.base import Task
from keras_bert_lab.tasks.losses import VocabularyCrossEntropy

STRATEGIES = ("greedy", "top_k", "top_p")
_GENERATORS = weakref.WeakKeyDictionary()  # task -> {(strategy, top_k, cached): _Generator}


@keras.saving.register_keras_serializable("keras_bert_lab")
class GPTCausalLM(Task):
    """Left-to-right language model over a ``GPTBackbone`` (Radford et al. 2018, §3.1).

    Inputs: the backbone's ``token_ids`` and ``padding_mask`` (B, T). Output: next-token logits
    (B, T, V) in float32 — position ``t`` scores token ``t + 1``. The head multiplies by the
    transposed token embedding with no bias, as GPT-1 does (eq. 2: ``P(u) = softmax(h_n·W_eᵀ)``),
    so by default the task adds no weights and is GPT-1 exactly (transformers'
    ``OpenAIGPTLMHeadModel``). ``output_bias=True`` adds a learned bias ``(V,)`` to the logits:
    a small post-LN GPT pretrained from scratch without one collapses to the unigram model (a
    GPT-mini on WikiText-2: perplexity 914 after 220 steps), while with the bias started at the
    log unigram it learns context at once (312); see ``TiedLMHead``. Such a model has no
    ``OpenAIGPT`` counterpart in transformers. Training data come as
    :func:`~keras_bert_lab.pipelines.language_model.next_token_batch`
    makes them: ``(features, labels, sample_weight)`` with labels shifted by one and padding
    weighted 0; the loss is the cross-entropy averaged over real tokens (log-perplexity).

    :meth:`generate` continues prompts greedily or by top-k / nucleus (top-p) sampling, with a
    key/value cache (one forward pass over the prompts, then one token per step) compiled into
    one program where the backend allows it.

    Args:
        backbone: a ``GPTBackbone``.
        output_bias: add a learned LM-head bias ``(V,)`` (zeros until set, e.g. to the log
            unigram of the training text, as ``kbl pretrain --model gpt`` does).

    Example:
    >>> import numpy as np
    >>> model = GPTCausalLM(GPTBackbone({"vocabulary_size": 1000, "hidden_size": 64,
    ...                                  "num_layers": 2, "num_heads": 2}))
    >>> model.compile()
    >>> rows = np.random.default_rng(0).integers(0, 1000, (4, 9)).astype("int32")
    >>> from keras_bert_lab.pipelines.language_model import next_token_batch
    >>> x, y, w = next_token_batch(rows, np.ones_like(rows))
    >>> history = model.fit(x, y, sample_weight=w, verbose=0)
    >>> sorted(history.history)
    ['accuracy', 'loss']
    >>> out = model.generate(np.array([[5, 6, 7]]), max_length=6)
    >>> out["token_ids"].shape, out["token_ids"][0, :3].tolist()
    ((1, 6), [5, 6, 7])
    """

    description = "a GPT-1 language model"  # what messages call it

    token_output_fill = 0.0

    def __init__(self, backbone, output_bias=False, **kwargs):
        lm_head = TiedLMHead(backbone.token_embedding, use_bias=output_bias,
                             dtype=backbone.dtype_policy, name="lm_head")
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in INPUT_NAMES}
        logits = lm_head(backbone(inputs)["sequence_output"])  # (B, T, V)
        super().__init__(backbone, inputs=inputs, outputs=logits, **kwargs)
        self.lm_head = lm_head
        self.output_bias = bool(output_bias)

    def get_config(self):
        return {**super().get_config(), "output_bias": self.output_bias}

    def compile(self, optimizer="auto", loss="auto", metrics="auto", weighted_metrics="auto",
                **kwargs):
        """Defaults: AdamW as GPT-1 (lr 2.5e-4, ε 1e-8, decay 0.01 on ≥2-D weights, clip 1.0),
        cross-entropy averaged over the weighted (real) tokens, weighted next-token accuracy."""
        from keras_bert_lab.training.optimizers import adamw

        if optimizer == "auto":
            optimizer = adamw(self, learning_rate=2.5e-4, epsilon=1e-8)
        if loss == "auto":
            loss = VocabularyCrossEntropy(reduction="mean_with_sample_weight")
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy("accuracy")]
        if metrics == "auto":
            metrics = None
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        weighted_metrics=weighted_metrics, **kwargs)

    def call_with_cache(self, token_ids, cache, cache_index):
        """Logits (B, T, V) of ``token_ids`` at positions from ``cache_index``, and the cache."""
        hidden, cache = self.backbone.call_with_cache(token_ids, cache, cache_index)
        return self.lm_head(hidden), cache

    def generate(self, prompt_ids, max_length, padding_mask=None, strategy="greedy", top_k=50,
                 top_p=0.9, temperature=1.0, seed=None, use_cache=True, truncate=False,
                 end_token_id=None):
        """Continue each prompt to ``max_length`` tokens (prompt included).

        Prompts come as one list of ids, a list of lists (any lengths) or an array (B, P) with a
        ``padding_mask`` (padding at the right). Each row continues from its own last token.

        Args:
            prompt_ids: the prompts (see above). max_length: total length ``L`` of each row,
                ``longest prompt < L ≤ max_positions``.
            padding_mask: (B, P) 1 for prompt tokens, 0 for right padding; default all 1.
            strategy: ``"greedy"`` (argmax), ``"top_k"`` (sample among the ``top_k`` most likely)
                or ``"top_p"`` (sample from the smallest set whose probability reaches ``top_p``).
            top_k: integer in ``[1, V]``. top_p: in ``(0, 1]``. temperature: ``> 0``, divides the
                logits before sampling.
            seed: integer for reproducible sampling (the same tokens on every backend and with or
                without the cache); ``None`` draws a fresh one.
            use_cache: reuse keys and values of earlier tokens (``False`` recomputes the whole
                sequence each step; the tokens are the same).
            truncate: cut prompts that leave no room to generate to their last tokens, with a
                warning, instead of raising.
            end_token_id: optional id that ends a row; later positions are masked out.

        Returns ``{"token_ids": (B, L) int32, "padding_mask": (B, L) int32}`` (NumPy).
        """
        ids, mask = self._prompts(prompt_ids, padding_mask)
        check_sampling(strategy, top_k, top_p, temperature, self.backbone.config.vocabulary_size)
        ids, mask = self._fit_length(ids, mask, max_length, truncate)
        batch = len(ids)
        tokens = np.zeros((batch, max_length), "int32")
        prompt_mask = np.zeros((batch, max_length), "int32")
        tokens[:, :ids.shape[1]] = ids * mask
        prompt_mask[:, :ids.shape[1]] = mask
        rng = np.random.default_rng(seed)
        inputs = {"token_ids": tokens, "prompt_mask": prompt_mask,
                  "uniform": rng.random((batch, max_length), dtype="float32"),
                  "temperature": np.full((batch,), temperature, "float32"),
                  "top_p": np.full((batch,), top_p, "float32")}
        key = (strategy, int(top_k) if strategy == "top_k" else 0, bool(use_cache))
        generators = _GENERATORS.setdefault(self, {})
        if key not in generators:
            generators[key] = _Generator(self, *key)
        out = np.asarray(keras.ops.convert_to_numpy(generators[key].predict_on_batch(inputs)),
                         "int32")
        out_mask = np.ones_like(out)
        if end_token_id is not None:
            ended = (out == end_token_id) & (prompt_mask == 0)
            after = np.cumsum(ended, axis=1) - ended  # positions after the first end token
            out_mask[after > 0] = 0
            out[after > 0] = 0
        return {"token_ids": out, "padding_mask": out_mask}

    @staticmethod
    def _prompts(prompt_ids, padding_mask):
        if isinstance(prompt_ids, (list, tuple)) and prompt_ids and \
                all(isinstance(p, (list, tuple, np.ndarray)) for p in prompt_ids):
            if padding_mask is not None:
                raise InputError("Pass padding_mask only with an array of prompts; a list of "
                                 "lists gives each prompt's length itself.")
            width = max(len(p) for p in prompt_ids)
            ids = np.zeros((len(prompt_ids), width), "int64")
            mask = np.zeros((len(prompt_ids), width), "int32")
            for row, prompt in enumerate(prompt_ids):
                ids[row, :len(prompt)], mask[row, :len(prompt)] = prompt, 1
        else:
            ids = np.asarray(keras.ops.convert_to_numpy(prompt_ids))
            ids = ids[None] if ids.ndim == 1 else ids
            mask = np.ones(ids.shape, "int32") if padding_mask is None else \
                np.asarray(keras.ops.convert_to_numpy(padding_mask)).reshape(ids.shape[0], -1)
        if ids.ndim != 2 or mask.shape != ids.shape:
            raise InputError(f"prompt_ids must be (batch, tokens) with a padding_mask of the same "
                             f"shape; got {ids.shape} and {mask.shape}.")
        if not np.issubdtype(ids.dtype, np.integer):
            raise InputError(f"prompt_ids must hold integer ids, got dtype {ids.dtype}.")
        mask = (mask != 0).astype("int32")
        lengths = mask.sum(1)
        if (lengths == 0).any():
            raise InputError(f"Prompt {int(np.argmin(lengths))} is empty; every row needs at "
                             "least one token (e.g. a start token) to continue from.")
        if (mask != (np.arange(mask.shape[1]) < lengths[:, None])).any():
            raise InputError("padding_mask must be 1s then 0s in every row: prompts are padded "
                             "at the right (left padding is not supported).")
        return ids, mask

    def _fit_length(self, ids, mask, max_length, truncate):
        positions = self.backbone.config.max_positions
        if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)) \
                or not 1 < max_length <= positions:
            raise InputError(f"max_length must be an integer in [2, {positions}] (the position "
                             f"table of this model), got {max_length!r}.")
        lengths = mask.sum(1)
        if lengths.max() >= max_length:
            where = "exceeds the position table" if lengths.max() > positions else \
                "leaves no room below max_length"
            if not truncate:
                raise InputError(
                    f"The longest prompt has {int(lengths.max())} tokens, which {where}: "
                    f"max_length={max_length} must be greater than every prompt's length (at "
                    f"most {positions}). Raise max_length, shorten the prompt, or pass "
                    f"truncate=True to keep each prompt's last {max_length - 1} tokens.")
            keep = max_length - 1
            warnings.warn(f"Prompts longer than {keep} tokens are cut to their last {keep} "
                          f"(max_length={max_length}).", stacklevel=3)
            cut = np.zeros((len(ids), keep), ids.dtype)
            for row, length in enumerate(lengths):
                start = max(0, length - keep)
                cut[row, :length - start] = ids[row, start:length]
            ids, mask = cut, (np.arange(keep) < np.minimum(lengths, keep)[:, None]).astype("int32")
        values = ids[mask > 0]
        vocab = self.backbone.config.vocabulary_size
        if values.min() < 0 or values.max() >= vocab:
            bad = values.max() if values.max() >= vocab else values.min()
            raise InputError(f"prompt_ids hold id {int(bad)} outside [0, {vocab}); check that the "
                             "tokenizer matches the model.")
        return ids.astype("int32"), mask


def check_sampling(strategy, top_k, top_p, temperature, vocabulary_size):
    """Raise ``InputError`` naming the allowed range of a bad generation argument."""
    if strategy not in STRATEGIES:
        raise InputError(f"strategy must be one of {list(STRATEGIES)}, got {strategy!r}.")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not temperature > 0:
        raise InputError(f"temperature must be a number > 0 (1.0 leaves the distribution as "
                         f"is), got {temperature!r}.")
    if strategy == "top_k" and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer))
                                or not 1 <= top_k <= vocabulary_size):
        raise InputError(f"top_k must be an integer in [1, {vocabulary_size}] (the vocabulary size), "
                         f"got {top_k!r}.")
    if strategy == "top_p" and (isinstance(top_p, bool) or not isinstance(top_p, (int, float))
                                or not 0 < top_p <= 1):
        raise InputError(f"top_p must be in (0, 1] (the probability mass kept), got {top_p!r}.")


def _inverse_cdf(probs, uniform):
    """Index drawn from each row of ``probs`` (B, K) by its uniform number (B,)."""
    cdf = ops.cumsum(probs, axis=-1)  # (B, K)
    below = ops.less(cdf, uniform[:, None] * cdf[:, -1:])
    choice = ops.sum(ops.cast(below, "int32"), axis=-1)
    return ops.minimum(choice, ops.shape(probs)[-1] - 1)  # (B,)


def _nucleus(probs, top_p, steps=30):
    """``probs`` (B, V) kept only on the smallest set of most likely tokens whose mass reaches
    ``top_p`` (B,), zero elsewhere.

    The set is ``{p ≥ τ}`` for the largest ``τ`` with enough mass, found by bisection on ``τ``
    (``steps`` passes over V) rather than by sorting: a full sort of a 40k vocabulary costs
    ≈ 15–20 ms per token under XLA on CPU, the bisection ≈ 0.3 ms.
    """
    def body(_, bounds):
        low, high = bounds  # mass(p ≥ low) ≥ top_p throughout
        middle = (low + high) / 2
        mass = ops.sum(ops.where(probs >= middle[:, None], probs, 0.0), axis=-1)
        enough = mass >= top_p
        return ops.where(enough, middle, low), ops.where(enough, high, middle)

    bounds = (ops.zeros_like(top_p), ops.max(probs, axis=-1))
    threshold = ops.fori_loop(0, steps, body, bounds)[0]
    return ops.where(probs >= threshold[:, None], probs, 0.0)


def _sample(logits, uniform, temperature, top_p, strategy, top_k):
    """Next token (B,) from logits (B, V). The random numbers come in as ``uniform`` (B,), drawn
    on the host from the seed, so every backend, cached or not, draws the same tokens."""
    if strategy == "greedy":
        return ops.cast(ops.argmax(logits, axis=-1), "int32")
    logits = logits / temperature[:, None]
    if strategy == "top_p":
        probs = _nucleus(ops.softmax(logits, axis=-1), top_p)
        return ops.cast(_inverse_cdf(probs, uniform), "int32")
    values, indices = ops.top_k(logits, top_k)  # (B, K), most likely first
    choice = _inverse_cdf(ops.softmax(values, axis=-1), uniform)[:, None]
    return ops.cast(ops.take_along_axis(indices, choice, axis=1)[:, 0], "int32")


class _Generator(keras.Model):
    """The whole generation loop as one Keras model call, for ``predict_on_batch``.

    Keras compiles ``predict_on_batch`` where the backend allows: one ``jax.jit`` program on JAX,
    a ``tf.function`` graph on TensorFlow; PyTorch runs it eagerly under ``no_grad``. The loop
    (``keras.ops.while_loop``) fills position ``i`` from the logits at ``i - 1`` for ``i`` from
    the shortest prompt's length to ``L - 1``, keeping prompt tokens where a row's prompt is
    longer. With the cache, one forward pass over all ``L`` positions fills it first (causal
    attention keeps positions past a prompt from leaking into it) and each step then runs one
    token; without it, each step reruns the whole sequence.
    """

    def __init__(self, lm, strategy, top_k, use_cache):
        super().__init__(name=f"{lm.name}_generator")
        self.lm, self.strategy, self.top_k, self.use_cache = lm, strategy, top_k, use_cache

    def call(self, inputs):
        tokens = ops.cast(inputs["token_ids"], "int32")  # (B, L)
        keep = ops.cast(inputs["prompt_mask"], "bool")  # (B, L)
        batch, length = ops.shape(tokens)[0], ops.shape(tokens)[1]
        start = ops.maximum(ops.min(ops.sum(ops.cast(keep, "int32"), axis=1)), 1)

        def fill(index, tokens, logits):  # logits (B, V) of position index - 1
            uniform = ops.take(inputs["uniform"], index, axis=1)
            sampled = _sample(logits, uniform, inputs["temperature"], inputs["top_p"],
                              self.strategy, self.top_k)
            current = ops.take(tokens, index, axis=1)
            chosen = ops.where(ops.take(keep, index, axis=1), current, sampled)
            return ops.slice_update(tokens, (0, index), chosen[:, None])

        backbone = self.lm.backbone
        # The tied head as a row-major (H, V) copy, made once: one token's logits are then a
        # contiguous matrix-vector product (≈ 4× faster on PyTorch's CPU kernels than reading the
        # (V, H) table transposed; the flatten is what forces the copy on every backend).
        table = ops.transpose(ops.cast(backbone.token_embedding.embeddings, self.compute_dtype))
        head = ops.reshape(ops.reshape(table, (-1,)), ops.shape(table))  # (H, V)

        bias = self.lm.lm_head.bias  # (V,) or None

        def logits_of(hidden):  # (B, H) -> (B, V)
            logits = ops.cast(ops.matmul(hidden, head), "float32")
            return logits if bias is None else logits + ops.cast(bias, "float32")

        if not self.use_cache:
            def body(index, tokens):
                padding = ops.ones_like(tokens)
                hidden = backbone({"token_ids": tokens, "padding_mask": padding},
                                  training=False)["sequence_output"]  # (B, L, H)
                logits = logits_of(ops.take(hidden, index - 1, axis=1))
                return index + 1, fill(index, tokens, logits)

            return ops.while_loop(lambda i, _: ops.less(i, length), body, (start, tokens))[1]

        cache = backbone.empty_cache(batch, length)
        _, cache = backbone.call_with_cache(tokens, cache, 0)  # fills every position

        def cached_body(index, tokens, cache):
            previous = ops.slice(tokens, (0, index - 1), (batch, 1))  # (B, 1)
            hidden, cache = backbone.call_with_cache(previous, cache, index - 1)
            return index + 1, fill(index, tokens, logits_of(hidden[:, 0])), cache

        loop = ops.while_loop(lambda i, *_: ops.less(i, length), cached_body,
                              (start, tokens, cache))
        return loop[1]
