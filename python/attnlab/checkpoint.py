"""A run's files as plain Python: model.safetensors as numpy arrays and
config.yaml as nested dicts (numpy and yaml only, no torch).

A run directory (results/<name>/runs/<run_id>/) holds config.yaml, the
resolved configuration written by attnlab, and model.safetensors, the trained
parameters in float32 under the names of docs/model.md ("embed.weight",
"blocks.0.attn.q.weight", ...) with PyTorch's shapes. The checkpoint's
metadata holds the run's facts (vocab, max_positions) and its provenance
(commit, build_type, isa, threads): see read_run_facts.
"""

from __future__ import annotations

import json
import os
import struct

import numpy as np

from .files import open_input

CHECKPOINT_FILE = "model.safetensors"
CONFIG_FILE = "config.yaml"

_ST_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
}
_METADATA = "__metadata__"
_MAX_HEADER = 100 << 20  # as the safetensors format: a header past 100 MB is no header


def _strict_json(text: str, path: str):
    """The header's JSON as attnlab's reader accepts it: objects, arrays,
    strings and integers only (no floats, NaN, true/false/null), no key twice."""
    def no_float(s):
        raise ValueError(f"{path}: header holds the number {s}, only integers are allowed")

    def no_constant(s):
        raise ValueError(f"{path}: header holds {s}, only integers are allowed")

    def pairs(items):
        out = {}
        for k, v in items:
            if k in out:
                raise ValueError(f"{path}: header names {k!r} twice")
            if v is None or isinstance(v, bool):
                raise ValueError(f"{path}: {k}: {json.dumps(v)} is not allowed in a header")
            out[k] = v
        return out

    try:
        return json.loads(text, parse_float=no_float, parse_constant=no_constant, object_pairs_hook=pairs)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: malformed JSON header at header byte {e.pos}: {e.msg}") from None


def _check_entry(path: str, name: str, info) -> tuple[np.dtype, tuple, int, int]:
    def bad(what):
        return ValueError(f"{path}: tensor {name}: {what}")

    if not isinstance(info, dict):
        raise bad(f"expected an object, got {type(info).__name__}")
    for key in info:
        if key not in ("dtype", "shape", "data_offsets"):
            raise bad(f'unknown field "{key}" (expected dtype, shape, data_offsets)')
    for key in ("dtype", "shape", "data_offsets"):
        if key not in info:
            raise bad(f'missing "{key}"')
    if info["dtype"] not in _ST_DTYPES:
        raise bad(f"dtype {info['dtype']!r} unknown (expected one of {', '.join(_ST_DTYPES)})")
    dtype = np.dtype(_ST_DTYPES[info["dtype"]]).newbyteorder("<")
    shape = info["shape"]
    if not isinstance(shape, list) or any(not isinstance(d, int) or d < 0 for d in shape):
        raise bad(f"shape {shape!r} must be an array of non-negative integers")
    offsets = info["data_offsets"]
    if (not isinstance(offsets, list) or len(offsets) != 2
            or any(not isinstance(o, int) or o < 0 for o in offsets)):
        raise bad(f"data_offsets {offsets!r} must be [begin, end], two non-negative integers")
    begin, end = offsets
    if end < begin:
        raise bad(f"data_offsets [{begin}, {end}] end before they begin")
    count = int(np.prod(shape, dtype=object)) if shape else 1
    if end - begin != count * dtype.itemsize:
        raise bad(f"shape {shape} holds {count * dtype.itemsize} bytes of {info['dtype']}, "
                  f"but data_offsets [{begin}, {end}] span {end - begin}")
    return dtype, tuple(shape), begin, end


def read_safetensors_header(path: str) -> tuple[int, dict]:
    """(header length, header dict) of a safetensors file, checked as attnlab's
    C++ reader checks it before any tensor data is read: the length against the
    file's size, strict JSON, every entry's dtype, shape and offsets, and the
    tensors tiling the data section exactly (no overlap, gap or tail). Raises
    ValueError naming the file and the problem (a file that is not regular,
    such as a FIFO or /dev/zero, included: files.open_input)."""
    f, size = open_input(path)
    with f:
        head = f.read(8)
        if len(head) < 8:
            raise ValueError(f"{path}: not a safetensors file: {size} bytes, too short for the 8-byte header length")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8 or n > _MAX_HEADER:
            raise ValueError(f"{path}: header length {n} is larger than the file ({size - 8} bytes follow "
                             "the length): truncated or not a safetensors file")
        raw = f.read(n)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: header is not UTF-8 ({e})") from None
    header = _strict_json(text, path)
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is {type(header).__name__}, expected a JSON object")
    meta = header.get(_METADATA, {})
    if not isinstance(meta, dict) or any(not isinstance(v, str) for v in meta.values()):
        raise ValueError(f"{path}: {_METADATA} must be an object of strings")
    spans = []
    for name, info in header.items():
        if name != _METADATA:
            _, _, begin, end = _check_entry(path, name, info)
            spans.append((begin, end, name))
    data_size = size - 8 - n
    needed = max((end for _, end, _ in spans), default=0)
    if needed > data_size:
        raise ValueError(f"{path}: data section truncated: the tensors need {needed} bytes, the file holds {data_size}")
    at = 0
    for begin, end, name in sorted(spans):
        if begin != at:
            what = "overlap the previous tensor" if begin < at else "leave a gap"
            raise ValueError(f"{path}: tensor {name}: data_offsets [{begin}, {end}] {what} "
                             f"(expected it to begin at {at})")
        at = end
    if at != data_size:
        raise ValueError(f"{path}: {data_size - at} bytes after the last tensor's data")
    return n, header


def read_safetensors(path: str) -> dict[str, np.ndarray]:
    """All tensors of a safetensors file (8-byte LE header length, JSON header,
    raw little-endian row-major data), as numpy arrays by name. The header is
    checked first (read_safetensors_header); then each tensor is read from its
    offset, so a bad file costs no more than its header."""
    n, header = read_safetensors_header(path)
    out = {}
    f, _ = open_input(path)
    with f:
        for name, info in header.items():
            if name == _METADATA:
                continue
            dtype, shape, begin, end = _check_entry(path, name, info)
            f.seek(8 + n + begin)
            a = np.frombuffer(f.read(end - begin), dtype=dtype)
            out[name] = a.reshape(shape).astype(dtype.newbyteorder("="))
    return out


def read_safetensors_metadata(path: str) -> dict[str, str]:
    """The header's __metadata__ (strings by name; {} when absent)."""
    return dict(read_safetensors_header(path)[1].get(_METADATA, {}))


def _in_run_dir(path: str, filename: str) -> str:
    return os.path.join(path, filename) if os.path.isdir(path) else path


def read_checkpoint(path: str) -> dict[str, np.ndarray]:
    """The parameters of a checkpoint (a model.safetensors file, or a run
    directory holding one): name -> float32 array of its PyTorch shape. As
    attnlab's eval, a tensor holding NaN or infinite values is refused
    (ValueError naming the file and the tensor): it would only show as a NaN
    loss."""
    file = _in_run_dir(path, CHECKPOINT_FILE)
    params = read_safetensors(file)
    for name, a in params.items():
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise ValueError(f"{file}: tensor {name} holds non-finite values (NaN or infinity)")
    return params


def read_run_facts(path: str) -> dict:
    """What attnlab recorded in a checkpoint (file or run directory) to
    rebuild its model, and the build that trained it (docs/outputs.md):
    {"vocab": int, "max_positions": int, "commit": str, "build_type": str,
    "isa": str, "threads": int, "version": str}. A key attnlab did not record
    (checkpoints written before it did) is absent."""
    meta = read_safetensors_metadata(_in_run_dir(path, CHECKPOINT_FILE))
    facts = {}
    for key, value in meta.items():
        if key in ("vocab", "max_positions", "threads"):
            try:
                facts[key] = int(value)
            except ValueError:
                raise ValueError(f"{path}: metadata {key} {value!r} is not an integer") from None
        elif key != "format":
            facts[key] = value
    return facts


def read_config(path: str) -> dict:
    """A run's configuration (a config.yaml file, or a run directory holding
    one) as nested dicts: {"seed": 0, "task": {...}, "model": {...},
    "attention": {...}, "train": {...}}. The file is read as attnlab reads it
    (files.read_input: a regular file of at most 1 MiB) and checked as attnlab
    checks it (config.check_config: every key known, once, applying to the
    run; every needed key; values of their type and range): a config.yaml the
    binary refuses raises a ValueError naming the file, the line and the key."""
    from .config import check_config
    from .files import read_text

    file = _in_run_dir(path, CONFIG_FILE)
    return check_config(read_text(file, "run_config"), file)


RESULT_FILE = "result.yaml"


class Run:
    """One run directory of `attnlab run` (results/<name>/runs/<run_id>/), as
    load_run opens it. Read when opened: `path`, `config` (config.yaml as
    nested dicts, checked as read_config checks it) and `result` (result.yaml:
    status, final and best metrics, wall time, build; None while the run has
    none). Read on demand, so that a committed run, which keeps config.yaml,
    metrics.csv and result.yaml but no checkpoint, opens all the same:

        metrics()      metrics.csv as a pandas DataFrame (read_metrics; pandas)
        has_checkpoint whether model.safetensors is there
        params()       its parameters, name -> float32 numpy array (read_checkpoint)
        facts()        its recorded vocab, max_positions and build (read_run_facts)
        model(dtype)   the PyTorch model with its weights, computing in dtype
                       (default torch.float64; torch.float32 keeps the weights
                       as stored); model.forward(tokens, targets) gives the
                       loss and logits
    """

    def __init__(self, path: str):
        if not os.path.isdir(path):
            raise FileNotFoundError(f"{path}: not a run directory")
        self.path = path
        self.config = read_config(path)
        result = os.path.join(path, RESULT_FILE)
        self.result = _read_yaml(result) if os.path.exists(result) else None

    def __repr__(self) -> str:
        status = self.result.get("status") if isinstance(self.result, dict) else None
        return f"Run({self.path!r}, status={status!r}, checkpoint={self.has_checkpoint})"

    @property
    def has_checkpoint(self) -> bool:
        return os.path.exists(os.path.join(self.path, CHECKPOINT_FILE))

    def metrics(self):
        from .results import read_metrics
        return read_metrics(self.path)

    def params(self) -> dict[str, np.ndarray]:
        return read_checkpoint(self.path)

    def facts(self) -> dict:
        return read_run_facts(self.path)

    def model(self, dtype=None):
        import torch

        from .run import load_model
        return load_model(self.config, self.params(), torch.float64 if dtype is None else dtype, facts=self.facts())


def _read_yaml(path: str):
    import yaml

    from .files import read_text
    return yaml.safe_load(read_text(path, "run_result"))


def load_run(path: str) -> Run:
    """The run directory `path` as a Run (its config and result read, the rest
    on demand): load_run(d).config, .result, .metrics(), .model() ..."""
    return Run(path)
