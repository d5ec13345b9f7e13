// A fixed CPU workload that every benchmark binary runs beside its own, so that
// scripts/bench-check.sh can compare benchmarks to the machine's speed at that moment: a shared
// VM's slow spells slow the reference as much as the code, and the ratio stays. Nothing of
// wavecrest is in it: sorting and hashing pseudo-random numbers and a floating-point recurrence,
// about what the analytic model and the ranking do (branches, memory, arithmetic).
#ifndef WAVECREST_BENCH_REFERENCE_H_
#define WAVECREST_BENCH_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "benchmark/benchmark.h"

namespace wavecrest {

inline void BM_Reference(benchmark::State& state) {
  for (auto _ : state) {
    uint64_t x = 88172645463325252ULL;
    std::vector<uint64_t> v(20000);
    for (uint64_t& e : v) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      e = x;
    }
    std::sort(v.begin(), v.end());
    std::unordered_set<uint64_t> seen(v.begin(), v.begin() + 5000);
    double acc = 0;
    for (uint64_t e : v) acc = std::sqrt(acc + static_cast<double>(e % 1000)) + 1.0 / (1 + acc);
    benchmark::DoNotOptimize(acc);
    benchmark::DoNotOptimize(seen.size());
  }
}
BENCHMARK(BM_Reference)->Unit(benchmark::kMicrosecond);

}  // namespace wavecrest

#endif  // WAVECREST_BENCH_REFERENCE_H_
