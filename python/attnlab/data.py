"""The task data of a run, token for token as attnlab's C++ side makes it.

A port of lib/include/attnlab/util/rng.hpp (splitmix64 seeding, xoshiro256**
streams, attnlab's own uniform integer / uniform real / normal draws) and of
the four generators of lib/src/tasks/ (copy, lookup, selective_copy,
induction) with the split logic of lib/src/tasks/task.cpp, and of the text
task's windows (lib/src/tasks/text.cpp, below): the training
stream comes from derive_seed(seed, STREAM_TRAIN), as fresh examples on every
batch or, with task.train_examples > 0, as uniform draws from a pool of the
stream's first train_examples examples; the test set from
derive_seed(seed, STREAM_TEST); the validation set, drawn like training
examples, from derive_seed(seed, STREAM_VAL). The maths of the tasks is in
docs/tasks.md.

Targets use attnlab's no-target value NO_TARGET = -1 off the answer
positions. Arrays are numpy int32 of shape (B, T), as the C++ batch holds
them. Only numpy is needed (no torch).

    tokens, targets = test_set(config)          # config: a run's config.yaml as a dict
    for tokens, targets in train_batches(config, steps=10): ...
"""

from __future__ import annotations

import hashlib
import math
from typing import Iterator

import numpy as np

NO_TARGET = -1
# derive_seed stream tags of lib/include/attnlab/tasks/task.hpp.
STREAM_TRAIN = 1
STREAM_TEST = 2
STREAM_VAL = 4  # 3 is the parameter init

_MASK = (1 << 64) - 1
_UINT64_MAX = _MASK

# ---------------------------------------------------------------- rng


def _splitmix64(state: int) -> tuple[int, int]:
    """One splitmix64 step: (new state, output)."""
    state = (state + 0x9E3779B97F4A7C15) & _MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return state, z ^ (z >> 31)


def derive_seed(seed: int, stream: int) -> int:
    """attnlab's derive_seed: mixes a run seed with a stream tag so that each
    purpose (train data, test data, init) draws its own stream."""
    s = ((seed * 0x9E3779B97F4A7C15) & _MASK) ^ ((stream + 0x632BE59BD9B4E019) & _MASK)
    s, _ = _splitmix64(s)
    _, out = _splitmix64(s)
    return out


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & _MASK


class Rng:
    """attnlab's rng: xoshiro256** seeded by splitmix64, with the same draws
    (uniform_index by rejection, uniform_int, 53-bit uniform, Box-Muller
    normal using both values) in the same order as the C++ class."""

    def __init__(self, seed: int = 0):
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        sm = seed & _MASK
        self._s = []
        for _ in range(4):
            sm, w = _splitmix64(sm)
            self._s.append(w)
        self._spare = 0.0
        self._has_spare = False

    def next_u64(self) -> int:
        s = self._s
        result = (_rotl((s[1] * 5) & _MASK, 7) * 9) & _MASK
        t = (s[1] << 17) & _MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def uniform_index(self, n: int) -> int:
        """Uniform in [0, n), unbiased (rejection sampling); n > 0."""
        limit = _UINT64_MAX - _UINT64_MAX % n
        while True:
            x = self.next_u64()
            if x < limit:
                return x % n

    def uniform_int(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi], both included."""
        return lo + self.uniform_index(hi - lo + 1)

    def uniform(self) -> float:
        """Uniform float in [0, 1) with 53 random bits."""
        return float(self.next_u64() >> 11) * 2.0**-53

    def normal(self) -> float:
        """Standard normal (Box-Muller; the second value is kept for the next call)."""
        if self._has_spare:
            self._has_spare = False
            return self._spare
        u1 = self.uniform()
        while u1 <= 0.0:
            u1 = self.uniform()
        u2 = self.uniform()
        r = math.sqrt(-2.0 * math.log(u1))
        a = 6.283185307179586476925 * u2
        self._spare = r * math.sin(a)
        self._has_spare = True
        return r * math.cos(a)

# ---------------------------------------------------------------- generators
# Each writes one example into tokens[T] and targets[T] (Python lists, targets
# pre-filled with NO_TARGET and tokens with 0), drawing exactly what the C++
# generator of the same name draws, in the same order.


def copy_example(tokens: list, targets: list, T: int, vocab: int, min_len: int, max_len: int, r: Rng) -> None:
    """x_1..x_n SEP x_1..x_n then pad 0 (SEP = vocab + 1); inputs drop the
    last token, targets seq[1:] at the second copy (positions n .. 2n-1)."""
    n = r.uniform_int(min_len, max_len)
    for i in range(n):
        tokens[i] = r.uniform_int(1, vocab)
    tokens[n] = vocab + 1
    for j in range(n):
        targets[n + j] = tokens[j]
        if n + 1 + j < T:
            tokens[n + 1 + j] = tokens[j]


def lookup_slot_weights(space: int, power_a: float) -> list[float]:
    """Unnormalised weights (g+1)^(power_a-1), g = 0..space-1, of the query slots."""
    return [math.pow(g + 1.0, power_a - 1.0) for g in range(space)]


def _draw_distinct(n: int, lo: int, hi: int, r: Rng) -> list[int]:
    """n distinct ids uniform in [lo, hi), in draw order (a repeat is redrawn)."""
    out: list[int] = []
    while len(out) < n:
        x = lo + r.uniform_index(hi - lo)
        if x not in out:
            out.append(x)
    return out


def lookup_example(tokens: list, targets: list, T: int, V: int, P: int, power_a: float, random_filler: bool,
                   r: Rng) -> None:
    """MQAR (zoology's multiquery_ar): P key-value pairs, then each key once
    more at a query slot drawn by successive weighted sampling; its target is
    the value."""
    context = 2 * P
    space = (T - context) // 2
    keys = _draw_distinct(P, 1, V // 2, r)
    values = _draw_distinct(P, V // 2, V, r)
    for j in range(P):
        tokens[2 * j] = keys[j]
        tokens[2 * j + 1] = values[j]
    w = lookup_slot_weights(space, power_a)
    for j in range(P):
        total = 0.0
        for x in w:  # summed in slot order, as the C++ loop
            total += x
        u = r.uniform() * total
        g = -1
        acc = 0.0
        for s in range(space):
            if w[s] == 0.0:
                continue
            g = s  # last available slot, in case rounding leaves u >= acc at the end
            acc += w[s]
            if u < acc:
                break
        if g < 0:
            raise ValueError("lookup: no query slot left")
        w[g] = 0.0
        pos = context + 2 * g
        tokens[pos] = keys[j]
        targets[pos] = values[j]
    if random_filler:
        for t in range(T):
            if tokens[t] == 0:
                tokens[t] = r.uniform_index(V)


def selective_copy_example(tokens: list, targets: list, A: int, M: int, L: int, r: Rng) -> None:
    """M tokens (1..A-2) at M distinct slots among L + M, blanks 0 elsewhere,
    then M markers A-1 whose targets are the tokens in order."""
    slots = L + M
    for i in range(M):
        targets[slots + i] = r.uniform_int(1, A - 2)
        tokens[slots + i] = A - 1
    placed = 0
    for s in range(slots):  # selection sampling: increasing positions
        if placed >= M:
            break
        if r.uniform_index(slots - s) < M - placed:
            tokens[s] = targets[slots + placed]
            placed += 1
    if placed != M:
        raise ValueError(f"selective_copy: placed {placed} of {M} tokens")


def induction_example(tokens: list, targets: list, V: int, seq_len: int, r: Rng) -> None:
    """seq_len tokens (1..V-2), the trigger V-1 at one position p in
    [0, seq_len-3] and at the end; the one target (last position) is the
    token after the first trigger."""
    N = seq_len
    for t in range(N):
        tokens[t] = r.uniform_int(1, V - 2)
    p = r.uniform_index(N - 2)
    tokens[p] = V - 1
    tokens[N] = V - 1
    targets[N] = tokens[p + 1]

# ---------------------------------------------------------------- task config


def task_settings(config: dict) -> dict:
    """The task section of a run config (config.yaml as a dict, or its `task`
    section alone) with attnlab's defaults filled in, as the spec loader
    resolves them (docs/spec-reference.md)."""
    t = dict(config.get("task", config))
    if "kind" not in t:
        raise ValueError("task config has no `kind`")
    defaults = {"vocab": 64, "seq_len": 32, "pairs": 4, "power_a": 0.01, "random_filler": False, "min_len": 0,
                "max_len": 16, "test_min_len": 0, "test_max_len": 0, "n_tokens": 16, "noise_len": 64,
                "test_examples": 256, "val_examples": 0, "train_examples": 0, "holdout": 0.05}
    for k, v in defaults.items():
        t.setdefault(k, v)
    if not t["min_len"]:
        t["min_len"] = t["max_len"]
    if not t["test_min_len"]:
        t["test_min_len"] = t["min_len"]
    if not t["test_max_len"]:
        t["test_max_len"] = t["max_len"]
    if not t["val_examples"]:
        t["val_examples"] = t["test_examples"]
    return t


def model_vocab_size(config: dict) -> int:
    """Model vocabulary: copy vocab + 2 (pad 0, SEP vocab + 1); text 256 (bytes); the others vocab."""
    t = task_settings(config)
    if t["kind"] == "text":
        return 256
    return int(t["vocab"]) + 2 if t["kind"] == "copy" else int(t["vocab"])


def _seq_len(t: dict, copy_max_len: int) -> int:
    kind = t["kind"]
    if kind == "copy":
        return 2 * int(copy_max_len)
    if kind in ("lookup", "text"):
        return int(t["seq_len"])
    if kind == "selective_copy":
        return int(t["noise_len"]) + 2 * int(t["n_tokens"])
    if kind == "induction":
        return int(t["seq_len"]) + 1
    raise ValueError(f"unknown task kind {kind!r}")


def train_seq_len(config: dict) -> int:
    """Input length T of training batches."""
    t = task_settings(config)
    return _seq_len(t, t["max_len"])


def test_seq_len(config: dict) -> int:
    """Input length T of the test set (copy: 2 test_max_len)."""
    t = task_settings(config)
    return _seq_len(t, t["test_max_len"])

# ---------------------------------------------------------------- the task


def _example_fn(t: dict, T: int, test: bool):
    """The generator of one split as f(tokens, targets, rng)."""
    kind = t["kind"]
    if kind == "copy":
        vocab = int(t["vocab"])
        lo, hi = (int(t["test_min_len"]), int(t["test_max_len"])) if test else (int(t["min_len"]), int(t["max_len"]))
        return lambda tok, tgt, r: copy_example(tok, tgt, T, vocab, lo, hi, r)
    if kind == "lookup":
        V, P, a, filler = int(t["vocab"]), int(t["pairs"]), float(t["power_a"]), bool(t["random_filler"])
        return lambda tok, tgt, r: lookup_example(tok, tgt, T, V, P, a, filler, r)
    if kind == "selective_copy":
        A, M, L = int(t["vocab"]), int(t["n_tokens"]), int(t["noise_len"])
        return lambda tok, tgt, r: selective_copy_example(tok, tgt, A, M, L, r)
    if kind == "induction":
        V, N = int(t["vocab"]), int(t["seq_len"])
        return lambda tok, tgt, r: induction_example(tok, tgt, V, N, r)
    raise ValueError(f"unknown task kind {kind!r}")


def _fill(B: int, T: int, fill, r: Rng) -> tuple[np.ndarray, np.ndarray]:
    """B examples of one split, row by row from r: (B, T) tokens and targets."""
    tokens = np.zeros((B, T), dtype=np.int32)
    targets = np.full((B, T), NO_TARGET, dtype=np.int32)
    for b in range(B):
        tok, tgt = [0] * T, [NO_TARGET] * T
        fill(tok, tgt, r)
        tokens[b], targets[b] = tok, tgt
    return tokens, targets


# ---------------------------------------------------------------- text


def text_split(n: int, holdout: float) -> tuple[int, int]:
    """(train bytes, e) of a file of n bytes: e = floor(holdout n) bytes each
    for the validation part [n - 2e, n - e) and the test part [n - e, n);
    the train part is [0, n - 2e)."""
    e = math.floor(holdout * n)
    return n - 2 * e, e


def _windows(data: np.ndarray, starts: list[int], T: int) -> tuple[np.ndarray, np.ndarray]:
    """Windows of T + 1 bytes at `starts`: inputs the first T, targets the last T."""
    tokens = np.zeros((len(starts), T), dtype=np.int32)
    targets = np.zeros((len(starts), T), dtype=np.int32)
    for b, s in enumerate(starts):
        tokens[b] = data[s:s + T]
        targets[b] = data[s + 1:s + T + 1]
    return tokens, targets


class _TextData:
    """The text task (docs/tasks.md "text"): the file's bytes, split in three
    contiguous parts; training windows at uniform offsets of the train part,
    evaluation windows at k T of their part (the same for every seed)."""

    def __init__(self, t: dict):
        from .files import check_size, open_input

        path = t["path"]
        # As attnlab: a regular file (files.open_input: not a FIFO or a
        # device) of at most 2^31 - 1 bytes, and the size and sha256
        # config.yaml records must be the file's, else the windows would be
        # other bytes than the run trained on.
        f, size = open_input(path)
        with f:
            if t.get("size") and size != int(t["size"]):
                raise ValueError(f"task.path: {path} has {size} bytes, the run's task.size says "
                                 f"{t['size']} (the file changed since the run was made)")
            check_size(path, size, "corpus")
            raw = f.read(size + 1)
        if len(raw) != size:
            raise ValueError(f"task.path: {path} changed while it was read ({len(raw)} bytes, {size} when measured)")
        if t.get("sha256"):
            digest = hashlib.sha256(raw).hexdigest()
            if digest != t["sha256"]:
                raise ValueError(f"task.path: {path} has sha256 {digest}, the run's task.sha256 says "
                                 f"{t['sha256']} (the file changed since the run was made)")
        self.data = np.frombuffer(raw, dtype=np.uint8)
        self.T = int(t["seq_len"])
        self.train_bytes, self.e = text_split(len(self.data), float(t["holdout"]))
        self.starts = self.train_bytes - self.T  # offsets 0 .. train_bytes - T - 1
        if self.starts < 1 or (self.e - 1) // self.T < 1:
            raise ValueError(f"{t['path']}: too short for windows of {self.T + 1} bytes")

    def eval_set(self, begin: int, wanted: int) -> tuple[np.ndarray, np.ndarray]:
        count = min(wanted, (self.e - 1) // self.T)
        return _windows(self.data, [begin + k * self.T for k in range(count)], self.T)

    def train_windows(self, B: int, r: Rng) -> tuple[np.ndarray, np.ndarray]:
        return _windows(self.data, [r.uniform_index(self.starts) for _ in range(B)], self.T)


class Task:
    """The data of one run, as attnlab's generated_task: a training stream and
    a fixed test set, both from the run's seed.

    config: a run config as a dict (config.yaml); seed defaults to its `seed`.
    """

    def __init__(self, config: dict, seed: int | None = None):
        self.settings = task_settings(config)
        self.seed = int(config.get("seed", 0) if seed is None else seed)
        self.vocab_size = model_vocab_size(self.settings)
        self.train_T = train_seq_len(self.settings)
        self.test_T = test_seq_len(self.settings)
        text = self.settings["kind"] == "text"
        self._train_fill = None if text else _example_fn(self.settings, self.train_T, test=False)
        self._test_fill = None if text else _example_fn(self.settings, self.test_T, test=True)
        self._train_rng = Rng(derive_seed(self.seed, STREAM_TRAIN))
        pool = int(self.settings["train_examples"])
        self._text = _TextData(self.settings) if self.settings["kind"] == "text" else None
        if self._text is not None:
            self._train_fill = lambda B, r: self._text.train_windows(B, r)
        else:
            fill = self._train_fill
            self._train_fill = lambda B, r: _fill(B, self.train_T, fill, r)
        # The pool is the training stream's first `pool` examples, drawn once.
        self._pool = self._train_fill(pool, self._train_rng) if pool > 0 else None
        self._test = None
        self._val = None

    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, targets), each (test_examples, test_T) int32; made once."""
        if self._test is None and self._text is not None:
            self._test = self._text.eval_set(len(self._text.data) - self._text.e, int(self.settings["test_examples"]))
        if self._test is None:
            r = Rng(derive_seed(self.seed, STREAM_TEST))
            self._test = _fill(int(self.settings["test_examples"]), self.test_T, self._test_fill, r)
        return self._test

    def val_set(self) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, targets), each (val_examples, train_T) int32, drawn like
        training examples; made once."""
        if self._val is None and self._text is not None:
            self._val = self._text.eval_set(self._text.train_bytes, int(self.settings["val_examples"]))
        if self._val is None:
            r = Rng(derive_seed(self.seed, STREAM_VAL))
            self._val = self._train_fill(int(self.settings["val_examples"]), r)
        return self._val

    def next_train_batch(self, B: int) -> tuple[np.ndarray, np.ndarray]:
        """The next B training examples of the stream: (B, train_T) tokens and targets."""
        if self._pool is None:
            return self._train_fill(B, self._train_rng)
        rows = [self._train_rng.uniform_index(self._pool[0].shape[0]) for _ in range(B)]
        return self._pool[0][rows].copy(), self._pool[1][rows].copy()


def test_set(config: dict) -> tuple[np.ndarray, np.ndarray]:
    """A run's test set (tokens, targets), (test_examples, T) int32, no target -1:
    the examples `attnlab eval` scores."""
    return Task(config).test_set()


def val_set(config: dict) -> tuple[np.ndarray, np.ndarray]:
    """A run's validation set (tokens, targets), (val_examples, T) int32: the
    examples its `val` rows of metrics.csv score."""
    return Task(config).val_set()


def train_batches(config: dict, batch: int | None = None,
                  steps: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The training batches of a run in step order (step 1 first): (tokens,
    targets), each (batch, T) int32. batch defaults to the config's
    train.batch; steps to no end."""
    B = int(config["train"]["batch"]) if batch is None else int(batch)
    task = Task(config)
    step = 0
    while steps is None or step < steps:
        yield task.next_train_batch(B)
        step += 1
