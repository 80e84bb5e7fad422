"""A run's files as plain Python: model.safetensors as numpy arrays and
config.yaml as nested dicts (numpy and yaml only, no torch).

A run directory (results/<name>/runs/<run_id>/) holds config.yaml, the
resolved configuration written by attnlab, and model.safetensors, the trained
parameters in float32 under the names of docs/model.md ("embed.weight",
"blocks.0.attn.q.weight", ...) with PyTorch's shapes.
"""

from __future__ import annotations

import json
import os
import struct

import numpy as np

CHECKPOINT_FILE = "model.safetensors"
CONFIG_FILE = "config.yaml"

_ST_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
}


def read_safetensors(path: str) -> dict[str, np.ndarray]:
    """All tensors of a safetensors file (8-byte LE header length, JSON header,
    raw little-endian row-major data), as numpy arrays by name."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: truncated (no header length)")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError(f"{path}: header length {n} past the end of the file")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = memoryview(data)[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = np.dtype(_ST_DTYPES[info["dtype"]]).newbyteorder("<")
        begin, end = info["data_offsets"]
        shape = tuple(info["shape"])
        count = int(np.prod(shape)) if shape else 1
        if end - begin != count * dtype.itemsize or end > len(body):
            raise ValueError(f"{path}: {name}: data_offsets {begin}..{end} do not fit shape {shape} {info['dtype']}")
        out[name] = np.frombuffer(body[begin:end], dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))
    return out


def _in_run_dir(path: str, filename: str) -> str:
    return os.path.join(path, filename) if os.path.isdir(path) else path


def read_checkpoint(path: str) -> dict[str, np.ndarray]:
    """The parameters of a checkpoint (a model.safetensors file, or a run
    directory holding one): name -> float32 array of its PyTorch shape."""
    return read_safetensors(_in_run_dir(path, CHECKPOINT_FILE))


def read_config(path: str) -> dict:
    """A run's configuration (a config.yaml file, or a run directory holding
    one) as nested dicts: {"seed": 0, "task": {...}, "model": {...},
    "attention": {...}, "train": {...}}."""
    import yaml  # python3-yaml

    with open(_in_run_dir(path, CONFIG_FILE)) as f:
        return yaml.safe_load(f)
