#!/usr/bin/env bash
# The planner against published training runs (part of `make bench`; alone, after a change to the
# planner or a data set): Megatron's Selene runs (megatron_validation.txt), the 472 A100 figures
# of ../shared/reference, each H100 set of bench/data (published_runs_*.txt, a row per figure),
# the H100 sets together and the error band by kind of run (planner_bands.txt, which
# core/parallelism.cc's PlannerBands must match). Each file starts with the date, the machine and
# the commit: commit the code first.
#
#   bash scripts/published-runs.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
source scripts/lib/bench-header.sh
mkdir -p bench/results
{ bench_header; "$build/bench/megatron_validation"; } 2>&1 |
  tee bench/results/megatron_validation.txt
# The planner against the 472 published A100 runs (../shared/reference, beside the checkout).
runs=../shared/reference/published-runs-a100.csv
if [[ -f $runs ]]; then
  { bench_header; "$build/bench/published_runs" "$runs"; } 2>&1 |
    tee bench/results/published_runs_a100.txt
  { bench_header; "$build/bench/published_runs" --rows "$runs"; } \
    >bench/results/published_runs_a100_rows.txt 2>&1
fi
# ... and against MosaicML's H100 tables (bench/data, in the repository).
{ bench_header; "$build/bench/published_runs" --rows bench/data/published-runs-h100.csv; } 2>&1 |
  tee bench/results/published_runs_h100.txt
# ... and against NVIDIA's DGX-H100 runs (NeMo and Megatron-Bridge releases; bench/data), a row
# per figure.
nemo_rows=$(mktemp)
"$build/bench/published_runs" --rows bench/data/published-runs-nemo-h100.csv >"$nemo_rows" 2>&1
{ bench_header; cat "$nemo_rows"; python3 scripts/published-runs-by-kind.py <"$nemo_rows"; } |
  tee bench/results/published_runs_nemo_h100.txt
rm -f "$nemo_rows"
# ... and against NeMo AutoModel's DGX-H100 runs (PyTorch FSDP2 and DeepEP; bench/data).
{ bench_header; "$build/bench/published_runs" --rows bench/data/published-runs-automodel-h100.csv; } \
  2>&1 | tee bench/results/published_runs_automodel_h100.txt
# ... and against Megatron-LM's H100 weak-scaling runs (bench/data).
megatron_runs=bench/data/published-runs-megatron-h100.csv
{ bench_header; "$build/bench/published_runs" --rows "$megatron_runs"; } 2>&1 |
  tee bench/results/published_runs_megatron_h100.txt
# ... and against Meta's Llama 3 405B runs (126 layers on 16 stages; bench/data).
{ bench_header; "$build/bench/published_runs" --rows bench/data/published-runs-llama3-h100.csv; } \
  2>&1 | tee bench/results/published_runs_llama3_h100.txt
# ... and against TorchTitan's Llama 3.1 runs (FSDP2, TP, PP, CP, Float8 on Meta's 96 GB H100 at
# 500 W; bench/data), kept out of issue 36's combined check (its GPU's compute is the middle of
# its publisher's bracket, +-8.4%: the data set's .md) but in the bands and the held-sets line.
{ bench_header; "$build/bench/published_runs" --rows bench/data/published-runs-torchtitan-h100.csv; } \
  2>&1 | tee bench/results/published_runs_torchtitan_h100.txt
# ... and the share of the tensor-parallel collectives its async TP hid, from its published pairs
# (core/parallelism.h's kAsyncTpHiddenShare).
{ bench_header; "$build/bench/published_runs" --rows --components \
    bench/data/published-runs-torchtitan-h100.csv | python3 bench/data/fit_async_tp_share.py; } \
  2>&1 | tee bench/results/async_tp_share.txt
# ... and against NVIDIA's DGX Cloud benchmarking recipes (NeMo 24.09 to 25.04 on H100: Llama 3.1,
# Nemotron-4, GPT-3 175B, Grok-1's MoE; bench/data), kept out of issue 36's combined check (added
# for issue 50) but in the bands and the held-sets line.
{ bench_header; "$build/bench/published_runs" --rows bench/data/published-runs-dgxc-h100.csv; } \
  2>&1 | tee bench/results/published_runs_dgxc_h100.txt
# ... and the H100's sustained-load stretch of a step's GEMMs, fitted to the DGX Cloud set and
# checked on the others (core/gpu_catalog.cc's kH100SustainedGemmStretch).
{ bench_header; python3 bench/data/fit_sustained_stretch.py "$build"; } 2>&1 |
  tee bench/results/sustained_stretch.txt
# ... and the five H100 sets together (issue 36's bar for published H100 runs: median <= 10%,
# p90 <= 25%; the "runs:" line counts each run once).
h100_sets=(bench/data/published-runs-h100.csv bench/data/published-runs-nemo-h100.csv
  bench/data/published-runs-automodel-h100.csv bench/data/published-runs-megatron-h100.csv
  bench/data/published-runs-llama3-h100.csv)
{ bench_header; "$build/bench/published_runs" "${h100_sets[@]}"; } 2>&1 |
  tee bench/results/published_runs_h100_all.txt
# ... and every H100 set held, TorchTitan's with them (issue 50's bar for them: median <= 8%,
# p90 <= 25%).
{ bench_header; "$build/bench/published_runs" "${h100_sets[@]}" \
    bench/data/published-runs-torchtitan-h100.csv bench/data/published-runs-dgxc-h100.csv; } 2>&1 |
  tee bench/results/published_runs_h100_held.txt
# ... and the planner's error band by kind of run over all eight (core's PlannerBands).
if [[ -f $runs ]]; then
  { bench_header; "$build/bench/published_runs" --bands "$runs" "${h100_sets[@]}" \
      bench/data/published-runs-torchtitan-h100.csv bench/data/published-runs-dgxc-h100.csv; } \
    2>&1 |
    tee bench/results/planner_bands.txt
fi
