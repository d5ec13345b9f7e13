#!/usr/bin/env python3
"""Times fused attention alone on this GPU with PyTorch's cuDNN backend of
scaled_dot_product_attention, at the shapes of the published attention rows the cost model is
fitted to and checked against (data/measurements/*attention*.csv and *prefill*.csv: pass, causal
mask, batch, heads, sequence length, head dim), and writes the results in that same CSV schema.
So `wavecrest calibrate --fit= --attention_check OUT.csv` scores the model's fused-attention
predictions against this device, and `--attention_data OUT.csv` refits them from it.

What is timed: forward = one SDPA call on Q, K, V of shape (batch, heads, seq, head_dim); backward
= the gradient of Q, K and V from a given output gradient (autograd through SDPA, the forward
done once beforehand). Both in eager mode (the kernels are long next to a launch), with the
method of sampling.py. Heads are full (K and V have as many heads as Q): the rows' FLOPs do not
depend on grouped-query sharing. A shape torch cannot run under the cuDNN backend is reported on
stderr and left out of the CSV.

With --backend flash, PyTorch's FlashAttention-2 backend instead (what TorchTitan's Llama runs
through SDPA on Hopper, the planner's `flash2` class: the rows that settle that class's rate).

Usage: torch_attention.py --gpu KIND --out OUT.csv [--source NAME] [--backend cudnn|flash]
                          [SHAPES.csv ...]
(KIND: the catalog name of this device, e.g. h100-sxm; SHAPES: attention CSVs whose rows give the
shapes, by default the two published ones; NAME: the rows' source column, by default
device-torch-sdpa-cudnn, which `--attention_check` reports each source of apart.)
"""
import argparse
import csv
import os
import sys

import sampling

HEADER = ["source", "gpu", "dtype", "pass", "causal", "batch", "heads", "seq", "head_dim",
          "tflops", "median_s", "method", "device"]
SOURCE = "device-torch-sdpa-cudnn"
DEFAULT_SHAPES = ["data/measurements/fa3-h100-cudnn-attention.csv",
                  "data/measurements/cudnn-fe-h200-prefill.csv"]


def read_rows(path):
    """The rows of an attention CSV (comment lines skipped), as dicts by column."""
    with open(path) as f:
        return list(csv.DictReader(line for line in f if line.strip() and not line.startswith("#")))


def shape_of(row):
    """A row's (dtype, pass, causal, batch, heads, seq, head_dim)."""
    return (row["dtype"], row["pass"], row["causal"] == "true", int(row["batch"]),
            int(row["heads"]), int(row["seq"]), int(row["head_dim"]))


def shapes_from(paths):
    """The distinct shapes of the files' rows, in file order."""
    return list(dict.fromkeys(shape_of(row) for path in paths for row in read_rows(path)))


def work_flops(shape):
    """FLOPs as FlashAttention and cuDNN count them (core/attention_calibration.cc's
    AttentionWorkFlops): 4·b·h·s²·d forward, half under a causal mask, 2.5× for the backward."""
    _, pass_, causal, b, h, s, d = shape
    f = 4.0 * b * h * s * s * d
    if causal:
        f /= 2
    if pass_ == "backward":
        f *= 2.5
    return f


def csv_row(shape, median_s, gpu, method, device, source=SOURCE):
    """One row of the attention schema (which has no quoting: commas in text become ';')."""
    dtype, pass_, causal, b, h, s, d = shape
    return [source, gpu, dtype, pass_, "true" if causal else "false", b, h, s, d,
            f"{work_flops(shape) / median_s / 1e12:.3f}", f"{median_s:.6e}",
            method.replace(",", ";"), device.replace(",", ";")]


def time_shape(shape, backend="cudnn"):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dtype, pass_, causal, b, h, s, d = shape
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dt, requires_grad=True)
               for _ in range(3))
    chosen = SDPBackend.FLASH_ATTENTION if backend == "flash" else SDPBackend.CUDNN_ATTENTION
    with sdpa_kernel([chosen]):
        if pass_ == "forward":
            with torch.no_grad():
                def run():
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                stats = sampling.sample(run, budget=1.0)
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            do = torch.randn_like(o)

            def run():
                torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
            # autograd queues more from the host than one call: a longer blocking kernel first.
            stats = sampling.sample(run, budget=1.0, sleep_cycles=1000000)
    return stats


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", required=True, help="catalog name of this device, e.g. h100-sxm")
    ap.add_argument("--out", required=True, help="CSV to write (the attention schema)")
    ap.add_argument("--source", default=SOURCE, help="the rows' source column")
    ap.add_argument("--backend", default="cudnn", choices=["cudnn", "flash"],
                    help="SDPA backend: cudnn (default) or flash (FlashAttention-2)")
    ap.add_argument("shapes", nargs="*", default=DEFAULT_SHAPES,
                    help="attention CSVs to take the shapes from")
    a = ap.parse_args(argv)
    import torch
    device = (f"{torch.cuda.get_device_name(0)} cuDNN {torch.backends.cudnn.version()} "
              f"torch {torch.__version__}")
    method = (f"torch SDPA {'FlashAttention-2' if a.backend == 'flash' else 'cuDNN'} backend "
              "(eager; CUDA events; median; bench/gpu/sampling.py)")
    shapes = shapes_from(a.shapes)
    written = 0
    with open(a.out, "w", newline="") as f:
        f.write(f"# fused attention timed on this device by bench/gpu/torch_attention.py "
                f"({len(shapes)} shapes from {', '.join(os.path.basename(p) for p in a.shapes)})\n")
        w = csv.writer(f)
        w.writerow(HEADER)
        for i, shape in enumerate(shapes, 1):
            try:
                stats = time_shape(shape, a.backend)
            except Exception as e:  # reported, the rest go on
                print(f"[{i}/{len(shapes)}] {shape}: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            finally:
                torch.cuda.empty_cache()
            w.writerow(csv_row(shape, stats["median_s"], a.gpu, method, device, a.source))
            f.flush()
            written += 1
            print(f"[{i}/{len(shapes)}] {shape}: {stats['median_s'] * 1e6:.1f} us "
                  f"(spread {stats['relative_spread']:.3f}, {stats['samples']} samples)", flush=True)
    print(f"{written} of {len(shapes)} shapes timed into {a.out}")
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
