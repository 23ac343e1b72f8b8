"""Our NumPy safetensors reader/writer against the reference ``safetensors`` package."""

import struct

import numpy as np
import pytest

from keras_bert_lab.presets.convert.tensor_files import (read_safetensors, read_state_dict,
                                                 write_safetensors)
from keras_bert_lab.errors import PresetError

safetensors_numpy = pytest.importorskip("safetensors.numpy")

TENSORS = {"a.weight": np.arange(12, dtype="float32").reshape(3, 4),
           "b": np.array([1, -2, 3], "int64"), "scalar": np.array(2.5, "float64"),
           "empty": np.zeros((0, 4), "float32"), "half": np.array([0.5, -1.0], "float16")}


def test_written_file_reads_in_reference_and_back(tmp_path):
    path = tmp_path / "x.safetensors"
    write_safetensors(path, TENSORS)
    for got in (safetensors_numpy.load_file(str(path)), read_safetensors(path)):
        assert sorted(got) == sorted(TENSORS)
        for key, value in TENSORS.items():
            assert got[key].dtype == value.dtype and got[key].shape == value.shape
            np.testing.assert_array_equal(got[key], value)


def test_reads_reference_files_including_bfloat16(tmp_path):
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    path = tmp_path / "ref.safetensors"
    values = torch.tensor([[1.0, -2.5, 3.140625], [0.0, 1e-3, 65280.0]])
    safetensors_torch.save_file({"bf": values.to(torch.bfloat16), "f": values}, str(path))
    got = read_safetensors(path)
    np.testing.assert_array_equal(got["bf"], values.to(torch.bfloat16).float().numpy())
    np.testing.assert_array_equal(got["f"], values.numpy())


def test_truncated_and_garbled_files_are_reported(tmp_path):
    path = tmp_path / "x.safetensors"
    write_safetensors(path, TENSORS)
    data = path.read_bytes()
    for broken, why in ((data[:-5], "needs bytes"), (data[:4], "fewer than the 8-byte"),
                        (struct.pack("<Q", 10**9) + data[8:], "header claims"),
                        (data[:8] + b"#" + data[9:], "not valid JSON")):
        path.write_bytes(broken)
        with pytest.raises(PresetError, match=f"truncated or corrupt: .*{why}"):
            read_safetensors(path)
    with pytest.raises(PresetError, match="does not exist"):
        read_state_dict(tmp_path / "none.safetensors")


def test_torch_bin_is_read_weights_only(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "pytorch_model.bin"
    torch.save({"w": torch.ones(2, 3), "n": torch.tensor([1, 2])}, path)
    got = read_state_dict(path)
    np.testing.assert_array_equal(got["w"], np.ones((2, 3), "float32"))
    np.testing.assert_array_equal(got["n"], [1, 2])
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(PresetError, match="torch.load failed"):
        read_state_dict(path)


def test_docstring_examples():
    import doctest

    import keras_bert_lab.presets.convert.tensor_files as module

    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
