#!/usr/bin/env bash
# `make bench`: runs every CPU benchmark and rewrites bench/results/ (each file starts with the
# date, the machine and the commit): analyze_bench and recommend_bench (text for people, JSON for
# scripts/bench-check.sh), the server under load (loadgen.txt), a worker round trip, the
# planner against Megatron's Selene runs and the published A100 and H100 runs
# (scripts/published-runs.sh: megatron_validation.txt, published_runs_*.txt, planner_bands.txt).
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
bash scripts/published-runs.sh "$build"
bash scripts/loadgen.sh "$build"
bash scripts/worker-bench.sh "$build"
