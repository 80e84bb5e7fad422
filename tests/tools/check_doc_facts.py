#!/usr/bin/env python3
"""Facts the documentation states in more than one place, checked (the `docs` ctest).

1. Repeated numbers: each FACT below names the places that state one number
   (a file and a pattern whose group 1 is the number) and, when it can be
   computed, a command that prints the true value. Every place must match
   once, and all must agree with each other and with the command.
2. Paths: every path a doc names (a word with a folder and a file extension,
   such as docs/model.md or model/transformer.hpp) must exist, from the
   repository's root, lib/include/attnlab/, lib/src/ or the doc's folder;
   GENERATED lists the paths that only a run or a script creates.

Usage: check_doc_facts.py [--crosscheck-dump PATH]  (without it, the true
count of the cross-check's cases is not computed, only the docs compared)
Exits 1 naming the file and line of each disagreement.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name: ([(file, pattern)], how to compute it or None)
FACTS = {
    "cross-check cases": (
        [("docs/testing.md", r"forward and backward of\s+(\d+)\s+variant"),
         ("reference/README.md", r"\((\d+) cases, 2 dumps each\)"),
         ("reference/README.md", r"### Cases \((\d+) with the current variant table\)")],
        "crosscheck"),
}

# The docs checked for paths: the project's own pages.
DOCS = ["README.md", "docs/*.md", "lib/README.md", "reference/README.md", "fuzz/README.md", "results/README.md"]

# Paths the docs name that are written by a command, not kept in the repository.
GENERATED = {
    "results/first/table.md",  # README's first experiment writes it
    "data/kjv.txt",            # scripts/get_corpus downloads it
    "data/kjv_echo.txt",       # scripts/make_echo_corpus builds it
    "data/kjv_echo_tag.txt",   # scripts/make_echo_corpus --tags 8 builds it
    "data/random_echo_26.txt",  # scripts/make_echo_corpus --random 26 builds it
    "data/random_echo_94.txt",  # scripts/make_echo_corpus --random 94 builds it
}

PATH = re.compile(r"(?<![\w./<>$-])((?:[\w.-]+/)+[\w.-]+\.(?:md|cpp|hpp|py|sh|yaml|txt|tsv|dict|json))\b")
ROOTS = ["", "lib/include/attnlab", "lib/src"]


def crosscheck_count(dump):
    py = os.environ.get("ATTNLAB_PYTHON", "/usr/bin/python3")
    r = subprocess.run([py, os.path.join(REPO, "reference", "crosscheck.py"), "--dump", dump, "--count"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or not r.stdout.strip().isdigit():
        raise SystemExit(f"doc facts: FAILED: crosscheck.py --count: {r.stdout.strip()[-2000:]}")
    return int(r.stdout.strip())


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def check_facts(dump):
    problems = []
    for name, (places, compute) in FACTS.items():
        seen = []  # (value, where)
        for rel, pattern in places:
            text = open(os.path.join(REPO, rel), encoding="utf-8").read()
            found = list(re.finditer(pattern, text))
            if len(found) != 1:
                problems.append(f"{rel}: {name}: the pattern {pattern!r} matches {len(found)} times, not once "
                                f"(reworded? update FACTS in {os.path.relpath(__file__, REPO)})")
                continue
            seen.append((int(found[0].group(1)), f"{rel}:{line_of(text, found[0].start())}"))
        truth = None
        if compute == "crosscheck" and dump:
            truth = (crosscheck_count(dump), "reference/crosscheck.py --count")
        values = {v for v, _ in seen} | ({truth[0]} if truth else set())
        if len(values) > 1:
            said = "; ".join(f"{where} says {v}" for v, where in seen + ([truth] if truth else []))
            problems.append(f"{name} disagree: {said}")
    return problems


def check_paths():
    problems = []
    docs = sorted({f for pattern in DOCS for f in glob.glob(os.path.join(REPO, pattern))})
    for doc in docs:
        rel_doc = os.path.relpath(doc, REPO)
        with open(doc, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                for m in PATH.finditer(line):
                    p = m.group(1)
                    if p in GENERATED or p.split("/")[0].isupper():  # DIR/table.md: a placeholder
                        continue
                    candidates = [os.path.join(REPO, root, p) for root in ROOTS] + [os.path.join(os.path.dirname(doc), p)]
                    if not any(os.path.exists(c) for c in candidates):
                        problems.append(f"{rel_doc}:{number}: names {p}, which does not exist")
    return problems, len(docs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--crosscheck-dump", default=None)
    a = ap.parse_args()
    problems = check_facts(a.crosscheck_dump)
    path_problems, docs = check_paths()
    problems += path_problems
    for p in problems:
        print(f"doc facts: {p}")
    if problems:
        print(f"doc facts: FAILED: {len(problems)} problem(s)")
        return 1
    print(f"doc facts: {len(FACTS)} repeated fact(s) agree, every path named in {docs} docs exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
