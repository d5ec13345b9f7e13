// Small helpers the cost model's files share (core/cost_model.cc for GEMMs,
// core/attention_cost.cc for fused attention): not part of the model's interface.
#ifndef WAVECREST_CORE_COST_MODEL_INTERNAL_H_
#define WAVECREST_CORE_COST_MODEL_INTERNAL_H_

#include <algorithm>
#include <cstdint>

#include "core/cost_model.h"
#include "core/gpu_catalog.h"

namespace wavecrest::cost_model_internal {

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The bandwidth a kernel's operands and output stream at: the GPU's, at the model's efficiency.
inline double MemoryBandwidth(const GpuSpec& gpu, const CostModelParams& mp) {
  return gpu.memory_bandwidth_bytes_per_s * mp.memory_efficiency;
}

// Completes a prediction whose compute and memory times are set: its time (launch plus the larger
// of the two), what bounds it, and the achieved rate of `useful_flops`.
inline void FinishPrediction(GemmPrediction& p, double useful_flops, double launch_s) {
  const double work = std::max(p.compute_time_s, p.memory_time_s);
  p.time_s = launch_s + work;
  if (launch_s > work) {
    p.bound = Bound::kLatency;
  } else if (p.memory_time_s > p.compute_time_s) {
    p.bound = Bound::kMemory;
  } else {
    p.bound = Bound::kCompute;
  }
  p.tflops = useful_flops / p.time_s / 1e12;
}

}  // namespace wavecrest::cost_model_internal

#endif  // WAVECREST_CORE_COST_MODEL_INTERNAL_H_
