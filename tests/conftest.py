"""Shared test fixtures. Every test runs under the backend named by KERAS_BACKEND."""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _share_jax_compilations():
    """One JAX compilation cache for this test session and every child process it starts.

    Many tests build the same tiny models, and on JAX compiling dominates their run time; the
    cache (a fresh folder per session, removed at exit, so no run depends on an earlier one)
    lets a program compiled once be loaded again. Results do not change: the cache only keys
    compiled executables by their program."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="kbl-tests-jax-cache-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ.update(JAX_COMPILATION_CACHE_DIR=folder,
                      JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                      JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")


_share_jax_compilations()


def _compile_quickly():
    """XLA compiles the tests' programs with its CPU backend's optimisation off.

    The programs are tiny and most run a few times, so compiling dominates (on JAX, 35% of
    tests/tasks' time went into LLVM's optimisation passes). The computation is the same; only
    the machine code is less tuned. Children inherit it; benchmarks never run under it."""
    quick = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {quick}".strip()


_compile_quickly()

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from keras_bert_lab.data import registry  # noqa: E402
from keras_bert_lab.errors import MissingPackageError  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Each test starts from the default float32 policy and a fixed seed."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")


def padded_pair_batch(vocabulary_size=30522, lengths=(24, 17, 9), first_lengths=(10, 6, 4), seed=0,
                      cls_id=101, sep_id=102, first_word_id=103):
    """A padded batch of sentence pairs: [CLS] A [SEP] B [SEP] [PAD]…, mixed segment ids; word ids
    are drawn from ``[first_word_id, vocabulary_size)``."""
    rng = np.random.default_rng(seed)
    batch, total = len(lengths), max(lengths)
    token_ids = np.zeros((batch, total), "int32")
    segment_ids = np.zeros((batch, total), "int32")
    padding_mask = np.zeros((batch, total), "int32")
    for row, (length, a) in enumerate(zip(lengths, first_lengths)):
        token_ids[row, :length] = rng.integers(first_word_id, vocabulary_size, size=length)
        token_ids[row, 0], token_ids[row, a + 1], token_ids[row, length - 1] = cls_id, sep_id, sep_id
        segment_ids[row, a + 2:length] = 1
        padding_mask[row, :length] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


# ---- the real bert-base-uncased vocab and HF's fast tokenizer on it (text tests) ---------
def locate_or_skip(name, part=None):
    try:
        return registry.locate(name, part)
    except MissingPackageError as error:  # `make test` installs it; say how, do not hide it
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def vocab_path():
    return str(locate_or_skip("bert_uncased_vocab"))


def _hf(vocab_path, lowercase):
    transformers = pytest.importorskip("transformers")
    # transformers 5.x: vocab_file= silently builds a 5-token vocab; vocab= reads the file.
    hf = transformers.BertTokenizerFast(vocab=vocab_path, do_lower_case=lowercase)
    assert len(hf) == 30522
    return hf


@pytest.fixture(scope="session")
def hf_uncased(vocab_path):
    return _hf(vocab_path, True)


@pytest.fixture(scope="session")
def hf_cased(vocab_path):
    return _hf(vocab_path, False)


@pytest.fixture(scope="session")
def tokenizer(vocab_path):
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    return WordPieceTokenizer(vocab_path)


@pytest.fixture(scope="session")
def cased_tokenizer(vocab_path):
    from keras_bert_lab.preprocessing.wordpiece import WordPieceTokenizer

    return WordPieceTokenizer(vocab_path, lowercase=False)


@pytest.fixture(scope="session")
def wikitext_valid_test():
    locate_or_skip("wikitext2", "valid")
    return registry.wikitext2_paragraphs("valid") + registry.wikitext2_paragraphs("test")


def hf_encode(hf, texts, **kwargs):
    """HF's ids, offsets and word ids (no special tokens) of each text, as plain lists."""
    enc = hf(list(texts), add_special_tokens=False, return_offsets_mapping=True, **kwargs)
    return [{"token_ids": enc["input_ids"][i],
             "start_offsets": [s for s, _ in enc["offset_mapping"][i]],
             "end_offsets": [e for _, e in enc["offset_mapping"][i]],
             "word_ids": enc.word_ids(i)} for i in range(len(texts))]
