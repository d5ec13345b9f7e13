#!/usr/bin/env python3
"""Writes bench/data/published-runs-llama3-h100.csv: Meta's published pre-training throughput of
Llama 3 405B on 8,192 and 16,384 H100 GPUs (126 layers on 16 pipeline stages), one CSV row per run,
the TFLOP/s per GPU each measured, in the schema of bench/data/published-runs-nemo-h100.csv.

  python3 bench/data/make_llama3_h100_runs.py > bench/data/published-runs-llama3-h100.csv

Source: "The Llama 3 Herd of Models" (Llama Team, AI @ Meta; arXiv:2407.21783), section 3.3.2 and
Table 4 ("Scaling configurations and MFU for each stage of Llama 3 405B pre-training"). The table
is transcribed below; the script checks the transcription against its own arithmetic (TP x CP x PP
x DP = GPUs; batch size per DP x DP x sequence length = the tokens per batch, 16M; TFLOP/s per GPU /
989, the H100 SXM's dense BF16 peak, = the BF16 MFU column within its rounding) and the model's
parameter count (405B). The third row (131,072 tokens with CP 16) is transcribed and checked but
not written: at that length attention's s^2 product is 40% to 57% of the model's FLOPs, and
whether Meta counts its causal half or all of it (a factor of 1.4 on the figure) is not stated.
What bench/published_runs takes from section 3.3 for these rows, and what it leaves to the
planner, is in published-runs-llama3-h100.md.
"""
import sys

import runs_csv

PEAK_BF16 = 989.0
# Llama 3 405B (arXiv:2407.21783, Table 3): 126 layers, model dimension 16,384, FFN dimension
# 53,248, 128 attention heads, 8 key/value heads, vocabulary 128,000 (the released config.json
# pads it to 128,256, as the model is trained).
H, A, A_KV, L, FFN, VOCAB = 16384, 128, 8, 126, 53248, 128256

# GPUs, TP, CP, PP, DP, sequence length, batch size per DP, tokens per batch (M),
# TFLOP/s per GPU, BF16 MFU (%): Table 4, row by row.
TABLE = [
    (8192, 8, 1, 16, 64, 8192, 32, 16, 430, 43),
    (16384, 8, 1, 16, 128, 8192, 16, 16, 400, 41),
    (16384, 8, 16, 16, 8, 131072, 16, 16, 380, 38),
]
# Section 3.3.2: taking one Transformer layer from the first and from the last stage leaves the
# first stage's first model chunk with the embedding alone and the last stage's last chunk with
# the output layer and loss alone: a model chunk holds one layer, so each of the 16 stages runs
# 128 / 16 = 8 chunks (V = 8 virtual stages per rank).
VIRTUAL_STAGES = 8


def check(row):
    gpus, tp, cp, pp, dp, seq, per_dp, tokens_m, tflops, mfu = row
    problems = []
    if tp * cp * pp * dp != gpus:
        problems.append("TP x CP x PP x DP != GPUs")
    if abs(per_dp * dp * seq / 2**20 - tokens_m) > 0.5:
        problems.append("batch x DP x sequence != tokens per batch")
    if abs(100 * tflops / PEAK_BF16 - mfu) > 1.0:
        problems.append("TFLOP/s / peak != MFU")
    if pp * VIRTUAL_STAGES != L + 2:
        problems.append("chunks of one layer != 126 layers + the embedding and loss chunks")
    params = (L * (H * (H + 2 * H * A_KV // A) + H * H + 3 * H * FFN) + 2 * VOCAB * H) / 1e9
    if abs(params - 405) > 0.02 * 405:
        problems.append(f"{params:.1f}B parameters")
    if problems:
        sys.exit(f"{gpus} GPUs, {seq} tokens: " + "; ".join(problems))


def main():
    out = runs_csv.writer()
    for row in TABLE:
        check(row)
        gpus, tp, cp, pp, dp, seq, per_dp, tokens_m, tflops, mfu = row
        if cp > 1:
            continue  # the FLOP count of its attention is not stated (the docstring)
        out.writerow({
            "id": f"llama3_405b_g{gpus}_t{tp}p{pp}c{cp}_bf16_tflops",
            "source": "Llama 3 405B pre-training (Meta; arXiv:2407.21783 Table 4)",
            "model": "Llama 3 405B", "h": H, "a": A, "a_kv": A_KV, "L": L, "ffn": FFN,
            "vocab": VOCAB, "seq": seq, "micro_batch": "", "global_batch": per_dp * dp,
            "tp": tp, "pp": pp, "dp": dp, "cp": cp, "vp": VIRTUAL_STAGES, "ep": 1, "fsdp": 0,
            "gpus": gpus,
            "gpu": "H100-80GB SXM at 700 W (Meta's Grand Teton; RoCE, 400 Gb/s per GPU)",
            "dtype": "bf16", "recompute": "", "seq_parallel": "", "config": "",
            "metric": "tflops_per_gpu", "value": tflops, "unit": "TFLOP/s/GPU (BF16)",
            "source_repo_or_url": "arxiv.org/abs/2407.21783 (The Llama 3 Herd of Models), Table 4",
            "commit_or_date": "2024-07-31 (arXiv v1)",
            "quote": f"| {gpus:,} | {tp} | {cp} | {pp} | {dp} | {seq:,} | {per_dp} | {tokens_m}M | "
                     f"{tflops} | {mfu}% |",
        })


if __name__ == "__main__":
    main()
