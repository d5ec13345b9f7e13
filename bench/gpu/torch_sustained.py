#!/usr/bin/env python3
"""How much slower a training step's GEMMs run under seconds of sustained load than in a short
burst: the measurement behind the planner's GpuSpec::sustained_gemm_stretch (core/gpu_catalog.cc),
which is fitted to published runs (1.10 on the H100) and was measured before only as one whole
layer sampled for 2 s.

The GEMMs of one Llama-3-8B training layer (8,192 tokens, BF16: QKV, the attention projection,
the SwiGLU gate/up and down projections, each forward, data-gradient and weight-gradient, as
torch.nn.functional.linear and its backward run them) are run back to back, in a CUDA graph of
the whole set, for SECONDS (default 30) after the GPU has idled a few seconds. Each replay is
timed by CUDA events. nvidia-smi samples the SM clock, power and temperature every 200 ms beside
it. The output (CSV and a summary) gives the rate of the first 0.3 s of replays (what the GEMM
sweeps see), of the last 10 s (a step's steady state), and their ratio: the stretch.

  torch_sustained.py OUT_PREFIX [SECONDS]    (writes OUT_PREFIX.csv, OUT_PREFIX-smi.csv and
                                              OUT_PREFIX.txt)
Nothing here changes clocks, power limits or modes: it reads them.
"""
import statistics
import subprocess
import sys
import time

import torch

# Llama-3-8B's layer (h, q+kv width, SwiGLU width) at 8,192 tokens.
H, QKV, FFN, TOKENS = 4096, 6144, 14336, 8192


def layer_gemms(dev):
    """(fn, flops) for each GEMM of the layer's forward and backward."""
    x = torch.randn(TOKENS, H, device=dev, dtype=torch.bfloat16)
    out = []
    for n, k in ((QKV, H), (H, H), (2 * FFN, H), (H, FFN)):
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        a = torch.randn(TOKENS, k, device=dev, dtype=torch.bfloat16) if k != H else x
        g = torch.randn(TOKENS, n, device=dev, dtype=torch.bfloat16)
        flops = 2.0 * TOKENS * n * k
        out.append((lambda a=a, w=w: torch.nn.functional.linear(a, w), flops))  # forward
        out.append((lambda g=g, w=w: g @ w, flops))  # data gradient
        out.append((lambda g=g, a=a: g.t() @ a, flops))  # weight gradient
    return out


def main(argv):
    prefix = argv[1]
    seconds = float(argv[2]) if len(argv) > 2 else 30.0
    dev = torch.device("cuda")
    gemms = layer_gemms(dev)
    flops = sum(f for _, f in gemms)
    for fn, _ in gemms:  # warm the kernels' selection outside the graph
        fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for fn, _ in gemms:
            fn()
    torch.cuda.synchronize()
    time.sleep(5)  # idle first: the burst at the start is what a short sweep sees
    smi = subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
         "--format=csv,noheader,nounits", "-lms", "200"],
        stdout=open(prefix + "-smi.csv", "w"), stderr=subprocess.DEVNULL)
    rows = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        events = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        events[0].record()
        graph.replay()
        events[1].record()
        events[1].synchronize()
        ms = events[0].elapsed_time(events[1])
        rows.append((time.perf_counter() - start, ms, flops / (ms * 1e-3) / 1e12))
    smi.terminate()
    with open(prefix + ".csv", "w") as f:
        f.write("t_s,replay_ms,tflops\n")
        for t, ms, tf in rows:
            f.write(f"{t:.4f},{ms:.4f},{tf:.1f}\n")
    burst = [tf for t, _, tf in rows if t <= 0.3]
    steady = [tf for t, _, tf in rows if t >= seconds - 10]
    name = torch.cuda.get_device_name(dev)
    with open(prefix + ".txt", "w") as f:
        f.write(f"device {name}, torch {torch.__version__}, {len(rows)} replays of the "
                f"Llama-3-8B layer's 12 GEMMs ({flops / 1e12:.2f} TFLOP each) in {seconds:.0f} s\n")
        f.write(f"first 0.3 s: median {statistics.median(burst):.1f} TFLOP/s ({len(burst)} "
                f"replays)\n")
        f.write(f"last 10 s: median {statistics.median(steady):.1f} TFLOP/s ({len(steady)} "
                f"replays)\n")
        f.write(f"sustained stretch (burst / steady rate): "
                f"{statistics.median(burst) / statistics.median(steady):.3f} "
                f"(the planner's: core/gpu_catalog.cc, kH100SustainedGemmStretch)\n")
    print(open(prefix + ".txt").read(), end="")


if __name__ == "__main__":
    main(sys.argv)
