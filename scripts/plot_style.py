"""The style every figure of attnlab shares: one place for the palette, the
markers, the fonts and the way a figure is saved.

Used by the figure scripts beside it (plot_sweep.py, plot_probe.py,
plot_seq_len.py, plot_generate.py ...), which import it directly (Python
puts the script's folder on sys.path).

- load_pyplot(script, ...): matplotlib.pyplot on the Agg backend with the
  shared rcParams; when matplotlib (or numpy) cannot be imported it prints one
  line naming the interpreter and the apt-get command, and exits.
- COLOURS, LINESTYLES, MARKERS and style(i): Okabe & Ito's colour-blind-safe
  palette without its yellow; series beyond the seventh change line style and
  every series has its own marker, so no two of the first 28 look alike.
- save(fig, stem): STEM.png at DPI and STEM.pdf (TrueType fonts), cropped to
  what is drawn (legends outside the axes included); closes the figure.
- InputError and report(script, draw): the scripts' common ending: "wrote
  PATH" per file and exit code 0, or one line "SCRIPT: what is wrong" and 2.
- read_csv_rows(path, columns, hint) and number(path, row, key, kind): a CSV's rows, with one-line errors for a missing file, column or rows.
- csv_and_stem(doc): the arguments of the benchmark plots (CSV [out.png]).
- write_csv(path, columns, rows): a table the scripts write, atomically.
- holm(ps): Holm's step-down adjustment of a family of p values.
Standard library only until load_pyplot is called (read_csv_rows imports
the attnlab package's reader).
"""
import sys

DPI = 200
BLACK = "#000000"
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", BLACK]
LINESTYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]
RC_PARAMS = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "legend.fontsize": 8.5,
    "legend.title_fontsize": 9,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "figure.titlesize": 11,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "pdf.fonttype": 42,  # TrueType in the PDF: editable text, accepted by publishers
    "savefig.dpi": DPI,
}


def load_pyplot(script, exit_code=2, with_numpy=False):
    """matplotlib.pyplot (Agg backend, RC_PARAMS applied); exits with exit_code and one line when it is missing.

    script: the caller's file name, which starts the error line; with_numpy: numpy is needed too."""
    packages = ["python3-matplotlib"] + (["python3-numpy"] if with_numpy else [])
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        if with_numpy:
            import numpy  # noqa: F401  (imported here so that a missing numpy gets the same one-line error)
    except ImportError as missing:
        print(f"{script}: {sys.executable} cannot import {missing.name or 'matplotlib'}; install Debian's "
              f"{' and '.join(packages)} (apt-get install {' '.join(packages)}) and run this script with "
              "/usr/bin/python3", file=sys.stderr)
        sys.exit(exit_code)
    plt.rcParams.update(RC_PARAMS)
    return plt


def style(i):
    """Colour, line style and marker of series i: unique for every i < 28."""
    return {"color": COLOURS[i % len(COLOURS)], "linestyle": LINESTYLES[(i // len(COLOURS)) % len(LINESTYLES)],
            "marker": MARKERS[i % len(MARKERS)]}


def save(fig, stem):
    """Writes STEM.png (DPI) and STEM.pdf, cropped to what is drawn, closes the figure; returns the two paths.
    STEM's folder is created when missing."""
    import os

    import matplotlib.pyplot as plt

    folder = os.path.dirname(stem)
    if folder:
        os.makedirs(folder, exist_ok=True)
    paths = []
    for ext in ("png", "pdf"):
        path = f"{stem}.{ext}"
        # No creation date in the PDF: redrawing an unchanged figure leaves its file unchanged.
        fig.savefig(path, dpi=DPI, bbox_inches="tight", metadata={"CreationDate": None} if ext == "pdf" else None)
        paths.append(path)
    plt.close(fig)
    return paths


class InputError(Exception):
    """An input that cannot be plotted; report() prints it in one line and returns 2."""


def read_csv_rows(path, columns=(), hint=""):
    """The rows of a CSV file as dicts; InputError when the file, a column in `columns` or every row is missing.

    hint: what to do when the file is missing, e.g. " (run `attnlab probe RUN_DIR` first)".
    The reading is the attnlab package's (attnlab.files.read_csv_rows)."""
    import os

    from attnlab.files import read_csv_rows as read

    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file{hint}")
    try:
        return read(path, columns)
    except ValueError as e:  # attnlab.files.InputError: "<path>: <what is wrong>"
        raise InputError(str(e)) from None


def write_csv(path, columns, rows):
    """The header `columns` and the rows (lists of cells) as CSV at path, written atomically: a reader
    never sees half a table, and a failed write leaves the old file."""
    import csv
    import io
    import os

    text = io.StringIO()
    w = csv.writer(text, lineterminator="\n")
    w.writerow(columns)
    w.writerows(rows)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text.getvalue())
    os.replace(tmp, path)


def holm(ps):
    """Holm's step-down adjustment of the p values ps (a family), in ps's order."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - j) * ps[i]))
        out[i] = running
    return out


def baseline_keys(row):
    """The baseline cell of a comparisons.csv row (`key=value,...`, as `attnlab summarize` writes it) as a dict."""
    return dict(item.split("=", 1) for item in row["baseline"].split(",") if "=" in item)


def number(path, row, key, kind=float):
    """row[key] as `kind`; InputError naming the file and the cell when it is not a number."""
    try:
        return kind(row[key])
    except (TypeError, ValueError):
        raise InputError(f"{path}: {key} {row[key]!r} is not a number") from None


def report(script, draw):
    """Runs draw() (which returns the paths it wrote) and says what it wrote; returns the exit code."""
    try:
        written = draw()
    except InputError as e:
        print(f"{script}: {e}", file=sys.stderr)
        return 2
    for path in written:
        print("wrote", path)
    return 0


def csv_and_stem(doc):
    """CSV [out.png] from the command line: the CSV file and the stem of the figure (default: the CSV's)."""
    if len(sys.argv) not in (2, 3):
        sys.exit(doc)
    src = sys.argv[1]
    dst = sys.argv[2] if len(sys.argv) == 3 else src.rsplit(".", 1)[0]
    return src, dst[:-4] if dst.endswith(".png") else dst
