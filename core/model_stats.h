// Parameter and FLOP counts of a model spec.
#ifndef WAVECREST_CORE_MODEL_STATS_H_
#define WAVECREST_CORE_MODEL_STATS_H_

#include <cstdint>
#include <vector>

#include "core/gemm.h"
#include "core/model_spec.h"

namespace wavecrest {

// Exact parameter counts of the whole model (not per rank). Norm weights (and LayerNorm biases),
// linear biases per `spec.bias`, learned position embeddings and an untied output matrix are all
// counted, so that the totals match the published sizes of the example models.
struct ParamCounts {
  int64_t total_params = 0;
  int64_t per_layer_params = 0;      // one transformer layer, norms included
  int64_t embedding_params = 0;      // input embedding + position table + untied output matrix
  int64_t non_embedding_params = 0;  // total - embedding
  // Parameters one token uses: total for a dense model; for MoE, the router, k experts and the
  // shared experts instead of all E experts.
  int64_t active_params = 0;
  // The routed experts of every MoE layer (0 for a dense model): what expert parallelism splits.
  int64_t expert_params = 0;
};
ParamCounts CountParams(const ModelSpec& spec);

struct FlopCounts {
  double step_flops = 0;        // FLOPs of every GEMM and attention kernel of one step, one rank
  double forward_flops = 0;     // forward pass part of step_flops
  double model_flops = 0;  // step_flops summed over the t·c ranks (the model's FLOPs per step)
  int64_t tokens_per_step = 0;  // tokens one tensor-parallel group processes (b·s/c; decode: b)
};
FlopCounts CountFlops(const ModelSpec& spec, const std::vector<Gemm>& gemms);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_MODEL_STATS_H_
