#!/usr/bin/env python3
"""torch_fp8_accum.py SHAPES.csv OUT.csv: what FP8's split accumulator and row scales cost here.

Transformer Engine runs a training step's FP8 GEMMs with cuBLASLt's fast accumulation in forward
only (_2X_ACC_FPROP = False, _2X_ACC_DGRAD = _2X_ACC_WGRAD = True: dgrad and wgrad promote the
accumulator to FP32 periodically, CUBLASLT_MATMUL_DESC_FAST_ACCUM off). The planner's FP8 model is
fitted to XLA's table of plain dots, and issue 36's FP8 rows (MosaicML +5%, NeMo 24.07 +18% at
the median) come out too fast; this measures the difference instead of assuming it. A third mode,
row scales (scale_a of m x 1 and scale_b of 1 x n, fast accumulation, as torchao's "rowwise"
recipe runs its forward GEMM: torch._scaled_mm's row-scaled kernel), gives the rate the planner's
`--fp8-recipe rowwise` borrows from tensorwise (pytorch/pytorch#147971 puts most shapes at 90-100%
of it, a tail to 50%).

For each m,n,k of SHAPES.csv (layout ignored: every row runs as the TN GEMM FP8 needs on Hopper,
torch._scaled_mm(a[m,k], b[n,k].T) with per-tensor scales and BF16 output), the two accumulation
modes and the row-scaled one are timed interleaved, round by round (fast, split, rowwise, fast,
...), so that a clock step
shared by both cancels in their ratio: per round one CUDA-event sample of each, input sets
rotated past twice L2 (cold L2), 5 rounds of warm-up, then rounds until the medians' ratio moves
less than 0.5% over the last 8 rounds (at least 16, at most 64). Writes
m,n,k,fast_us,split_us,split_over_fast,rowwise_us,rowwise_over_fast,rounds per shape (rowwise
empty where torch cannot run it) and prints the median ratios over the list.
"""
import csv
import statistics
import sys
import time

import torch


def read_shapes(path):
    out = []
    for line in open(path):
        f = [x.strip() for x in line.split(",")]
        if not line.strip() or line.startswith("#") or not f[0].isdigit():
            continue
        m, n, k = (int(x) for x in f[:3])
        if (m, n, k) not in out:
            out.append((m, n, k))
    return out


def operands(m, n, k, l2_bytes):
    set_bytes = m * k + n * k + 2 * m * n
    sets = max(2, min(32, -(-2 * l2_bytes // set_bytes) + 1))
    f8 = torch.float8_e4m3fn
    a = [torch.randn(m, k, device="cuda").to(f8) for _ in range(sets)]
    b = [torch.randn(n, k, device="cuda").to(f8) for _ in range(sets)]
    return a, b


def time_modes(m, n, k, l2_bytes):
    """Median seconds of fast, split and row-scaled (None where unsupported), and the rounds."""
    a, b = operands(m, n, k, l2_bytes)
    one = torch.ones((), device="cuda")
    row_a = torch.ones((m, 1), device="cuda")
    row_b = torch.ones((1, n), device="cuda")

    def run(i, mode):
        rowwise = mode == "rowwise"
        torch._scaled_mm(a[i % len(a)], b[i % len(b)].t(), scale_a=row_a if rowwise else one,
                         scale_b=row_b if rowwise else one, out_dtype=torch.bfloat16,
                         use_fast_accum=mode != "split")

    modes = ["fast", "split", "rowwise"]
    try:
        run(0, "rowwise")
    except RuntimeError as e:  # no row-scaled kernel for this shape or build: the other two
        print(f"{m}x{n}x{k}: rowwise not run ({e})", flush=True)
        modes.pop()
    for i in range(5):
        for mode in modes:
            run(i, mode)
    times = {mode: [] for mode in modes}
    ratios, i = [], 0
    while i < 64:
        ev = {mode: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for mode in modes}
        for mode in modes:
            ev[mode][0].record()
            run(i, mode)
            ev[mode][1].record()
        ev[modes[-1]][1].synchronize()
        for mode in modes:
            times[mode].append(ev[mode][0].elapsed_time(ev[mode][1]) * 1e-3)
        i += 1
        fast = statistics.median(times["fast"])
        ratios.append(max(statistics.median(times[x]) / fast for x in modes[1:]))
        if len(ratios) >= 16 and max(ratios[-8:]) / min(ratios[-8:]) - 1 < 0.005:
            break
    med = {mode: statistics.median(t) for mode, t in times.items()}
    return med["fast"], med["split"], med.get("rowwise"), i


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    start = time.perf_counter()
    rows = []
    for m, n, k in read_shapes(argv[1]):
        try:
            f, s, r, rounds = time_modes(m, n, k, l2)
        except (RuntimeError, ValueError) as e:  # unsupported, out of memory: recorded
            print(f"{m}x{n}x{k}: error {e}", flush=True)
            continue
        rows.append({"m": m, "n": n, "k": k, "fast_us": f"{f * 1e6:.2f}",
                     "split_us": f"{s * 1e6:.2f}", "split_over_fast": f"{s / f:.4f}",
                     "rowwise_us": "" if r is None else f"{r * 1e6:.2f}",
                     "rowwise_over_fast": "" if r is None else f"{r / f:.4f}",
                     "rounds": rounds})
        print(f"{m}x{n}x{k}: fast {f * 1e6:.2f} us, split {s * 1e6:.2f} us, split/fast "
              f"{s / f:.4f}" + ("" if r is None else f", rowwise/fast {r / f:.4f}")
              + f" ({rounds} rounds)", flush=True)
    with open(argv[2], "w", newline="") as out:
        w = csv.DictWriter(out, fieldnames=["m", "n", "k", "fast_us", "split_us",
                                            "split_over_fast", "rowwise_us", "rowwise_over_fast",
                                            "rounds"])
        w.writeheader()
        w.writerows(rows)
    parts = []
    for col, name in (("split_over_fast", "split/fast"), ("rowwise_over_fast", "rowwise/fast")):
        ratios = [float(r[col]) for r in rows if r[col]]
        if ratios:
            parts.append(f"{name} median {statistics.median(ratios):.4f}, min {min(ratios):.4f}, "
                         f"max {max(ratios):.4f} over {len(ratios)} shapes")
    print(f"device {torch.cuda.get_device_name(0)}, torch {torch.__version__}: "
          + ("; ".join(parts) or "no shape timed") + f"; {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main(sys.argv)
