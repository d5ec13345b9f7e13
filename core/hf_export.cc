#include "core/hf_export.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/hf_import.h"
#include "core/json_limits.h"
#include "core/ordered_json.h"
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

// Local attention as layer_types: the last layers of each group full, the rest sliding.
json LayerTypes(const ModelSpec& s) {
  const int64_t windowed = Derive(s).window_layers;
  json types = json::array();
  for (int64_t i = 0; i < s.num_layers; ++i) {
    types.push_back(i < windowed ? "sliding_attention" : "full_attention");
  }
  return types;
}

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
  if (s.sliding_window > 0) {
    j["sliding_window"] = s.sliding_window;
    j["layer_types"] = LayerTypes(s);
  }
  return j;
}

absl::StatusOr<json> Moe(const ModelSpec& s) {
  json j;
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

absl::StatusOr<json> Gelu(const ModelSpec& s) {
  if (s.sliding_window > 0) return Unexpressible("sliding_window", "GELU models here have none");
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

}  // namespace

absl::StatusOr<std::string> ExportHfConfig(const ModelSpec& s) {
  const DerivedShape d = Derive(s);
  absl::StatusOr<json> j;
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
  if (s.norm == Norm::kLayerNorm && s.mlp == Mlp::kSwiglu) {
    return Unexpressible("norm", "gated-MLP architectures use RMSNorm");
  }
  if (s.norm == Norm::kRmsNorm && s.mlp == Mlp::kGelu) {
    return Unexpressible("norm", "GELU architectures use LayerNorm");
  }
  return j->dump(2) + "\n";
}

namespace {

// The fields of a config that describe how a run is set up, not the model's shape: a candidate
// inherits them from the base, so that an export never moves them.
ModelSpec WithRunOf(ModelSpec shape, const ModelSpec& run) {
  shape.name = run.name;
  shape.seq_length = run.seq_length;
  shape.kv_cache_length = run.kv_cache_length;
  shape.dtype = run.dtype;
  return shape;
}

absl::StatusOr<json> ExportedJson(const ModelSpec& s) {
  absl::StatusOr<std::string> text = ExportHfConfig(s);
  if (!text.ok()) return text.status();
  return json::parse(*text);
}

// Keys of `a` and `b` whose values differ (present in one only included).
std::vector<std::string> DifferingKeys(const json& a, const json& b) {
  std::vector<std::string> out;
  for (auto it = b.begin(); it != b.end(); ++it) {
    if (!a.contains(it.key()) || a[it.key()] != it.value()) out.push_back(it.key());
  }
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (!b.contains(it.key())) out.push_back(it.key());
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> ExportHfConfigOver(const ModelSpec& spec,
                                               absl::string_view base_config_json,
                                               std::vector<std::string>* changed) {
  changed->clear();
  if (absl::Status st = CheckJsonLimits(base_config_json); !st.ok()) return st;
  absl::StatusOr<ModelSpec> imported = ImportHfConfig(base_config_json);
  if (!imported.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the base config: ", imported.status().message()));
  }
  // The base's shape and the candidate, exported alike: what differs is what the candidate
  // changed, in the spelling of the architecture that expresses both.
  absl::StatusOr<json> from = ExportedJson(WithDefaults(WithRunOf(*imported, spec)));
  if (!from.ok()) return from.status();
  absl::StatusOr<json> to = ExportedJson(spec);
  if (!to.ok()) return to.status();
  if ((*from)["architectures"] != (*to)["architectures"]) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the candidate needs ", (*to)["architectures"][0].get<std::string>(),
        ", not the base's architecture: export it without the base config"));
  }
  absl::StatusOr<nlohmann::ordered_json> parsed = ParseOrderedJson(base_config_json);
  if (!parsed.ok()) return parsed.status();
  nlohmann::ordered_json& base = *parsed;
  const std::string arch = base.contains("architectures") && base["architectures"].is_array() &&
                                   !base["architectures"].empty() &&
                                   base["architectures"][0].is_string()
                               ? base["architectures"][0].get<std::string>()
                               : "";
  const bool nested = absl::EndsWith(arch, "ForConditionalGeneration") &&
                      base.contains("text_config") && base["text_config"].is_object();
  for (const std::string& key : DifferingKeys(*from, *to)) {
    nlohmann::ordered_json& target = nested && !base.contains(key) ? base["text_config"] : base;
    if (to->contains(key)) {
      target[key] = nlohmann::ordered_json::parse((*to)[key].dump());
    } else {
      target.erase(key);
    }
    changed->push_back(key);
  }
  const std::string text = base.dump(2) + "\n";
  // Read back: the same shape as the candidate, or say what the base's architecture lost.
  absl::StatusOr<ModelSpec> back = ImportHfConfig(text);
  if (!back.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the edited config does not read back: ", back.status().message()));
  }
  absl::StatusOr<json> again = ExportedJson(WithDefaults(WithRunOf(*back, spec)));
  if (!again.ok()) return again.status();
  if (const std::vector<std::string> lost = DifferingKeys(*to, *again); !lost.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the base config's architecture (", arch, ") cannot carry the change of ",
                     absl::StrJoin(lost, ", "), ": export it without the base config"));
  }
  return text;
}

}  // namespace wavecrest
