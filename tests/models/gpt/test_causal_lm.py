"""GPTCausalLM: training, generation (greedy / top-k / top-p, with and without the cache), the
argument checks, and the task contract (config, .keras file, preset)."""

import keras
import numpy as np
import pytest

from keras_bert_lab.errors import InputError
from keras_bert_lab.models.gpt.backbone import GPTBackbone
from keras_bert_lab.models.gpt.config import GPTConfig
from keras_bert_lab.models.gpt.causal_lm import GPTCausalLM
from keras_bert_lab.pipelines.language_model import next_token_batch
from tests.conftest import to_numpy
from tests.models.gpt.test_backbone import predict

CONFIG = GPTConfig.from_size("tiny", vocabulary_size=300, num_heads=4, max_positions=32)
PROMPTS = [[5, 6, 7], [8, 9, 10, 11, 12], [13]]  # ragged: each row continues from its own end
# Every generate() call below uses 3 rows and L = 12 with top_k = 3 where it samples top-k, so
# that the compiled generation loops (one per strategy and cache use) are built once.
L, TOP_K = 12, 3


@pytest.fixture(scope="module")
def hf():
    """A random transformers ``OpenAIGPTLMHeadModel``; ``lm`` holds the same weights."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.models.gpt.test_parity import random_hf_lm

    return random_hf_lm(CONFIG, seed=3)


@pytest.fixture(scope="module")
def lm(hf):
    from keras_bert_lab.models.gpt.convert import load_hf_weights
    from tests.models.gpt.test_parity import hf_state

    model = GPTCausalLM(GPTBackbone(CONFIG))
    load_hf_weights(model, hf_state(hf))
    return model


def logits_of(lm, tokens):
    return predict(lm, {"token_ids": tokens, "padding_mask": np.ones_like(tokens)})


@pytest.mark.parametrize("strategy", ["greedy", "top_k", "top_p"])
def test_cache_gives_the_same_tokens(lm, strategy):
    kwargs = dict(max_length=L, strategy=strategy, top_k=TOP_K, top_p=0.8, temperature=1.5,
                  seed=7)
    cached = lm.generate(PROMPTS, **kwargs)
    uncached = lm.generate(PROMPTS, use_cache=False, **kwargs)
    np.testing.assert_array_equal(cached["token_ids"], uncached["token_ids"])
    for row, prompt in enumerate(PROMPTS):
        assert cached["token_ids"][row, :len(prompt)].tolist() == prompt
    assert cached["token_ids"].shape == (3, L) and cached["padding_mask"].all()


def test_greedy_follows_the_argmax_and_matches_transformers(lm, hf):
    import torch

    out = lm.generate(PROMPTS, max_length=L)["token_ids"]
    for row, prompt in enumerate(PROMPTS):
        logits = logits_of(lm, out[row:row + 1])[0]
        for i in range(len(prompt), L):
            assert out[row, i] == logits[i - 1].argmax()
        expected = hf.generate(torch.tensor([prompt]), max_length=L, do_sample=False,
                               pad_token_id=0).numpy()
        np.testing.assert_array_equal(out[row], expected[0])


def test_sampling_is_seeded_and_stays_in_the_kept_set(lm):
    a, b, c = (lm.generate(PROMPTS, max_length=L, strategy="top_k", top_k=TOP_K,
                           seed=seed)["token_ids"] for seed in (1, 1, 2))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    p = lm.generate(PROMPTS, max_length=L, strategy="top_p", top_p=0.5, seed=1)["token_ids"]
    for out, check in ((a, "top_k"), (p, "top_p")):
        for row, prompt in enumerate(PROMPTS):
            logits = logits_of(lm, out[row:row + 1])[0]
            for i in range(len(prompt), L):
                scores = logits[i - 1]
                if check == "top_k":
                    assert (scores > scores[out[row, i]]).sum() < TOP_K
                else:  # the tokens more likely than the chosen one hold less than top_p
                    probs = np.exp(scores - scores.max())
                    probs /= probs.sum()
                    assert probs[probs > probs[out[row, i]]].sum() < 0.5 + 1e-4


def test_narrow_sampling_is_greedy(lm):
    greedy = lm.generate(PROMPTS, max_length=L)["token_ids"]
    for kwargs in (dict(strategy="top_k", temperature=1e-4), dict(strategy="top_p", top_p=1e-6)):
        np.testing.assert_array_equal(lm.generate(PROMPTS, max_length=L, seed=5, top_k=TOP_K,
                                                  **kwargs)["token_ids"], greedy)


def test_array_prompts_with_padding_mask_and_end_token(lm):
    ids = np.array([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12], [13, 0, 0, 0, 0]])
    mask = (ids > 0).astype("int32")
    from_array = lm.generate(ids, max_length=L, padding_mask=mask)
    np.testing.assert_array_equal(from_array["token_ids"],
                                  lm.generate(PROMPTS, max_length=L)["token_ids"])
    end = int(from_array["token_ids"][0, 4])  # the second generated token of row 0
    out = lm.generate(ids, max_length=L, padding_mask=mask, end_token_id=end)
    first = 3 + list(from_array["token_ids"][0, 3:]).index(end)
    assert out["padding_mask"][0].tolist() == [1] * (first + 1) + [0] * (L - 1 - first)
    assert (out["token_ids"][0, first + 1:] == 0).all()
    flat, _ = GPTCausalLM._prompts([5, 6, 7], None)  # one prompt as a flat list: a batch of 1
    assert flat.tolist() == [[5, 6, 7]]


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_length=5), "greater than every prompt"),
    (dict(max_length=40), r"\[2, 32\]"),
    (dict(strategy="beam"), "greedy"),
    (dict(strategy="top_k", top_k=0), r"top_k must be an integer in \[1, 300\]"),
    (dict(strategy="top_k", top_k=301), r"\[1, 300\]"),
    (dict(strategy="top_p", top_p=0.0), r"top_p must be in \(0, 1\]"),
    (dict(strategy="top_p", top_p=1.5), r"\(0, 1\]"),
    (dict(temperature=0.0), "temperature must be a number > 0"),
    (dict(temperature=-1), "> 0"),
])
def test_bad_generation_arguments(lm, kwargs, message):
    options = dict(max_length=10) | kwargs
    with pytest.raises(InputError, match=message):
        lm.generate([[1, 2, 3, 4, 5]], **options)


def test_bad_prompts(lm):
    with pytest.raises(InputError, match="left padding"):
        lm.generate(np.array([[0, 5, 6]]), max_length=8, padding_mask=np.array([[0, 1, 1]]))
    with pytest.raises(InputError, match="empty"):
        lm.generate([[1, 2], []], max_length=8)
    with pytest.raises(InputError, match="outside"):
        lm.generate([[1, 300]], max_length=8)
    long = [list(range(40)), list(range(5)), [7]]
    with pytest.raises(InputError, match="exceeds the position table"):
        lm.generate(long, max_length=L)
    with pytest.warns(UserWarning, match=f"last {L - 1}"):
        out = lm.generate(long, max_length=L, truncate=True)["token_ids"]
    assert out[0, :L - 1].tolist() == list(range(40 - (L - 1), 40))
    assert out[1, :5].tolist() == list(range(5))


def test_fit_on_arrays_and_a_dataset():
    """The loss is the cross-entropy averaged over real tokens; fit runs on NumPy and tf.data."""
    rows = np.random.default_rng(0).integers(0, CONFIG.vocabulary_size, (4, 12)).astype("int32")
    mask = np.ones_like(rows)
    mask[2:, 8:] = 0
    x, y, w = next_token_batch(rows, mask)
    model = GPTCausalLM(GPTBackbone(CONFIG))
    model.compile()
    logits = predict(model, x).astype("float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -(np.take_along_axis(log_probs, y[..., None], -1)[..., 0] * w).sum() / w.sum()
    loss = model.loss(y, logits.astype("float32"), sample_weight=w.astype("float32"))
    np.testing.assert_allclose(float(to_numpy(loss)), expected, rtol=1e-5)
    history = model.fit(x, y, sample_weight=w, epochs=3, verbose=0).history
    assert history["loss"][-1] < history["loss"][0] and "accuracy" in history
    tf = pytest.importorskip("tensorflow")
    data = tf.data.Dataset.from_tensor_slices((rows, mask)).batch(4).map(next_token_batch)
    history = model.fit(data, epochs=1, verbose=0, shuffle=False).history
    assert np.isfinite(history["loss"]).all()


def test_config_keras_file_and_preset(lm, tmp_path):
    x = {"token_ids": np.array([[5, 6, 7, 8]]), "padding_mask": np.ones((1, 4), "int32")}
    expected = predict(lm, x)
    again = GPTCausalLM.from_config(lm.get_config())
    assert again.get_config() == lm.get_config()
    lm.save(tmp_path / "lm.keras")
    restored = keras.saving.load_model(tmp_path / "lm.keras")
    assert type(restored) is GPTCausalLM
    np.testing.assert_allclose(predict(restored, x), expected, atol=1e-6)
    vocab = [f"t{i}" for i in range(CONFIG.vocabulary_size)]
    preset = lm.save_to_preset(tmp_path / "preset", vocabulary=vocab, merges=["t 1", "t1 0"])
    assert (preset / "merges.txt").is_file()
    loaded = GPTCausalLM.from_preset(preset)
    np.testing.assert_allclose(predict(loaded, x), expected, atol=1e-6)
    assert loaded.preset_info.merges == ("t 1", "t1 0")
    assert lm.count_params() == CONFIG.num_parameters()  # the tied head adds no weight
    assert lm.get_config()["output_bias"] is False


# ---- the optional output bias (issue 15: off is GPT-1 exactly) ---------------------------------
def biased_twin(lm, seed=0):
    """A ``GPTCausalLM(output_bias=True)`` on ``lm``'s own backbone, with a random bias (V,)."""
    model = GPTCausalLM(lm.backbone, output_bias=True)
    bias = np.random.default_rng(seed).normal(0.0, 3.0, CONFIG.vocabulary_size).astype("float32")
    model.lm_head.bias.assign(bias)
    return model, bias


def test_output_bias_adds_to_transformers_logits(lm, hf):
    """With the bias: transformers' (bias-free) logits plus the bias; without: no weight."""
    import torch

    model, bias = biased_twin(lm)
    tokens = np.array([[5, 6, 7, 8, 9], [10, 11, 12, 13, 14]])
    with torch.no_grad():
        reference = hf(torch.tensor(tokens)).logits.numpy()
    np.testing.assert_allclose(logits_of(model, tokens), reference + bias, atol=1e-4, rtol=0)
    assert lm.lm_head.bias is None and not lm.lm_head.use_bias
    assert model.count_params() == CONFIG.num_parameters() + CONFIG.vocabulary_size
    out = model.generate(PROMPTS, max_length=L)["token_ids"]  # generation scores with the bias
    for row, prompt in enumerate(PROMPTS):
        logits = logits_of(model, out[row:row + 1])[0]
        for i in range(len(prompt), L):
            assert out[row, i] == logits[i - 1].argmax()
    assert not np.array_equal(out, lm.generate(PROMPTS, max_length=L)["token_ids"])


def test_output_bias_trains_and_round_trips(tmp_path):
    rows = np.random.default_rng(1).integers(0, CONFIG.vocabulary_size, (4, 12)).astype("int32")
    x, y, w = next_token_batch(rows, np.ones_like(rows))
    keras.utils.set_random_seed(0)
    model, start = biased_twin(GPTCausalLM(GPTBackbone(CONFIG)), seed=2)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(x, y, sample_weight=w, epochs=2, verbose=0)
    trained = to_numpy(model.lm_head.bias)
    assert np.abs(trained - start).max() > 1e-3   # the bias is a trained weight
    assert model.get_config()["output_bias"] is True
    again = GPTCausalLM.from_config(model.get_config())
    assert again.get_config() == model.get_config() and again.lm_head.use_bias
    expected = predict(model, x)
    model.save(tmp_path / "lm.keras")
    restored = keras.saving.load_model(tmp_path / "lm.keras")
    np.testing.assert_array_equal(to_numpy(restored.lm_head.bias), trained)
    np.testing.assert_allclose(predict(restored, x), expected, atol=1e-5)
    vocab = [f"t{i}" for i in range(CONFIG.vocabulary_size)]
    preset = model.save_to_preset(tmp_path / "preset", vocabulary=vocab, merges=["t 1"])
    loaded = GPTCausalLM.from_preset(preset)
    assert loaded.output_bias and loaded.get_config()["output_bias"] is True
    np.testing.assert_array_equal(to_numpy(loaded.lm_head.bias), trained)
    np.testing.assert_allclose(predict(loaded, x), expected, atol=1e-5)
    assert GPTCausalLM.from_preset(preset, output_bias=False).lm_head.bias is None
