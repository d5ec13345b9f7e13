// Google Benchmark: predicted-mode Recommend for Llama-2-70B (candidate generation, the analytic
// stage over every candidate, ranking, the response), as the CLI and the RPC run it.
//
// BM_RecommendLlama2_70B: the request a launcher sends (default knobs; TP 1, 2, 4 and 8 keep the
// candidates a TP team can adopt, so fewer than max_candidates are considered).
// BM_RecommendScaling: a wide search (TP 1, any head dim, ±20% parameters, kv_heads varied too,
// the KV group, KV cache and head-dim floor released) that reaches max_candidates, to show how
// the cost grows with the number of candidates.
#include <string>

#include "bench/reference.h"
#include "benchmark/benchmark.h"
#include "service/recommend_logic.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace {

void Run(benchmark::State& state, const v1::RecommendRequest& request) {
  int64_t considered = 0;
  for (auto _ : state) {
    auto r = RunRecommend(request, CallContext());
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    considered = r->candidates_considered();
    benchmark::DoNotOptimize(r);
  }
  state.counters["candidates"] = static_cast<double>(considered);
  // Seconds per candidate considered (printed with an SI prefix: "4.2u" is 4.2 µs).
  state.counters["per_candidate"] = benchmark::Counter(
      static_cast<double>(considered) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

v1::RecommendRequest Llama2_70B(int64_t max_candidates) {
  v1::RecommendRequest request;
  auto spec =
      LoadModelFile(std::string(WAVECREST_SOURCE_DIR) + "/examples/models/llama-2-70b.json");
  if (spec.ok()) *request.mutable_model() = *spec;
  request.set_gpu("h100-sxm");
  request.set_mode(v1::MODE_PREDICTED);
  request.set_max_candidates(max_candidates);
  return request;
}

void BM_RecommendLlama2_70B(benchmark::State& state) { Run(state, Llama2_70B(state.range(0))); }
BENCHMARK(BM_RecommendLlama2_70B)
    ->Arg(1000)
    ->Arg(5000)
    ->ArgName("max_candidates")
    ->Unit(benchmark::kMillisecond);

void BM_RecommendScaling(benchmark::State& state) {
  v1::RecommendRequest request = Llama2_70B(state.range(0));
  request.add_tensor_parallel_options(1);
  request.set_head_dim_multiple(1);
  request.set_param_tolerance(0.2);
  for (v1::Knob knob : {v1::KNOB_HEADS, v1::KNOB_KV_HEADS, v1::KNOB_HIDDEN, v1::KNOB_FFN,
                        v1::KNOB_VOCAB, v1::KNOB_LAYERS, v1::KNOB_KV_GROUP, v1::KNOB_KV_CACHE,
                        v1::KNOB_HEAD_DIM}) {
    request.add_vary(knob);
  }
  Run(state, request);
}
BENCHMARK(BM_RecommendScaling)
    ->Arg(100)
    ->Arg(1000)
    ->Arg(5000)
    ->Arg(20000)
    ->ArgName("max_candidates")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace wavecrest

BENCHMARK_MAIN();
