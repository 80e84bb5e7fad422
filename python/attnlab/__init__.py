"""attnlab from Python: a run's checkpoint and config, its model in PyTorch, its
task data regenerated token for token, and results folders in pandas.
The guide is docs/python.md.

    pip install ./python   (or cmake --install; or PYTHONPATH=python, uninstalled)

    run = attnlab.load_run(run_dir)                  # a Run: .config, .result, .metrics(), .model() (torch)
    attnlab.evaluate_run(run_dir)                    # = `attnlab eval RUN_DIR`
    tokens, targets = attnlab.test_set(config)       # numpy int32 (B, T), no target -1
    attnlab.read_summary(results_dir); attnlab.read_curves(results_dir)   # pandas

Modules: checkpoint (safetensors, config.yaml, load_run and its Run; numpy,
yaml), data (rng and task generators; numpy), model (the PyTorch model;
torch), run (load_model, evaluate; torch), results (pandas). `import attnlab` loads none of torch and
pandas: each name below imports its module on first use, so the data and
checkpoint functions work without them.
"""

from __future__ import annotations

import importlib

# name -> module that defines it
_EXPORTS = {
    "read_checkpoint": "checkpoint", "read_config": "checkpoint", "read_safetensors": "checkpoint",
    "read_safetensors_header": "checkpoint", "read_run_facts": "checkpoint",
    "NO_TARGET": "data", "Rng": "data", "derive_seed": "data", "STREAM_TRAIN": "data", "STREAM_TEST": "data",
    "Task": "data", "test_set": "data", "train_batches": "data", "model_vocab_size": "data",
    "train_seq_len": "data", "test_seq_len": "data", "val_set": "data", "text_split": "data",
    "Reference": "model",
    "load_run": "checkpoint", "Run": "checkpoint", "load_model": "run", "evaluate": "run", "evaluate_run": "run",
    "read_summary": "results", "read_metrics": "results", "read_curves": "results",
    "curves_from_runs": "results", "run_ids": "results",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'attnlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
