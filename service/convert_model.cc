// The model spec between its proto and core/model_spec.h: every field, and the enums with their
// documented defaults (an enum number the proto does not define is a violation).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "service/convert.h"
#include "service/errors.h"

namespace wavecrest {
namespace {

void BadSpecEnum(std::vector<FieldViolation>* v, const char* field, int value,
                 const char* allowed) {
  v->push_back({field, absl::StrCat("unknown value ", value, "; allowed: ", allowed)});
}

void MlpFromProto(v1::Mlp m, ModelSpec& s, std::vector<FieldViolation>* violations) {
  switch (m) {
    case v1::MLP_UNSPECIFIED:
    case v1::MLP_GELU:
      s.mlp = Mlp::kGelu;
      break;
    case v1::MLP_SWIGLU:
      s.mlp = Mlp::kSwiglu;
      break;
    default:
      BadSpecEnum(violations, "mlp", m, "MLP_GELU, MLP_SWIGLU");
  }
}

void AttentionFromProto(v1::Attention a, ModelSpec& s, std::vector<FieldViolation>* violations) {
  switch (a) {
    case v1::ATTENTION_UNSPECIFIED:
    case v1::ATTENTION_FLASH:
      s.attention = Attention::kFlash;
      break;
    case v1::ATTENTION_UNFUSED:
      s.attention = Attention::kUnfused;
      break;
    case v1::ATTENTION_FLASH2:
      s.attention = Attention::kFlash2;
      break;
    case v1::ATTENTION_FLASH1:
      s.attention = Attention::kFlash1;
      break;
    case v1::ATTENTION_FLASH1_TRITON:
      s.attention = Attention::kFlash1Triton;
      break;
    default:
      BadSpecEnum(violations, "attention", a,
                  "ATTENTION_UNFUSED, ATTENTION_FLASH, ATTENTION_FLASH2, ATTENTION_FLASH1, "
                  "ATTENTION_FLASH1_TRITON");
  }
}

void WorkloadFromProto(v1::Workload w, ModelSpec& s, std::vector<FieldViolation>* violations) {
  switch (w) {
    case v1::WORKLOAD_UNSPECIFIED:
    case v1::WORKLOAD_TRAINING:
      s.workload = Workload::kTraining;
      break;
    case v1::WORKLOAD_PREFILL:
      s.workload = Workload::kPrefill;
      break;
    case v1::WORKLOAD_DECODE:
      s.workload = Workload::kDecode;
      break;
    default:
      BadSpecEnum(violations, "workload", w,
                  "WORKLOAD_TRAINING, WORKLOAD_PREFILL, WORKLOAD_DECODE");
  }
}

void NormFromProto(v1::Norm n, ModelSpec& s, std::vector<FieldViolation>* violations) {
  switch (n) {
    case v1::NORM_UNSPECIFIED:
    case v1::NORM_LAYERNORM:
      s.norm = Norm::kLayerNorm;
      break;
    case v1::NORM_RMSNORM:
      s.norm = Norm::kRmsNorm;
      break;
    default:
      BadSpecEnum(violations, "norm", n, "NORM_LAYERNORM, NORM_RMSNORM");
  }
}

void BiasFromProto(v1::Bias b, ModelSpec& s, std::vector<FieldViolation>* violations) {
  switch (b) {
    case v1::BIAS_UNSPECIFIED:
    case v1::BIAS_NONE:
      s.bias = Bias::kNone;
      break;
    case v1::BIAS_QKV:
      s.bias = Bias::kQkv;
      break;
    case v1::BIAS_ALL:
      s.bias = Bias::kAll;
      break;
    default:
      BadSpecEnum(violations, "bias", b, "BIAS_NONE, BIAS_QKV, BIAS_ALL");
  }
}

// The spec's enums, each unknown value a violation naming the allowed ones (in field order).
void EnumsFromProto(const v1::ModelSpec& p, ModelSpec& s, std::vector<FieldViolation>* violations) {
  MlpFromProto(p.mlp(), s, violations);
  if (auto d = FromProto(p.dtype()); d.ok()) {
    s.dtype = *d;
  } else {
    violations->push_back({"dtype", std::string(d.status().message())});
  }
  AttentionFromProto(p.attention(), s, violations);
  WorkloadFromProto(p.workload(), s, violations);
  NormFromProto(p.norm(), s, violations);
  BiasFromProto(p.bias(), s, violations);
}

// The parallel degrees and the mixture of experts' fields.
void ParallelAndExpertsFromProto(const v1::ModelSpec& p, ModelSpec& s) {
  s.data_parallel = p.data_parallel();
  s.context_parallel = p.context_parallel();
  s.expert_parallel = p.expert_parallel();
  s.expert_tensor_parallel = p.expert_tensor_parallel();
  s.moe_capacity_factor = p.moe_capacity_factor();
  s.moe_routing_skew = p.moe_routing_skew();
  s.num_experts = p.num_experts();
  s.experts_per_token = p.experts_per_token();
  s.shared_expert_ffn_hidden_size = p.shared_expert_ffn_hidden_size();
  s.shared_expert_gate = p.shared_expert_gate();
  s.expert_groups = p.expert_groups();
  s.expert_groups_per_token = p.expert_groups_per_token();
  s.first_dense_layers = p.first_dense_layers();
  s.mtp_modules = p.mtp_modules();
  s.moe_layer_interval = p.moe_layer_interval();
  s.dense_ffn_hidden_size = p.dense_ffn_hidden_size();
}

// A hybrid model's pattern and Mamba-2 mixers.
void HybridFromProto(const v1::ModelSpec& p, ModelSpec& s) {
  s.hybrid_pattern = p.hybrid_pattern();
  s.mamba_heads = p.mamba_heads();
  s.mamba_head_dim = p.mamba_head_dim();
  s.mamba_state_dim = p.mamba_state_dim();
  s.mamba_groups = p.mamba_groups();
  s.mamba_conv_kernel = p.mamba_conv_kernel();
  s.mamba_chunk_size = p.mamba_chunk_size();
}

void HybridToProto(const ModelSpec& s, v1::ModelSpec& p) {
  p.set_hybrid_pattern(s.hybrid_pattern);
  p.set_mamba_heads(s.mamba_heads);
  p.set_mamba_head_dim(s.mamba_head_dim);
  p.set_mamba_state_dim(s.mamba_state_dim);
  p.set_mamba_groups(s.mamba_groups);
  p.set_mamba_conv_kernel(s.mamba_conv_kernel);
  p.set_mamba_chunk_size(s.mamba_chunk_size);
}

}  // namespace

ModelSpec FromProto(const v1::ModelSpec& p, std::vector<FieldViolation>* violations) {
  ModelSpec s;
  s.name = p.name();
  s.hidden_size = p.hidden_size();
  s.num_attention_heads = p.num_attention_heads();
  s.num_kv_heads = p.num_kv_heads();
  s.head_dim = p.head_dim();
  s.num_layers = p.num_layers();
  s.ffn_hidden_size = p.ffn_hidden_size();
  s.fused_gate_up = p.has_fused_gate_up() ? p.fused_gate_up() : true;
  s.vocab_size = p.vocab_size();
  s.seq_length = p.seq_length();
  s.micro_batch_size = p.micro_batch_size();
  s.tensor_parallel = p.tensor_parallel();
  s.pipeline_parallel = p.pipeline_parallel();
  s.tied_embeddings = p.tied_embeddings();
  s.kv_cache_length = p.kv_cache_length();
  s.learned_position_embeddings = p.learned_position_embeddings();
  ParallelAndExpertsFromProto(p, s);
  s.kv_lora_rank = p.kv_lora_rank();
  s.q_lora_rank = p.q_lora_rank();
  s.qk_rope_head_dim = p.qk_rope_head_dim();
  s.v_head_dim = p.v_head_dim();
  s.sliding_window = p.sliding_window();
  s.sliding_window_layers = p.sliding_window_layers();
  s.glu_clamp = p.glu_clamp();
  HybridFromProto(p, s);
  EnumsFromProto(p, s, violations);
  return s;
}

v1::ModelSpec ToProto(const ModelSpec& s) {
  v1::ModelSpec p;
  p.set_name(s.name);
  p.set_hidden_size(s.hidden_size);
  p.set_num_attention_heads(s.num_attention_heads);
  p.set_num_kv_heads(s.num_kv_heads);
  p.set_head_dim(s.head_dim);
  p.set_num_layers(s.num_layers);
  p.set_ffn_hidden_size(s.ffn_hidden_size);
  p.set_mlp(s.mlp == Mlp::kGelu ? v1::MLP_GELU : v1::MLP_SWIGLU);
  if (s.mlp == Mlp::kSwiglu) p.set_fused_gate_up(s.fused_gate_up);
  p.set_vocab_size(s.vocab_size);
  p.set_seq_length(s.seq_length);
  p.set_micro_batch_size(s.micro_batch_size);
  p.set_tensor_parallel(s.tensor_parallel);
  p.set_pipeline_parallel(s.pipeline_parallel);
  p.set_dtype(ToProto(s.dtype));
  p.set_attention(ToProto(s.attention));
  p.set_workload(ToProto(s.workload));
  p.set_tied_embeddings(s.tied_embeddings);
  p.set_kv_cache_length(s.kv_cache_length);
  p.set_norm(s.norm == Norm::kLayerNorm ? v1::NORM_LAYERNORM : v1::NORM_RMSNORM);
  switch (s.bias) {
    case Bias::kNone:
      p.set_bias(v1::BIAS_NONE);
      break;
    case Bias::kQkv:
      p.set_bias(v1::BIAS_QKV);
      break;
    case Bias::kAll:
      p.set_bias(v1::BIAS_ALL);
      break;
  }
  p.set_learned_position_embeddings(s.learned_position_embeddings);
  p.set_data_parallel(s.data_parallel);
  p.set_context_parallel(s.context_parallel);
  p.set_expert_parallel(s.expert_parallel);
  p.set_expert_tensor_parallel(s.expert_tensor_parallel);
  p.set_moe_capacity_factor(s.moe_capacity_factor);
  p.set_moe_routing_skew(s.moe_routing_skew);
  p.set_num_experts(s.num_experts);
  p.set_experts_per_token(s.experts_per_token);
  p.set_shared_expert_ffn_hidden_size(s.shared_expert_ffn_hidden_size);
  p.set_shared_expert_gate(s.shared_expert_gate);
  p.set_expert_groups(s.expert_groups);
  p.set_expert_groups_per_token(s.expert_groups_per_token);
  p.set_first_dense_layers(s.first_dense_layers);
  p.set_mtp_modules(s.mtp_modules);
  p.set_moe_layer_interval(s.moe_layer_interval);
  p.set_dense_ffn_hidden_size(s.dense_ffn_hidden_size);
  p.set_kv_lora_rank(s.kv_lora_rank);
  p.set_q_lora_rank(s.q_lora_rank);
  p.set_qk_rope_head_dim(s.qk_rope_head_dim);
  p.set_v_head_dim(s.v_head_dim);
  p.set_sliding_window(s.sliding_window);
  p.set_sliding_window_layers(s.sliding_window_layers);
  p.set_glu_clamp(s.glu_clamp);
  HybridToProto(s, p);
  return p;
}

}  // namespace wavecrest
