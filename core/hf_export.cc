#include "core/hf_export.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/hf_import.h"
#include "core/json_limits.h"
#include "nlohmann/json.hpp"

namespace wavecrest {
namespace {

using nlohmann::json;

absl::Status Unexpressible(const char* field, const std::string& why) {
  return absl::FailedPreconditionError(absl::StrCat(
      field, ": ", why, "; no Hugging Face architecture wavecrest imports says it: export the "
      "wavecrest spec instead"));
}

std::string TorchDtype(DType d) {
  switch (d) {
    case DType::kFp16:
      return "float16";
    case DType::kFp32:
    case DType::kTf32:
      return "float32";
    default:
      return "bfloat16";  // BF16, and FP8 training keeps BF16 weights
  }
}

// The fields every exported config carries.
json Common(const ModelSpec& s, const char* arch, const char* model_type) {
  json j;
  j["architectures"] = {arch};
  j["model_type"] = model_type;
  if (!s.name.empty()) j["_name_or_path"] = s.name;
  j["vocab_size"] = s.vocab_size;
  j["tie_word_embeddings"] = s.tied_embeddings;
  j["max_position_embeddings"] = std::max(s.seq_length, s.kv_cache_length);
  j["torch_dtype"] = TorchDtype(s.dtype);
  return j;
}

// Hidden size, heads, layers, head dim and MLP width, in the Llama family's spelling.
void LlamaCore(const ModelSpec& s, json& j) {
  j["hidden_size"] = s.hidden_size;
  j["num_attention_heads"] = s.num_attention_heads;
  j["num_key_value_heads"] = s.num_kv_heads;
  j["head_dim"] = s.head_dim;
  j["num_hidden_layers"] = s.num_layers;
  j["intermediate_size"] = s.ffn_hidden_size;
  j["hidden_act"] = "silu";
  j["rms_norm_eps"] = 1e-6;
}

}  // namespace

std::vector<std::string> LayerTypesFor(int64_t layers, int64_t sliding) {
  // The smallest period P whose pattern (the last layer of every P global) has `sliding` local
  // layers: Gemma 2's and GPT-OSS's alternation (P = 2), Gemma 3's five in six (P = 6).
  const int64_t period = LocalLayerPeriod(layers, sliding);
  const int64_t global = layers - sliding;
  std::vector<std::string> types;
  for (int64_t i = 0; i < layers; ++i) {
    // Without such a period, the global layers spread evenly, each the last of its share.
    const bool full = period > 0 ? (i + 1) % period == 0
                                 : global > 0 && (i + 1) * global / layers != i * global / layers;
    types.push_back(full ? "full_attention" : "sliding_attention");
  }
  return types;
}

namespace {

json LayerTypes(const ModelSpec& s) { return LayerTypesFor(s.num_layers, Derive(s).window_layers); }

absl::StatusOr<json> Deepseek(const ModelSpec& s, const DerivedShape& d) {
  if (s.moe_layer_interval > 1) {
    return Unexpressible("moe_layer_interval", "DeepSeek's MoE layers follow the dense ones");
  }
  if (s.num_experts > 0 && s.shared_expert_ffn_hidden_size % s.ffn_hidden_size != 0) {
    return Unexpressible("shared_expert_ffn_hidden_size",
                         "DeepSeek's shared experts are whole experts of ffn_hidden_size");
  }
  if (s.sliding_window > 0) return Unexpressible("sliding_window", "DeepSeek has no local attention");
  json j = Common(s, "DeepseekV3ForCausalLM", "deepseek_v3");
  j["hidden_size"] = s.hidden_size;
  j["num_attention_heads"] = s.num_attention_heads;
  j["num_key_value_heads"] = s.num_attention_heads;
  j["num_hidden_layers"] = s.num_layers;
  j["q_lora_rank"] = s.q_lora_rank > 0 ? json(s.q_lora_rank) : json(nullptr);
  j["kv_lora_rank"] = s.kv_lora_rank;
  j["qk_nope_head_dim"] = s.head_dim - s.qk_rope_head_dim;
  j["qk_rope_head_dim"] = s.qk_rope_head_dim;
  j["v_head_dim"] = d.v_head_dim;
  j["intermediate_size"] = DenseFfnWidth(s);
  j["hidden_act"] = "silu";
  if (s.num_experts > 0) {
    j["n_routed_experts"] = s.num_experts;
    j["num_experts_per_tok"] = s.experts_per_token;
    j["moe_intermediate_size"] = s.ffn_hidden_size;
    j["n_shared_experts"] = s.shared_expert_ffn_hidden_size / s.ffn_hidden_size;
    j["first_k_dense_replace"] = s.first_dense_layers;
    if (s.mtp_modules > 0) j["num_nextn_predict_layers"] = s.mtp_modules;
    j["moe_layer_freq"] = 1;
    const int64_t groups = std::max<int64_t>(s.expert_groups, 1);
    j["n_group"] = groups;
    j["topk_group"] = s.expert_groups_per_token > 0 ? s.expert_groups_per_token : groups;
  }
  return j;
}

// GPT-OSS: every layer MoE, biases on every linear (the experts' too), local attention optional.
absl::StatusOr<json> GptOss(const ModelSpec& s) {
  if (Derive(s).dense_layers > 0) return Unexpressible("first_dense_layers", "GPT-OSS is all MoE");
  json j = Common(s, "GptOssForCausalLM", "gpt_oss");
  LlamaCore(s, j);
  j["num_local_experts"] = s.num_experts;
  j["num_experts_per_tok"] = s.experts_per_token;
  j["attention_bias"] = true;
  if (s.glu_clamp > 0) j["swiglu_limit"] = s.glu_clamp;
  if (s.sliding_window > 0) {
    j["sliding_window"] = s.sliding_window;
    j["layer_types"] = LayerTypes(s);
  }
  return j;
}

// Phi-3.5-MoE: every layer MoE, LayerNorm, biases on the attention projections or none, the
// head dim h/a (PhimoeConfig has no head_dim), a window on every layer or none.
absl::StatusOr<json> Phimoe(const ModelSpec& s) {
  const DerivedShape d = Derive(s);
  if (d.dense_layers > 0) return Unexpressible("first_dense_layers", "Phi-3.5-MoE is all MoE");
  if (s.shared_expert_ffn_hidden_size > 0) {
    return Unexpressible("shared_expert_ffn_hidden_size", "Phi-3.5-MoE has no shared experts");
  }
  if (s.bias == Bias::kAll) return Unexpressible("bias", "Phi-3.5-MoE's experts have no biases");
  if (s.head_dim * s.num_attention_heads != s.hidden_size) {
    return Unexpressible("head_dim", "Phi-3.5-MoE's head dim is hidden_size / heads");
  }
  if (d.window_layers > 0 && d.window_layers != s.num_layers) {
    return Unexpressible("sliding_window_layers", "Phi-3.5-MoE's window is on every layer");
  }
  json j = Common(s, "PhimoeForCausalLM", "phimoe");
  j["hidden_size"] = s.hidden_size;
  j["num_attention_heads"] = s.num_attention_heads;
  j["num_key_value_heads"] = s.num_kv_heads;
  j["num_hidden_layers"] = s.num_layers;
  j["intermediate_size"] = s.ffn_hidden_size;
  j["num_local_experts"] = s.num_experts;
  j["num_experts_per_tok"] = s.experts_per_token;
  j["attention_bias"] = s.bias == Bias::kQkv;
  j["hidden_act"] = "silu";
  if (d.window_layers > 0) j["sliding_window"] = s.sliding_window;
  return j;
}

absl::StatusOr<json> Moe(const ModelSpec& s) {
  json j;
  if (s.norm == Norm::kLayerNorm) return Phimoe(s);
  if (s.expert_groups > 1) {
    return Unexpressible("expert_groups", "only DeepSeek's configs group the experts (n_group)");
  }
  if (s.bias == Bias::kAll && s.shared_expert_ffn_hidden_size == 0) return GptOss(s);
  if (s.shared_expert_gate) {
    // Qwen2-MoE: a gated shared expert, sparse layers by step, dense ones listed first.
    j = Common(s, "Qwen2MoeForCausalLM", "qwen2_moe");
  } else if (s.shared_expert_ffn_hidden_size == 0) {
    j = Common(s, "Qwen3MoeForCausalLM", "qwen3_moe");
  } else if (s.shared_expert_ffn_hidden_size == s.ffn_hidden_size && s.first_dense_layers == 0) {
    // Llama 4: one shared expert as wide as a routed one, MoE every interval-th layer.
    j = Common(s, "Llama4ForCausalLM", "llama4_text");
    LlamaCore(s, j);
    j["num_local_experts"] = s.num_experts;
    j["num_experts_per_tok"] = s.experts_per_token;
    j["interleave_moe_layer_step"] = std::max<int64_t>(1, s.moe_layer_interval);
    j["intermediate_size_mlp"] = DenseFfnWidth(s);
    if (s.sliding_window > 0) return Unexpressible("sliding_window", "Llama 4 has chunks, not a window");
    return j;
  } else {
    return Unexpressible("shared_expert_ffn_hidden_size",
                         "shared experts without a gate need Llama 4's shape (one, as wide as a "
                         "routed expert, no dense first layers) or latent attention (DeepSeek)");
  }
  LlamaCore(s, j);
  j["intermediate_size"] = DenseFfnWidth(s);
  j["moe_intermediate_size"] = s.ffn_hidden_size;
  j["num_experts"] = s.num_experts;
  j["num_experts_per_tok"] = s.experts_per_token;
  j["decoder_sparse_step"] = std::max<int64_t>(1, s.moe_layer_interval);
  json dense = json::array();
  for (int64_t i = 0; i < s.first_dense_layers; ++i) dense.push_back(i);
  j["mlp_only_layers"] = dense;
  if (s.shared_expert_gate) j["shared_expert_intermediate_size"] = s.shared_expert_ffn_hidden_size;
  j["attention_bias"] = s.bias != Bias::kNone;
  if (s.bias == Bias::kAll) return Unexpressible("bias", "Qwen-MoE has biases on Q, K, V only");
  if (s.sliding_window > 0) {
    j["use_sliding_window"] = true;
    j["sliding_window"] = s.sliding_window;
    j["layer_types"] = LayerTypes(s);
  }
  return j;
}

// StarCoder2: grouped-query attention, a GELU MLP, LayerNorm, biases on every linear or none,
// the head dim h/a, a window on every layer.
absl::StatusOr<json> Starcoder2(const ModelSpec& s) {
  if (Derive(s).window_layers != s.num_layers) {
    return Unexpressible("sliding_window_layers", "StarCoder2's window is on every layer");
  }
  if (s.learned_position_embeddings > 0) {
    return Unexpressible("learned_position_embeddings", "StarCoder2 has rotary positions");
  }
  if (s.bias == Bias::kQkv) return Unexpressible("bias", "StarCoder2 biases every linear or none");
  if (s.head_dim * s.num_attention_heads != s.hidden_size) {
    return Unexpressible("head_dim", "StarCoder2's head dim is hidden_size / heads");
  }
  json j = Common(s, "Starcoder2ForCausalLM", "starcoder2");
  j["hidden_size"] = s.hidden_size;
  j["num_attention_heads"] = s.num_attention_heads;
  j["num_key_value_heads"] = s.num_kv_heads;
  j["num_hidden_layers"] = s.num_layers;
  j["intermediate_size"] = s.ffn_hidden_size;
  j["use_bias"] = s.bias == Bias::kAll;
  j["sliding_window"] = s.sliding_window;
  j["hidden_act"] = "gelu_pytorch_tanh";
  return j;
}

absl::StatusOr<json> Gelu(const ModelSpec& s) {
  if (s.sliding_window > 0) return Starcoder2(s);
  if (s.num_kv_heads != s.num_attention_heads || s.bias != Bias::kAll) {
    // Falcon: grouped-query (or multi-query) attention, biases on every linear or on none.
    if (s.learned_position_embeddings > 0) {
      return Unexpressible("learned_position_embeddings", "Falcon has rotary positions");
    }
    if (s.bias == Bias::kQkv) return Unexpressible("bias", "Falcon biases every linear or none");
    if (s.head_dim * s.num_attention_heads != s.hidden_size) {
      return Unexpressible("head_dim", "Falcon's head dim is hidden_size / heads");
    }
    json j = Common(s, "FalconForCausalLM", "falcon");
    j["hidden_size"] = s.hidden_size;
    j["num_attention_heads"] = s.num_attention_heads;
    j["num_hidden_layers"] = s.num_layers;
    j["new_decoder_architecture"] = true;
    j["num_kv_heads"] = s.num_kv_heads;
    j["ffn_hidden_size"] = s.ffn_hidden_size;
    j["bias"] = s.bias == Bias::kAll;
    return j;
  }
  if (s.learned_position_embeddings > 0) {
    if (s.head_dim * s.num_attention_heads != s.hidden_size) {
      return Unexpressible("head_dim", "GPT-2's head dim is hidden_size / heads");
    }
    json j = Common(s, "GPT2LMHeadModel", "gpt2");
    j["n_embd"] = s.hidden_size;
    j["n_head"] = s.num_attention_heads;
    j["n_layer"] = s.num_layers;
    j["n_inner"] = s.ffn_hidden_size;
    j["n_positions"] = s.learned_position_embeddings;
    j.erase("max_position_embeddings");
    return j;
  }
  json j = Common(s, "GPTNeoXForCausalLM", "gpt_neox");
  j["hidden_size"] = s.hidden_size;
  j["num_attention_heads"] = s.num_attention_heads;
  j["num_hidden_layers"] = s.num_layers;
  j["intermediate_size"] = s.ffn_hidden_size;
  if (s.head_dim * s.num_attention_heads != s.hidden_size) j["head_dim"] = s.head_dim;
  j["hidden_act"] = "gelu";
  return j;
}

absl::StatusOr<json> Gated(const ModelSpec& s) {
  const int64_t windowed = Derive(s).window_layers;
  json j;
  if (windowed > 0 && windowed == s.num_layers) {
    j = Common(s, "MistralForCausalLM", "mistral");
    LlamaCore(s, j);
    j["sliding_window"] = s.sliding_window;
  } else if (windowed > 0) {
    j = Common(s, "Qwen3ForCausalLM", "qwen3");
    LlamaCore(s, j);
    j["use_sliding_window"] = true;
    j["sliding_window"] = s.sliding_window;
    j["layer_types"] = LayerTypes(s);
  } else {
    j = Common(s, "LlamaForCausalLM", "llama");
    LlamaCore(s, j);
  }
  if (s.bias == Bias::kAll) return Unexpressible("bias", "Llama-family configs bias Q, K, V only");
  j["attention_bias"] = s.bias == Bias::kQkv;
  return j;
}

// A hybrid model as Nemotron-H (NemotronHForCausalLM; the fields ImportNemotronH reads): its
// pattern, Mamba-2 mixers, attention, ungated MLPs (squared ReLU) and experts.
absl::StatusOr<json> NemotronH(const ModelSpec& s) {
  if (s.mlp != Mlp::kGelu) return Unexpressible("mlp", "Nemotron-H's MLPs are ungated (relu2)");
  if (s.norm != Norm::kRmsNorm) return Unexpressible("norm", "Nemotron-H uses RMSNorm");
  if (s.kv_lora_rank > 0) return Unexpressible("kv_lora_rank", "Nemotron-H has no latent attention");
  if (s.bias == Bias::kQkv) return Unexpressible("bias", "Nemotron-H biases all or none");
  if (s.shared_expert_gate) return Unexpressible("shared_expert_gate", "Nemotron-H has none");
  json j = Common(s, "NemotronHForCausalLM", "nemotron_h");
  j["hidden_size"] = s.hidden_size;
  j["num_attention_heads"] = s.num_attention_heads;
  j["num_key_value_heads"] = s.num_kv_heads;
  j["head_dim"] = s.head_dim;
  j["num_hidden_layers"] = s.num_layers;
  j["hybrid_override_pattern"] = s.hybrid_pattern;
  j["mlp_hidden_act"] = "relu2";
  j["use_bias"] = s.bias == Bias::kAll;
  j["layer_norm_epsilon"] = 1e-5;
  if (s.num_experts > 0) {
    j["n_routed_experts"] = s.num_experts;
    j["num_experts_per_tok"] = s.experts_per_token;
    j["moe_intermediate_size"] = s.ffn_hidden_size;
    j["moe_shared_expert_intermediate_size"] = s.shared_expert_ffn_hidden_size;
    j["intermediate_size"] = DenseFfnWidth(s);
  } else {
    j["intermediate_size"] = s.ffn_hidden_size;
  }
  if (Derive(s).mamba_layers > 0) {
    j["mamba_num_heads"] = s.mamba_heads;
    j["mamba_head_dim"] = s.mamba_head_dim;
    j["ssm_state_size"] = s.mamba_state_dim;
    j["n_groups"] = s.mamba_groups;
    j["conv_kernel"] = s.mamba_conv_kernel;
    j["chunk_size"] = s.mamba_chunk_size;
  }
  return j;
}

}  // namespace

absl::StatusOr<std::string> ExportHfConfig(const ModelSpec& s) {
  const DerivedShape d = Derive(s);
  absl::StatusOr<json> j;
  if (IsHybrid(s)) {
    j = NemotronH(s);
    if (!j.ok()) return j.status();
    return j->dump(2) + "\n";
  }
  if (s.kv_lora_rank > 0) {
    j = Deepseek(s, d);
  } else if (s.num_experts > 0) {
    if (s.mlp != Mlp::kSwiglu) return Unexpressible("mlp", "mixtures of experts here are gated");
    j = Moe(s);
  } else if (s.mlp == Mlp::kGelu) {
    j = Gelu(s);
  } else {
    j = Gated(s);
  }
  if (!j.ok()) return j.status();
  if (s.norm == Norm::kLayerNorm && s.mlp == Mlp::kSwiglu && s.num_experts == 0) {
    return Unexpressible("norm", "gated-MLP architectures use RMSNorm");
  }
  if (s.norm == Norm::kRmsNorm && s.mlp == Mlp::kGelu) {
    return Unexpressible("norm", "GELU architectures use LayerNorm");
  }
  return j->dump(2) + "\n";
}

}  // namespace wavecrest
