#!/usr/bin/env bash
# What needs the sanitizers, under AddressSanitizer + UndefinedBehaviorSanitizer (clang): every unit
# test (the core, the request handling, the gateway's body and gate, the stores and spools, in
# process) and the integration tests that feed the server hostile or malformed input over gRPC and
# HTTP (CTest label `asan`: server, http, http_limits, security) and the planner over every
# published run (bench/published_runs, whose checks are unit tests); then a short run of every
# libFuzzer target over its committed corpus. Only those targets are built: the rest of the
# integration suite (fleets, stores under faults, stress, workers) runs in the normal build, where
# `make test` has already run it, and its RSS and timing bounds mean nothing under ASan.
# `make test` runs this after the normal suite.
#
#   scripts/sanitize.sh [build-dir]      FUZZ_SECONDS=10 (per target)  SANITIZE_TESTS=1
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-sanitize}
fuzz_seconds=${FUZZ_SECONDS:-10}
jobs=$(nproc)
cxx=$(command -v clang++-14 || command -v clang++ || true)
cc=$(command -v clang-14 || command -v clang || true)
if [[ -z $cxx || -z $cc ]]; then
  echo "sanitize: clang not found (scripts/install-deps.sh installs clang-14)" >&2
  exit 1
fi
# Line tables are all a sanitizer's report needs (file:line in every frame); full debug info made
# each compile unit about 1.6x slower (service/convert.cc: 36.5 s against 23.1 s with clang 14),
# and -O1 about 1.5x slower than -O0 (15.2 s against 9.8 s), for tests that run in 2-3 minutes
# either way: the whole script took 26 min 24 s with -O1 -g, 19 min 48 s with -O0 line tables.
flags="-O0 -gline-tables-only -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_CXX_COMPILER="$cxx" -DWAVECREST_CUDA=OFF -DWAVECREST_FUZZ=ON -DWAVECREST_TCMALLOC=OFF \
  -DCMAKE_CXX_FLAGS="$flags -fsanitize=fuzzer-no-link" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
targets=(core_test service_test client_test server_unit_test worker_unit_test
         server_integration_test http_integration_test http_limits_integration_test
         security_integration_test wavecrest-server wavecrest-worker wavecrest published_runs
         fuzz_spec_json fuzz_hf_config fuzz_requests fuzz_cache_row fuzz_http)
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

# Leaks are checked in our code; the suppressions name only uninstrumented system libraries
# (gRPC's and protobuf's process-lifetime singletons), each justified in the file.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizer/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
if [[ ${SANITIZE_TESTS:-1} == 1 ]]; then
  # A test that times itself (a parse in linear time, under 1 s) means nothing unoptimised under
  # ASan: it runs in the normal build.
  (cd "$build" && ctest --output-on-failure -j "$jobs" --timeout 600 -L "unit|asan" \
    -E "python_client_test|LargeConfigsParseInLinearTime")
fi

# Fuzz smoke: each target over a copy of its corpus (new inputs do not touch the repository).
status=0
for target in fuzz_spec_json fuzz_hf_config fuzz_requests fuzz_cache_row fuzz_http; do
  work=$(mktemp -d)
  cp -r "tests/fuzz/corpus/$target/." "$work/"
  echo "fuzz: $target for ${fuzz_seconds}s over $(ls "$work" | wc -l) seeds"
  if ! "$build/tests/fuzz/$target" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "$work" 2>"$work.log"; then
    echo "fuzz: $target FAILED"; tail -40 "$work.log"; status=1
  else
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$work.log" | sed "s/^/  /"
  fi
  rm -rf "$work" "$work.log"
done
exit $status
