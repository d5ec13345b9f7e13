#!/usr/bin/env python3
"""torch_loop.py SHAPES.csv OUT.json: a plain PyTorch loop over a GEMM list, the reference issue 35
measures the worker's cost and re-run agreement against. Per GEMM: input sets rotated so that
they span more than twice L2 (cold L2, as the worker times), three warm-up launches, then samples
of one launch each between CUDA events, taken back to back in groups of eight with one wait per
group; it stops once (p90 - p10) / median is under 1% (from eight samples on) or at 48 samples,
and reports the median. Writes the worker's bench JSON shape ({"gemms": [{m, n, k, batch, layout,
time_s, wall_s, stats: {relative_spread, samples}}], "wall_s"}) so that compare.py --sweep reads
it. Layouts as bench/gpu/shapes.csv names them (row-major, PyTorch's terms): TN = A[m,k] @
W[n,k]^T, NN = A[m,k] @ B[k,n], NT = X[k,m]^T @ Y[k,n]; batch > 1 runs torch.bmm.
"""
import json
import sys
import time

import torch


def operands(m, n, k, batch, layout, sets):
    def t(*shape):
        return [torch.randn(*shape, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
    lead = (batch,) if batch > 1 else ()
    if layout == "TN":
        a, b = t(*lead, m, k), t(*lead, n, k)
        return a, b, lambda x, y: torch.matmul(x, y.transpose(-1, -2))
    if layout == "NN":
        a, b = t(*lead, m, k), t(*lead, k, n)
        return a, b, torch.matmul
    a, b = t(*lead, k, m), t(*lead, k, n)
    return a, b, lambda x, y: torch.matmul(x.transpose(-1, -2), y)


def time_gemm(m, n, k, batch, layout, l2_bytes):
    start = time.perf_counter()
    set_bytes = 2 * batch * (m * k + n * k + m * n)
    sets = max(1, min(64, -(-2 * l2_bytes // set_bytes) + 1))
    a, b, mm = operands(m, n, k, batch, layout, sets)
    for i in range(3):
        mm(a[i % sets], b[i % sets])
    samples, i = [], 0
    while len(samples) < 48:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(9)]
        events[0].record()
        for j in range(8):
            mm(a[i % sets], b[i % sets])
            i += 1
            events[j + 1].record()
        events[-1].synchronize()
        samples += [events[j].elapsed_time(events[j + 1]) * 1e-3 for j in range(8)]
        s = sorted(samples)
        med = s[len(s) // 2]
        spread = (s[int(0.9 * (len(s) - 1))] - s[int(0.1 * (len(s) - 1))]) / med
        if spread < 0.01:
            break
    return {"m": m, "n": n, "k": k, "batch": batch, "layout": layout, "time_s": med,
            "tflops": 2 * m * n * k * batch / med / 1e12, "wall_s": time.perf_counter() - start,
            "stats": {"relative_spread": spread, "samples": len(samples), "sm_clock_mhz": 0}}


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    rows = []
    for line in open(argv[1]):
        f = [x.strip() for x in line.split(",")]
        if not line.strip() or line.startswith("#") or not f[0].isdigit():
            continue
        dims = [int(x) for x in f[:4]] + [1] * (4 - len(f[:4]))
        rows.append((*dims, f[4].upper() if len(f) > 4 else "TN"))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    start = time.perf_counter()
    gemms = [time_gemm(*r, l2) for r in rows]
    doc = {"method": "torch-loop", "torch": torch.__version__,
           "device": {"name": torch.cuda.get_device_name(0)},
           "gemms": gemms, "wall_s": time.perf_counter() - start}
    json.dump(doc, open(argv[2], "w"), indent=1)
    print(f"{len(gemms)} GEMMs in {doc['wall_s']:.2f} s")


if __name__ == "__main__":
    main(sys.argv)
