"""The one way the package opens a file it reads, as attnlab's C++ reader does
(read_input, lib/include/attnlab/io/files.hpp; docs/outputs-policy.md, "What
attnlab reads and writes"): the file must be a regular file once symbolic
links are followed (a directory, a device such as /dev/zero, a FIFO or a
socket is refused, naming what it is, without waiting for a FIFO's writer);
its size is checked against the limit of its kind before a byte is read;
and it is read in bounded pieces, never past that limit.

    raw = read_input("results/x/runs/seed=0/config.yaml", "run_config")   # bytes

A missing file raises FileNotFoundError (an OSError naming it); a file that
is not regular, too large, or grows past its limit while it is read raises
InputError, a ValueError whose message starts with the file's path.
"""

from __future__ import annotations

import os
import stat

# Bytes a file of each kind may have: the C++ reader's limits (io/files.hpp, inputs::).
LIMITS = {
    "spec": (4 << 20, "a spec"),                          # spec files, spec.yaml, overrides.yaml
    "run_config": (1 << 20, "a run's config.yaml"),
    "run_result": (1 << 20, "a run's result.yaml"),
    "folder_note": (64 << 10, "a results folder's spec_folder.txt"),
    "table": (1 << 30, "a CSV table"),                    # metrics.csv, summary.csv, curves.csv
    "prompt": (16 << 20, "a prompt file"),
    "corpus": ((1 << 31) - 1, "a text task's file"),
}

_PIECE = 1 << 20


class InputError(ValueError):
    """An input file refused: `path` and `reason` ("is a FIFO (named pipe),
    expected a regular file", "has N bytes, more than the 1 MiB a run's
    config.yaml may have"); str() is "<path>: <reason>"."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _named(path: str) -> str:
    """The path, with the link's target when it is a symbolic link."""
    try:
        return f"{path} (a symbolic link to {os.readlink(path)})" if os.path.islink(path) else str(path)
    except OSError:
        return str(path)


def _size_text(n: int) -> str:
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def open_input(path: str):
    """(binary file object, size) of a regular file, checked on the open
    descriptor itself (O_NONBLOCK: a FIFO is refused, not waited on). The
    caller closes the file."""
    path = os.fspath(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(_named(path), f"is {_kind_of(st.st_mode)}, expected a regular file")
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise


def check_size(path: str, size: int, kind: str) -> None:
    """InputError when `size` bytes are more than a file of `kind` may have."""
    limit, what = LIMITS[kind]
    if size > limit:
        raise InputError(str(path), f"has {size} bytes, more than the {_size_text(limit)} {what} may have")


def read_input(path: str, kind: str) -> bytes:
    """The bytes of the input file at `path`, a file of `kind` (a key of
    LIMITS): refused before it is read when it is not a regular file or is
    larger than the kind's limit, and read in pieces of at most 1 MiB up to
    its end, never past the limit (a file that grows past it is refused)."""
    limit, what = LIMITS[kind]
    f, size = open_input(path)
    with f:
        check_size(path, size, kind)
        pieces, total = [], 0
        while True:
            piece = f.read(min(_PIECE, limit + 1 - total))
            if not piece:
                break
            pieces.append(piece)
            total += len(piece)
            if total > limit:
                raise InputError(str(path), f"grew while it was read, more than the {_size_text(limit)} {what} "
                                            "may have")
    return b"".join(pieces)


def read_text(path: str, kind: str) -> str:
    """read_input as UTF-8 text; InputError when it is not UTF-8."""
    raw = read_input(path, kind)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"is not UTF-8 text ({e.reason} at byte {e.start})") from None


def read_csv_rows(path: str, columns=()) -> list[dict[str, str]]:
    """The rows of a CSV file attnlab wrote (a table: at most 1 GiB, read as
    read_text reads it) as dicts of text cells, header names as keys: the
    package's one CSV reader without pandas (results.py's DataFrames parse
    the same text with pandas). FileNotFoundError when the file is missing;
    InputError "<path>: missing column(s) a, b" when a name in `columns` is
    not in the header, and "<path>: no rows" when there is no row."""
    import csv
    import io

    text = read_text(path, "table")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(str(path), f"missing column(s) {', '.join(missing)}")
    rows = list(reader)
    if not rows:
        raise InputError(str(path), "no rows")
    return rows
