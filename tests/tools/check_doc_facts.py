#!/usr/bin/env python3
"""Facts the documentation and other files restate, checked (the `docs` ctest).

1. The variant list: attnlab's variant table (python/attnlab/variants.json,
   `attnlab variants --json`, which python/tests/test_variants.py keeps
   current) is restated by docs/spec-reference.md (the enum and condition
   lists of the attention keys), docs/attention.md (one table row per
   numerator and denominator) and fuzz/spec.dict (every name); each must
   list exactly the table's variants.
2. Paths: every path a doc names (a word with a folder and a file extension,
   such as docs/model.md or model/transformer.hpp) must exist, from the
   repository's root, lib/include/attnlab/, lib/src/ or the doc's folder;
   GENERATED lists the paths that only a run or a script creates.
3. The version: python/pyproject.toml's `version` must be project()'s
   VERSION in CMakeLists.txt (the package and the program are released
   together; nothing else ties the two numbers).

Usage: check_doc_facts.py
Exits 1 naming the file and line of each disagreement.
"""
import glob
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VARIANTS = os.path.join(REPO, "python", "attnlab", "variants.json")

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


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def variant_lists():
    """name of a list -> the names it must hold, in the table's order, from variants.json."""
    table = json.load(open(VARIANTS, encoding="utf-8"))
    nums, dens = table["numerators"], table["denominators"]
    return {
        "numerators": [r["name"] for r in nums],
        "score kernels": [r["name"] for r in nums if r["family"] == "score_kernel"],
        "feature maps": [r["name"] for r in nums if r["family"] == "feature_map"],
        "numerators that take an order": [r["name"] for r in nums if r["takes_order"]],
        "denominators": [r["name"] for r in dens],
        "detachable denominators": [r["name"] for r in dens if r["detachable"]],
    }


# Where a list is restated: (file, what the pattern's group 1 holds, pattern); the names are group 1's
# `backticked` words, in order.
SPEC_ROW = r"^\| `{key}` \|([^\n]*)$"
RESTATED = [
    ("docs/spec-reference.md", "numerators", r"^\| `numerator` \| enum ([^|]*)\|"),
    ("docs/spec-reference.md", "numerators that take an order", r"^\| `order` \|[^|]*\| \*\*required\*\* for ([^|]*)\|"),
    ("docs/spec-reference.md", "numerators that take an order", r"^\| `order` \|(?:[^|]*\|){3} `numerator` is ([^|]*)\|"),
    ("docs/spec-reference.md", "score kernels", r"^\| `clamp` \|(?:[^|]*\|){3} `numerator` is ([^|(]*)"),
    ("docs/spec-reference.md", "denominators", r"^\| `denominator` \| enum ([^|]*)\|"),
    ("docs/spec-reference.md", "detachable denominators", r"^\| `detach_denominator` \|(?:[^|]*\|){3} `denominator: ([^`|]*)` \|"),
    # docs/attention.md: the first word of each row of a section's table
    ("docs/attention.md", "score kernels", r"### Numerators: score kernels\n(.*?)\n\n`clamp"),
    ("docs/attention.md", "feature maps", r"### Numerators: feature maps\n(.*?)\n\n### "),
    ("docs/attention.md", "denominators", r"### Denominators\n(.*?)\n\neps is"),
]


def names_in(text, table_rows):
    """The names a restatement lists: a table's first backticked word of each body row (the header row
    left out), or a list's `backticked` words, else its words between commas and "or"."""
    if table_rows:
        rows = [line for line in text.split("\n") if line.startswith("| `")][1:]
        return [re.match(r"\| `([^`]*)`", line).group(1) for line in rows]
    return re.findall(r"`([^`]*)`", text) or [w.strip() for w in re.split(r",| or ", text) if w.strip()]


def check_variant_lists():
    problems, lists = [], variant_lists()
    for rel, which, pattern in RESTATED:
        text = open(os.path.join(REPO, rel), encoding="utf-8").read()
        found = list(re.finditer(pattern, text, re.M | re.S))
        if len(found) != 1:
            problems.append(f"{rel}: {which}: the pattern {pattern!r} matches {len(found)} times, not once "
                            f"(reworded? update RESTATED in {os.path.relpath(__file__, REPO)})")
            continue
        got = names_in(found[0].group(1), table_rows=rel == "docs/attention.md")
        if got != lists[which]:
            problems.append(f"{rel}:{line_of(text, found[0].start())}: lists {which} {got}, the variant table "
                            f"{lists[which]} ({os.path.relpath(VARIANTS, REPO)})")
    fuzz = "fuzz/spec.dict"
    words = set(re.findall(r'^"([^"]*)"$', open(os.path.join(REPO, fuzz), encoding="utf-8").read(), re.M))
    for name in lists["numerators"] + lists["denominators"]:
        if name not in words:
            problems.append(f"{fuzz}: no line \"{name}\" (a variant of the table)")
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


def check_version():
    """[problem] when the Python package's version is not the CMake project's."""
    cmake = open(os.path.join(REPO, "CMakeLists.txt"), encoding="utf-8").read()
    toml = open(os.path.join(REPO, "python", "pyproject.toml"), encoding="utf-8").read()
    m_cmake = re.search(r"^project\(attnlab\s+VERSION\s+([\w.]+)", cmake, re.M)
    m_toml = re.search(r'^version\s*=\s*"([^"]+)"', toml, re.M)
    if not m_cmake or not m_toml:
        return ["CMakeLists.txt or python/pyproject.toml: no version found (project(attnlab VERSION x), version = \"x\")"]
    if m_cmake.group(1) != m_toml.group(1):
        line = toml[: m_toml.start()].count("\n") + 1
        return [f"python/pyproject.toml:{line}: version {m_toml.group(1)}, but CMakeLists.txt's project() says "
                f"{m_cmake.group(1)}"]
    return []


def main():
    if len(sys.argv) > 1:
        print(__doc__)
        return 2
    problems = check_variant_lists()
    path_problems, docs = check_paths()
    problems += path_problems + check_version()
    for p in problems:
        print(f"doc facts: {p}")
    if problems:
        print(f"doc facts: FAILED: {len(problems)} problem(s)")
        return 1
    print(f"doc facts: every restated variant list is the variant table's, every path named in {docs} docs exists, "
          "the package's version is the program's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
