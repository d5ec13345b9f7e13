#!/usr/bin/env bash
# ThreadSanitizer run of the server's concurrency tests: the stress test (short, cancelled and
# unary calls together), the worker tests (single flight, several workers, restarts) and the
# calibration refit, against a server and worker built with -fsanitize=thread.
#   scripts/tsan.sh [build-dir]     writes bench/results/tsan.txt
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/bench-header.sh
build=${1:-build-tsan}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWAVECREST_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -g" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
cmake --build "$build" -j "$(nproc)" --target wavecrest-server wavecrest-worker \
  stress_integration_test worker_integration_test
logs=$(mktemp -d)
export TSAN_OPTIONS="suppressions=$PWD/tests/sanitizer/tsan.supp:log_path=$logs/tsan:halt_on_error=0:report_signal_unsafe=0"
status=0
"$build/tests/stress_integration_test" >"$logs/stress.out" 2>&1 || status=1
"$build/tests/worker_integration_test" --gtest_filter='*Identical*:*TwoWorkers*:*Concurrent*:*Kill*:*Quarantine*:*Layer*:*MeasuredRecommend*' \
  >"$logs/worker.out" 2>&1 || status=1
reports=$(cat "$logs"/tsan.* 2>/dev/null | grep -c "WARNING: ThreadSanitizer" || true)
{
  bench_header
  echo "# ThreadSanitizer (g++ $(g++ -dumpversion)), suppressions: tests/sanitizer/tsan.supp"
  grep -E "^\[  (PASSED|FAILED)|tests? ran" "$logs/stress.out" "$logs/worker.out" | sed "s|$logs/||"
  # A failed test's own message (what it expected, what it got), so the file says why.
  grep -h -A10 ": Failure$" "$logs/stress.out" "$logs/worker.out" | head -60 || true
  echo "reports: $reports"
  cat "$logs"/tsan.* 2>/dev/null | grep -A12 "WARNING: ThreadSanitizer" | head -200 || true
} | tee bench/results/tsan.txt
rm -rf "$logs"
[[ $status == 0 && $reports == 0 ]]
