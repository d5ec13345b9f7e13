// Parameter and FLOP counts of a model spec.
#ifndef WAVECREST_CORE_MODEL_STATS_H_
#define WAVECREST_CORE_MODEL_STATS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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

// How a model's FLOPs count attention's s × s products (the model FLOPs behind MFU and TFLOP/s;
// the kernels' own work, `step_flops`, is what they do either way).
// - kFull: the whole product, forward once and backward twice (4·b·s²·h forward per layer, 12
//   with backward): PaLM's 6N + 12·L·a·d·s per token (Chowdhery et al. 2022, appendix B: 12·L·H·Q·T,
//   H heads of dimension Q; h where a·d = h, not where a model's heads are wider or narrower),
//   Megatron-LM's count until it halved it, NeMo's before 2025-08 (nemo/utils/flops_formulas.py),
//   MosaicML's llm-foundry tables. The default.
// - kCausal: half of it, the part a causal mask leaves (Megatron-LM's
//   num_floating_point_operations today: "causal mask (only half of the mask is non-zero)",
//   megatron/training/training.py at 001b00c2; Megatron-Bridge's flop_utils; NeMo's since
//   2025-08). Decode's one query row against the cache has no mask to halve.
// Neither counts FlashAttention backward's recomputed Q·Kᵀ (the kernel's fifth product), which is
// recomputation, not the model's work.
enum class FlopCount { kFull, kCausal };
// "full" or "" (the default) and "causal"; otherwise InvalidArgument naming the allowed values
// (the caller names the field).
absl::StatusOr<FlopCount> ParseFlopCount(absl::string_view name);
absl::string_view FlopCountName(FlopCount c);  // "full", "causal"

struct FlopCounts {
  // FLOPs of every GEMM and attention kernel of one step, one rank, as the kernels run them (a
  // fused attention only the blocks its mask leaves: FusedAttentionWorkShare).
  double step_flops = 0;
  double forward_flops = 0;     // forward pass part of step_flops
  // The model's FLOPs per micro-batch, summed over the t·c ranks: step_flops less the experts'
  // padding, with attention's core counted as FlopCount::kFull says (model_flops) and as kCausal
  // says (causal_model_flops).
  double model_flops = 0;
  double causal_model_flops = 0;
  int64_t tokens_per_step = 0;  // tokens one tensor-parallel group processes (b·s/c; decode: b)
  double ModelFlops(FlopCount c) const {
    return c == FlopCount::kCausal ? causal_model_flops : model_flops;
  }
};
FlopCounts CountFlops(const ModelSpec& spec, const std::vector<Gemm>& gemms);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_MODEL_STATS_H_
