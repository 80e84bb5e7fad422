"""The `plots` test: scripts/plot_sweep.py on the fixture folders of tests/data/plots.

usage: PYTHON tests/tools/check_plots.py SOURCE_DIR WORK_DIR

Runs the script with this interpreter (ctest: $ATTNLAB_PYTHON or /usr/bin/python3)
and checks that every expected figure exists as PNG and PDF, each PNG at
>= 200 dpi (its pHYs chunk) and of a plausible pixel size, and that a folder
with missing files, or an interpreter without matplotlib, gives one clear
error line and exit code 2. Fails (never skips) when matplotlib is missing.
Standard library only.
"""
import os
import shutil
import struct
import subprocess
import sys

FIXTURES = {
    # runs/<id>/metrics.csv and config.yaml; Taylor order, numerator and
    # denominator swept on one task (lookup, where taylor-2/softmax is bimodal)
    "sweep": ["loss_curves", "accuracy_curves", "by_order", "by_state"],
    # curves.csv only (val rows, empty cells), two tasks, denominator swept
    # with a clamp, one diverged run
    "curves": [f"{task}_{fig}" for task in ("lookup", "copy")
               for fig in ("loss_curves", "accuracy_curves", "by_denominator")],
}
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def png_dpi_and_size(path):
    """(dots per inch from pHYs or None, width, height) of a PNG file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None, 0, 0
    pos, dpi, width, height = 8, None, 0, 0
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"pHYs":
            x, y, unit = struct.unpack(">IIB", body[:9])
            if unit == 1:  # pixels per metre
                dpi = min(x, y) * 0.0254
        pos += 12 + length
    return dpi, width, height


def run(script, *args, env=None):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True, env=env)


def check_fixture(script, data, work, name, figures):
    out = os.path.join(work, name)
    res = run(script, os.path.join(data, name), "--out", out)
    check(res.returncode == 0, f"{name}: plot_sweep.py exits 0 (got {res.returncode}: {res.stderr.strip()})")
    expected = {f"{fig}.{ext}" for fig in figures for ext in ("png", "pdf")}
    present = set(os.listdir(out)) if os.path.isdir(out) else set()
    check(present == expected, f"{name}: writes exactly {sorted(expected)} (missing {sorted(expected - present)}, "
                               f"unexpected {sorted(present - expected)})")
    for fig in figures:
        png, pdf = os.path.join(out, fig + ".png"), os.path.join(out, fig + ".pdf")
        if os.path.exists(png):
            dpi, w, h = png_dpi_and_size(png)
            check(dpi is not None and dpi >= 199.5, f"{name}/{fig}.png: {dpi} dpi >= 200")
            check(w >= 1000 and h >= 500, f"{name}/{fig}.png: {w}x{h} pixels (at least 1000x500)")
        if os.path.exists(pdf):
            with open(pdf, "rb") as f:
                check(f.read(5) == b"%PDF-", f"{name}/{fig}.pdf is a PDF")


def check_error(script, folder, needle, what, env=None):
    res = run(script, folder, "--out", os.path.join(folder, "plots"), env=env)
    lines = res.stderr.strip().splitlines()
    check(res.returncode == 2 and len(lines) == 1 and needle in res.stderr,
          f"{what}: exit 2 and one line naming {needle!r} (got {res.returncode}: {res.stderr.strip()!r})")


def main():
    source, work = sys.argv[1], sys.argv[2]
    script = os.path.join(source, "scripts", "plot_sweep.py")
    data = os.path.join(source, "tests", "data", "plots")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for name, figures in FIXTURES.items():
        check_fixture(script, data, work, name, figures)

    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    check_error(script, empty, "summary.csv not found", "a folder without summary.csv")
    no_metrics = os.path.join(work, "no_metrics")
    os.makedirs(no_metrics)
    shutil.copy(os.path.join(data, "sweep", "summary.csv"), no_metrics)
    check_error(script, no_metrics, "metrics.csv", "a summary whose runs have no metrics")
    check(not os.path.exists(os.path.join(no_metrics, "plots")) or not os.listdir(os.path.join(no_metrics, "plots")),
          "no figure is written for a folder with missing files")

    # An interpreter without matplotlib: a package of that name that fails to import shadows it.
    fake = os.path.join(work, "no_matplotlib")
    os.makedirs(os.path.join(fake, "matplotlib"))
    with open(os.path.join(fake, "matplotlib", "__init__.py"), "w") as f:
        f.write("raise ImportError('matplotlib hidden by the plots test')\n")
    env = dict(os.environ, PYTHONPATH=fake)
    check_error(script, os.path.join(data, "sweep"), "apt-get install python3-matplotlib", "no matplotlib", env=env)

    if failures:
        print(f"plots: FAILED: {len(failures)} check(s) (python {sys.executable})", file=sys.stderr)
        return 1
    print("plots: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
