"""Reading and writing the tensor files that checkpoints come in, with NumPy only.

``safetensors`` is a simple, safe format: an 8-byte little-endian header length ``N``, ``N`` bytes of
JSON describing each tensor (``dtype``, ``shape``, ``data_offsets`` into the data that follows), then
the raw little-endian data. Reading it takes a few lines of NumPy, so no extra package is needed and
every offset can be checked against the file size before any byte is trusted: a truncated or
corrupted download is reported by name instead of producing garbage weights. PyTorch's
``pytorch_model.bin`` (a pickle) is read with ``torch.load(weights_only=True)``, imported on use.

Example:
>>> import numpy as np, os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
>>> write_safetensors(path, {"w": np.arange(6, dtype="float32").reshape(2, 3)})
>>> read_safetensors(path)["w"].tolist()
[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
"""

import json
import os
import re
import struct

import numpy as np

from keras_bert_lab.errors import PresetError

# safetensors dtype code -> NumPy dtype (little-endian); BF16 is widened to float32 on read.
_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4",
           "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}
_CODES = {np.dtype(v).str: k for k, v in _DTYPES.items() if k != "BF16"}
_MAX_HEADER = 100 * 1024 * 1024


def read_safetensors(path):
    """Every tensor of a ``.safetensors`` file as ``{name: np.ndarray}`` (BF16 → float32).

    Raises ``PresetError`` naming the file when it is truncated, its header is not valid JSON, or a
    tensor's byte range does not fit its shape and dtype.
    """
    path = os.fspath(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise _corrupt(path, f"it has only {size} bytes, fewer than the 8-byte header length")
        (header_len,) = struct.unpack("<Q", raw)
        if header_len > min(size - 8, _MAX_HEADER):
            raise _corrupt(path, f"its header claims {header_len} bytes but the file has {size}")
        try:
            header = json.loads(f.read(header_len).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise _corrupt(path, f"its header is not valid JSON ({error})") from None
    if not isinstance(header, dict):
        raise _corrupt(path, "its header is not a JSON object")
    start = 8 + header_len
    data_size = size - start
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=start, shape=(data_size,)) \
        if data_size else np.zeros(0, np.uint8)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            code, shape, (begin, end) = info["dtype"], list(info["shape"]), info["data_offsets"]
            dtype = np.dtype(_DTYPES[code])
        except (KeyError, TypeError, ValueError):
            raise _corrupt(path, f"tensor {name!r} has a malformed header entry {info!r}") from None
        expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if not 0 <= begin <= end <= data_size or end - begin != expected:
            raise _corrupt(path, f"tensor {name!r} {tuple(shape)} {code} needs bytes "
                                 f"[{begin}, {end}) of {data_size}")
        array = np.frombuffer(data[begin:end], dtype=dtype).reshape(shape)
        if code == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        out[name] = np.array(array)  # a copy: the file may be replaced while the model lives
    return out


def write_safetensors(path, tensors, metadata=None):
    """Write ``{name: array}`` as a ``.safetensors`` file that ``safetensors``/``transformers`` read.

    ``metadata`` is a dict of strings stored in the header (``transformers`` expects
    ``{"format": "pt"}``, the default).
    """
    metadata = {"format": "pt"} if metadata is None else dict(metadata)
    header, offset, arrays = {"__metadata__": metadata}, 0, []
    for name in sorted(tensors):
        array = np.asarray(tensors[name])
        if not array.flags.c_contiguous:  # (np.ascontiguousarray would make scalars 1-D)
            array = array.copy(order="C")
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        code = _CODES.get(array.dtype.str)
        if code is None:
            raise PresetError(f"Cannot write tensor {name!r} of dtype {array.dtype} as safetensors; "
                              "cast it to float32 first.")
        header[name] = {"dtype": code, "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
        arrays.append(array)
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * (-len(blob) % 8)  # the data start stays 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for array in arrays:
            f.write(array.tobytes())


def read_torch_bin(path):
    """A PyTorch ``state_dict`` file (``pytorch_model.bin``) as ``{name: np.ndarray}``.

    Loaded with ``weights_only=True``: the pickle may hold tensors only, never code.
    """
    import torch

    try:
        state = torch.load(os.fspath(path), map_location="cpu", weights_only=True)
    except Exception as error:  # truncated zip, bad pickle, non-tensor objects...
        text = str(error)
        if "Weights only load failed" in text:   # a pickle of objects, maybe code: refused
            found = re.search(r"(?:GLOBAL|global) ([\w.]+)", text)
            raise PresetError(
                f"Weights file {os.fspath(path)!r} holds Python objects besides tensors"
                f"{f' ({found.group(1)})' if found else ''}, which could run code when loaded; "
                "it was refused, not loaded. Use a model.safetensors file, or a "
                "pytorch_model.bin from a source you trust re-saved as a plain state dict."
            ) from None
        first = " ".join(text.split())[:200]   # one line: torch's messages span several
        raise _corrupt(os.fspath(path), f"torch.load failed: {type(error).__name__}: {first}") \
            from None
    if not isinstance(state, dict):
        raise _corrupt(os.fspath(path), f"it holds a {type(state).__name__}, not a state dict")
    return {k: v.detach().float().numpy() if v.is_floating_point() else v.numpy()
            for k, v in state.items() if hasattr(v, "numpy")}


def read_state_dict(path):
    """``.safetensors`` or a PyTorch ``.bin``/``.pt`` file, chosen by extension."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise PresetError(f"Weights file {path!r} does not exist.")
    if path.endswith(".safetensors"):
        return read_safetensors(path)
    return read_torch_bin(path)


def _corrupt(path, why):
    return PresetError(f"Weights file {path!r} is truncated or corrupt: {why}. Copy or download it "
                       "again (its size should match the original).")
