// Google Benchmark: the whole offline analysis (spec -> GEMMs -> predictions -> rules -> response
// proto) for a 70B model, as the CLI and the Analyze RPC run it.
#include <string>

#include "bench/reference.h"
#include "benchmark/benchmark.h"
#include "service/advisor_logic.h"
#include "core/prediction_memo.h"
#include "service/spec_io.h"

namespace wavecrest {
namespace {

v1::AnalyzeRequest Llama2_70B(bool unfused) {
  auto spec =
      LoadModelFile(std::string(WAVECREST_SOURCE_DIR) + "/examples/models/llama-2-70b.json");
  if (!spec.ok()) return {};
  v1::AnalyzeRequest request;
  *request.mutable_model() = *spec;
  request.mutable_model()->set_attention(unfused ? v1::ATTENTION_UNFUSED : v1::ATTENTION_FLASH);
  request.set_gpu("h100-sxm");
  return request;
}

// Every GEMM predicted anew: the process's memo of predictions (core/prediction_memo.h) is
// emptied before each call, as for a model the server has not seen.
void BM_AnalyzeLlama2_70B(benchmark::State& state) {
  const v1::AnalyzeRequest request = Llama2_70B(state.range(0) != 0);
  if (!request.has_model()) return state.SkipWithError("cannot load llama-2-70b.json");
  for (auto _ : state) {
    CatalogPredictionMemo().Clear();
    auto r = HandleAnalyze(request);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_AnalyzeLlama2_70B)->Arg(0)->Arg(1)->ArgName("unfused")->Unit(benchmark::kMicrosecond);

// The same model again (a launcher fleet's common case): its GEMMs' predictions remembered.
void BM_AnalyzeLlama2_70BRemembered(benchmark::State& state) {
  const v1::AnalyzeRequest request = Llama2_70B(state.range(0) != 0);
  if (!request.has_model()) return state.SkipWithError("cannot load llama-2-70b.json");
  for (auto _ : state) {
    auto r = HandleAnalyze(request);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_AnalyzeLlama2_70BRemembered)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("unfused")
    ->Unit(benchmark::kMicrosecond);

void BM_LoadSpecFile(benchmark::State& state) {
  const std::string path =
      std::string(WAVECREST_SOURCE_DIR) + "/examples/models/hf/llama-3-8b.json";
  for (auto _ : state) benchmark::DoNotOptimize(LoadModelFile(path));
}
BENCHMARK(BM_LoadSpecFile)->Unit(benchmark::kMicrosecond);

// The layout searched (`analyze --plan --gpus 512 --global-batch 1024`): every TP × PP
// combination of Llama 2 70B on 512 H100s planned (recomputation, ZeRO, offload, interleave),
// its predictions made anew each time, as for a model the server has not seen.
void BM_PlanLayoutSearch70BOn512(benchmark::State& state) {
  v1::AnalyzeRequest request = Llama2_70B(false);
  if (!request.has_model()) return state.SkipWithError("cannot load llama-2-70b.json");
  request.mutable_model()->set_tensor_parallel(1);
  request.mutable_run()->set_num_gpus(512);
  request.mutable_run()->set_global_batch(1024);
  request.mutable_run()->set_plan(true);
  for (auto _ : state) {
    CatalogPredictionMemo().Clear();
    auto r = HandleAnalyze(request);
    if (!r.ok() || r->layouts().empty()) return state.SkipWithError("no layout searched");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PlanLayoutSearch70BOn512)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace wavecrest

BENCHMARK_MAIN();
