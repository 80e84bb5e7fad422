#!/usr/bin/env bash
# Runs reference/crosscheck.py with a python3 that can import torch and numpy
# (Debian's python3-torch installs into /usr/bin/python3, which a pyenv or
# venv python3 earlier in PATH does not see). Tries $ATTNLAB_PYTHON, then
# /usr/bin/python3, then python3 from PATH. With none, it FAILS (exit 1) with
# a message: the cross-check is part of the test suite, never skipped.
# Usage: reference/run_crosscheck.sh --dump build/tests/attnlab_crosscheck_dump [crosscheck.py args]
set -u
here="$(cd "$(dirname "$0")" && pwd)"
# crosscheck.py imports the attnlab package of this source tree.
export PYTHONPATH="$here/../python${PYTHONPATH:+:$PYTHONPATH}"
tried=()
for py in "${ATTNLAB_PYTHON:-}" /usr/bin/python3 python3; do
  [ -n "$py" ] || continue
  command -v "$py" >/dev/null 2>&1 || { tried+=("$py (not found)"); continue; }
  if "$py" -c "import torch, numpy, yaml" >/dev/null 2>&1; then
    exec "$py" "$here/crosscheck.py" "$@"
  fi
  tried+=("$py (no torch/numpy/yaml)")
done
echo "crosscheck: FAILED: no python3 can import torch, numpy and yaml; tried: ${tried[*]}." >&2
echo "crosscheck: install Debian's packages: apt-get install -y --no-install-recommends python3-torch python3-numpy python3-yaml" >&2
echo "crosscheck: (scripts/test does this), or set ATTNLAB_PYTHON to a python3 that has them." >&2
exit 1
