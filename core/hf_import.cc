#include "core/hf_import.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace wavecrest {
namespace {

using nlohmann::json;

constexpr absl::string_view kSupported =
    "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, GPTNeoXForCausalLM, "
    "GPT2LMHeadModel, GemmaForCausalLM, Gemma2ForCausalLM, PhiForCausalLM, Phi3ForCausalLM, "
    "MixtralForCausalLM, Qwen2MoeForCausalLM, FalconForCausalLM";

absl::StatusOr<int64_t> GetInt(const json& j, const char* key, std::optional<int64_t> fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    return absl::InvalidArgumentError(absl::StrCat("config.json: missing field \"", key, "\""));
  }
  if (!it->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: field \"", key, "\" must be an integer; got ", it->type_name()));
  }
  return it->get<int64_t>();
}

absl::StatusOr<bool> GetBool(const json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: field \"", key, "\" must be true or false; got ", it->type_name()));
  }
  return it->get<bool>();
}

#define WC_TRY_ASSIGN(lhs, expr)            \
  do {                                      \
    auto wc_v_ = (expr);                    \
    if (!wc_v_.ok()) return wc_v_.status(); \
    lhs = *wc_v_;                           \
  } while (false)

}  // namespace

absl::Status CheckJsonDepth(absl::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return absl::InvalidArgumentError(absl::StrCat("JSON nests arrays or objects deeper than ",
                                                       max_depth,
                                                       " levels; a model spec or "
                                                       "config.json needs 3"));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return absl::OkStatus();
}

bool LooksLikeHfConfig(absl::string_view json_text) {
  if (!CheckJsonDepth(json_text).ok()) return false;
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && (j.contains("architectures") || j.contains("model_type") ||
                           j.contains("num_hidden_layers") || j.contains("n_layer"));
}

namespace {

// Falcon (tiiuae/falcon-7b, -40b, -180b): GELU MLP of 4h (or ffn_hidden_size), LayerNorm, no
// linear biases unless "bias"; multi-query (one KV head) for 7B, num_kv_heads groups with the
// new decoder architecture (40B, 180B); tied embeddings.
absl::StatusOr<ModelSpec> ImportFalcon(const json& j, ModelSpec s) {
  WC_TRY_ASSIGN(s.hidden_size, GetInt(j, "hidden_size", std::nullopt));
  // Older Falcon configs spell these n_head and n_layer.
  const char* heads_key = j.contains("num_attention_heads") ? "num_attention_heads" : "n_head";
  WC_TRY_ASSIGN(s.num_attention_heads, GetInt(j, heads_key, std::nullopt));
  const char* layers_key = j.contains("num_hidden_layers") ? "num_hidden_layers" : "n_layer";
  WC_TRY_ASSIGN(s.num_layers, GetInt(j, layers_key, std::nullopt));
  WC_TRY_ASSIGN(s.vocab_size, GetInt(j, "vocab_size", std::nullopt));
  bool new_arch = false;
  WC_TRY_ASSIGN(new_arch, GetBool(j, "new_decoder_architecture", false));
  bool multi_query = true;
  WC_TRY_ASSIGN(multi_query, GetBool(j, "multi_query", true));
  if (new_arch) {
    WC_TRY_ASSIGN(s.num_kv_heads, GetInt(j, "num_kv_heads", std::nullopt));
  } else {
    s.num_kv_heads = multi_query ? 1 : s.num_attention_heads;
  }
  const int64_t four_h =
      s.hidden_size > 0 && s.hidden_size <= kMaxHiddenSize ? 4 * s.hidden_size : 0;
  WC_TRY_ASSIGN(s.ffn_hidden_size, GetInt(j, "ffn_hidden_size", four_h));
  bool bias = false;
  WC_TRY_ASSIGN(bias, GetBool(j, "bias", false));
  WC_TRY_ASSIGN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", true));
  s.mlp = Mlp::kGelu;
  s.norm = Norm::kLayerNorm;
  s.bias = bias ? Bias::kAll : Bias::kNone;
  return s;
}

}  // namespace

absl::StatusOr<ModelSpec> ImportHfConfig(absl::string_view json_text) {
  if (absl::Status st = CheckJsonDepth(json_text); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("config.json: ", st.message()));
  }
  json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("config.json: not a JSON object");
  }
  std::string arch;
  if (auto it = j.find("architectures");
      it != j.end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
    arch = (*it)[0].get<std::string>();
  } else if (auto mt = j.find("model_type"); mt != j.end() && mt->is_string()) {
    const std::string t = mt->get<std::string>();
    if (t == "llama") arch = "LlamaForCausalLM";
    if (t == "mistral") arch = "MistralForCausalLM";
    if (t == "qwen2") arch = "Qwen2ForCausalLM";
    if (t == "gpt_neox") arch = "GPTNeoXForCausalLM";
    if (t == "gpt2") arch = "GPT2LMHeadModel";
    if (t == "gemma") arch = "GemmaForCausalLM";
    if (t == "phi") arch = "PhiForCausalLM";
    if (t == "phi3") arch = "Phi3ForCausalLM";
    if (t == "mixtral") arch = "MixtralForCausalLM";
    if (t == "qwen2_moe") arch = "Qwen2MoeForCausalLM";
    if (t == "gemma2") arch = "Gemma2ForCausalLM";
    if (t == "falcon") arch = "FalconForCausalLM";
  }

  ModelSpec s;
  if (auto it = j.find("_name_or_path"); it != j.end() && it->is_string()) {
    s.name = it->get<std::string>();
  }
  if (arch == "GPT2LMHeadModel") {
    WC_TRY_ASSIGN(s.hidden_size, GetInt(j, "n_embd", std::nullopt));
    WC_TRY_ASSIGN(s.num_attention_heads, GetInt(j, "n_head", std::nullopt));
    WC_TRY_ASSIGN(s.num_layers, GetInt(j, "n_layer", std::nullopt));
    // 4h as n_inner's default, computed only for an h the spec can hold (no signed overflow).
    const int64_t four_h =
        s.hidden_size > 0 && s.hidden_size <= kMaxHiddenSize ? 4 * s.hidden_size : 0;
    WC_TRY_ASSIGN(s.ffn_hidden_size, GetInt(j, "n_inner", four_h));
    WC_TRY_ASSIGN(s.vocab_size, GetInt(j, "vocab_size", std::nullopt));
    WC_TRY_ASSIGN(s.learned_position_embeddings, GetInt(j, "n_positions", 1024));
    WC_TRY_ASSIGN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", true));
    s.mlp = Mlp::kGelu;
    s.norm = Norm::kLayerNorm;
    s.bias = Bias::kAll;
    return s;
  }

  if (arch == "FalconForCausalLM") return ImportFalcon(j, std::move(s));
  const bool llama_like = arch == "LlamaForCausalLM" || arch == "MistralForCausalLM" ||
                          arch == "Qwen2ForCausalLM" || arch == "GemmaForCausalLM" ||
                          arch == "Phi3ForCausalLM" || arch == "MixtralForCausalLM" ||
                          arch == "Qwen2MoeForCausalLM" || arch == "Gemma2ForCausalLM";
  const bool gelu_like = arch == "GPTNeoXForCausalLM" || arch == "PhiForCausalLM";
  if (arch.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: neither \"architectures\" nor a known \"model_type\" says which model this "
        "is; add \"architectures\": [\"LlamaForCausalLM\"] (or another of: ",
        kSupported, ")"));
  }
  if (!llama_like && !gelu_like) {
    return absl::InvalidArgumentError(absl::StrCat("config.json: architecture \"", arch,
                                                   "\" is not supported; supported: ", kSupported));
  }
  WC_TRY_ASSIGN(s.hidden_size, GetInt(j, "hidden_size", std::nullopt));
  WC_TRY_ASSIGN(s.num_attention_heads, GetInt(j, "num_attention_heads", std::nullopt));
  WC_TRY_ASSIGN(s.num_kv_heads, GetInt(j, "num_key_value_heads", s.num_attention_heads));
  WC_TRY_ASSIGN(s.num_layers, GetInt(j, "num_hidden_layers", std::nullopt));
  WC_TRY_ASSIGN(s.ffn_hidden_size, GetInt(j, "intermediate_size", std::nullopt));
  WC_TRY_ASSIGN(s.vocab_size, GetInt(j, "vocab_size", std::nullopt));
  WC_TRY_ASSIGN(s.head_dim, GetInt(j, "head_dim", 0));
  if (llama_like) {
    s.mlp = Mlp::kSwiglu;
    s.norm = Norm::kRmsNorm;
    // Gemma and Gemma 2: a gated GELU MLP (the same three matrices as SwiGLU), tied embeddings.
    const bool gemma = arch == "GemmaForCausalLM" || arch == "Gemma2ForCausalLM";
    WC_TRY_ASSIGN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", gemma));
    const bool qwen = arch == "Qwen2ForCausalLM" || arch == "Qwen2MoeForCausalLM";
    bool attention_bias = false;
    WC_TRY_ASSIGN(attention_bias, GetBool(j, "attention_bias", qwen));
    s.bias = attention_bias ? Bias::kQkv : Bias::kNone;
    if (arch == "MixtralForCausalLM") {
      // intermediate_size is each expert's width.
      WC_TRY_ASSIGN(s.num_experts, GetInt(j, "num_local_experts", std::nullopt));
      WC_TRY_ASSIGN(s.experts_per_token, GetInt(j, "num_experts_per_tok", 2));
    }
    if (arch == "Qwen2MoeForCausalLM") {
      int64_t sparse_step = 1;
      WC_TRY_ASSIGN(sparse_step, GetInt(j, "decoder_sparse_step", 1));
      auto dense = j.find("mlp_only_layers");
      if (sparse_step != 1 || (dense != j.end() && dense->is_array() && !dense->empty())) {
        return absl::InvalidArgumentError(
            "config.json: decoder_sparse_step/mlp_only_layers: models that mix dense and MoE "
            "layers are not supported (every layer must be MoE)");
      }
      WC_TRY_ASSIGN(s.num_experts, GetInt(j, "num_experts", std::nullopt));
      WC_TRY_ASSIGN(s.experts_per_token, GetInt(j, "num_experts_per_tok", std::nullopt));
      WC_TRY_ASSIGN(s.ffn_hidden_size, GetInt(j, "moe_intermediate_size", std::nullopt));
      WC_TRY_ASSIGN(s.shared_expert_ffn_hidden_size,
                    GetInt(j, "shared_expert_intermediate_size", 0));
      s.shared_expert_gate = s.shared_expert_ffn_hidden_size > 0;
    }
  } else {
    s.mlp = Mlp::kGelu;
    s.norm = Norm::kLayerNorm;
    s.bias = Bias::kAll;
    WC_TRY_ASSIGN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  }
  return s;
}

}  // namespace wavecrest
