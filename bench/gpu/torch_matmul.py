#!/usr/bin/env python3
"""Times a GEMM list (the CSV of `wavecrest-worker bench`) with torch.matmul on one GPU, the way
wavecrest's engine (method cublaslt-timing-v2) times it, so that the two figures compare like with
like:

- the same operand layouts (TN = x @ w.T, NN = x @ w, NT = x.T @ w; batched with matmul);
- the same cold-L2 rotation: input AND output sets covering three times L2 (up to 8192 sets),
  launches per sample a multiple of the sets, so that every sample goes round all of them;
- L launches captured in a CUDA graph (no Python launch overhead), a blocking kernel
  (torch.cuda._sleep) before each sample's start event (no host launch latency in a sample);
- the same warm-up (200 ms for launches of 100 us or more, 50 ms below), the same minimum sampled
  time (300 ms for long launches) and stopping rule (median; stop once (p90 - p10) / median is
  under the target, or at the budget).
What differs on purpose: PyTorch's own cuBLAS(Lt) and its choice of algorithm and workspace. The
output records the cuBLASLt library torch loaded and its version, beside torch's.
"""
import argparse
import ctypes
import json
import math
import time

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
MAX_SETS = 8192  # core/timing_stats.h kMaxInputSets


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
    """(fn, x, w, c): fn(x, w, c) writes C[m, n] = op(x) @ op(w) into c."""
    def rnd(*shape):
        return (torch.rand(*shape, device=dev, dtype=torch.float32) * 2 - 1).to(dtype)
    b = (batch,) if batch > 1 else ()
    c = torch.empty(*b, m, n, device=dev, dtype=dtype)
    if layout == "TN":
        return (lambda x, w, c: torch.matmul(x, w.transpose(-1, -2), out=c)), rnd(*b, m, k), \
            rnd(*b, n, k), c
    if layout == "NN":
        return (lambda x, w, c: torch.matmul(x, w, out=c)), rnd(*b, m, k), rnd(*b, k, n), c
    if layout == "NT":
        return (lambda x, w, c: torch.matmul(x.transpose(-1, -2), w, out=c)), rnd(*b, k, m), \
            rnd(*b, k, n), c
    raise ValueError(f"layout {layout!r} is not TN, NN or NT")


def percentile(v, q):
    s = sorted(v)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def cublaslt_library():
    """The cuBLASLt torch loaded (path and version), read from this process's mappings."""
    for line in open("/proc/self/maps"):
        path = line.split()[-1]
        if "libcublasLt.so" in path:
            try:
                v = ctypes.CDLL(path).cublasLtGetVersion()
                return {"path": path, "version": f"{v // 10000}.{v // 100 % 100}.{v % 100}"}
            except OSError as e:
                return {"path": path, "version": f"unknown ({e})"}
    return {"path": "", "version": "not loaded"}


def time_one(m, n, k, batch, layout, dtype, target, budget, dev, l2):
    elem = torch.tensor([], dtype=dtype).element_size()
    set_bytes = batch * (m * k + k * n + m * n) * elem
    sets = max(1, min(MAX_SETS, math.ceil(3 * l2 / set_bytes)))
    free, _ = torch.cuda.mem_get_info()
    sets = max(1, min(sets, int((free - (512 << 20)) // set_bytes)))
    data = [operands(m, n, k, batch, layout, dtype, dev) for _ in range(sets)]
    fn = data[0][0]
    # Correctness against FP32 on one set (catches a wrong layout in this script).
    _, x, w, c = data[0]
    ref = fn(x.float(), w.float(), torch.empty(c.shape, device=dev, dtype=torch.float32))
    fn(x, w, c)
    rel = ((c.float() - ref).norm() / ref.norm()).item()
    del ref
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # One launch, timed, sizes the sample (as the engine reuses its check's launch).
    start.record()
    fn(x, w, c)
    stop.record()
    torch.cuda.synchronize()
    est = max(start.elapsed_time(stop) * 1e-3, 1e-7)
    launches = int(min(1000, max(1, math.ceil(1e-3 / est))))
    if sets > 1:
        launches = max(launches, sets)
        launches = (launches + sets - 1) // sets * sets
        while launches > 1000 and launches > sets:
            launches -= sets
    # Capture L launches in a CUDA graph (side-stream warm-up first, as torch requires).
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(min(3, sets)):
            _, x, w, c = data[i]
            fn(x, w, c)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(launches):
            _, x, w, c = data[i % sets]
            fn(x, w, c)
    replay_s = est * launches
    long_launch = est >= 100e-6
    warm = int(min(2000, max(1, math.ceil((0.2 if long_launch else 0.05) / replay_s))))
    for _ in range(warm):
        graph.replay()
    torch.cuda.synchronize()
    min_sampled = 0.3 if long_launch else 0.0
    samples = []
    t0 = time.time()
    while True:
        torch.cuda._sleep(200000)  # blocking kernel, ~100 us: the host queues the rest meanwhile
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1e-3 / launches)
        n_s, elapsed = len(samples), time.time() - t0
        if n_s >= 2000:
            break
        if sum(samples) * launches < min_sampled and elapsed <= max(budget, 4 * min_sampled):
            continue
        if n_s >= 10:
            med = percentile(samples, 0.5)
            if (percentile(samples, 0.9) - percentile(samples, 0.1)) / med <= target:
                break
        if n_s >= 3 and elapsed > budget:
            break
    med = percentile(samples, 0.5)
    del graph, data
    torch.cuda.empty_cache()
    return {
        "m": m, "n": n, "k": k, "batch": batch, "layout": layout,
        "time_s": med, "tflops": 2.0 * m * n * k * batch / med / 1e12,
        "p10_s": percentile(samples, 0.1), "p90_s": percentile(samples, 0.9),
        "samples": len(samples), "launches_per_sample": launches, "input_sets": sets,
        "sampled_s": sum(samples) * launches,
        "relative_spread": (percentile(samples, 0.9) - percentile(samples, 0.1)) / med,
        "rel_error_vs_fp32": rel,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gemms", required=True, help="CSV: m,n,k[,batch[,layout]]")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--json", required=True, help="where to write the results")
    ap.add_argument("--target-spread", type=float, default=0.01)
    ap.add_argument("--max-seconds", type=float, default=2.0)
    a = ap.parse_args()
    dev = torch.device("cuda:0")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    rows = []
    wall0 = time.time()
    for (m, n, k, batch, layout) in read_csv(a.gemms):
        try:
            r = time_one(m, n, k, batch, layout, DTYPES[a.dtype], a.target_spread, a.max_seconds,
                         dev, l2)
        except (RuntimeError, ValueError) as e:  # out of memory, unsupported: recorded, not fatal
            r = {"m": m, "n": n, "k": k, "batch": batch, "layout": layout, "error": str(e)}
            torch.cuda.empty_cache()
        r["dtype"] = a.dtype
        rows.append(r)
        if "error" in r:
            print(f"torch {m}x{n}x{k} b{batch} {layout}: error {r['error']}", flush=True)
        else:
            print(f"torch {m}x{n}x{k} b{batch} {layout}: {r['time_s']*1e6:.2f} us "
                  f"{r['tflops']:.1f} TFLOP/s spread {100*r['relative_spread']:.2f}%", flush=True)
    doc = {
        "device": {"name": props.name, "sm_count": props.multi_processor_count,
                   "l2_bytes": l2, "memory_bytes": props.total_memory},
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "cublaslt": cublaslt_library(),
        "cublas_note": "torch.matmul(out=) in a CUDA graph; allow_bf16_reduced_precision_reduction="
                       f"{torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction}",
        "wall_s": time.time() - wall0,
        "gemms": rows,
    }
    json.dump(doc, open(a.json, "w"), indent=2)


if __name__ == "__main__":
    main()
