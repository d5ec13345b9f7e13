#include "core/model_spec.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace wavecrest {

int DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
    case DType::kFp16:
      return 2;
    case DType::kFp32:
    case DType::kTf32:
      return 4;
    case DType::kFp8E4M3:
      return 1;
  }
  return 2;
}

int OutputDTypeBytes(DType dtype) { return dtype == DType::kFp8E4M3 ? 2 : DTypeBytes(dtype); }

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp32:
      return "fp32";
    case DType::kTf32:
      return "tf32";
    case DType::kFp8E4M3:
      return "fp8_e4m3";
  }
  return "?";
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "bf16" || n == "bfloat16") return DType::kBf16;
  if (n == "fp16" || n == "float16" || n == "half") return DType::kFp16;
  if (n == "fp32" || n == "float32" || n == "float") return DType::kFp32;
  if (n == "tf32") return DType::kTf32;
  if (n == "fp8" || n == "fp8_e4m3" || n == "e4m3") return DType::kFp8E4M3;
  return absl::InvalidArgumentError(
      absl::StrCat("dtype: unknown \"", name, "\"; allowed: bf16, fp16, fp32, tf32, fp8_e4m3"));
}

absl::string_view MlpName(Mlp mlp) { return mlp == Mlp::kGelu ? "gelu" : "swiglu"; }

namespace {
constexpr struct {
  Attention attention;
  absl::string_view name;
} kAttentionNames[] = {{Attention::kUnfused, "unfused"},
                       {Attention::kFlash, "flash"},
                       {Attention::kFlash2, "flash2"},
                       {Attention::kFlash1, "flash1"},
                       {Attention::kFlash1Triton, "flash1_triton"}};
}  // namespace

absl::string_view AttentionName(Attention attention) {
  for (const auto& a : kAttentionNames) {
    if (a.attention == attention) return a.name;
  }
  return "unfused";
}

absl::StatusOr<Attention> ParseAttention(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "fused") return Attention::kFlash;
  std::string allowed;
  for (const auto& a : kAttentionNames) {
    if (a.name == n) return a.attention;
    absl::StrAppend(&allowed, allowed.empty() ? "" : ", ", a.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("attention: unknown \"", name, "\"; allowed: ", allowed));
}

absl::string_view WorkloadName(Workload workload) {
  switch (workload) {
    case Workload::kTraining:
      return "training";
    case Workload::kPrefill:
      return "prefill";
    case Workload::kDecode:
      return "decode";
  }
  return "?";
}

absl::StatusOr<Workload> ParseWorkload(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "training" || n == "train") return Workload::kTraining;
  if (n == "prefill") return Workload::kPrefill;
  if (n == "decode") return Workload::kDecode;
  return absl::InvalidArgumentError(
      absl::StrCat("workload: unknown \"", name, "\"; allowed: training, prefill, decode"));
}

ModelSpec WithDefaults(const ModelSpec& in) {
  ModelSpec s = in;
  if (s.num_kv_heads == 0) s.num_kv_heads = s.num_attention_heads;
  if (s.head_dim == 0 && s.num_attention_heads > 0 && s.hidden_size > 0 &&
      s.hidden_size % s.num_attention_heads == 0) {
    s.head_dim = s.hidden_size / s.num_attention_heads;
  }
  if (s.ffn_hidden_size == 0 && s.hidden_size > 0 && s.hidden_size <= kMaxHiddenSize) {
    // GELU: the classic 4h. SwiGLU: 8h/3 rounded up, the width that keeps the parameter count of a
    // 4h GELU MLP; it is usually badly aligned, which is exactly what analyze should point out.
    s.ffn_hidden_size = s.mlp == Mlp::kGelu ? 4 * s.hidden_size : (8 * s.hidden_size + 2) / 3;
  }
  if (s.seq_length == 0) s.seq_length = kDefaultSeqLength;
  if (s.micro_batch_size == 0) s.micro_batch_size = kDefaultMicroBatch;
  if (s.tensor_parallel == 0) s.tensor_parallel = 1;
  if (s.pipeline_parallel == 0) s.pipeline_parallel = 1;
  if (s.data_parallel == 0) s.data_parallel = 1;
  if (s.context_parallel == 0) s.context_parallel = 1;
  if (s.expert_parallel == 0) s.expert_parallel = 1;
  if (s.kv_cache_length == 0) s.kv_cache_length = s.seq_length;
  if (s.num_experts > 0 && s.experts_per_token == 0) s.experts_per_token = 1;
  if (IsHybrid(s) && s.num_layers == 0) {
    s.num_layers = static_cast<int64_t>(s.hybrid_pattern.size());
  }
  if (s.hybrid_pattern.find(kHybridMamba) != std::string::npos) {
    // Megatron-Core's MambaMixer defaults (megatron/core/ssm/mamba_mixer.py): expand 2, head dim
    // 64, state 128, 8 groups, 4 conv taps, chunks of 128.
    if (s.mamba_head_dim == 0) s.mamba_head_dim = 64;
    if (s.mamba_heads == 0 && s.hidden_size > 0 && s.hidden_size <= kMaxHiddenSize) {
      s.mamba_heads = 2 * s.hidden_size / s.mamba_head_dim;
    }
    if (s.mamba_state_dim == 0) s.mamba_state_dim = 128;
    if (s.mamba_groups == 0) s.mamba_groups = 8;
    if (s.mamba_conv_kernel == 0) s.mamba_conv_kernel = 4;
    if (s.mamba_chunk_size == 0) s.mamba_chunk_size = 128;
  }
  // moe_layer_interval, dense_ffn_hidden_size, v_head_dim, sliding_window_layers and
  // expert_tensor_parallel keep their 0 ("as the other field says", Derive, ExpertTensorParallel): the recommender moves the fields they follow.
  return s;
}

int64_t AttentionLayers(const ModelSpec& spec) {
  if (!IsHybrid(spec)) return spec.num_layers;
  return static_cast<int64_t>(
      std::count(spec.hybrid_pattern.begin(), spec.hybrid_pattern.end(), kHybridAttention));
}

// Out of line: Validate runs for every shape a wide Recommend search generates (hundreds of
// thousands), nearly all in range, so CheckRange (core/model_spec.h) is inlined and the call that
// formats the message is not (the calls were 12% of BM_RecommendScaling's time).
[[gnu::noinline]] void AddRangeViolation(std::vector<FieldViolation>& out, absl::string_view field,
                                         int64_t value, int64_t lo, int64_t hi) {
  out.push_back(
      {std::string(field), absl::StrCat("must be in [", lo, ", ", hi, "]; got ", value)});
}

namespace {

// Group-limited routing: G divides the experts, M of the G groups hold at least k experts.
void ValidateExpertGroups(const ModelSpec& s, std::vector<FieldViolation>& v) {
  const int64_t e = std::max<int64_t>(s.num_experts, 1);
  CheckRange(v, "expert_groups", s.expert_groups, 0, e);
  if (s.expert_groups > 1 && s.num_experts % s.expert_groups != 0) {
    v.push_back({"expert_groups", absl::StrCat("must divide num_experts (", s.num_experts,
                                               "); got ", s.expert_groups)});
    return;
  }
  const int64_t groups = std::max<int64_t>(s.expert_groups, 1);
  CheckRange(v, "expert_groups_per_token", s.expert_groups_per_token, 0, groups);
  const int64_t k = std::max<int64_t>(s.experts_per_token, 1);
  if (s.expert_groups_per_token >= 1 && s.expert_groups_per_token <= groups &&
      s.expert_groups_per_token * (s.num_experts / groups) < k) {
    v.push_back({"expert_groups_per_token",
                 absl::StrCat("its groups must hold the ", k, " experts of a token (",
                              s.expert_groups_per_token, " groups of ", s.num_experts / groups,
                              "); got ", s.expert_groups_per_token)});
  }
}

// Dense and MoE layers mixed: the layer counts and the dense width.
void ValidateLayerMix(const ModelSpec& s, std::vector<FieldViolation>& v) {
  if (s.num_experts == 0) {
    if (s.first_dense_layers != 0 || s.moe_layer_interval > 1 || s.dense_ffn_hidden_size != 0) {
      v.push_back({"num_experts",
                   "first_dense_layers, moe_layer_interval and dense_ffn_hidden_size mix dense "
                   "and MoE layers: they need num_experts > 0"});
    }
    if (s.expert_groups > 1 || s.expert_groups_per_token > 1) {
      v.push_back({"num_experts", "expert_groups and expert_groups_per_token group the experts: "
                                  "they need num_experts > 0"});
    }
    return;
  }
  const bool layers_ok = s.num_layers >= 1 && s.num_layers <= kMaxLayers;
  CheckRange(v, "first_dense_layers", s.first_dense_layers, 0, layers_ok ? s.num_layers - 1 : 0);
  CheckRange(v, "moe_layer_interval", s.moe_layer_interval, 0, layers_ok ? s.num_layers : 1);
  CheckRange(v, "dense_ffn_hidden_size", s.dense_ffn_hidden_size, 0, kMaxFfnHiddenSize);
  if (layers_ok && s.first_dense_layers >= 0 && s.first_dense_layers < s.num_layers &&
      s.moe_layer_interval >= 1 &&
      (s.num_layers - s.first_dense_layers) / s.moe_layer_interval == 0) {  // 0 = 1 always leaves one
    v.push_back({"moe_layer_interval",
                 absl::StrCat("leaves no MoE layer among the ", s.num_layers - s.first_dense_layers,
                              " after the dense ones; got ", s.moe_layer_interval)});
  }
  ValidateExpertGroups(s, v);
  if (s.tensor_parallel >= 1 && s.dense_ffn_hidden_size >= 1 &&
      s.dense_ffn_hidden_size % s.tensor_parallel != 0) {
    v.push_back({"dense_ffn_hidden_size",
                 absl::StrCat("must be divisible by tensor_parallel (", s.tensor_parallel,
                              "); got ", s.dense_ffn_hidden_size)});
  }
}

// Expert parallelism splits a MoE layer's experts over e ranks: e must divide E (training and
// prefill; decode's experts are not split here).
void ValidateExpertParallel(const ModelSpec& s, std::vector<FieldViolation>& v) {
  CheckRange(v, "expert_parallel", s.expert_parallel, 1, kMaxExperts);
  if (s.expert_parallel <= 1 || s.expert_parallel > kMaxExperts) return;
  if (s.num_experts == 0) {
    v.push_back({"expert_parallel",
                 absl::StrCat("splits a mixture of experts: it needs num_experts > 0; got ",
                              s.expert_parallel)});
  } else if (s.num_experts >= 1 && s.num_experts % s.expert_parallel != 0) {
    v.push_back({"expert_parallel", absl::StrCat("must divide num_experts (", s.num_experts,
                                                 "); got ", s.expert_parallel)});
  }
  if (s.workload == Workload::kDecode) {
    v.push_back({"expert_parallel",
                 absl::StrCat("must be 1 for decode (expert-parallel serving is not modelled); got ",
                              s.expert_parallel)});
  }
}

// The experts' own tensor parallelism: the model's (t) or none (1).
void ValidateExpertTensorParallel(const ModelSpec& s, std::vector<FieldViolation>& v) {
  if (s.expert_tensor_parallel == 0 || s.expert_tensor_parallel == s.tensor_parallel) return;
  if (s.expert_tensor_parallel != 1) {
    v.push_back({"expert_tensor_parallel",
                 absl::StrCat("must be 1 (whole experts) or tensor_parallel (", s.tensor_parallel,
                              "); got ", s.expert_tensor_parallel)});
  } else if (s.num_experts == 0) {
    v.push_back({"expert_tensor_parallel",
                 "splits a mixture of experts: it needs num_experts > 0"});
  }
}

// The experts' capacity factor: 0 (dropless) or a finite factor in [0.25, 16], for a mixture of
// experts; dropless routing's skew: 0 (balanced) or in [1, 16].
void ValidateCapacityFactor(const ModelSpec& s, std::vector<FieldViolation>& v) {
  const double c = s.moe_capacity_factor;
  if (c != 0 && !(c >= 0.25 && c <= 16)) {
    v.push_back({"moe_capacity_factor",
                 absl::StrCat("must be 0 (dropless) or in [0.25, 16]; got ", c)});
  } else if (c != 0 && s.num_experts == 0) {
    v.push_back({"moe_capacity_factor", "is an expert's: it needs num_experts > 0"});
  }
  const double skew = s.moe_routing_skew;
  if (skew == 0) return;
  if (!(skew >= 1 && skew <= 16)) {
    v.push_back({"moe_routing_skew",
                 absl::StrCat("must be 0 (balanced) or in [1, 16]; got ", skew)});
  } else if (s.num_experts == 0) {
    v.push_back({"moe_routing_skew", "is the experts' routing: it needs num_experts > 0"});
  } else if (c != 0) {
    v.push_back({"moe_routing_skew",
                 absl::StrCat("skews dropless routing: it needs moe_capacity_factor 0 (the "
                              "capacity pads every expert alike); got a capacity factor of ", c)});
  }
}

// Context parallelism splits the sequence into 2c chunks (two per rank, so that causal work
// balances): s must divide by 2c. Decode has one query per sequence to split; local attention
// under a ring is not modelled.
void ValidateContextParallel(const ModelSpec& s, std::vector<FieldViolation>& v) {
  CheckRange(v, "context_parallel", s.context_parallel, 1, kMaxContextParallel);
  if (s.context_parallel <= 1 || s.context_parallel > kMaxContextParallel) return;
  if (s.workload == Workload::kDecode) {
    v.push_back({"context_parallel", absl::StrCat("must be 1 for decode (one query per sequence "
                                                  "to split); got ",
                                                  s.context_parallel)});
  } else if (s.seq_length >= 1 && s.seq_length % (2 * s.context_parallel) != 0) {
    v.push_back({"context_parallel",
                 absl::StrCat("2 × context_parallel must divide seq_length (", s.seq_length,
                              ": two chunks per rank); got ", s.context_parallel)});
  }
  if (s.sliding_window > 0) {
    v.push_back({"context_parallel",
                 absl::StrCat("must be 1 with sliding_window (local attention over a ring is not "
                              "modelled); got ",
                              s.context_parallel)});
  }
}

// Multi-head latent attention: ranks, the rotary part of the head, one KV head per query head.
void ValidateMla(const ModelSpec& s, std::vector<FieldViolation>& v) {
  if (s.kv_lora_rank == 0) {
    if (s.q_lora_rank != 0 || s.qk_rope_head_dim != 0 || s.v_head_dim != 0) {
      v.push_back({"kv_lora_rank",
                   "q_lora_rank, qk_rope_head_dim and v_head_dim describe multi-head latent "
                   "attention: they need kv_lora_rank > 0"});
    }
    return;
  }
  CheckRange(v, "kv_lora_rank", s.kv_lora_rank, 1, kMaxHiddenSize);
  CheckRange(v, "q_lora_rank", s.q_lora_rank, 0, kMaxHiddenSize);
  CheckRange(v, "v_head_dim", s.v_head_dim, 0, kMaxHeadDim);
  if (s.head_dim >= 1 && s.head_dim <= kMaxHeadDim) {
    CheckRange(v, "qk_rope_head_dim", s.qk_rope_head_dim, 0, s.head_dim - 1);
  }
  if (s.num_kv_heads != s.num_attention_heads) {
    v.push_back({"num_kv_heads",
                 absl::StrCat("multi-head latent attention expands keys and values for every "
                              "query head: must equal num_attention_heads (",
                              s.num_attention_heads, "); got ", s.num_kv_heads)});
  }
}

}  // namespace

PipelineSplit SplitLayers(int64_t layers, int64_t stages) {
  PipelineSplit out;
  if (stages < 1 || layers < 1) {
    out.valid = false;
    return out;
  }
  if (layers % stages == 0) {
    out.first = out.middle = out.last = layers / stages;
    return out;
  }
  out.even = false;
  if (stages < 2) {
    out.valid = false;
    return out;
  }
  out.middle = (layers + stages - 1) / stages;
  const int64_t rest = layers - out.middle * (stages - 2);
  out.first = rest / 2;
  out.last = rest - out.first;
  out.valid = out.first >= 1 && out.last >= 1 && out.last <= out.middle;
  return out;
}

namespace {

void ValidateName(const ModelSpec& s, std::vector<FieldViolation>& v) {
  if (static_cast<int64_t>(s.name.size()) > kMaxNameLength) {
    v.push_back(
        {"name", absl::StrCat("at most ", kMaxNameLength, " characters; got ", s.name.size())});
  }
  // NUL and other control characters in a name end up in logs, tables and file names.
  for (size_t i = 0; i < s.name.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(s.name[i]);
    if (ch < 0x20 || ch == 0x7F) {
      v.push_back({"name", absl::StrCat("no control characters (NUL, newline, escape); byte ", i,
                                        " is ", static_cast<int>(ch))});
      break;
    }
  }
}

// Every field within its range (and the fields that need another field set).
void ValidateRanges(const ModelSpec& s, std::vector<FieldViolation>& v) {
  CheckRange(v, "hidden_size", s.hidden_size, 1, kMaxHiddenSize);
  CheckRange(v, "num_attention_heads", s.num_attention_heads, 1, kMaxHeads);
  CheckRange(v, "num_kv_heads", s.num_kv_heads, 1, kMaxHeads);
  CheckRange(v, "num_layers", s.num_layers, 1, kMaxLayers);
  CheckRange(v, "mtp_modules", s.mtp_modules, 0, 8);
  CheckRange(v, "ffn_hidden_size", s.ffn_hidden_size, 1, kMaxFfnHiddenSize);
  CheckRange(v, "vocab_size", s.vocab_size, 1, kMaxVocabSize);
  CheckRange(v, "seq_length", s.seq_length, 1, kMaxSeqLength);
  CheckRange(v, "micro_batch_size", s.micro_batch_size, 1, kMaxMicroBatch);
  CheckRange(v, "tensor_parallel", s.tensor_parallel, 1, kMaxTensorParallel);
  CheckRange(v, "pipeline_parallel", s.pipeline_parallel, 1, kMaxPipelineParallel);
  CheckRange(v, "kv_cache_length", s.kv_cache_length, 1, kMaxKvCacheLength);
  CheckRange(v, "learned_position_embeddings", s.learned_position_embeddings, 0,
             kMaxLearnedPositions);
  CheckRange(v, "data_parallel", s.data_parallel, 1, kMaxDataParallel);
  ValidateContextParallel(s, v);
  CheckRange(v, "num_experts", s.num_experts, 0, kMaxExperts);
  if (s.num_experts >= 1 && s.num_experts <= kMaxExperts) {
    CheckRange(v, "experts_per_token", s.experts_per_token, 1, s.num_experts);
  } else if (s.num_experts == 0 && (s.experts_per_token != 0 ||
                                    s.shared_expert_ffn_hidden_size != 0 || s.shared_expert_gate)) {
    v.push_back({"num_experts",
                 "experts_per_token, shared_expert_ffn_hidden_size and "
                 "shared_expert_gate need num_experts > 0 (a mixture of experts)"});
  }
  CheckRange(v, "shared_expert_ffn_hidden_size", s.shared_expert_ffn_hidden_size, 0,
             kMaxFfnHiddenSize);
  ValidateExpertParallel(s, v);
  ValidateExpertTensorParallel(s, v);
  ValidateCapacityFactor(s, v);
  ValidateLayerMix(s, v);
  ValidateMla(s, v);
  ValidateHybrid(s, v);
  CheckRange(v, "sliding_window", s.sliding_window, 0, kMaxSeqLength);
  if (s.sliding_window == 0 && s.sliding_window_layers != 0) {
    v.push_back({"sliding_window_layers", "needs sliding_window > 0 (the window, in tokens)"});
  } else if (s.num_layers >= 1 && s.num_layers <= kMaxLayers) {
    CheckRange(v, "sliding_window_layers", s.sliding_window_layers, 0, s.num_layers);
  }
  if (!(s.glu_clamp >= 0 && s.glu_clamp <= 1e6)) {
    v.push_back({"glu_clamp", absl::StrCat("must be 0 (none) or in (0, 1e6]; got ", s.glu_clamp)});
  } else if (s.glu_clamp > 0 && s.mlp == Mlp::kGelu) {
    v.push_back({"glu_clamp", "clamps a gated MLP's halves: it needs mlp swiglu"});
  }
}

// Heads, KV heads and the widths against each other and the tensor-parallel degree (fields out
// of range are reported by ValidateRanges only).
void ValidateShards(const ModelSpec& s, std::vector<FieldViolation>& v) {
  const bool h_ok = s.hidden_size >= 1 && s.hidden_size <= kMaxHiddenSize;
  const bool a_ok = s.num_attention_heads >= 1 && s.num_attention_heads <= kMaxHeads;
  const bool kv_ok = s.num_kv_heads >= 1 && s.num_kv_heads <= kMaxHeads;
  const bool t_ok = s.tensor_parallel >= 1 && s.tensor_parallel <= kMaxTensorParallel;

  if (s.head_dim == 0) {
    if (h_ok && a_ok) {
      v.push_back({"num_attention_heads", absl::StrCat("must divide hidden_size (", s.hidden_size,
                                                       ") unless head_dim is "
                                                       "given; got ",
                                                       s.num_attention_heads)});
    }
  } else {
    CheckRange(v, "head_dim", s.head_dim, 1, kMaxHeadDim);
  }
  if (a_ok && kv_ok) {
    if (s.num_kv_heads > s.num_attention_heads || s.num_attention_heads % s.num_kv_heads != 0) {
      v.push_back({"num_kv_heads", absl::StrCat("must divide num_attention_heads (",
                                                s.num_attention_heads, "); got ", s.num_kv_heads)});
    }
  }
  if (t_ok && a_ok && s.num_attention_heads % s.tensor_parallel != 0) {
    v.push_back(
        {"tensor_parallel", absl::StrCat("must divide num_attention_heads (", s.num_attention_heads,
                                         "); got ", s.tensor_parallel)});
  }
  if (t_ok && kv_ok && s.num_kv_heads % s.tensor_parallel != 0 &&
      s.tensor_parallel % s.num_kv_heads != 0) {
    v.push_back({"tensor_parallel",
                 absl::StrCat("must divide num_kv_heads (", s.num_kv_heads,
                              ") or be a multiple of it (KV heads are then replicated); got ",
                              s.tensor_parallel)});
  }
  if (t_ok && s.ffn_hidden_size >= 1 && s.ffn_hidden_size % s.tensor_parallel != 0) {
    v.push_back({"ffn_hidden_size", absl::StrCat("must be divisible by tensor_parallel (",
                                                 s.tensor_parallel, "); got ", s.ffn_hidden_size)});
  }
  if (t_ok && s.shared_expert_ffn_hidden_size >= 1 &&
      s.shared_expert_ffn_hidden_size <= kMaxFfnHiddenSize &&
      s.shared_expert_ffn_hidden_size % s.tensor_parallel != 0) {
    v.push_back({"shared_expert_ffn_hidden_size",
                 absl::StrCat("must be divisible by tensor_parallel (", s.tensor_parallel,
                              "); got ", s.shared_expert_ffn_hidden_size)});
  }
  if (t_ok && h_ok && s.hidden_size % s.tensor_parallel != 0) {
    v.push_back({"hidden_size", absl::StrCat("must be divisible by tensor_parallel (",
                                             s.tensor_parallel, "); got ", s.hidden_size)});
  }
}

// The layers over the pipeline stages, the tokens of a micro-batch.
void ValidateSplits(const ModelSpec& s, std::vector<FieldViolation>& v) {
  if (s.pipeline_parallel >= 1 && s.pipeline_parallel <= kMaxPipelineParallel &&
      s.num_layers >= 1 && s.num_layers <= kMaxLayers &&
      !SplitLayers(s.num_layers, s.pipeline_parallel).valid) {
    v.push_back({"pipeline_parallel",
                 absl::StrCat("cannot split ", s.num_layers, " layers over ", s.pipeline_parallel,
                              " stages (evenly, or with fewer on the first and last as Megatron "
                              "does: at least 2 stages, and a layer on each); got ",
                              s.pipeline_parallel)});
  }
  if (s.seq_length >= 1 && s.seq_length <= kMaxSeqLength && s.micro_batch_size >= 1 &&
      s.micro_batch_size <= kMaxMicroBatch &&
      s.seq_length * s.micro_batch_size > kMaxTokensPerMicroBatch) {
    v.push_back({"micro_batch_size", absl::StrCat("micro_batch_size × seq_length must be at most ",
                                                  kMaxTokensPerMicroBatch, "; got ",
                                                  s.seq_length * s.micro_batch_size)});
  }
}

}  // namespace

std::vector<FieldViolation> Validate(const ModelSpec& s) {
  std::vector<FieldViolation> v;
  ValidateName(s, v);
  ValidateRanges(s, v);
  ValidateShards(s, v);
  ValidateSplits(s, v);
  return v;
}

absl::Status ViolationsToStatus(const std::vector<FieldViolation>& violations,
                                absl::string_view field_prefix) {
  if (violations.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrJoin(violations, "; ", [&](std::string* out, const FieldViolation& f) {
        absl::StrAppend(out, field_prefix, f.field, ": ", f.description);
      }));
}

absl::StatusOr<ModelSpec> NormalizeSpec(const ModelSpec& spec) {
  ModelSpec s = WithDefaults(spec);
  absl::Status st = ViolationsToStatus(Validate(s));
  if (!st.ok()) return st;
  return s;
}

int64_t LargestPow2Factor(int64_t x) {
  if (x <= 0) return 0;
  // The lowest set bit, capped at 2^30.
  return std::min<int64_t>(x & -x, int64_t{1} << 30);
}

}  // namespace wavecrest
