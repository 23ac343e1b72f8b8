"""The pretraining recipe's switches: gradient accumulation, float16 loss scaling, jit, OOM advice.

Gradient accumulation (Keras' ``gradient_accumulation_steps=k``) must turn ``k`` micro-batches into
one update with their mean gradient — the update of one step on the concatenated batch. That holds
for BERT's masked-LM loss (a mean over the *weighted* masked positions) only when every
micro-batch holds the same number of real masked positions: Keras averages the micro-batches'
means. The tests build micro-batches where both coincide, and a control where they do not.
"""

import os

import keras
import numpy as np
import pytest

from keras_bert_lab import BertBackbone, BertConfig, BertPretrainer
from keras_bert_lab.training.optimizers import adamw
from tests.conftest import padded_pair_batch, to_numpy

VOCAB = 500
CONFIG = BertConfig.from_size("tiny", vocabulary_size=VOCAB, max_positions=64, num_layers=1,
                              dropout=0.0, attention_dropout=0.0)  # no dropout: same function
MICRO, K, LENGTH, P = 2, 4, 16, 3
# Each backend's quickest way to run a few steps: JAX jitted, TensorFlow graph mode (XLA compiles
# slowly), torch eager.
JIT = keras.backend.backend() == "jax"


def micro_batch(seed, weights):
    """A pretraining micro-batch of ``len(weights)`` pairs with the given (rows, P) mask weights."""
    rng = np.random.default_rng(seed)
    rows = len(weights)
    lengths = tuple(int(n) for n in rng.integers(LENGTH // 2, LENGTH + 1, size=rows))
    x = padded_pair_batch(vocabulary_size=VOCAB, lengths=lengths,
                          first_lengths=tuple(n // 2 - 1 for n in lengths), seed=seed,
                          first_word_id=104)
    x = {k: np.pad(v, ((0, 0), (0, LENGTH - v.shape[1]))) for k, v in x.items()}
    positions = np.stack([np.sort(rng.choice(np.arange(1, n - 1), P, replace=False))
                          for n in lengths]).astype("int32")
    y_mlm = np.take_along_axis(x["token_ids"], positions, axis=1)
    np.put_along_axis(x["token_ids"], positions, 103, axis=1)
    x["mask_positions"] = positions
    y = {"mlm": y_mlm, "nsp": rng.integers(0, 2, size=rows).astype("int32")}
    sw = {"mlm": np.asarray(weights, "float32"), "nsp": np.ones(rows, "float32")}
    return x, y, sw


def concatenate(batches):
    return keras.tree.map_structure(lambda *parts: np.concatenate(parts), *batches)


# Mask weights per micro-batch: 4 real masked positions in each, spread differently over the rows.
EQUAL_COUNTS = ([[1, 1, 1], [1, 0, 0]], [[1, 1, 0], [1, 1, 0]], [[1, 0, 0], [1, 1, 1]],
                [[0, 1, 1], [1, 0, 1]])
UNEQUAL_COUNTS = ([[1, 0, 0], [0, 0, 0]], [[1, 1, 1], [1, 1, 1]], [[1, 1, 0], [1, 0, 0]],
                  [[1, 1, 1], [1, 0, 1]])


def weights_of(model):
    return [to_numpy(v).copy() for v in model.trainable_variables]


def pair_of_models(make_optimizer):
    """Two pretrainers with identical weights: one accumulating over K micro-batches, one not."""
    accumulating = BertPretrainer(BertBackbone(CONFIG))
    accumulating.compile(optimizer=make_optimizer(accumulating, gradient_accumulation_steps=K),
                         jit_compile=JIT)
    plain = BertPretrainer(BertBackbone(CONFIG))
    plain.compile(optimizer=make_optimizer(plain), jit_compile=JIT)
    plain.set_weights(accumulating.get_weights())
    return accumulating, plain


OPTIMIZERS = {
    # Plain SGD: the update is the gradient itself, so a wrong scale (sum instead of mean) shows.
    "sgd": lambda model, **kw: keras.optimizers.SGD(learning_rate=0.5, **kw),
    # The recipe's AdamW (decay on >= 2-D weights, global-norm clipping after averaging), constant
    # rate: a schedule is evaluated at the micro-batch count, which differs between the two models.
    "adamw": lambda model, **kw: adamw(model, learning_rate=1e-3, **kw),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_accumulated_micro_batches_equal_one_step_on_their_concatenation(name):
    accumulating, plain = pair_of_models(OPTIMIZERS[name])
    initial = weights_of(accumulating)
    for update in range(2):  # two updates: Adam's second step depends on gradient magnitudes
        batches = [micro_batch(10 * update + i, w) for i, w in enumerate(EQUAL_COUNTS)]
        before = weights_of(accumulating)
        for i, (x, y, sw) in enumerate(batches):
            accumulating.train_on_batch(x, y, sample_weight=sw)
            if i < K - 1:  # no update between the micro-batches of one step
                for a, b in zip(before, weights_of(accumulating)):
                    np.testing.assert_array_equal(a, b)
                assert int(to_numpy(accumulating.optimizer.iterations)) == update
        assert int(to_numpy(accumulating.optimizer.iterations)) == update + 1
        x, y, sw = concatenate(batches)
        plain.train_on_batch(x, y, sample_weight=sw)

    moved = max(np.abs(a - b).max() for a, b in zip(initial, weights_of(plain)))
    assert moved > 1e-3  # the comparison below is not between two untouched models
    for variable, a, b in zip(plain.trainable_variables, weights_of(accumulating),
                              weights_of(plain)):
        np.testing.assert_allclose(a, b, atol=2e-5, rtol=1e-4, err_msg=variable.path)

    if name == "sgd":
        # The control: with different numbers of real masked positions per micro-batch, Keras'
        # accumulated update (mean of the micro-batch means) differs from the concatenated
        # batch's (mean over all masked tokens) — why the batches above hold equal counts.
        batches = [micro_batch(20 + i, w) for i, w in enumerate(UNEQUAL_COUNTS)]
        for x, y, sw in batches:
            accumulating.train_on_batch(x, y, sample_weight=sw)
        x, y, sw = concatenate(batches)
        plain.train_on_batch(x, y, sample_weight=sw)
        table = plain.backbone.token_embedding.embeddings
        gap = np.abs(to_numpy(table) - to_numpy(
            accumulating.backbone.token_embedding.embeddings)).max()
        assert gap > 1e-4, gap


# ---- mixed precision ---------------------------------------------------------------------------
def recipe_model(**overrides):
    from keras_bert_lab.models.bert.pretrain import PretrainSettings, build_model

    settings = PretrainSettings(size="tiny", steps=10, learning_rate=1e-3, **overrides)
    return build_model(settings, vocabulary_size=VOCAB)


def test_mixed_float16_scales_the_loss_and_skips_overflowing_steps():
    model = recipe_model(precision="mixed_float16", jit_compile=str(JIT).lower())
    assert model.backbone.dtype_policy.name == "mixed_float16"
    optimizer = model.optimizer
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    x, y, sw = micro_batch(0, EQUAL_COUNTS[0])

    model.train_on_batch(x, y, sample_weight=sw)  # a normal step builds the optimizer
    scale = float(to_numpy(optimizer.dynamic_scale))
    before = weights_of(model)
    # A huge (finite, float32) loss: its scaled gradient overflows float16 on the way back.
    huge = dict(sw, nsp=np.full_like(sw["nsp"], 1e5))
    logs = model.train_on_batch(x, y, sample_weight=huge, return_dict=True)
    assert np.isfinite(logs["loss"]) and logs["loss"] > 1e4
    assert float(to_numpy(optimizer.dynamic_scale)) == scale / 2  # the scale drops
    for variable, a, b in zip(model.trainable_variables, before, weights_of(model)):
        assert np.isfinite(b).all(), variable.path
        np.testing.assert_array_equal(a, b, err_msg=variable.path)  # the step is skipped

    model.train_on_batch(x, y, sample_weight=sw)  # training goes on from there
    after = weights_of(model)
    assert all(np.isfinite(a).all() for a in after)
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))


def test_bfloat16_needs_no_loss_scale_and_jit_switch_reaches_compile():
    model = recipe_model(precision="mixed_bfloat16", jit_compile="false", accumulation=4)
    assert model.backbone.dtype_policy.name == "mixed_bfloat16"
    assert not isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert model.optimizer.gradient_accumulation_steps == 4
    assert model.jit_compile is False


def test_kbl_pretrain_has_the_recipe_switches(tmp_path):
    from keras_bert_lab.cli import build_parser

    args = build_parser().parse_args([
        "pretrain", "--output", str(tmp_path), "--precision", "mixed_float16", "--jit-compile",
        "false", "--accumulation", "4", "--batch-size", "8"])
    assert (args.precision, args.jit_compile, args.accumulation, args.batch_size) == (
        "mixed_float16", "false", 4, 8)


# ---- out of memory -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    words = "river city music album team season film station school bridge war king".split()
    lines = []
    for doc in range(12):
        lines += [f"the {' '.join(rng.choice(words, size=8))} of document {doc} ."
                  for _ in range(5)] + [""]
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(lines))
    return str(path)


def backend_out_of_memory_error():
    """The error this backend really raises when an allocation cannot be met (4 PB of zeros)."""
    try:
        keras.ops.zeros((1 << 22, 1 << 22, 64))
    except Exception as error:  # noqa: BLE001 - whatever type the backend uses is the point
        return error
    pytest.skip("a 4 PB allocation succeeded")


def test_out_of_memory_in_the_training_step_advises_accumulation(corpus_file, tmp_path,
                                                                 monkeypatch, capsys):
    from keras_bert_lab.cli import main

    error = backend_out_of_memory_error()
    calls = []

    def train_step(self, *args):  # (data), or (state, data) on JAX
        calls.append(1)
        raise error

    monkeypatch.setattr(BertPretrainer, "train_step", train_step)
    out = str(tmp_path / "run")
    code = main(["pretrain", "--corpus", corpus_file, "--eval-corpus", corpus_file, "--output", out,
                 "--size", "tiny", "--sequence-length", "32", "--batch-size", "4", "--steps", "2",
                 "--eval-batches", "1", "--jit-compile", "false"])
    stderr = capsys.readouterr().err
    assert calls, "the patched training step never ran"
    assert code == 2, stderr
    assert "does not fit in memory" in stderr and type(error).__name__ in stderr
    assert "--accumulation" in stderr and "--batch-size 2 --accumulation 2" in stderr
    assert not os.path.exists(out)   # a start that never trained leaves nothing behind
