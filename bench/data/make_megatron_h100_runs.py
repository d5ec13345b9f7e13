#!/usr/bin/env python3
"""Writes bench/data/published-runs-megatron-h100.csv: Megatron-LM's published H100 weak-scaling
runs (GPT models of 1.7B to 462B parameters on 48 to 6144 H100 GPUs, Megatron-Core r0.8.0), one
CSV row per run, the model TFLOP/s per GPU each measured, in the schema of
bench/data/published-runs-nemo-h100.csv.

  python3 bench/data/make_megatron_h100_runs.py > bench/data/published-runs-megatron-h100.csv

Source: github.com/NVIDIA/Megatron-LM (BSD-3-Clause), README.md and images/model_table.png as added
in f2e5db402c44ae309aa6448bcb4ae87e8ae0f5f4 (2024-07-15, "New scaling figures on H100 GPUs"). The
table is an image, so its rows are transcribed below; the script checks the transcription against
the table's own arithmetic (GPUs = TP x PP x DP, aggregate petaFLOP/s = per-GPU teraFLOP/s x GPUs,
MFU = per-GPU teraFLOP/s / 989, the H100 SXM's dense BF16 peak as NVIDIA rounds it) and the
parameter count its first column rounds. What the README states of every run: vocabulary 131,072,
sequence 4096, "--overlap-grad-reduce --overlap-param-gather" (so the distributed optimizer),
"--tp-comm-overlap" (which Megatron-LM allows only with sequence parallelism), pipeline
communication overlapped, end-to-end throughput. Micro-batch size, recomputation and the
interleaved schedule are not stated (left to the planner's defaults: 1, none, 1). The per-GPU
teraFLOP/s are Megatron-LM's count (megatron/training/training.py num_floating_point_operations at
core_r0.8.0: 72·B·s·L·h²·(1 + s/6h + V/12hL) for these MHA, 4h-MLP models), compared as such. The
strong-scaling figure (GPT-3 175B, 96 to 4608 GPUs) is left out: its layouts are not stated.
"""
import sys

import runs_csv

COMMIT = "f2e5db402c44ae309aa6448bcb4ae87e8ae0f5f4"
VOCAB, SEQ, PEAK_BF16 = 131072, 4096, 989.0

# Model size, attention heads, hidden size, layers, TP, PP, DP, GPUs, batch size,
# per-GPU teraFLOP/s, MFU (%), aggregate petaFLOP/s: images/model_table.png, row by row.
TABLE = [
    ("1.7B", 16, 2048, 24, 1, 1, 48, 48, 192, 408.8, 41, 19.6),
    ("7.1B", 32, 4096, 30, 2, 1, 48, 96, 192, 465.9, 47, 44.7),
    ("16B", 48, 6144, 32, 4, 1, 48, 192, 192, 489.1, 49, 93.9),
    ("32B", 56, 7168, 48, 8, 1, 48, 384, 192, 459.6, 46, 176.5),
    ("70B", 64, 8192, 84, 8, 2, 48, 768, 384, 419.7, 42, 322.3),
    ("119B", 80, 10240, 92, 8, 4, 48, 1536, 768, 420.5, 43, 645.9),
    ("177B", 96, 12288, 96, 8, 6, 48, 2304, 1152, 432.8, 44, 997.2),
    ("314B", 128, 16384, 96, 8, 8, 48, 3072, 1536, 474.4, 48, 1457.4),
    ("462B", 144, 18432, 112, 8, 16, 48, 6144, 3072, 459.9, 47, 2825.6),
]


def check(row):
    size, a, h, L, tp, pp, dp, gpus, batch, tflops, mfu, pflops = row
    problems = []
    if tp * pp * dp != gpus:
        problems.append("TP x PP x DP != GPUs")
    if abs(tflops * gpus / 1000 - pflops) > 0.06:
        problems.append("per-GPU x GPUs != aggregate")
    if round(100 * tflops / PEAK_BF16) != mfu:
        problems.append("per-GPU / peak != MFU")
    params = (12 * L * h * h + 2 * VOCAB * h) / 1e9  # untied embeddings and output layer
    if abs(params - float(size[:-1])) > 0.05 * params:
        problems.append(f"{params:.1f}B parameters")
    if problems:
        sys.exit(f"{size}: " + "; ".join(problems))


def main():
    out = runs_csv.writer()
    for row in TABLE:
        check(row)
        size, a, h, L, tp, pp, dp, gpus, batch, tflops, mfu, pflops = row
        out.writerow({
            "id": f"mlm2407_gpt-{size.lower()}_g{gpus}_t{tp}p{pp}_bf16_tflops",
            "source": "Megatron-LM weak scaling (Megatron-Core r0.8.0; H100; README model table)",
            "model": f"GPT {size}", "h": h, "a": a, "a_kv": a, "L": L, "ffn": 4 * h,
            "vocab": VOCAB, "seq": SEQ, "micro_batch": "", "global_batch": batch, "tp": tp,
            "pp": pp, "dp": dp, "cp": 1, "vp": "", "ep": 1, "fsdp": 0, "gpus": gpus,
            "gpu": "H100-80GB SXM (NVIDIA's cluster; the README names the GPU only)",
            "dtype": "bf16", "recompute": "", "seq_parallel": "yes" if tp > 1 else "no",
            "config": "", "metric": "tflops_per_gpu", "value": tflops,
            "unit": "model TFLOP/s/GPU",
            "source_repo_or_url":
                "github.com/NVIDIA/Megatron-LM README.md (images/model_table.png)",
            "commit_or_date": f"{COMMIT} (2024-07-15)",
            "quote": f"| {size} | {a} | {h} | {L} | {tp} | {pp} | {dp} | {gpus} | {batch} | "
                     f"{tflops} | {mfu}% | {pflops} |",
        })


if __name__ == "__main__":
    main()
