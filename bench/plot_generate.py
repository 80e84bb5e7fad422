#!/usr/bin/python3
"""Plot of `attnlab bench generate`: per-token decode time against sequence
length, log-log, one line per variant (KV cache vs recurrent states).

usage: /usr/bin/python3 bench/plot_generate.py results/bench/generate.csv [out.png]
writes out.png (200 dpi) and out.pdf, in the style of scripts/plot_sweep.py
(Okabe-Ito colours; a variant's layout is its line style: symmetric solid,
full dashed). Needs Debian's python3-matplotlib (scripts/setup installs it).
"""
import csv
import sys
from collections import defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print(f"plot_generate.py: {sys.executable} cannot import matplotlib; install Debian's python3-matplotlib "
          "(apt-get install python3-matplotlib) and run this script with /usr/bin/python3", file=sys.stderr)
    sys.exit(2)

# Okabe & Ito's colour-blind-safe palette without its yellow; one colour per
# numerator (exp's cache in black), the layout as line style.
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    src = sys.argv[1]
    dst = sys.argv[2] if len(sys.argv) == 3 else src.rsplit(".", 1)[0] + ".png"
    series = defaultdict(list)
    with open(src, newline="") as f:
        for row in csv.DictReader(f):
            series[row["variant"]].append((int(row["length"]), float(row["us_per_token"])))
    plt.rcParams.update({"font.size": 9, "axes.labelsize": 10, "legend.fontsize": 8.5, "pdf.fonttype": 42})
    fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    kernels = list(dict.fromkeys(name.split("-")[0] for name in series if "kv_cache" not in name))
    for i, (name, pts) in enumerate(series.items()):
        pts.sort()
        kernel = name.split("-")[0]
        cache = "kv_cache" in name
        colour = "black" if cache else COLOURS[kernels.index(kernel) % len(COLOURS)]
        style = "--" if "full" in name else "-"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, lw=2.5 if cache else 1.5, color=colour,
                marker=MARKERS[i % len(MARKERS)], ms=4, label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length (tokens decoded)")
    ax.set_ylabel("time per token (\u00b5s, median)")
    ax.set_title("Autoregressive decoding: KV cache (exp) vs recurrent states")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(title="variant (layout)", loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    stem = dst[:-4] if dst.endswith(".png") else dst
    for ext in ("png", "pdf"):
        fig.savefig(f"{stem}.{ext}", dpi=200, bbox_inches="tight")
        print(f"wrote {stem}.{ext}")


if __name__ == "__main__":
    main()
