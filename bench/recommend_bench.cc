// Google Benchmark: predicted-mode Recommend for Llama-2-70B (candidate generation, the analytic
// stage over every candidate, ranking, the response), as the CLI and the RPC run it.
#include <string>

#include "benchmark/benchmark.h"
#include "service/recommend_logic.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace {

void BM_RecommendLlama2_70B(benchmark::State& state) {
  auto spec =
      LoadModelFile(std::string(WAVECREST_SOURCE_DIR) + "/examples/models/llama-2-70b.json");
  if (!spec.ok()) {
    state.SkipWithError("cannot load llama-2-70b.json");
    return;
  }
  v1::RecommendRequest request;
  *request.mutable_model() = *spec;
  request.set_gpu("h100-sxm");
  request.set_mode(v1::MODE_PREDICTED);
  request.set_max_candidates(state.range(0));
  int64_t considered = 0;
  for (auto _ : state) {
    auto r = RunRecommend(request, RecommendContext());
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    considered = r->candidates_considered();
    benchmark::DoNotOptimize(r);
  }
  state.counters["candidates"] = static_cast<double>(considered);
}
BENCHMARK(BM_RecommendLlama2_70B)
    ->Arg(1000)
    ->Arg(5000)
    ->ArgName("max_candidates")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace wavecrest

BENCHMARK_MAIN();
