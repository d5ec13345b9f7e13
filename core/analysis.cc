#include "core/analysis.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/attention_cost.h"
#include "core/status_macros.h"

namespace wavecrest {

absl::Status CheckDtypeSupported(DType dtype, const GpuSpec& gpu) {
  if (gpu.Supports(dtype)) return absl::OkStatus();
  std::vector<std::string> ok;
  for (DType d : {DType::kBf16, DType::kFp16, DType::kTf32, DType::kFp32, DType::kFp8E4M3}) {
    if (gpu.Supports(d)) ok.emplace_back(DTypeName(d));
  }
  return absl::FailedPreconditionError(absl::StrCat("dtype: ", gpu.name, " cannot run ",
                                                    DTypeName(dtype), "; it supports ",
                                                    absl::StrJoin(ok, ", ")));
}

double KernelMfu(const Analysis& a, FlopCount count) {
  const double ranks = static_cast<double>(a.spec.tensor_parallel) *
                       static_cast<double>(std::max<int64_t>(a.spec.context_parallel, 1));
  return a.flops.ModelFlops(count) / ranks / (a.step_time_s * a.gpu->PeakFlops(a.spec.dtype));
}

absl::StatusOr<Analysis> Analyze(const ModelSpec& raw, const GpuSpec& gpu, PredictionMemo* memo) {
  ASSIGN_OR_RETURN(ModelSpec spec, NormalizeSpec(raw));
  RETURN_IF_ERROR(CheckDtypeSupported(spec.dtype, gpu));
  Analysis a;
  a.spec = spec;
  a.gpu = &gpu;
  std::vector<Gemm> gemms = BuildGemms(spec);
  a.params = CountParams(spec);
  a.flops = CountFlops(spec, gemms);
  a.rules = CheckRules(spec, gemms);
  a.gemms.reserve(gemms.size());
  for (Gemm& g : gemms) {
    GemmAnalysis ga;
    ga.step_flop_share = a.flops.step_flops > 0
                             ? g.step_flops() * FusedAttentionWorkShare(g) / a.flops.step_flops
                             : 0;
    ga.m_align = AlignmentOf(g.shape.m, g.dtype, gpu);
    ga.n_align = AlignmentOf(g.shape.n, g.dtype, gpu);
    ga.k_align = AlignmentOf(g.shape.k, g.dtype, gpu);
    ga.prediction = memo != nullptr ? memo->Predict(gpu, g) : Predict(gpu, g);
    a.gemm_time_s += ga.prediction.time_s * static_cast<double>(g.count);
    ga.gemm = std::move(g);
    a.gemms.push_back(std::move(ga));
  }
  a.elementwise = EstimateElementwise(spec, gpu);
  a.step_time_s = a.gemm_time_s + a.elementwise.time_s;
  a.mfu = KernelMfu(a, FlopCount::kFull);
  a.tokens_per_s_per_gpu = static_cast<double>(a.flops.tokens_per_step) / a.step_time_s /
                           static_cast<double>(spec.tensor_parallel);
  return a;
}

}  // namespace wavecrest
