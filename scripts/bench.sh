#!/usr/bin/env bash
# Runs the CPU benchmarks and writes their output under bench/results/ (with the machine's facts).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
mkdir -p bench/results
out=bench/results/analyze_bench.txt
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm), $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  "$build/bench/analyze_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
} 2>&1 | tee "$out"

out=bench/results/recommend_bench.txt
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm), $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  "$build/bench/recommend_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
} 2>&1 | tee "$out"
bash scripts/worker-bench.sh "$build"
