#!/usr/bin/env python3
"""Compares wavecrest-worker bench JSON (two runs) with torch_matmul.py JSON; prints a table and
the issue's targets, each with the figure it was judged on."""
import json
import sys


def key(r):
    return (r["m"], r["n"], r["k"], r["batch"], r["layout"])


def main(w1, w2, t):
    a, b, p = (json.load(open(x)) for x in (w1, w2, t))
    run2 = {key(r): r for r in b["gemms"]}
    torch = {key(r): r for r in p["gemms"]}
    if a["device"].get("backend") != "cublaslt":
        print("WARNING: the wavecrest figures are PREDICTED by the analytic backend, not measured; "
              "this comparison means nothing")
    print(f"device: {a['device'].get('name')}  driver {a['device'].get('driver_version')}  "
          f"CUDA {a['device'].get('cuda_runtime_version')}  cuBLASLt {a['device'].get('cublaslt_version')}"
          f"  | torch {p['torch']} (CUDA {p['cuda']})")
    print(f"{'m':>6} {'n':>6} {'k':>6} {'b':>3} lay {'wc us':>9} {'wc TF/s':>8} {'torch us':>9} "
          f"{'torch TF/s':>10} {'wc/torch':>8} {'spread%':>7} {'rerun%':>7} algo")
    worst_below = 0.0
    large_dev = []
    reruns = []
    for r in a["gemms"]:
        k = key(r)
        if "error" in r:
            print(f"{k}: error {r['error']}")
            continue
        q, r2 = torch.get(k), run2.get(k)
        ratio = r["tflops"] / q["tflops"] if q else float("nan")  # > 1: wavecrest faster
        rerun = abs(r2["time_s"] - r["time_s"]) / r["time_s"] if r2 and "time_s" in r2 else float("nan")
        reruns.append(rerun)
        st = r.get("stats", {})
        print(f"{k[0]:>6} {k[1]:>6} {k[2]:>6} {k[3]:>3} {k[4]:>3} {r['time_s']*1e6:>9.2f} "
              f"{r['tflops']:>8.1f} {q['time_s']*1e6:>9.2f} {q['tflops']:>10.1f} {ratio:>8.3f} "
              f"{100*st.get('relative_spread', 0):>7.2f} {100*rerun:>7.2f} {st.get('algorithm_id', '-')}")
        worst_below = max(worst_below, 1 - ratio)
        if k[3] == 1 and min(k[:3]) >= 4096 and all(x % 128 == 0 for x in k[:3]):
            large_dev.append(abs(1 - ratio))
    big = next((r for r in a["gemms"] if key(r) == (8192, 8192, 8192, 1, "TN")), None)
    print()
    print(f"large aligned GEMMs, |wavecrest/torch - 1| max: {100*max(large_dev):.2f}% (target < 2%)")
    print(f"worst shape below torch: {100*worst_below:.2f}% (target < 5%)")
    if big and "tflops" in big:
        print(f"8192^3 BF16: {big['tflops']:.1f} TFLOP/s (target > 750)")
    print(f"rerun difference, max: {100*max(reruns):.2f}% (target < 1%)")
    print(f"time to measure the list: wavecrest {a['wall_s']:.1f} s / {b['wall_s']:.1f} s, "
          f"torch script {p['wall_s']:.1f} s")


if __name__ == "__main__":
    main(*sys.argv[1:4])
