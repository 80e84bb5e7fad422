#!/usr/bin/python3
"""Plot of `attnlab bench generate`: per-token decode time against sequence
length, log-log, one line per variant (KV cache vs recurrent states).

usage: /usr/bin/python3 bench/plot_generate.py results/bench/generate.csv [out.png]
needs Debian's python3-matplotlib (bench/run_generate installs it).
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    src = sys.argv[1]
    dst = sys.argv[2] if len(sys.argv) == 3 else src.rsplit(".", 1)[0] + ".png"
    series = defaultdict(list)
    with open(src, newline="") as f:
        for row in csv.DictReader(f):
            series[row["variant"]].append((int(row["length"]), float(row["us_per_token"])))
    fig, ax = plt.subplots(figsize=(10, 5))
    for name, pts in series.items():
        pts.sort()
        style = "-" if "symmetric" in name or name in ("elu1",) else ("--" if "full" in name else "-")
        width = 2.5 if "kv_cache" in name else 1.5
        color = "black" if "kv_cache" in name else None
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, lw=width, color=color, marker="o", ms=3, label=name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length (tokens decoded)")
    ax.set_ylabel("time per token (us, median)")
    ax.set_title("Autoregressive decoding: KV cache (exp) vs recurrent states")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(dst, dpi=120)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
