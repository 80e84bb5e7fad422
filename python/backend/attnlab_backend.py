"""The build backend of the attnlab Python package (PEP 517 and PEP 660), and
its installer for `cmake --install`. Standard library only.

pip runs it from python/pyproject.toml (backend-path): `pip install
./python` builds a wheel of python/attnlab/ (every file but bytecode,
variants.json included) with the metadata of pyproject.toml's [project]
table; `pip install -e ./python` one that points Python at python/attnlab/
in place. Nothing comes from a package index, so it builds offline and in
pip's isolated build environment (which cannot see Debian's setuptools).

As a program it installs the package for a cmake --install prefix (app/CMakeLists.txt):

    python3 attnlab_backend.py install PREFIX [--destdir DIR]

It unpacks the wheel into the folder of PREFIX that this python3 reads
without PYTHONPATH: the user site-packages for ~/.local
(~/.local/lib/python3.X/site-packages), /usr/local/lib/python3.X/dist-packages
for /usr/local on Debian; any other prefix gets PREFIX/lib/python3.X/site-packages
and a line saying to put it on PYTHONPATH. `pip uninstall attnlab` removes it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import site
import sys
import sysconfig
import tarfile
import zipfile

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: the few keys of pyproject.toml below
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
PACKAGE = "attnlab"
SKIP_DIRS = {"__pycache__"}
SKIP_SUFFIXES = (".pyc", ".pyo")


# ---------------------------------------------------------------- metadata


def _project() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        if tomllib is not None:
            return tomllib.load(f)["project"]
        return _parse_toml_project(f.read().decode("utf-8"))


def _parse_toml_project(text: str) -> dict:
    """[project] and [project.optional-dependencies] of this package's pyproject.toml:
    `key = "string"` and `key = ["a", "b"]` lines (the only forms it uses)."""
    import ast
    project, table = {}, None
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line.startswith("["):
            table = line.strip("[]")
            continue
        if "=" not in line or table not in ("project", "project.optional-dependencies"):
            continue
        key, value = (s.strip() for s in line.split("=", 1))
        target = project if table == "project" else project.setdefault("optional-dependencies", {})
        target[key] = ast.literal_eval(value)
    return project


def _name_version() -> tuple[str, str]:
    p = _project()
    return p["name"], p["version"]


def _metadata() -> str:
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}"]
    if p.get("description"):
        lines.append(f"Summary: {p['description']}")
    if p.get("requires-python"):
        lines.append(f"Requires-Python: {p['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    body = ""
    readme = os.path.join(ROOT, p["readme"]) if p.get("readme") else None
    if readme and os.path.isfile(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


def _dist_info(name: str, version: str) -> str:
    return f"{name}-{version}.dist-info"


def _package_files() -> list[tuple[str, str]]:
    """(path in the wheel, path on disk) of every file of python/attnlab/, sorted."""
    out = []
    top = os.path.join(ROOT, PACKAGE)
    for d, dirs, files in os.walk(top):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
        for f in sorted(files):
            if not f.endswith(SKIP_SUFFIXES):
                disk = os.path.join(d, f)
                out.append((os.path.relpath(disk, ROOT).replace(os.sep, "/"), disk))
    return out


# ---------------------------------------------------------------- wheels


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _wheel_bytes(extra_files: list[tuple[str, bytes]]) -> tuple[str, bytes, list[tuple[str, bytes]]]:
    """(file name, zip bytes, [(arcname, data)...]) of a py3-none-any wheel holding `extra_files`
    and the dist-info (METADATA, WHEEL, top_level.txt, RECORD)."""
    name, version = _name_version()
    info = _dist_info(name, version)
    files = list(extra_files) + [
        (f"{info}/METADATA", _metadata().encode()),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: attnlab_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        (f"{info}/top_level.txt", f"{PACKAGE}\n".encode()),
    ]
    record = "".join(_record_line(a, d) + "\n" for a, d in files) + f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            zi = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return f"{name}-{version}-py3-none-any.whl", buf.getvalue(), files


def _write(directory: str, file_name: str, data: bytes) -> str:
    with open(os.path.join(directory, file_name), "wb") as f:
        f.write(data)
    return file_name


def _package_contents() -> list[tuple[str, bytes]]:
    out = []
    for arcname, disk in _package_files():
        with open(disk, "rb") as f:
            out.append((arcname, f.read()))
    return out


# PEP 660: python/attnlab/ itself is imported, through a finder that knows
# that one name (a path entry for python/ would also expose tests/ and backend/).
_EDITABLE_FINDER = '''"""Imports attnlab from its source folder (pip install -e ./python)."""
import importlib.util
import sys

SOURCE = {source!r}


class AttnlabFinder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "attnlab":
            return None
        return importlib.util.spec_from_file_location(
            name, SOURCE + "/__init__.py", submodule_search_locations=[SOURCE])


if AttnlabFinder not in sys.meta_path:
    sys.meta_path.append(AttnlabFinder)
'''


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    file_name, data, _ = _wheel_bytes(_package_contents())
    return _write(wheel_directory, file_name, data)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    source = os.path.join(ROOT, PACKAGE)
    finder = _EDITABLE_FINDER.format(source=source).encode()
    files = [("_attnlab_editable.py", finder), ("_attnlab_editable.pth", b"import _attnlab_editable\n")]
    file_name, data, _ = _wheel_bytes(files)
    return _write(wheel_directory, file_name, data)


def build_sdist(sdist_directory, config_settings=None):
    name, version = _name_version()
    base = f"{name}-{version}"
    members = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
               ("backend/attnlab_backend.py", os.path.abspath(__file__))]
    if os.path.isfile(os.path.join(ROOT, "README.md")):
        members.append(("README.md", os.path.join(ROOT, "README.md")))
    members += _package_files()
    file_name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, file_name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        pkg_info = _metadata().encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size, ti.mode = len(pkg_info), 0o644
        t.addfile(ti, io.BytesIO(pkg_info))
        for arcname, disk in members:
            ti = t.gettarinfo(disk, f"{base}/{arcname}")
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = ""
            ti.mtime = 0
            with open(disk, "rb") as f:
                t.addfile(ti, f)
    return file_name


def _prepare_metadata(metadata_directory):
    name, version = _name_version()
    info = os.path.join(metadata_directory, _dist_info(name, version))
    os.makedirs(info, exist_ok=True)
    _write(info, "METADATA", _metadata().encode())
    return os.path.basename(info)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


# ---------------------------------------------------------------- cmake --install


def site_dir(prefix: str) -> tuple[str, bool]:
    """(folder for pure-Python packages under `prefix`, whether this python3 reads it without PYTHONPATH)."""
    prefix = os.path.abspath(os.path.expanduser(prefix)).rstrip("/")
    candidates = []
    if site.ENABLE_USER_SITE is not False:
        candidates.append(site.getusersitepackages())
    candidates += site.getsitepackages()
    for c in candidates:
        # PREFIX/lib/...: /usr/local/lib/python3.X/dist-packages is /usr/local's, not /usr's.
        if os.path.abspath(c).startswith(prefix + "/lib/"):
            return c, True
    return sysconfig.get_path("purelib", "posix_prefix", vars={"base": prefix, "platbase": prefix}), False


def install(prefix: str, destdir: str = "") -> int:
    target, on_path = site_dir(prefix)
    staged = (destdir.rstrip("/") + target) if destdir else target
    name, version = _name_version()
    for old in (os.path.join(staged, PACKAGE),):  # a file removed from the package goes from the install too
        if os.path.isdir(old):
            import shutil
            shutil.rmtree(old)
    _, _, files = _wheel_bytes(_package_contents())
    info = _dist_info(name, version)
    files = [(a, d) for a, d in files if not a.endswith("/RECORD")] + [(f"{info}/INSTALLER", b"cmake\n")]
    record = "".join(_record_line(a, d) + "\n" for a, d in files) + f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    for arcname, data in files:
        path = os.path.join(staged, *arcname.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    print(f"-- Installing: the {PACKAGE} Python package in {staged}/{PACKAGE}")
    if not on_path:
        print(f"-- {sys.executable} does not read {target} by itself: PYTHONPATH={target}")
    return 0


def main(argv: list[str]) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="attnlab_backend.py", description="Installs the attnlab Python package.")
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("install", help="into the site-packages folder of PREFIX")
    i.add_argument("prefix")
    i.add_argument("--destdir", default=os.environ.get("DESTDIR", ""))
    a = p.parse_args(argv)
    return install(a.prefix, a.destdir)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
