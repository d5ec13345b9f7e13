#!/usr/bin/env bash
# The long fuzz run: every target for RUNS executions (default 10^6) from its committed corpus,
# under ASan+UBSan; writes bench/results/fuzz.txt. Build first with scripts/sanitize.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/bench-header.sh
build=${1:-build-sanitize}
runs=${RUNS:-1000000}
out=${OUT:-bench/results/fuzz.txt}
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizer/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
{
  bench_header
  echo "# libFuzzer (clang $(clang++-14 --version | head -1 | sed 's/.*version //')), ASan+UBSan, $runs runs per target"
  crashes=0
  for target in fuzz_spec_json fuzz_hf_config fuzz_requests fuzz_cache_row fuzz_http; do
    work=$(mktemp -d)
    cp -r "tests/fuzz/corpus/$target/." "$work/"
    start=$(date +%s)
    if "$build/tests/fuzz/$target" -runs="$runs" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "$work" >"$work.log" 2>&1; then
      result="0 crashes"
    else
      result="CRASH"; crashes=$((crashes + 1))
      grep -E "ERROR|SUMMARY" "$work.log" | head -5
    fi
    echo "$target: $result in $(( $(date +%s) - start )) s; $(grep -oE 'stat::number_of_executed_units: [0-9]+' "$work.log" | awk '{print $2}') executions, corpus $(ls "$work" | wc -l) inputs, $(grep -oE 'cov: [0-9]+' "$work.log" | tail -1)"
    rm -rf "$work" "$work.log"
  done
  echo "# crashes: $crashes"
} 2>&1 | tee "$out"
