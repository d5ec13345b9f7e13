#!/usr/bin/env python3
"""Compares wavecrest-worker bench (two runs) with torch_matmul.py, shape by shape, and prints a
table and the targets, each with the figure it was judged on.

  compare.py W1 W2 T three JSON files covering the same list (compare_torch.sh's)
  compare.py DIR     DIR/shape-*/{wavecrest-1,wavecrest-2,torch}.json (its layout before
                     2026-11-27: one process per shape and tool)
  compare.py --sweep S1 S2 [S3 ...]
                     `wavecrest-worker bench` runs over the whole list in one process each
                     (run_on_device.sh's sweeps): the time each GEMM took to measure, as a sweep
                     takes it (a hot GPU after the first), what a sweep costs per GEMM with its
                     process (the file's process_wall_s, which run_on_device.sh adds), and the
                     spread of each GEMM across the runs

Rows missing from a file, errors and non-finite figures are listed, never fatal; a target with no
figure to judge it on says so. The 8192^3 target is relative to the device's datasheet peak (the
worker's bench JSON carries it for catalogued GPUs).
"""
import glob
import json
import math
import os
import statistics
import sys


def key(r):
    return (r["m"], r["n"], r["k"], r.get("batch", 1), r.get("layout", "TN"))


def load(paths):
    """Concatenates the `gemms` of several bench JSON files; the first file's header wins."""
    doc = None
    for p in paths:
        try:
            d = json.load(open(p))
        except (OSError, ValueError) as e:
            print(f"WARNING: {p}: {e}")
            continue
        if doc is None:
            doc = dict(d)
            doc["gemms"] = []
            doc["wall_s"] = 0.0
        doc["gemms"].extend(d.get("gemms", []))
        doc["wall_s"] += d.get("wall_s", 0.0) or 0.0
        # compare_torch.sh runs one GEMM per file: each file's wall time is that GEMM's.
        doc.setdefault("per_file_wall_s", []).append(
            (d.get("wall_s", 0.0) or 0.0) if len(d.get("gemms", [])) == 1 else 0.0)
    return doc or {"gemms": [], "wall_s": 0.0, "device": {}}


def finite(r, field="tflops"):
    v = r.get(field) if r else None
    return isinstance(v, (int, float)) and math.isfinite(v) and v > 0


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) and math.isfinite(v) else "-"


def sweep(paths):
    """The per-GEMM measuring time of whole-list runs (rows' wall_s), their cost per GEMM with the
    process (process_wall_s), and each GEMM's spread across the runs ((max - min) / min)."""
    runs = [load([p]) for p in paths]
    a = runs[0]
    walls = [r["wall_s"] for r in a["gemms"] if finite(r, "wall_s")]
    hot = sum("hot GPU" in r.get("stats", {}).get("stop_rule", "") for r in a["gemms"])
    window = a.get("options", {}).get("hot_window_s")
    print(f"sweep of {len(a['gemms'])} GEMMs in one process, {len(runs)} runs: "
          + ", ".join(f"{r['wall_s']:.1f} s" for r in runs)
          + f"; {hot} of the first timed on a hot GPU (window {window} s)")
    print("time per GEMM in one sweep, median over the list: "
          + (f"{statistics.median(walls):.3f} s (first run, {len(walls)} GEMMs, max "
             f"{max(walls):.3f} s)" if walls else "no figure (rows lack wall_s)"))
    costs = []
    for path in paths:
        try:
            doc = json.load(open(path))
        except (OSError, ValueError):
            continue
        n = len(doc.get("gemms", []))
        if n and finite(doc, "process_wall_s"):
            costs.append(doc["process_wall_s"] / n)
    print("cost per GEMM, process included: "
          + (f"{max(costs):.3f} s (the slowest of {len(costs)} runs; "
             + ", ".join(f"{c:.3f}" for c in costs) + " s; target <= 0.05 s)"
             if costs else "no figure (no process_wall_s)"))
    spreads = []
    covered = pairs = 0
    for r in a["gemms"]:
        rows = [r] + [{key(x): x for x in other["gemms"]}.get(key(r)) for other in runs[1:]]
        # Each pair of runs of the GEMM against the band the runs stated: 1.645 x the combined
        # re-run sigma (half of each run's relative spread), the 90% two-sided band.
        stated = [x for x in rows if finite(x, "time_s") and "relative_spread" in x.get("stats", {})]
        for i, x in enumerate(stated):
            for y in stated[i + 1:]:
                sigma = math.hypot(x["stats"]["relative_spread"] / 2,
                                   y["stats"]["relative_spread"] / 2)
                pairs += 1
                covered += abs(x["time_s"] / y["time_s"] - 1) <= 1.645 * sigma
        times = [x["time_s"] for x in rows if finite(x, "time_s")]
        if len(times) == len(runs) and len(runs) > 1:
            spreads.append((max(times) - min(times)) / min(times))
        # Per GEMM: each run's time (us), SM clock (MHz) and sample spread (%), then the rerun.
        cells = [f"{x['time_s'] * 1e6:9.1f} {x.get('stats', {}).get('sm_clock_mhz', 0):4d} "
                 f"{100 * x.get('stats', {}).get('relative_spread', float('nan')):5.2f}"
                 if finite(x, "time_s") else f"{'-':>20}" for x in rows]
        rerun = (f"{100 * (max(times) - min(times)) / min(times):6.2f}%"
                 if len(times) == len(runs) else "     -")
        print(f"  {' x '.join(map(str, key(r)))}: " + " | ".join(cells) + f" | rerun {rerun}")
    print("sweep re-run band: " + (f"{covered} of {pairs} pairs of runs within 1.645 x the stated "
                                   f"re-run sigma ({100 * covered / pairs:.1f}%; target >= 90%)"
                                   if pairs else "no figure (rows lack relative_spread)"))
    print("sweep rerun difference, max: "
          + (f"{100 * max(spreads):.2f}% over {len(runs)} runs (median "
             f"{100 * statistics.median(spreads):.2f}%, {len(spreads)} GEMMs; target < 1%)"
             if spreads else "no figure"))


def main(argv):
    if len(argv) >= 3 and argv[0] == "--sweep":
        sweep(argv[1:])
        return
    if len(argv) == 1 and os.path.isdir(argv[0]):
        dirs = sorted(glob.glob(os.path.join(argv[0], "shape-*")))
        a = load([os.path.join(d, "wavecrest-1.json") for d in dirs])
        b = load([os.path.join(d, "wavecrest-2.json") for d in dirs])
        p = load([os.path.join(d, "torch.json") for d in dirs])
    elif len(argv) == 3:
        a, b, p = load([argv[0]]), load([argv[1]]), load([argv[2]])
    else:
        sys.exit(__doc__)
    run2 = {key(r): r for r in b["gemms"]}
    torch = {key(r): r for r in p["gemms"]}
    dev = a.get("device", {})
    if dev.get("backend") != "cublaslt":
        print("WARNING: the wavecrest figures are PREDICTED by the analytic backend, not measured; "
              "this comparison means nothing")
    lt = p.get("cublaslt", {})
    print(f"device: {dev.get('name')}  driver {dev.get('driver_version')}  "
          f"CUDA {dev.get('cuda_runtime_version')}  wavecrest cuBLASLt {dev.get('cublaslt_version')}"
          f"  | torch {p.get('torch')} (CUDA {p.get('cuda')}, cuBLASLt {lt.get('version')})")
    print(f"{'m':>6} {'n':>6} {'k':>6} {'b':>3} lay {'wc us':>9} {'wc TF/s':>8} {'torch us':>9} "
          f"{'torch TF/s':>10} {'wc/torch':>8} {'spread%':>7} {'rerun%':>7} algo")
    below, large_dev, reruns, problems = [], [], [], []
    for r in a["gemms"]:
        k = key(r)
        q, r2 = torch.get(k), run2.get(k)
        if "error" in r or not finite(r):
            problems.append(f"{k}: wavecrest {r.get('error', 'no figure')}")
            continue
        ratio = r["tflops"] / q["tflops"] if finite(q) else float("nan")  # > 1: wavecrest faster
        if not finite(q):
            problems.append(f"{k}: torch {q.get('error', 'no figure') if q else 'missing'}")
        rerun = (abs(r2["time_s"] - r["time_s"]) / r["time_s"]
                 if finite(r2, "time_s") else float("nan"))
        if math.isfinite(rerun):
            reruns.append(rerun)
        else:
            problems.append(f"{k}: second wavecrest run {r2.get('error', 'no figure') if r2 else 'missing'}")
        st = r.get("stats", {})
        print(f"{k[0]:>6} {k[1]:>6} {k[2]:>6} {k[3]:>3} {k[4]:>3} {fmt(r['time_s'] * 1e6, '9.2f')} "
              f"{fmt(r['tflops'], '8.1f')} {fmt(q['time_s'] * 1e6 if finite(q) else None, '9.2f')} "
              f"{fmt(q['tflops'] if finite(q) else None, '10.1f')} {fmt(ratio, '8.3f')} "
              f"{fmt(100 * st.get('relative_spread', float('nan')), '7.2f')} "
              f"{fmt(100 * rerun, '7.2f')} {st.get('algorithm_id', '-')}")
        if math.isfinite(ratio):
            below.append(1 - ratio)
            if k[3] == 1 and min(k[:3]) >= 4096 and all(x % 128 == 0 for x in k[:3]):
                large_dev.append(abs(1 - ratio))
    print()
    for line in problems:
        print("missing:", line)
    print("large aligned GEMMs, |wavecrest/torch - 1| max: "
          + (f"{100 * max(large_dev):.2f}% (target < 2%)" if large_dev else "no figure"))
    print("worst shape below torch: "
          + (f"{100 * max(below):.2f}% (target < 5%)" if below else "no figure"))
    big = next((r for r in a["gemms"] if key(r) == (8192, 8192, 8192, 1, "TN") and finite(r)), None)
    peak = a.get("peak_tflops", {}).get("bf16")
    if big and peak:
        print(f"8192^3 BF16: {big['tflops']:.1f} TFLOP/s = {100 * big['tflops'] / peak:.1f}% of the "
              f"{peak:.0f} TFLOP/s dense peak (target > 75%)")
    elif big:
        print(f"8192^3 BF16: {big['tflops']:.1f} TFLOP/s (device not catalogued: no peak to judge)")
    print("rerun difference, max: "
          + (f"{100 * max(reruns):.2f}% (target < 1%)" if reruns else "no figure"))
    print(f"time to measure the list: wavecrest {a['wall_s']:.1f} s / {b['wall_s']:.1f} s, "
          f"torch script {p['wall_s']:.1f} s")
    # One GEMM per file: each file's wall time is that GEMM's; a whole list in one file: the
    # rows' own wall_s (the worker's share of the list's time per GEMM).
    per = [x for x in (a.get("per_file_wall_s", []) + b.get("per_file_wall_s", [])) if x > 0]
    if not (per and len(a.get("per_file_wall_s", [])) == len(a["gemms"])):
        per = [r["wall_s"] for r in a["gemms"] + b["gemms"] if finite(r, "wall_s")]
    if per:
        print(f"time per GEMM, median over the list: {statistics.median(per):.3f} s "
              f"(both runs, {len(per)} GEMMs; target <= 0.2 s)")
    else:
        print("time per GEMM, median over the list: no figure (no file per GEMM, no rows' wall_s)")


if __name__ == "__main__":
    main(sys.argv[1:])
