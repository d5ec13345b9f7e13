// Analyze: one model spec on one catalogued GPU, end to end (GEMMs, alignment, predicted times,
// parameter and FLOP counts, step time, rules broken). Shared by the CLI's offline mode and the
// server's Analyze RPC.
#ifndef WAVECREST_CORE_ANALYSIS_H_
#define WAVECREST_CORE_ANALYSIS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/cost_model.h"
#include "core/elementwise_cost.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"
#include "core/model_stats.h"
#include "core/prediction_memo.h"
#include "core/rules.h"

namespace wavecrest {

struct GemmAnalysis {
  Gemm gemm;
  double step_flop_share = 0;  // of the step's FLOPs (this GEMM × its count)
  DimAlignment m_align, n_align, k_align;
  GemmPrediction prediction;
};

struct Analysis {
  ModelSpec spec;  // normalized
  const GpuSpec* gpu = nullptr;
  std::vector<GemmAnalysis> gemms;
  ParamCounts params;
  FlopCounts flops;
  double gemm_time_s = 0;  // Σ count × predicted time
  ElementwiseEstimate elementwise;
  double step_time_s = 0;  // gemm_time_s + elementwise.time_s
  // The model's FLOPs per rank (FlopCounts::model_flops / (t·c), attention counted whole) /
  // (step time × dense peak); KernelMfu counts them another way.
  double mfu = 0;
  double tokens_per_s_per_gpu = 0;
  std::vector<RuleViolation> rules;
};

// INVALID_ARGUMENT for a bad spec (every violation), FAILED_PRECONDITION for a dtype the GPU cannot
// run on tensor cores.
// With a `memo`, plain GEMMs' predictions come from it (core/prediction_memo.h: `gpu` must then
// live as long as the memo, as the catalog's GPUs do).
absl::StatusOr<Analysis> Analyze(const ModelSpec& spec, const GpuSpec& gpu,
                                 PredictionMemo* memo = nullptr);

// One rank's kernels' MFU with the model's FLOPs counted by `count`.
double KernelMfu(const Analysis& a, FlopCount count);

// FAILED_PRECONDITION naming the GPU and the dtypes it can run, or OK.
absl::Status CheckDtypeSupported(DType dtype, const GpuSpec& gpu);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_ANALYSIS_H_
