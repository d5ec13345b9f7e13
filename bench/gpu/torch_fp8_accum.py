#!/usr/bin/env python3
"""torch_fp8_accum.py SHAPES.csv OUT.csv: what FP8's split accumulator costs on this GPU.

Transformer Engine runs a training step's FP8 GEMMs with cuBLASLt's fast accumulation in forward
only (_2X_ACC_FPROP = False, _2X_ACC_DGRAD = _2X_ACC_WGRAD = True: dgrad and wgrad promote the
accumulator to FP32 periodically, CUBLASLT_MATMUL_DESC_FAST_ACCUM off). The planner's FP8 model is
fitted to XLA's table of plain dots, and issue 36's FP8 rows (MosaicML +5%, NeMo 24.07 +18% at
the median) come out too fast; this measures the difference instead of assuming it.

For each m,n,k of SHAPES.csv (layout ignored: every row runs as the TN GEMM FP8 needs on Hopper,
torch._scaled_mm(a[m,k], b[n,k].T) with per-tensor scales and BF16 output), the two accumulation
modes are timed interleaved, round by round (fast, split, fast, split, ...), so that a clock step
shared by both cancels in their ratio: per round one CUDA-event sample of each, input sets
rotated past twice L2 (cold L2), 5 rounds of warm-up, then rounds until the medians' ratio moves
less than 0.5% over the last 8 rounds (at least 16, at most 64). Writes
m,n,k,fast_us,split_us,split_over_fast,rounds per shape and prints the median ratio over the list.
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


def time_pair(m, n, k, l2_bytes):
    a, b = operands(m, n, k, l2_bytes)
    one = torch.ones((), device="cuda")

    def run(i, fast):
        torch._scaled_mm(a[i % len(a)], b[i % len(b)].t(), scale_a=one, scale_b=one,
                         out_dtype=torch.bfloat16, use_fast_accum=fast)

    for i in range(5):
        run(i, True)
        run(i, False)
    fast, split, ratios, i = [], [], [], 0
    while len(fast) < 64:
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        ev[0].record()
        run(i, True)
        ev[1].record()
        ev[2].record()
        run(i, False)
        ev[3].record()
        ev[3].synchronize()
        fast.append(ev[0].elapsed_time(ev[1]) * 1e-3)
        split.append(ev[2].elapsed_time(ev[3]) * 1e-3)
        i += 1
        ratios.append(statistics.median(split) / statistics.median(fast))
        if len(ratios) >= 16 and max(ratios[-8:]) / min(ratios[-8:]) - 1 < 0.005:
            break
    return statistics.median(fast), statistics.median(split), len(fast)


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    start = time.perf_counter()
    rows = []
    for m, n, k in read_shapes(argv[1]):
        try:
            f, s, rounds = time_pair(m, n, k, l2)
        except (RuntimeError, ValueError) as e:  # unsupported, out of memory: recorded
            print(f"{m}x{n}x{k}: error {e}", flush=True)
            continue
        rows.append({"m": m, "n": n, "k": k, "fast_us": f"{f * 1e6:.2f}",
                     "split_us": f"{s * 1e6:.2f}", "split_over_fast": f"{s / f:.4f}",
                     "rounds": rounds})
        print(f"{m}x{n}x{k}: fast {f * 1e6:.2f} us, split {s * 1e6:.2f} us, split/fast "
              f"{s / f:.4f} ({rounds} rounds)", flush=True)
    with open(argv[2], "w", newline="") as out:
        w = csv.DictWriter(out, fieldnames=["m", "n", "k", "fast_us", "split_us",
                                            "split_over_fast", "rounds"])
        w.writeheader()
        w.writerows(rows)
    ratios = [float(r["split_over_fast"]) for r in rows]
    print(f"device {torch.cuda.get_device_name(0)}, torch {torch.__version__}: "
          + (f"split/fast median {statistics.median(ratios):.4f}, min {min(ratios):.4f}, max "
             f"{max(ratios):.4f} over {len(ratios)} shapes" if ratios else "no shape timed")
          + f"; {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main(sys.argv)
