#!/usr/bin/env python3
"""Checks that lib/'s includes follow the layer order of lib/README.md.

A file of module m (lib/include/attnlab/m/ or lib/src/m/) may include its own
module and modules of a lower layer only. Every include that points to the
same layer or above is printed as FILE:LINE with both modules, as is a
module folder the table does not list; the exit code is then 1.

Usage: check_layers.py [LIB_DIR]   (default: the lib/ beside this script's tests/)
"""
import os
import re
import sys

ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([a-z_]+)\s*\|")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def read_layers(readme):
    layers = {}
    with open(readme, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line)
            if m:
                layers[m.group(2)] = int(m.group(1))
    if not layers:
        sys.exit(f"{readme}: no layer table (rows '| layer | module | ... |')")
    return layers


def module_of(path, lib):
    """The module of a file under lib/, or None when it is in no module folder."""
    rel = os.path.relpath(os.path.normpath(path), lib).split(os.sep)
    if rel[:2] == ["include", "attnlab"] and len(rel) > 3:
        return rel[2]
    if rel[0] == "src" and len(rel) > 2:
        return rel[1]
    return None


def main():
    lib = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
    readme = os.path.join(lib, "README.md")
    layers = read_layers(readme)
    problems = []
    files = 0
    for root in (os.path.join(lib, "include", "attnlab"), os.path.join(lib, "src")):
        for folder in sorted(os.listdir(root)):
            if os.path.isdir(os.path.join(root, folder)) and folder not in layers:
                problems.append(f"{os.path.relpath(os.path.join(root, folder))}: module '{folder}' "
                                f"is not in the layer table of {os.path.relpath(readme)}")
        for dirpath, _, names in os.walk(root):
            for name in sorted(names):
                if not name.endswith((".hpp", ".cpp", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                mine = module_of(path, lib)
                if mine not in layers:
                    continue  # reported above (or a file outside the modules)
                files += 1
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        quote, target = m.groups()
                        if target.startswith("attnlab/"):
                            theirs = target.split("/")[1] if target.count("/") >= 2 else None
                        elif quote == '"':  # relative to the including file
                            theirs = module_of(os.path.join(dirpath, target), lib)
                        else:
                            continue  # a system or third-party header
                        if theirs is None or theirs == mine:
                            continue
                        if theirs not in layers:
                            problems.append(f"{os.path.relpath(path)}:{number}: includes {target}: module "
                                            f"'{theirs}' is not in the layer table")
                        elif layers[theirs] >= layers[mine]:
                            where = "the same layer" if layers[theirs] == layers[mine] else "a higher layer"
                            problems.append(f"{os.path.relpath(path)}:{number}: {mine} (layer {layers[mine]}) "
                                            f"includes {target}: {theirs} is {where} ({layers[theirs]})")
    for p in problems:
        print(p)
    if problems:
        print(f"layers: FAILED: {len(problems)} problem(s) with the order of {os.path.relpath(readme)}")
        return 1
    print(f"layers: {files} files of {len(layers)} modules, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
