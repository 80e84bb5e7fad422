#!/usr/bin/env python3
"""The `results` test: every committed experiment folder is what the current code writes.

usage: check_results_current.py --attnlab PATH RESULTS_DIR

For each folder of RESULTS_DIR with a spec.yaml and a runs/ folder, copies it to a
temporary folder without the files `attnlab summarize` writes, runs `attnlab
summarize` on the copy and compares each written file (summary.csv, table.md,
curves.csv, comparisons.csv) byte for byte with the committed one. A difference
means the code that writes the summaries changed after the folder was last
summarized, so the committed tables no longer recompute from their runs: run
`attnlab summarize results/<name>`, check in `git diff` that only the format
moved and no value, and commit what it wrote. Exits 1 naming each folder and
file that differs, with its first differing line. A text experiment is
summarized with or without its corpus (without, from the size and hash its
runs recorded), so a clean checkout checks every folder. A corpus path is
compared from its data/ folder on; a file the folder's .gitignore keeps out is
not compared. Standard library only.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

WRITTEN = ["summary.csv", "table.md", "curves.csv", "comparisons.csv"]  # by `attnlab summarize`
NOT_COPIED = set(WRITTEN) | {"plots"}  # outputs, and figures it never reads


# summary.csv records a text task's corpus by the absolute path it had where the
# folder was summarized (/home/me/attnlab/data/kjv.txt): compared from data/ on.
CORPUS_PATH = re.compile(r'(^|,)"?/[^,"\n]*/(data/[^,"\n]*)"?(?=,|$)', re.M)


def without_checkout_path(text):
    return CORPUS_PATH.sub(r"\1\2", text)


def first_difference(committed, written):
    """'line N: committed ... / written ...' for the first line where the two texts differ."""
    a, b = committed.splitlines(), written.splitlines()
    for n, (x, y) in enumerate(zip(a, b), start=1):
        if x != y:
            return f"line {n}: committed {x[:160]!r} / written {y[:160]!r}"
    return f"committed has {len(a)} lines, written {len(b)}"


def ignored_names(folder):
    """The file names the folder's own .gitignore keeps out of the repository."""
    try:
        with open(os.path.join(folder, ".gitignore"), encoding="utf-8") as f:
            return {line.strip() for line in f if line.strip() and not line.startswith("#")}
    except FileNotFoundError:
        return set()


def check_folder(attnlab, folder, work):
    """The problems of one experiment folder (an empty list when it is current)."""
    name = os.path.basename(folder)
    copy = os.path.join(work, name)
    os.makedirs(copy)
    for entry in os.listdir(folder):
        if entry in NOT_COPIED:
            continue
        src = os.path.join(folder, entry)
        (shutil.copytree if os.path.isdir(src) else shutil.copy2)(src, os.path.join(copy, entry))
    # Exit code 1 only says that some runs of the spec are missing (a pilot's
    # unfinished arm); the files are written all the same.
    proc = subprocess.run([attnlab, "summarize", copy], capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        return [f"{folder}: attnlab summarize failed ({proc.returncode}): {proc.stderr.strip()[-300:]}"]
    problems = []
    ignored = ignored_names(folder)
    for f in WRITTEN:
        if f in ignored:
            continue  # not committed on purpose (lm_stability's curves.csv: 13 MB of per-step losses)
        committed_path, written_path = os.path.join(folder, f), os.path.join(copy, f)
        has_committed, has_written = os.path.exists(committed_path), os.path.exists(written_path)
        if has_committed != has_written:
            problems.append(f"{committed_path}: " + ("committed, but summarize no longer writes it" if has_committed
                                                     else "summarize writes it, but it is not committed"))
            continue
        if not has_committed:
            continue
        with open(committed_path, encoding="utf-8") as c, open(written_path, encoding="utf-8") as w:
            committed, written = without_checkout_path(c.read()), without_checkout_path(w.read())
        if committed != written:
            problems.append(f"{committed_path}: differs from what summarize writes now, "
                            f"{first_difference(committed, written)}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attnlab", required=True, help="the attnlab binary")
    parser.add_argument("results", help="the committed results folder")
    args = parser.parse_args()
    folders = sorted(os.path.join(args.results, d) for d in os.listdir(args.results)
                     if os.path.isfile(os.path.join(args.results, d, "spec.yaml"))
                     and os.path.isdir(os.path.join(args.results, d, "runs")))
    if not folders:
        print(f"check_results_current: no experiment folder (spec.yaml and runs/) in {args.results}", file=sys.stderr)
        return 1
    problems = []
    with tempfile.TemporaryDirectory(prefix="attnlab_results_") as root:
        # The copies sit at the same depth below a data/ link as the committed
        # folders below the repository's data/: a text spec names its corpus
        # relative to its own folder (../../data/kjv.txt).
        os.symlink(os.path.abspath(os.path.join(args.results, os.pardir, "data")), os.path.join(root, "data"))
        work = os.path.join(root, "results")
        for folder in folders:
            problems += check_folder(args.attnlab, folder, work)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_results_current: {len(problems)} file(s) out of date; for each folder run "
              "`attnlab summarize results/<name>`, check that no value moved, and commit", file=sys.stderr)
        return 1
    print(f"check_results_current: the summaries of {len(folders)} experiment folders are what summarize writes "
          f"now: {', '.join(os.path.basename(f) for f in folders)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
