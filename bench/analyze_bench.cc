// Google Benchmark: the whole offline analysis (spec -> GEMMs -> predictions -> rules -> response
// proto) for a 70B model, as the CLI and the Analyze RPC run it.
#include <string>

#include "bench/reference.h"
#include "benchmark/benchmark.h"
#include "service/advisor_logic.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace {

void BM_AnalyzeLlama2_70B(benchmark::State& state) {
  auto spec =
      LoadModelFile(std::string(WAVECREST_SOURCE_DIR) + "/examples/models/llama-2-70b.json");
  if (!spec.ok()) {
    state.SkipWithError("cannot load llama-2-70b.json");
    return;
  }
  v1::AnalyzeRequest request;
  *request.mutable_model() = *spec;
  request.mutable_model()->set_attention(state.range(0) ? v1::ATTENTION_UNFUSED
                                                        : v1::ATTENTION_FLASH);
  request.set_gpu("h100-sxm");
  for (auto _ : state) {
    auto r = HandleAnalyze(request);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_AnalyzeLlama2_70B)->Arg(0)->Arg(1)->ArgName("unfused")->Unit(benchmark::kMicrosecond);

void BM_LoadSpecFile(benchmark::State& state) {
  const std::string path =
      std::string(WAVECREST_SOURCE_DIR) + "/examples/models/hf/llama-3-8b.json";
  for (auto _ : state) benchmark::DoNotOptimize(LoadModelFile(path));
}
BENCHMARK(BM_LoadSpecFile)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace wavecrest

BENCHMARK_MAIN();
