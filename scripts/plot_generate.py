#!/usr/bin/python3
"""Plot of `attnlab bench generate`: per-token decode time against sequence
length, log-log, one line per variant (KV cache vs recurrent states).

usage: /usr/bin/python3 scripts/plot_generate.py results/bench/generate.csv [out.png]
writes out.png (200 dpi) and out.pdf in the shared style of scripts/plot_style.py
(Okabe-Ito colours; a variant's layout is its line style: symmetric solid,
full dashed). Needs Debian's python3-matplotlib (scripts/setup installs it).
"""
import csv
from collections import defaultdict

import plot_style
from plot_style import BLACK, COLOURS, MARKERS

plt = plot_style.load_pyplot("plot_generate.py")

# One colour per numerator (exp's cache in black), the layout as line style.
KERNEL_COLOURS = [c for c in COLOURS if c != BLACK]


def main() -> None:
    src, stem = plot_style.csv_and_stem(__doc__)
    series = defaultdict(list)
    with open(src, newline="") as f:
        for row in csv.DictReader(f):
            series[row["variant"]].append((int(row["length"]), float(row["us_per_token"])))
    fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    kernels = list(dict.fromkeys(name.split("-")[0] for name in series if "kv_cache" not in name))
    for i, (name, pts) in enumerate(series.items()):
        pts.sort()
        kernel = name.split("-")[0]
        cache = "kv_cache" in name
        colour = BLACK if cache else KERNEL_COLOURS[kernels.index(kernel) % len(KERNEL_COLOURS)]
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
    for path in plot_style.save(fig, stem):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
