#!/usr/bin/env bash
# Runs the tests of the attnlab Python package (python/tests/test_*.py) with
# pytest, under a python3 that can import pytest, torch, numpy, yaml, pandas
# and scipy (scipy recomputes summarize's statistics in test_verdicts.py;
# Debian's packages install into /usr/bin/python3, which a pyenv or venv
# python3 earlier in PATH does not see). Tries $ATTNLAB_PYTHON, then
# /usr/bin/python3, then python3 from PATH. With none, it FAILS (exit 1) with
# a message: these tests are part of the test suite (ctest entry `python`),
# never skipped; a skipped test fails too (conftest.py).
# The package is this source tree's python/attnlab (pyproject.toml's pythonpath).
# Usage: python/tests/run.sh --attnlab build/app/attnlab --task-dump build/tests/attnlab_task_dump [PYTEST ARGS...]
#   e.g. python/tests/test_data.py, python/tests/test_data.py::TaskDataTest::test_copy (default: python/tests)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
while (($#)); do
  case "$1" in
    --attnlab) export ATTNLAB_BINARY="$2"; shift 2 ;;
    --task-dump) export ATTNLAB_TASK_DUMP="$2"; shift 2 ;;
    *) break ;;
  esac
done
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
modules="pytest, torch, numpy, yaml, pandas, scipy"
tried=()
for py in "${ATTNLAB_PYTHON:-}" /usr/bin/python3 python3; do
  [ -n "$py" ] || continue
  command -v "$py" >/dev/null 2>&1 || { tried+=("$py (not found)"); continue; }
  if "$py" -c "import $modules" >/dev/null 2>&1; then
    (($#)) || set -- "$here"
    # python/pyproject.toml holds pytest's settings (the package from python/).
    exec "$py" -m pytest -c "$here/../pyproject.toml" --rootdir "$here/.." -v -rs "$@"
  fi
  tried+=("$py (no ${modules//, //})")
done
echo "python tests: FAILED: no python3 can import $modules; tried: ${tried[*]}." >&2
echo "python tests: install Debian's packages: apt-get install -y --no-install-recommends python3-pytest python3-torch python3-numpy python3-yaml python3-pandas python3-scipy" >&2
echo "python tests: (scripts/test does this), or set ATTNLAB_PYTHON to a python3 that has them." >&2
exit 1
