#!/usr/bin/python3
"""Runs the examples of attnlab's documentation, so that they cannot rot.

usage: check_docs.py --attnlab BUILD/app/attnlab [--install BUILD] [--python PY] FILE.md...

First it runs tests/tools/check_doc_facts.py: every list of the variants
that a doc (or the fuzz dictionary) restates is the variant table's, and
every path a doc names exists.

In each Markdown file, fenced code blocks are examples to run, in order, in
one fresh temporary folder per file (which holds links to the repository's
scripts/, python/, experiments/ and reference/ folders):
  - a block preceded by the line `<!-- file: NAME -->` is written to NAME;
  - ```sh blocks run line by line in bash (set -e), with the attnlab binary
    first on PATH; a line's trailing `# comment` is part of the shell text;
  - ```python blocks run with PY (default /usr/bin/python3), with the
    repository's python/ folder on PYTHONPATH.
Other fenced blocks (output, text) and indented blocks (set-up commands,
error messages) are not run. Exits 1 naming the file, the block's line and
the command's output when an example fails.

With --install BUILD, the examples run as a user who followed the README:
HOME is a temporary folder, `cmake --install BUILD --prefix ~/.local` has
put attnlab in ~/.local/bin (first on PATH), its scripts in
~/.local/share/attnlab and its Python package in the user site-packages
(imported without PYTHONPATH), and only experiments/ is linked.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^```(\w*)\s*$")
FILE_MARK = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->\s*$")


def blocks(path):
    """Yields (kind, first line number, text, file name or None) per fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i, pending_file = 0, None
    while i < len(lines):
        mark = FILE_MARK.match(lines[i])
        if mark:
            pending_file = mark.group(1)
            i += 1
            continue
        fence = FENCE.match(lines[i])
        if fence and fence.group(1):
            kind, start, body = fence.group(1), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise SystemExit(f"{path}:{start}: unclosed code block")
            yield kind, start, "\n".join(body) + "\n", pending_file
            pending_file = None
        elif lines[i].strip():
            pending_file = None if not lines[i].startswith("<!--") else pending_file
        i += 1


def install(build, home):
    """`cmake --install BUILD --prefix HOME/.local`; returns HOME/.local/bin."""
    prefix = os.path.join(home, ".local")
    r = subprocess.run(["cmake", "--install", build, "--prefix", prefix], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise SystemExit(f"docs: FAILED: cmake --install {build} --prefix {prefix}:\n{r.stdout}")
    return os.path.join(prefix, "bin")


def run_file(md, attnlab, python, build=None):
    """Runs the examples of one file; with `build`, as a user of the install (only experiments/ is linked
    into the folder: the scripts come from ~/.local/share/attnlab, the Python package from the user site)."""
    home = tempfile.mkdtemp(prefix="attnlab-docs-home-") if build else None
    try:
        return run_blocks(md, attnlab, python, home, build)
    finally:
        if home:
            shutil.rmtree(home, ignore_errors=True)


def run_blocks(md, attnlab, python, home, build):
    env = dict(os.environ)
    bin_dir = os.path.dirname(os.path.abspath(attnlab))
    package = os.path.join(REPO, "python")
    links = ("scripts", "python", "experiments", "reference")
    if build:
        env["HOME"] = home
        bin_dir = install(build, home)
        package = None  # installed where python3 finds it
        links = ("experiments",)
        env.pop("PYTHONPATH", None)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    if package:
        env["PYTHONPATH"] = package + os.pathsep + env.get("PYTHONPATH", "")
    env["ATTNLAB_PYTHON"] = python
    ran = 0
    with tempfile.TemporaryDirectory(prefix="attnlab-docs-") as work:
        for name in links:
            os.symlink(os.path.join(REPO, name), os.path.join(work, name))
        for kind, line, text, file_name in blocks(md):
            where = f"{os.path.relpath(md, REPO)}:{line}"
            if file_name:
                with open(os.path.join(work, file_name), "w", encoding="utf-8") as f:
                    f.write(text)
                print(f"docs: {where}: wrote {file_name}")
                continue
            if kind == "sh":
                cmd = ["bash", "-euo", "pipefail", "-c", text]
            elif kind == "python":
                cmd = [python, "-c", text]
            else:
                continue
            print(f"docs: {where}: running {kind} block", flush=True)
            r = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=1800)
            if r.returncode != 0:
                print(r.stdout[-6000:])
                print(f"docs: FAILED: {where}: {kind} block exited {r.returncode}")
                return False, ran
            ran += 1
    return True, ran


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--attnlab", required=True)
    p.add_argument("--install", metavar="BUILD", help="run as after `cmake --install BUILD --prefix ~/.local`")
    p.add_argument("--python", default=os.environ.get("ATTNLAB_PYTHON", "/usr/bin/python3"))
    p.add_argument("files", nargs="+")
    a = p.parse_args()
    # First the facts stated in several docs and the paths they name (tests/tools/check_doc_facts.py).
    facts = [sys.executable, os.path.join(REPO, "tests", "tools", "check_doc_facts.py")]
    if subprocess.run(facts).returncode != 0:
        return 1
    total = 0
    for md in a.files:
        ok, ran = run_file(md, a.attnlab, a.python, a.install)
        total += ran
        if not ok:
            return 1
    if total == 0:
        print("docs: FAILED: no example found to run")
        return 1
    print(f"docs: {total} examples ran in {len(a.files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
