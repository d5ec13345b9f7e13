// The tensor-parallel degrees a run of a model on a GPU would use: what the recommender requires
// of every candidate by default (core/recommend.h, RecommendConstraints::run_tp), so that a
// 2.7B model is not held to TP 8 because its 32 heads happen to divide by 8.
#ifndef WAVECREST_CORE_RUN_TP_H_
#define WAVECREST_CORE_RUN_TP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/gpu_catalog.h"
#include "core/model_spec.h"

namespace wavecrest {

struct RunTp {
  std::vector<int64_t> degrees;  // ascending; every one of `supported` when none fits
  std::string source;            // which, and why, in words
};

// Of `supported` (ascending: the default degrees the baseline shards over), the smallest t at
// which the model's memory fits on one node of `gpu` (its NVLink domain, link.domain_gpus) and
// its neighbours t/2 and 2t where supported. Training: t·p·c GPUs of the node per replica, the
// rest data parallel, and one of the planner's layouts (core/parallelism.h CandidateLayouts:
// sequence parallelism, recomputation, ZeRO over the data-parallel ranks, activation offload)
// fits (EstimateMemory); prefill and decode: the weights and the KV cache at the spec's batch
// and length fit. When no degree fits on one node (a model that needs pipeline stages or more
// nodes), every supported degree is kept. `base` must be normalized.
RunTp RunTpDegrees(const ModelSpec& base, const GpuSpec& gpu,
                   const std::vector<int64_t>& supported);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_RUN_TP_H_
