#!/usr/bin/env python3
"""Times a GEMM list (the CSV of `wavecrest-worker bench`) with torch.matmul on one GPU.

Like with like: the same operand layouts (TN = x @ w.T, NN = x @ w, NT = x.T @ w, batched with
bmm), random BF16/FP16/FP32 operands, the same cold-L2 input rotation (enough input sets to cover
three times L2), several launches between one pair of CUDA events (about 1 ms per sample), and the
same stopping rule (median of samples; stop once (p90 - p10) / median < target or the budget ends).
What differs on purpose: plain stream launches (no CUDA graph), PyTorch's own cuBLAS(Lt) choice.
"""
import argparse
import json
import math
import time

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def read_csv(path):
    rows = []
    for line in open(path):
        line = line.strip()
        if not line or line[0] in "#mM":
            continue
        f = [x.strip() for x in line.split(",")]
        m, n, k = int(f[0]), int(f[1]), int(f[2])
        batch = int(f[3]) if len(f) > 3 else 1
        layout = f[4].upper() if len(f) > 4 else "TN"
        rows.append((m, n, k, batch, layout))
    return rows


def operands(m, n, k, batch, layout, dtype, dev):
    """Returns (fn, tensors): fn(x, w) computes C[m, n] in the layout's storage order."""
    def rnd(*shape):
        t = torch.rand(*shape, device=dev, dtype=torch.float32) * 2 - 1
        return t.to(dtype)
    b = (batch,) if batch > 1 else ()
    if layout == "TN":
        x, w = rnd(*b, m, k), rnd(*b, n, k)
        return (lambda x, w: torch.matmul(x, w.transpose(-1, -2))), x, w
    if layout == "NN":
        x, w = rnd(*b, m, k), rnd(*b, k, n)
        return (lambda x, w: torch.matmul(x, w)), x, w
    if layout == "NT":
        x, w = rnd(*b, k, m), rnd(*b, k, n)
        return (lambda x, w: torch.matmul(x.transpose(-1, -2), w)), x, w
    raise ValueError(layout)


def percentile(v, q):
    s = sorted(v)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def time_one(m, n, k, batch, layout, dtype, target, budget, dev, l2):
    elem = torch.tensor([], dtype=dtype).element_size()
    set_bytes = batch * (m * k + k * n + m * n) * elem
    sets = max(1, min(64, math.ceil(3 * l2 / set_bytes)))
    free, _ = torch.cuda.mem_get_info()
    sets = max(1, min(sets, int((free - (512 << 20)) // set_bytes)))
    fn = None
    inputs = []
    for _ in range(sets):
        fn, x, w = operands(m, n, k, batch, layout, dtype, dev)
        inputs.append((x, w))
    # correctness against float32 on one set (catches a wrong layout in this script)
    x, w = inputs[0]
    ref = fn(x.float(), w.float())
    got = fn(x, w).float()
    rel = ((got - ref).norm() / ref.norm()).item()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(3):
        fn(*inputs[i % sets])
    stop.record()
    torch.cuda.synchronize()
    est = max(start.elapsed_time(stop) / 3 * 1e-3, 1e-7)
    launches = int(min(1000, max(1, math.ceil(1e-3 / est))))
    warm = int(min(200, max(1, math.ceil(0.05 / (est * launches)))))
    for _ in range(warm):
        for i in range(launches):
            fn(*inputs[i % sets])
    torch.cuda.synchronize()
    samples = []
    t0 = time.time()
    while True:
        start.record()
        for i in range(launches):
            fn(*inputs[i % sets])
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e-3 / launches)
        n_s = len(samples)
        if n_s >= 2000:
            break
        if n_s >= 10:
            med = percentile(samples, 0.5)
            if (percentile(samples, 0.9) - percentile(samples, 0.1)) / med <= target:
                break
        if n_s >= 3 and time.time() - t0 > budget:
            break
    med = percentile(samples, 0.5)
    return {
        "m": m, "n": n, "k": k, "batch": batch, "layout": layout,
        "time_s": med, "tflops": 2.0 * m * n * k * batch / med / 1e12,
        "p10_s": percentile(samples, 0.1), "p90_s": percentile(samples, 0.9),
        "samples": len(samples), "launches_per_sample": launches, "input_sets": sets,
        "relative_spread": (percentile(samples, 0.9) - percentile(samples, 0.1)) / med,
        "rel_error_vs_fp32": rel,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gemms", required=True)
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--json", required=True)
    ap.add_argument("--target-spread", type=float, default=0.01)
    ap.add_argument("--max-seconds", type=float, default=2.0)
    a = ap.parse_args()
    dev = torch.device("cuda:0")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    rows = []
    wall0 = time.time()
    for (m, n, k, batch, layout) in read_csv(a.gemms):
        r = time_one(m, n, k, batch, layout, DTYPES[a.dtype], a.target_spread, a.max_seconds, dev, l2)
        r["dtype"] = a.dtype
        rows.append(r)
        print(f"torch {m}x{n}x{k} b{batch} {layout}: {r['time_s']*1e6:.2f} us "
              f"{r['tflops']:.1f} TFLOP/s spread {100*r['relative_spread']:.2f}%", flush=True)
    doc = {
        "device": {"name": props.name, "sm_count": props.multi_processor_count,
                   "l2_bytes": l2, "memory_bytes": props.total_memory},
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "cublas_note": "torch.matmul; allow_bf16_reduced_precision_reduction="
                       f"{torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction}",
        "wall_s": time.time() - wall0,
        "gemms": rows,
    }
    json.dump(doc, open(a.json, "w"), indent=2)


if __name__ == "__main__":
    main()
