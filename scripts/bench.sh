#!/usr/bin/env bash
# `make bench`: runs every CPU benchmark and rewrites bench/results/ (each file starts with the
# date, the machine and the commit): analyze_bench and recommend_bench (text for people, JSON for
# scripts/bench-check.sh), the server under load (loadgen.txt), a worker round trip, the
# parallelism model against Megatron's published Selene runs (megatron_validation.txt), and the
# planner against the published A100 and H100 runs (published_runs_a100.txt, _h100.txt and
# _nemo_h100.txt).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
source scripts/lib/bench-header.sh
mkdir -p bench/results
for b in analyze_bench recommend_bench; do
  {
    bench_header
    "$build/bench/$b" --benchmark_repetitions=5 --benchmark_display_aggregates_only=true \
      --benchmark_out="bench/results/$b.json" --benchmark_out_format=json
  } 2>&1 | tee "bench/results/$b.txt"
done
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
# ... and the three H100 sets together (issue 36's bar for published H100 runs: median <= 10%,
# p90 <= 25%).
{ bench_header; "$build/bench/published_runs" bench/data/published-runs-h100.csv \
    bench/data/published-runs-nemo-h100.csv bench/data/published-runs-automodel-h100.csv; } 2>&1 |
  tee bench/results/published_runs_h100_all.txt
# ... and the planner's error band by kind of run over all four (core's PlannerBands).
if [[ -f $runs ]]; then
  { bench_header; "$build/bench/published_runs" --bands "$runs" bench/data/published-runs-h100.csv \
      bench/data/published-runs-nemo-h100.csv bench/data/published-runs-automodel-h100.csv; } 2>&1 |
    tee bench/results/planner_bands.txt
fi
bash scripts/loadgen.sh "$build"
bash scripts/worker-bench.sh "$build"
