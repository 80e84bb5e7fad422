"""A run's config.yaml checked as attnlab's C++ reader checks it
(run_config_from_yaml, lib/src/spec/), so that the package never builds a
model from a configuration the binary refuses: one YAML document, a map of
seed, task, model, attention and train; every key known (SCHEMA, the binary's
schema in lib/src/spec/schema.cpp), given once, and one that applies to the
run (task.pairs only for lookup, attention.order only for the numerators
that take one, ...); every key the run needs present; every value of its type
and range, read as the binary reads it (a quoted "5" is text, not a number;
1e-3 is a number). The rules that relate several keys (model.heads divides
model.d_model, a lookup vocabulary above its length, ...) stay the binary's:
a config.yaml that attnlab wrote already passed them.

    config = check_config(text, "results/x/runs/seed=0/config.yaml")   # nested dicts

Every refusal is a ConfigError (a ValueError) "<file>:<line>: <key>: <problem>".
"""

from __future__ import annotations

import math
import re

import yaml  # python3-yaml

TASK_KINDS = ("copy", "lookup", "selective_copy", "induction", "text")
NUMERATORS = ("exp", "taylor", "linear", "elu1", "relu", "cosine", "power")
DENOMINATORS = ("softmax", "norm", "rmsnorm", "layernorm", "gate", "length", "none")
# The keys each task reads (lib/src/tasks/task_table.cpp).
TASK_READS = {
    "copy": ("vocab", "min_len", "max_len", "test_min_len", "test_max_len"),
    "lookup": ("vocab", "seq_len", "pairs", "power_a", "random_filler"),
    "selective_copy": ("vocab", "n_tokens", "noise_len"),
    "induction": ("vocab", "seq_len"),
    "text": ("seq_len", "path", "holdout", "sha256", "size"),
}
TAKES_ORDER = ("taylor", "power")                   # numerators with attention.order
SCORE_KERNELS = ("exp", "taylor", "linear", "power")  # numerators with attention.clamp
DETACHABLE = ("softmax",)                           # denominators with attention.detach_denominator

_INT_MAX = 2**31 - 1
_MAX_LEN = 1 << 28
_MAX_D_MODEL = 1 << 24


def _key(type_, lo=None, hi=None, lo_open=False, needed=False, when=None, choices=None):
    """One key: type_ int, number, bool, choice or text; bounds; whether the
    run needs it; `when` (key, values) the condition under which it applies."""
    return {"type": type_, "lo": lo, "hi": hi, "lo_open": lo_open, "needed": needed, "when": when,
            "choices": choices}


def _reads(name):
    return ("task.kind", tuple(k for k, keys in TASK_READS.items() if name in keys))


# Every key, in config.yaml's order (the binary's schema()).
SCHEMA = {
    "seed": _key("int", 0),
    "task.kind": _key("choice", needed=True, choices=TASK_KINDS),
    "task.vocab": _key("int", 2, needed=True, when=_reads("vocab")),
    "task.seq_len": _key("int", 3, _MAX_LEN, needed=True, when=_reads("seq_len")),
    "task.pairs": _key("int", 1, needed=True, when=_reads("pairs")),
    "task.power_a": _key("number", 0, lo_open=True, when=_reads("power_a")),
    "task.random_filler": _key("bool", when=_reads("random_filler")),
    "task.min_len": _key("int", 1, _MAX_LEN, when=_reads("min_len")),
    "task.max_len": _key("int", 1, _MAX_LEN, needed=True, when=_reads("max_len")),
    "task.test_min_len": _key("int", 1, _MAX_LEN, when=_reads("test_min_len")),
    "task.test_max_len": _key("int", 1, _MAX_LEN, when=_reads("test_max_len")),
    "task.n_tokens": _key("int", 1, _MAX_LEN, needed=True, when=_reads("n_tokens")),
    "task.noise_len": _key("int", 0, _MAX_LEN, needed=True, when=_reads("noise_len")),
    "task.path": _key("text", needed=True, when=_reads("path")),
    "task.holdout": _key("number", 0, lo_open=True, when=_reads("holdout")),
    "task.sha256": _key("sha256", when=_reads("sha256")),
    "task.size": _key("int", 1, when=_reads("size")),
    "task.test_examples": _key("int", 1),
    "task.val_examples": _key("int", 1),
    "task.train_examples": _key("int", 0),
    "model.layers": _key("int", 1, 64, needed=True),
    "model.d_model": _key("int", 1, _MAX_D_MODEL, needed=True),
    "model.heads": _key("int", 1, _MAX_D_MODEL, needed=True),
    "model.mlp": _key("choice", choices=("swiglu", "gelu", "none")),
    "model.mlp_hidden": _key("int", 1, when=("model.mlp", ("swiglu",))),
    "model.position": _key("choice", choices=("rope", "learned", "none")),
    "model.short_conv": _key("int", 0, 8),
    "attention.numerator": _key("choice", needed=True, choices=NUMERATORS),
    "attention.order": _key("int", 1, 20, needed=True, when=("attention.numerator", TAKES_ORDER)),
    "attention.clamp": _key("number", when=("attention.numerator", SCORE_KERNELS)),
    "attention.denominator": _key("choice", needed=True, choices=DENOMINATORS),
    "attention.in_gate": _key("bool"),
    "attention.out_gate": _key("bool"),
    "attention.detach_denominator": _key("bool", when=("attention.denominator", DETACHABLE)),
    "attention.eps": _key("number", 0, lo_open=True),
    "attention.form": _key("choice", choices=("auto", "quadratic", "chunked")),
    "attention.chunk": _key("int", 1, 1 << 20),
    "train.steps": _key("int", 1, needed=True),
    "train.batch": _key("int", 1),
    "train.lr": _key("number", 0, lo_open=True, needed=True),
    "train.min_lr": _key("number", 0),
    "train.warmup": _key("int", 0),
    "train.schedule": _key("choice", choices=("cosine", "constant")),
    "train.weight_decay": _key("number", 0),
    "train.clip": _key("number", 0),
    "train.eval_every": _key("int", 1),
    "train.log_every": _key("int", 0),
    "train.init": _key("text"),
    "train.init_sha256": _key("sha256"),
}
# Defaults that decide whether a key applies (the binary's run_config).
_DEFAULTS = {"model.mlp": "swiglu"}
SECTIONS = ("seed", "task", "model", "attention", "train")


class ConfigError(ValueError):
    """A config.yaml the binary refuses: "<file>:<line>: <key>: <problem>"."""


def section_keys(section: str) -> list[str]:
    """The names a section's map may hold ("" for the top: seed and the sections)."""
    if not section:
        return list(SECTIONS)
    return [k.split(".", 1)[1] for k in SCHEMA if k.startswith(section + ".")]


_NULLS = ("", "~", "null", "Null", "NULL")


def _fail(path, node, key, problem):
    line = node.start_mark.line + 1 if node is not None else 1
    raise ConfigError(f"{path}:{line}: {key + ': ' if key else ''}{problem}")


def _describe(node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a map"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if node.style is None and node.value in _NULLS:
        return "nothing"
    return f"the string {node.value!r}" if node.style else f"'{node.value}'"


def _int(text: str):
    t = text[1:] if len(text) > 1 and text[0] == "+" else text
    if not re.fullmatch(r"-?[0-9]+", t):
        return None
    v = int(t)
    return v if -2**63 <= v < 2**63 else None


def _number(text: str):
    # Decimal only, as the binary: digits, sign, point, exponent (no inf, nan, hex or '_').
    if not text or re.search(r"[^0-9+\-.eE]", text) or not re.search(r"[0-9]", text):
        return None
    t = text[1:] if len(text) > 1 and text[0] == "+" else text
    if not re.fullmatch(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", t):
        return None
    v = float(t)
    return v if math.isfinite(v) else None


def _value(path, key, d, node):
    """The value of a scalar node as the binary reads it for key `d`."""
    if not isinstance(node, yaml.ScalarNode) or (node.style is None and node.value in _NULLS):
        _fail(path, node, key, f"expected {_expected(d)}, got {_describe(node)}")
    text, plain = node.value, node.style is None
    t = d["type"]
    if t == "int":
        v = _int(text) if plain else None
        if v is None or v < d["lo"] or v > (d["hi"] if d["hi"] is not None else _INT_MAX):
            _fail(path, node, key, f"expected {_expected(d)}, got {_describe(node)}")
        return v
    if t == "number":
        v = _number(text) if plain else None
        lo, hi = d["lo"], d["hi"]
        if v is None or (lo is not None and (v < lo or (d["lo_open"] and v == lo))) or (hi is not None and v > hi):
            _fail(path, node, key, f"expected {_expected(d)}, got {_describe(node)}")
        return v
    if t == "bool":
        if not plain or text not in ("true", "false"):
            _fail(path, node, key, f"expected true or false, got {_describe(node)}")
        return text == "true"
    if t == "choice":
        if text not in d["choices"]:
            _fail(path, node, key, f"expected one of {', '.join(d['choices'])}, got {_describe(node)}")
        return text
    if t == "sha256":
        if not re.fullmatch(r"[0-9a-f]{64}", text):
            _fail(path, node, key, f"expected 64 hexadecimal digits (the output of sha256sum), got {_describe(node)}")
        return text
    return text


def _unset(v) -> bool:
    """A value that sets nothing (the binary's value::is_set is false): false, or empty text."""
    return (isinstance(v, bool) and not v) or (isinstance(v, str) and v == "")


def _expected(d) -> str:
    t = d["type"]
    if t == "int":
        hi = d["hi"] if d["hi"] is not None else _INT_MAX
        return f"an integer >= {d['lo']}" if hi >= _INT_MAX else f"an integer in [{d['lo']}, {hi}]"
    if t == "number":
        return "a number" if d["lo"] is None else f"a number {'>' if d['lo_open'] else '>='} {d['lo']}"
    if t == "bool":
        return "true or false"
    if t == "choice":
        return "one of " + ", ".join(d["choices"])
    if t == "sha256":
        return "64 hexadecimal digits (the output of sha256sum)"
    return "a string"


def _map_items(path, node, where):
    """(key text, key node, value node) of a map node; a key given twice is refused."""
    seen = {}
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            _fail(path, k, where, "a key must be a name")
        name = k.value
        if name in seen:
            _fail(path, k, f"{where}.{name}" if where else name, "duplicate key")
        seen[name] = k
        yield name, k, v


def check_config(text: str, path: str) -> dict:
    """The configuration in `text` (config.yaml's content; `path` names it in
    errors) as nested dicts of typed values, after the binary's checks of its
    keys and values; ConfigError otherwise."""
    try:
        docs = list(yaml.compose_all(text))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise ConfigError(f"{path}:{mark.line + 1 if mark else 1}: YAML syntax error: "
                          f"{getattr(e, 'problem', None) or e}") from None
    if len(docs) > 1:
        _fail(path, docs[1], "", "a second YAML document (after '---'); a config is a single document")
    root = docs[0] if docs else None
    if root is None or (isinstance(root, yaml.ScalarNode) and root.style is None and root.value in _NULLS):
        _fail(path, root, "", "empty config, expected a map of " + ", ".join(SECTIONS))
    if not isinstance(root, yaml.MappingNode):
        _fail(path, root, "", f"expected a map of {', '.join(SECTIONS)}, got {_describe(root)}")
    given = {}  # dotted key -> (key node, value node)
    sections = []
    for name, knode, vnode in _map_items(path, root, ""):
        if name not in SECTIONS:
            _fail(path, knode, name, f"unknown key (expected one of {', '.join(SECTIONS)})")
        if name == "seed":
            given["seed"] = (knode, vnode)
            continue
        if not isinstance(vnode, yaml.MappingNode):
            _fail(path, vnode, name, f"expected a map of {', '.join(section_keys(name))}, got {_describe(vnode)}")
        sections.append(name)
        for sub, sk, sv in _map_items(path, vnode, name):
            if f"{name}.{sub}" not in SCHEMA:
                _fail(path, sk, f"{name}.{sub}", f"unknown key (expected one of {', '.join(section_keys(name))})")
            given[f"{name}.{sub}"] = (sk, sv)
    values = {k: _value(path, k, SCHEMA[k], v) for k, (_, v) in given.items()}
    resolved = dict(_DEFAULTS, **values)
    for key, d in SCHEMA.items():
        when = d["when"]
        applies = when is None or resolved.get(when[0]) in when[1]
        if key in values and not applies and _unset(values[key]):
            del values[key]  # false or "" where the key means nothing: dropped, as the binary drops it
        elif key in values and not applies:
            which = " or ".join(when[1])
            _fail(path, given[key][0], key, f"has no effect: {key} applies only when {when[0]} is {which}, "
                                             f"but {when[0]} is {resolved.get(when[0])}")
        if d["needed"] and applies and key not in values:
            _fail(path, root, key, f"missing required key, expected {_expected(d)}")
    out: dict = {"seed": values["seed"]} if "seed" in values else {}
    out.update({section: {} for section in SECTIONS[1:] if section in sections})
    for key in SCHEMA:  # the schema's order
        if key in values and "." in key:
            section, sub = key.split(".", 1)
            out[section][sub] = values[key]
    return out
