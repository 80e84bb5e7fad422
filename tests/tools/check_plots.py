"""The `plots` test: scripts/plot_sweep.py on the fixture folders of tests/data/plots, and
scripts/plot_length.py on a summary built here whose intervals are known by hand; scripts/plot_state_ladder.py
on one whose points are; scripts/plot_per_position.py on two small files; scripts/solve_curves.py on a sweep
whose log-rank test is worked by hand; scripts/plot_gaps.py on one whose gaps and their change are.

usage: PYTHON tests/tools/check_plots.py SOURCE_DIR WORK_DIR

Runs the script with this interpreter (ctest: $ATTNLAB_PYTHON or /usr/bin/python3)
and checks that every expected figure exists as PNG and PDF, each PNG at
>= 200 dpi (its pHYs chunk) and of a plausible pixel size, and that a folder
with missing files, or an interpreter without matplotlib, gives one clear
error line and exit code 2. On the lr_selected fixture it reads what the
script drew ($ATTNLAB_PLOT_LOG) and checks the chosen_* figures against
summary.csv: only the lr_selected runs, one per variant at its rate, sorted
by the median final test loss in bits per byte. Fails (never skips) when
matplotlib is missing. Standard library only.
"""
import csv
import json
import math
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
    # curves.csv only, text task, numerator and train.lr swept, summary.csv
    # with lr_selected and the unigram/bigram baselines
    "lr_selected": ["loss_curves", "accuracy_curves", "by_numerator", "by_state", "chosen_loss_curves",
                    "chosen_final"],
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


def drawn(log):
    """{figure: what plot_sweep.py logged of it} from the $ATTNLAB_PLOT_LOG file (empty if there is none)."""
    if not os.path.exists(log):
        return {}
    with open(log) as f:
        return {e["figure"]: e for e in map(json.loads, f)}


def check_fixture(script, data, work, name, figures):
    """Runs plot_sweep.py on a fixture; returns what it drew ({figure: log entry})."""
    out = os.path.join(work, name)
    log = os.path.join(work, f"{name}.jsonl")
    res = run(script, os.path.join(data, name), "--out", out, env=dict(os.environ, ATTNLAB_PLOT_LOG=log))
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
    return drawn(log)


def chosen_variants(summary):
    """{numerator: (chosen lr, median final test bits per byte)} of the lr_selected runs of summary.csv,
    the bits computed here from final_test_loss (nats) / ln 2."""
    with open(summary, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["lr_selected"] == "true"]
    variants = {}
    for r in rows:
        variants.setdefault(r["attention.numerator"], (r["train.lr"], []))[1].append(
            float(r["final_test_loss"]) / math.log(2))
    for name, (lr, bits) in variants.items():
        bits.sort()
        mid = len(bits) // 2
        variants[name] = (lr, bits[mid] if len(bits) % 2 else (bits[mid - 1] + bits[mid]) / 2)
    return variants


def check_chosen(data, figures):
    """chosen_loss_curves and chosen_final of the lr_selected fixture draw each variant at its chosen rate only."""
    summary = os.path.join(data, "lr_selected", "summary.csv")
    variants = chosen_variants(summary)
    check(len(variants) == 2 and len({lr for lr, _ in variants.values()}) == 2,
          f"lr_selected fixture: two variants, chosen at different rates ({variants})")

    def names_variant_at_its_rate(label):
        return any(label.startswith(f"{v}, ") and label.endswith(f"lr {lr}") for v, (lr, _) in variants.items())

    curves = figures.get("chosen_loss_curves", {"axes": [], "legend": []})
    check([a["title"] for a in curves["axes"]] == ["val", "test"],
          f"chosen_loss_curves: validation and test panels only (got {[a['title'] for a in curves['axes']]})")
    for a in curves["axes"]:
        check(len(a["lines"]) == len(variants) and all(names_variant_at_its_rate(x) for x in a["lines"]),
              f"chosen_loss_curves/{a['title']}: one line per variant, at its chosen rate (got {a['lines']})")
    check(sorted(curves["legend"]) == sorted(curves["axes"][0]["lines"] if curves["axes"] else [None]),
          f"chosen_loss_curves: the legend names the drawn lines (got {curves['legend']})")

    final = figures.get("chosen_final", {"axes": [{"yticklabels": [], "lines": []}], "legend": []})
    rows = list(reversed(final["axes"][0]["yticklabels"]))  # top row first
    best_first = sorted(variants, key=lambda v: variants[v][1])
    check(len(rows) == len(variants) and all(names_variant_at_its_rate(x) for x in rows)
          and [x.split(",")[0] for x in rows] == best_first,
          f"chosen_final: a row per variant at its chosen rate, lowest median bits per byte on top "
          f"(got {rows}, expected the order {best_first})")
    with open(summary, newline="") as f:
        bigram = float(next(csv.DictReader(f))["bigram_test_bits_per_byte"])
    lo, hi = min(b for _, b in variants.values()), max(b for _, b in variants.values())
    check(lo <= bigram <= hi and "bigram baseline" in final["axes"][0]["lines"],
          f"chosen_final: the bigram baseline ({bigram:.2f}, between the medians) is drawn "
          f"(got {final['axes'][0]['lines']})")


def check_text_axes(figures):
    """The text fixture's figures are fit for language modelling: bits per byte on linear axes with plain,
    readable ticks, step 0 left out of the curves and the axes zoomed to the values (not 0 to 1), and every
    figure restricted to the variants at their chosen rate."""
    def plain(labels):
        return len([t for t in labels if t]) >= 3 and not any("10^" in t or "\\times" in t or "$" in t
                                                              for t in labels)

    for name in ("loss_curves", "chosen_loss_curves"):
        for a in figures.get(name, {"axes": []})["axes"]:
            where = f"lr_selected/{name}/{a['title']}"
            check("bits/byte" in a["ylabel"], f"{where}: the loss in bits per byte (got {a['ylabel']!r})")
            check(a["yscale"] == "linear", f"{where}: a linear loss axis (got {a['yscale']})")
            check(plain(a["yticklabels"]), f"{where}: 3 or more plain tick labels (got {a['yticklabels']})")
            check(a["first_x"] is not None and a["first_x"] > 0, f"{where}: step 0 left out (first x {a['first_x']})")
            check(a["ylim"][1] < 6.5, f"{where}: zoomed on the trained values, not the step-0 loss (ylim {a['ylim']})")
    for a in figures.get("accuracy_curves", {"axes": []})["axes"]:
        check(a["ylim"][1] - a["ylim"][0] < 0.6,
              f"lr_selected/accuracy_curves/{a['title']}: accuracy axis fitted to the values (ylim {a['ylim']})")
    final = figures.get("by_numerator", {"axes": [], "title": ""})
    check("chosen learning rate" in final["title"],
          f"lr_selected/by_numerator: at each variant's chosen rate (title {final['title']!r})")
    ylabels = [a["ylabel"] for a in final["axes"]]
    check(any("bits/byte" in y for y in ylabels), f"lr_selected/by_numerator: loss in bits per byte ({ylabels})")
    for a in final["axes"]:
        lo, hi = a["ylim"]
        check(plain(a["yticklabels"]) and (hi - lo < 0.6 or "bits" in a["ylabel"]),
              f"lr_selected/by_numerator/{a['ylabel']}: a fitted axis with plain ticks (ylim {a['ylim']}, "
              f"{a['yticklabels']})")


def check_no_chosen(script, data, work):
    """A summary whose lr_selected column marks no run writes no chosen_* figure."""
    folder = os.path.join(work, "none_selected")
    shutil.copytree(os.path.join(data, "lr_selected"), folder)
    with open(os.path.join(folder, "summary.csv"), newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    with open(os.path.join(folder, "summary.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, header)
        writer.writeheader()
        writer.writerows(dict(r, lr_selected="false") for r in rows)
    out = os.path.join(folder, "plots")
    res = run(script, folder, "--out", out)
    present = set(os.listdir(out)) if os.path.isdir(out) else set()
    check(res.returncode == 0 and present and not any(f.startswith("chosen_") for f in present),
          f"lr_selected all false: exit 0, other figures, no chosen_* (got {res.returncode}, {sorted(present)})")


def check_length(source, work):
    """scripts/plot_length.py on a constructed summary and comparisons.csv whose gaps and slopes are known by
    hand: norm's test loss exceeds softmax's by 0.1, 0.2, 0.3 (seeds 0-2) at T 128 and by 0.3, 0.4, 0.5 at T 256,
    so its gap at 128 is +0.2 with half-width t(0.975, 2) * 0.1 / sqrt(3) = 0.2484 (read from comparisons.csv),
    and each seed's slope per doubling is +0.2 (computed from summary.csv; interval of width 0); a run at a rate
    that was not chosen, and a diverged seed of gate, stay out of the slopes."""
    folder = os.path.join(work, "length")
    os.makedirs(folder)
    header = ["run_id", "status", "seed", "task.seq_len", "attention.denominator", "attention.out_gate", "train.lr",
              "lr_selected", "final_test_loss", "final_test_token_acc"]
    rows = []
    for T, base in ((128, 1.0), (256, 1.5)):
        for seed in range(3):
            rows.append(["", "ok", seed, T, "softmax", "false", 0.01, "true", base, 0.9])
            rows.append(["", "ok", seed, T, "norm", "", 0.003, "true", base + 0.1 * (seed + 1) + (T == 256) * 0.2, 0.8])
            rows.append(["", "ok", seed, T, "norm", "", 0.01, "false", 9.0, 0.0])  # not the chosen rate
            rows.append(["", "diverged" if seed == 2 else "ok", seed, T, "gate", "", 0.01, "true", base + 1.0, 0.5])
    with open(os.path.join(folder, "summary.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    # comparisons.csv as `attnlab summarize` writes it for this summary (the per-length cells come from it)
    half = 0.2484  # t(0.975, 2) * 0.1 / sqrt(3), rounded as the expected cells are
    base = "attention.denominator=softmax,attention.out_gate=false,task.seq_len="
    comparisons = [["attention.denominator", "attention.out_gate", "task.seq_len", "baseline", "metric", "n",
                    "mean_diff", "ci_low", "ci_high"]]
    for T, gap in ((128, 0.2), (256, 0.4)):
        comparisons += [["norm", "", T, f"{base}{T}", "loss", 3, gap, gap - half, gap + half],
                        ["norm", "", T, f"{base}{T}", "token_acc", 3, -0.1, -0.1, -0.1],
                        ["gate", "", T, f"{base}{T}", "loss", 2, 1.0, 1.0, 1.0],
                        ["gate", "", T, f"{base}{T}", "token_acc", 2, -0.4, -0.4, -0.4]]
    with open(os.path.join(folder, "comparisons.csv"), "w", newline="") as f:
        csv.writer(f).writerows(comparisons)
    stem = os.path.join(folder, "plots", "length")
    res = run(os.path.join(source, "scripts", "plot_length.py"), folder, "--baseline", "softmax", "--out", stem)
    check(res.returncode == 0, f"plot_length.py exits 0 (got {res.returncode}: {res.stderr.strip()})")
    for ext in ("png", "pdf", "md"):
        check(os.path.exists(f"{stem}.{ext}"), f"plot_length.py writes length.{ext}")
    table = open(f"{stem}.md").read() if os.path.exists(f"{stem}.md") else ""
    loss_section = table.split("Paired loss")[-1].split("Paired token accuracy")[0]
    loss_rows = [line for line in loss_section.splitlines() if line.startswith("| norm |")]
    want = "| norm | +0.2000 [-0.0484, +0.4484] (n=3, not resolved) | +0.4000 [+0.1516, +0.6484] (n=3) | " \
           "+0.2000 [+0.2000, +0.2000] (n=3) |"
    check(loss_rows == [want], f"length.md: norm's paired loss gaps and slope by hand (got {loss_rows})")
    gate_rows = [line for line in loss_section.splitlines() if line.startswith("| gate |")]
    check(len(gate_rows) == 1 and "+1.0000 [+1.0000, +1.0000] (n=2)" in gate_rows[0]
          and gate_rows[0].endswith("+0.0000 [+0.0000, +0.0000] (n=2, not resolved) |"),
          f"length.md: gate's diverged seed is left out of its slopes (got {gate_rows})")
    check("s2: diverged" in table, "length.md: the diverged seed is named in the accuracy table")


def check_state_ladder(source, work):
    """scripts/plot_state_ladder.py on a constructed summary: taylor 1 and 2 with the norm at d_model 32 (seeds
    0-2 at the chosen rate, seed 0 the selection seed), taylor 1 at d_model 64 with seed 0 alone; a run at a rate
    that was not chosen stays out, a diverged seed counts as accuracy 0, each point keeps its state_floats."""
    folder = os.path.join(work, "state_ladder")
    os.makedirs(folder)
    header = ["run_id", "status", "seed", "model.d_model", "attention.numerator", "attention.order",
              "attention.denominator", "train.lr", "lr_selected", "final_test_token_acc", "state_floats"]
    rows = []
    for seed, acc in ((0, 0.5), (1, 0.4), (2, 0.6)):
        rows.append(["", "ok", seed, 32, "taylor", 1, "norm", 0.003, "true", acc, 289])
        rows.append(["", "ok", seed, 32, "taylor", 1, "norm", 0.01, "false", 0.99, 289])  # not the chosen rate
        rows.append(["", "diverged" if seed == 2 else "ok", seed, 32, "taylor", 2, "norm", 0.003, "true", 1.0, 2601])
    rows.append(["", "ok", 0, 64, "taylor", 1, "norm", 0.003, "true", 0.9, 1089])
    rows.append(["", "ok", 0, 32, "exp", "", "softmax", 0.003, "true", 1.0, 4096])
    with open(os.path.join(folder, "summary.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    stem = os.path.join(folder, "plots", "state_ladder")
    res = run(os.path.join(source, "scripts", "plot_state_ladder.py"), folder, "--out", stem)
    check(res.returncode == 0, f"plot_state_ladder.py exits 0 (got {res.returncode}: {res.stderr.strip()})")
    for ext in ("png", "pdf", "csv"):
        check(os.path.exists(f"{stem}.{ext}"), f"plot_state_ladder.py writes state_ladder.{ext}")
    got = list(csv.DictReader(open(f"{stem}.csv"))) if os.path.exists(f"{stem}.csv") else []
    cells = {(r["denominator"], r["numerator"], r["order"], r["d_model"]):
             (r["state_floats"], r["seeds"], r["mean_token_acc"], r["selection_seed_only"]) for r in got}
    want = {("norm", "taylor", "1", "32"): ("289", "2", "0.500000", "false"),  # seeds 1, 2: (0.4 + 0.6) / 2
            ("norm", "taylor", "2", "32"): ("2601", "2", "0.500000", "false"),  # seed 2 diverged: 0
            ("norm", "taylor", "1", "64"): ("1089", "1", "0.900000", "true"),   # the selection seed alone
            ("softmax", "exp", "0", "32"): ("4096", "1", "1.000000", "true")}
    check(cells == want, f"state_ladder.csv: points by hand (got {cells})")


def check_per_position(source, work):
    """scripts/plot_per_position.py on two synthetic-task CSVs (positions without answers left out) with a
    --mark; a malformed --mark, a --label count that differs from the CSVs' and a text CSV among synthetic
    ones are each one line and exit code 2, with no figure written."""
    script = os.path.join(source, "scripts", "plot_per_position.py")
    folder = os.path.join(work, "per_position")
    os.makedirs(folder)
    header = "position,loss,bits_per_byte,count,trained,evaluated,precision\n"
    paths = []
    for name, losses in (("a", ["", "0.1", "", "2.0", "7.5"]), ("b", ["", "0.0", "", "0.4", "3.0"])):
        path = os.path.join(folder, f"{name}.csv")
        with open(path, "w") as f:
            f.write(header)
            for t, loss in enumerate(losses):
                f.write(f"{t},{loss},,{0 if loss == '' else 8},exp/softmax,exp/softmax,float\n")
        paths.append(path)
    text = os.path.join(folder, "text.csv")
    with open(text, "w") as f:
        f.write(header + "0,1.0,1.44,4,exp/softmax,exp/softmax,float\n")
    stem = os.path.join(folder, "fig")
    res = run(script, *paths, "--label", "a", "--label", "b", "--mark", "3:trained length", "--out", stem)
    check(res.returncode == 0, f"plot_per_position.py exits 0 (got {res.returncode}: {res.stderr.strip()})")
    dpi, width, height = png_dpi_and_size(f"{stem}.png") if os.path.exists(f"{stem}.png") else (None, 0, 0)
    check(dpi is not None and dpi >= 199.5 and width > 600 and height > 400,
          f"plot_per_position.py: fig.png at >= 200 dpi (got {dpi}, {width} x {height})")
    check(os.path.exists(f"{stem}.pdf"), "plot_per_position.py writes fig.pdf")
    for args, needle, what in (([*paths, "--mark", "x:here"], "--mark 'x:here'", "a --mark without a number"),
                               ([*paths, "--label", "a"], "give one per CSV", "one --label for two CSVs"),
                               ([paths[0], text], "mix text runs", "a text CSV among synthetic ones")):
        bad = os.path.join(folder, "bad")
        res = run(script, *args, "--out", bad)
        lines = res.stderr.strip().splitlines()
        check(res.returncode == 2 and len(lines) == 1 and needle in res.stderr and not os.path.exists(bad + ".png"),
              f"plot_per_position.py, {what}: exit 2, one line naming {needle!r}, no figure "
              f"(got {res.returncode}: {res.stderr.strip()!r})")


def check_solve_curves(source, work):
    """scripts/solve_curves.py on a constructed lookup sweep, two lengths (the strata) x softmax and norm x two
    seeds, whose steps to solve are known: at T 128 the norm solves at steps 1000 and 3000, softmax at 2000 and
    never within 4000 steps (censored), the log-rank case worked by hand (chi2 = 8/13, 4 of the 6 splits as
    extreme: permutation p 2/3); at T 256 both arms solve at 1000 and 2000 (chi2 0, p 1). A diverged run is
    refused with one line and exit 2."""
    script = os.path.join(source, "scripts", "solve_curves.py")
    folder = os.path.join(work, "solve_curves")
    os.makedirs(folder)
    solves = {(128, "norm"): [1000, 3000], (128, "softmax"): [2000, None],
              (256, "norm"): [1000, 2000], (256, "softmax"): [1000, 2000]}
    keys = ["attention.denominator", "task.seq_len", "seed"]
    summary = [["run_id", "status", "task.kind", *keys, "final_test_token_acc", "final_test_seq_acc"]]
    curves = [["run_id", "task.kind", *keys, "step", "split", "loss", "token_acc", "seq_acc"]]
    for (T, arm), steps in solves.items():
        for seed, solved_at in enumerate(steps):
            run_id = f"attention.denominator={arm},task.seq_len={T},seed={seed}"
            summary.append([run_id, "ok", "lookup", arm, T, seed, 1.0 if solved_at else 0.5, 0.0])
            for step in range(0, 5000, 1000):
                acc = 1.0 if solved_at is not None and step >= solved_at else 0.5
                curves += [[run_id, "lookup", arm, T, seed, step, split, 1.0, acc, 0.0] for split in ("val", "test")]
    for name, rows in (("summary.csv", summary), ("curves.csv", curves)):
        with open(os.path.join(folder, name), "w", newline="") as f:
            csv.writer(f).writerows(rows)
    stem = os.path.join(folder, "plots", "solve")
    res = run(script, folder, "--match", "task.seq_len", "--out", stem)
    check(res.returncode == 0, f"solve_curves.py exits 0 (got {res.returncode}: {res.stderr.strip()})")
    for ext in ("png", "pdf"):
        check(os.path.exists(f"{stem}.{ext}"), f"solve_curves.py writes solve.{ext}")
    rows = list(csv.DictReader(open(f"{stem}.csv"))) if os.path.exists(f"{stem}.csv") else []
    got = {r["stratum"]: r for r in rows}
    short = got.get("seq len 128", {})
    check(len(rows) == 2 and short.get("variant") == "norm" and short.get("baseline") == "softmax"
          and (short.get("variant_solved"), short.get("baseline_solved")) == ("2", "1")
          and math.isclose(float(short.get("logrank_chi2", "nan")), 8 / 13, rel_tol=1e-9)
          and math.isclose(float(short.get("p_permutation", "nan")), 2 / 3, rel_tol=1e-9)
          and short.get("splits") == "6" and short.get("variant_median_step") == "2000.0"
          and short.get("baseline_median_step") == "",
          f"solve.csv at T 128: the hand-worked log-rank (got {short})")
    same = got.get("seq len 256", {})
    check(math.isclose(float(same.get("logrank_chi2", "nan")), 0.0, abs_tol=1e-12)
          and same.get("p_permutation") == "1.0" and same.get("p_holm") == "1.0",
          f"solve.csv at T 256: equal arms, chi2 0, p 1 (got {same})")
    by_step = list(csv.DictReader(open(f"{stem}_by_step.csv"))) if os.path.exists(f"{stem}_by_step.csv") else []
    norm_128 = [(r["step"], r["solved_fraction"]) for r in by_step if r["stratum"] == "seq len 128" and r["arm"] == "norm"]
    check(norm_128 == [("0", "0.0"), ("1000", "0.5"), ("3000", "1.0")],
          f"solve_by_step.csv: the norm's solved fraction at T 128 (got {norm_128})")
    with open(os.path.join(folder, "summary.csv"), "w", newline="") as f:
        csv.writer(f).writerows([summary[0], [*summary[1][:1], "diverged", *summary[1][2:]], *summary[2:]])
    res = run(script, folder, "--match", "task.seq_len", "--out", os.path.join(folder, "bad"))
    check(res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and "diverged" in res.stderr
          and not os.path.exists(os.path.join(folder, "bad.png")),
          f"solve_curves.py with a diverged run: exit 2, one line (got {res.returncode}: {res.stderr.strip()!r})")


def check_gaps(source, work):
    """scripts/plot_gaps.py on a constructed sweep over model.d_model whose gaps and changes are known by hand:
    report "a" (norm against softmax): seeds 1-3 gaps 0.1, 0.2, 0.3 at width 64 and 0.3, 0.4, 0.5 at 256, so
    the change is +0.2 with Welch's df 4, half-width t(0.975, 4) * sqrt(0.01 / 3 * 2) = 0.2267 and p
    P(|t_4| > 2.449) = 0.0705, Holm-adjusted 0.0705 (the larger of two p; not resolved); report "b" (taylor 2 against exp, both with the norm): gaps 0.1 on every seed at 64 and 0.05 at
    256, a change of -0.05 with no spread (the variant gains ground). Seed 0 (the selection seed) and a run at a
    rate that was not chosen stay out; a comparisons.csv whose mean is not summary.csv's is an error."""
    script = os.path.join(source, "scripts", "plot_gaps.py")
    folder = os.path.join(work, "gaps")
    os.makedirs(folder)
    header = ["run_id", "status", "seed", "model.d_model", "attention.numerator", "attention.order",
              "attention.denominator", "train.lr", "lr_selected", "final_test_bits_per_byte"]
    rows = []
    for width, shift in ((64, 0.0), (256, 0.2)):
        for seed in range(4):
            base = 2.0 - 0.1 * (width == 256)
            rows.append(["", "ok", seed, width, "exp", "", "softmax", 0.01, "true", base])
            rows.append(["", "ok", seed, width, "exp", "", "norm", 0.003, "true", base + 0.1 * seed + shift])
            rows.append(["", "ok", seed, width, "exp", "", "norm", 0.01, "false", 9.0])  # not the chosen rate
            gap = 0.1 if width == 64 else 0.05
            rows.append(["", "ok", seed, width, "taylor", 2, "norm", 0.03, "true", base + 0.1 * seed + shift + gap])
    with open(os.path.join(folder, "summary.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)

    def write_comparisons(norm_gap_64):
        columns = ["model.d_model", "attention.denominator", "attention.numerator", "attention.order", "train.lr",
                   "report", "baseline", "baseline_train.lr", "metric", "n", "mean_diff", "ci_low", "ci_high",
                   "p_adjusted", "margin", "verdict", "seeds"]
        out = [columns]
        for width, gaps in ((64, (norm_gap_64, 0.1)), (256, (0.4, 0.05))):
            out.append([width, "norm", "exp", "", 0.003, "a", "attention.denominator=softmax", 0.01,
                        "bits_per_byte", 3, gaps[0], gaps[0] - 0.1, gaps[0] + 0.1, 0.5, 0.05, "not resolved",
                        "1 2 3"])
            out.append([width, "norm", "taylor", 2, 0.03, "b", "attention.numerator=exp,attention.denominator=norm",
                        0.003, "bits_per_byte", 3, gaps[1], gaps[1], gaps[1], 0.001, 0.05, "level", "1 2 3"])
            out.append([width, "norm", "exp", "", 0.003, "a", "attention.denominator=softmax", 0.01, "loss", 3,
                        7.0, 7.0, 7.0, 0.5, "", "behind", "1 2 3"])  # another metric: not read
        with open(os.path.join(folder, "comparisons.csv"), "w", newline="") as f:
            csv.writer(f).writerows(out)

    write_comparisons(0.2)
    stem = os.path.join(folder, "plots", "gaps")
    res = run(script, folder, "--out", stem)
    check(res.returncode == 0, f"plot_gaps.py exits 0 (got {res.returncode}: {res.stderr.strip()})")
    for ext in ("png", "pdf", "md"):
        check(os.path.exists(f"{stem}.{ext}"), f"plot_gaps.py writes gaps.{ext}")
    table = open(f"{stem}.md").read() if os.path.exists(f"{stem}.md") else ""
    rows_a = [line for line in table.splitlines() if line.startswith("| 64 |") or line.startswith("| 256 |")]
    check(rows_a[:2] == ["| 64 | 3 | +0.2000 [+0.1000, +0.3000] | 0.5 | not resolved | +0.1000, +0.2000, +0.3000 |",
                         "| 256 | 3 | +0.4000 [+0.3000, +0.5000] | 0.5 | not resolved | +0.3000, +0.4000, +0.5000 |"],
          f"gaps.md: report a's rows, each seed's gap from summary.csv (got {rows_a[:2]})")
    change_a = [line for line in table.splitlines() if line.startswith("| a |")]
    check(change_a == ["| a | 64 → 256 | +0.2000 → +0.4000 | +0.2000 [-0.0267, +0.4267] | 4.0 | 0.0705 | 0.0705 | "
                       "not resolved |"], f"gaps.md: report a's change, Welch by hand (got {change_a})")
    change_b = [line for line in table.splitlines() if line.startswith("| b |")]
    check(change_b == ["| b | 64 → 256 | +0.1000 → +0.0500 | -0.0500 [-0.0500, -0.0500] | – | 0 | 0 | "
                       "the variant gains ground |"], f"gaps.md: report b's change (got {change_b})")
    write_comparisons(0.25)  # not the mean of summary.csv's seeds
    check_error(script, folder, "is not the mean of summary.csv's paired seeds", "a stale comparisons.csv")


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
        drawn_figures = check_fixture(script, data, work, name, figures)
        if name == "lr_selected":
            check_chosen(data, drawn_figures)
            check_text_axes(drawn_figures)
    check_no_chosen(script, data, work)
    check_length(source, work)
    check_state_ladder(source, work)
    check_per_position(source, work)
    check_solve_curves(source, work)
    check_gaps(source, work)

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
    env = dict(os.environ, PYTHONPATH=fake + os.pathsep + os.environ.get("PYTHONPATH", ""))
    check_error(script, os.path.join(data, "sweep"), "apt-get install python3-matplotlib", "no matplotlib", env=env)

    if failures:
        print(f"plots: FAILED: {len(failures)} check(s) (python {sys.executable})", file=sys.stderr)
        return 1
    print("plots: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
