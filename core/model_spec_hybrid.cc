// ValidateHybrid (core/model_spec.h): a hybrid model's pattern against the layer and expert fields,
// and its Mamba-2 mixers.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model_spec.h"

namespace wavecrest {
namespace {

bool AnyMambaField(const ModelSpec& s) {
  return s.mamba_heads != 0 || s.mamba_head_dim != 0 || s.mamba_state_dim != 0 ||
         s.mamba_groups != 0 || s.mamba_conv_kernel != 0 || s.mamba_chunk_size != 0;
}

// The pattern's letters and length, and the fields it decides (layers, MoE layers); false when a
// letter is unknown (nothing else is checked then). `mamba` counts its 'M' layers.
bool ValidatePattern(const ModelSpec& s, std::vector<FieldViolation>& v, int64_t& mamba) {
  const std::string& p = s.hybrid_pattern;
  if (static_cast<int64_t>(p.size()) > kMaxLayers) {
    v.push_back({"hybrid_pattern",
                 absl::StrCat("must be at most ", kMaxLayers, " layers; got ", p.size())});
    return false;
  }
  int64_t moe = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    mamba += c == kHybridMamba;
    moe += c == kHybridMoe;
    if (c != kHybridMamba && c != kHybridAttention && c != kHybridMlp && c != kHybridMoe) {
      v.push_back({"hybrid_pattern",
                   absl::StrCat("unknown layer '", std::string(1, c), "' at position ", i,
                                "; allowed: M (Mamba-2 mixer), * (attention), - (MLP), E "
                                "(mixture-of-experts MLP)")});
      return false;
    }
  }
  if (s.num_layers != static_cast<int64_t>(p.size())) {
    v.push_back({"num_layers", absl::StrCat("must be the length of hybrid_pattern (", p.size(),
                                            "; 0 takes it); got ", s.num_layers)});
  }
  if (moe > 0 && s.num_experts == 0) {
    v.push_back({"num_experts", "hybrid_pattern has 'E' (mixture-of-experts) layers: they need "
                                "num_experts > 0"});
  } else if (moe == 0 && s.num_experts > 0) {
    v.push_back({"hybrid_pattern",
                 "num_experts > 0 needs 'E' layers in the pattern (the MoE layers are its 'E's)"});
  }
  if (s.first_dense_layers != 0 || s.moe_layer_interval > 1) {
    v.push_back({"hybrid_pattern", "the pattern places the MoE layers: first_dense_layers and "
                                   "moe_layer_interval must be 0 with it"});
  }
  if (s.sliding_window > 0) {
    v.push_back({"sliding_window", "local attention in a hybrid_pattern is not modelled"});
  }
  return true;
}

// The Mamba-2 mixers' fields, their split over the tensor-parallel ranks, and what they exclude.
void ValidateMambaMixers(const ModelSpec& s, std::vector<FieldViolation>& v) {
  if (s.context_parallel > 1) {
    v.push_back({"context_parallel",
                 absl::StrCat("must be 1 with Mamba-2 layers (their context parallelism is not "
                              "modelled); got ",
                              s.context_parallel)});
  }
  CheckRange(v, "mamba_heads", s.mamba_heads, 1, kMaxMambaHeads);
  CheckRange(v, "mamba_head_dim", s.mamba_head_dim, 1, kMaxHeadDim);
  CheckRange(v, "mamba_state_dim", s.mamba_state_dim, 1, kMaxMambaStateDim);
  CheckRange(v, "mamba_groups", s.mamba_groups, 1, kMaxMambaHeads);
  CheckRange(v, "mamba_conv_kernel", s.mamba_conv_kernel, 1, kMaxMambaConvKernel);
  CheckRange(v, "mamba_chunk_size", s.mamba_chunk_size, 1, kMaxMambaChunkSize);
  if (s.mamba_groups >= 1 && s.mamba_heads >= 1 && s.mamba_heads % s.mamba_groups != 0) {
    v.push_back({"mamba_groups", absl::StrCat("must divide mamba_heads (", s.mamba_heads,
                                              "); got ", s.mamba_groups)});
  }
  const bool t_ok = s.tensor_parallel >= 1 && s.tensor_parallel <= kMaxTensorParallel;
  if (t_ok && s.mamba_groups >= 1 && s.mamba_groups % s.tensor_parallel != 0) {
    v.push_back({"tensor_parallel",
                 absl::StrCat("must divide mamba_groups (", s.mamba_groups,
                              ": Megatron-Core splits the Mamba heads and groups); got ",
                              s.tensor_parallel)});
  }
}

}  // namespace

void ValidateHybrid(const ModelSpec& s, std::vector<FieldViolation>& v) {
  if (s.hybrid_pattern.empty()) {
    if (AnyMambaField(s)) {
      v.push_back({"hybrid_pattern", "the mamba_* fields describe Mamba-2 layers: they need a "
                                     "hybrid_pattern with 'M' layers"});
    }
    return;
  }
  int64_t mamba = 0;
  if (!ValidatePattern(s, v, mamba)) return;
  if (mamba > 0) {
    ValidateMambaMixers(s, v);
  } else if (AnyMambaField(s)) {
    v.push_back({"hybrid_pattern", "the mamba_* fields need 'M' (Mamba-2) layers in it"});
  }
}

}  // namespace wavecrest
