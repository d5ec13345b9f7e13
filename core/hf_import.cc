#include "core/hf_import.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/json_limits.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace wavecrest {
namespace {

using nlohmann::json;

constexpr absl::string_view kSupported =
    "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
    "GPTNeoXForCausalLM, GPT2LMHeadModel, GemmaForCausalLM, Gemma2ForCausalLM, "
    "Gemma3ForCausalLM, Gemma3ForConditionalGeneration (its text model), PhiForCausalLM, "
    "Phi3ForCausalLM, MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, "
    "DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, Llama4ForCausalLM, "
    "Llama4ForConditionalGeneration (its text model), GptOssForCausalLM, FalconForCausalLM";

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

bool LooksLikeHfConfig(absl::string_view json_text) {
  if (!CheckJsonLimits(json_text).ok()) return false;
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

namespace {

// "model_type" of configs without "architectures".
std::string ArchOfModelType(const std::string& t) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {"llama", "LlamaForCausalLM"},         {"mistral", "MistralForCausalLM"},
      {"qwen2", "Qwen2ForCausalLM"},         {"qwen3", "Qwen3ForCausalLM"},
      {"gpt_neox", "GPTNeoXForCausalLM"},    {"gpt2", "GPT2LMHeadModel"},
      {"gemma", "GemmaForCausalLM"},         {"gemma2", "Gemma2ForCausalLM"},
      {"gemma3_text", "Gemma3ForCausalLM"},  {"gemma3", "Gemma3ForConditionalGeneration"},
      {"phi", "PhiForCausalLM"},             {"phi3", "Phi3ForCausalLM"},
      {"mixtral", "MixtralForCausalLM"},     {"qwen2_moe", "Qwen2MoeForCausalLM"},
      {"qwen3_moe", "Qwen3MoeForCausalLM"},  {"deepseek_v2", "DeepseekV2ForCausalLM"},
      {"deepseek_v3", "DeepseekV3ForCausalLM"}, {"llama4_text", "Llama4ForCausalLM"},
      {"llama4", "Llama4ForConditionalGeneration"}, {"gpt_oss", "GptOssForCausalLM"},
      {"falcon", "FalconForCausalLM"}};
  for (const auto& [type, arch] : kTypes) {
    if (t == type) return arch;
  }
  return "";
}

absl::StatusOr<ModelSpec> ImportGpt2(const json& j, ModelSpec s) {
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

// The fields every Llama-style config has (with per-family defaults where configs leave them
// out: Gemma 3's text_config), and the gated MLP and RMSNorm they share.
struct Defaults {
  std::optional<int64_t> heads, kv_heads, head_dim, vocab;
};
absl::Status ReadLlamaCore(const json& j, ModelSpec& s, const Defaults& d = {}) {
  WC_TRY_ASSIGN(s.hidden_size, GetInt(j, "hidden_size", std::nullopt));
  WC_TRY_ASSIGN(s.num_attention_heads, GetInt(j, "num_attention_heads", d.heads));
  WC_TRY_ASSIGN(s.num_kv_heads,
                GetInt(j, "num_key_value_heads", d.kv_heads ? d.kv_heads : s.num_attention_heads));
  WC_TRY_ASSIGN(s.num_layers, GetInt(j, "num_hidden_layers", std::nullopt));
  WC_TRY_ASSIGN(s.ffn_hidden_size, GetInt(j, "intermediate_size", std::nullopt));
  WC_TRY_ASSIGN(s.vocab_size, GetInt(j, "vocab_size", d.vocab));
  WC_TRY_ASSIGN(s.head_dim, GetInt(j, "head_dim", d.head_dim ? *d.head_dim : 0));
  s.mlp = Mlp::kSwiglu;
  s.norm = Norm::kRmsNorm;
  return absl::OkStatus();
}

// Layers with local attention, from "layer_types" (["sliding_attention", "full_attention", ...])
// or, failing that, a pattern of `pattern` layers whose last is global (Gemma 3's
// sliding_window_pattern); the window from "sliding_window". Nothing when the config has no
// window or `use_sliding_window` is false (Qwen2/3 keep a window they do not use).
absl::Status ReadSlidingWindow(const json& j, ModelSpec& s, int64_t pattern = 0) {
  bool used = true;
  WC_TRY_ASSIGN(used, GetBool(j, "use_sliding_window", true));
  int64_t window = 0;
  WC_TRY_ASSIGN(window, GetInt(j, "sliding_window", 0));
  if (!used || window <= 0) return absl::OkStatus();
  int64_t layers = s.num_layers;  // Mistral: every layer
  if (auto lt = j.find("layer_types"); lt != j.end() && lt->is_array()) {
    layers = 0;
    for (const json& t : *lt) layers += t.is_string() && t.get<std::string>() == "sliding_attention";
  } else {
    WC_TRY_ASSIGN(pattern, GetInt(j, "sliding_window_pattern", pattern));
    if (pattern > 1 && s.num_layers > 0) layers = s.num_layers - s.num_layers / pattern;
  }
  if (layers > 0) {
    s.sliding_window = window;
    s.sliding_window_layers = layers;
  }
  return absl::OkStatus();
}

// Qwen2-MoE and Qwen3-MoE: experts of moe_intermediate_size, every decoder_sparse_step-th layer;
// "mlp_only_layers" may list dense layers only as the first ones (0, 1, ..., k−1).
absl::Status ReadQwenMoe(const json& j, ModelSpec& s) {
  WC_TRY_ASSIGN(s.num_experts, GetInt(j, "num_experts", std::nullopt));
  WC_TRY_ASSIGN(s.experts_per_token, GetInt(j, "num_experts_per_tok", std::nullopt));
  s.dense_ffn_hidden_size = s.ffn_hidden_size;
  WC_TRY_ASSIGN(s.ffn_hidden_size, GetInt(j, "moe_intermediate_size", std::nullopt));
  WC_TRY_ASSIGN(s.shared_expert_ffn_hidden_size, GetInt(j, "shared_expert_intermediate_size", 0));
  s.shared_expert_gate = s.shared_expert_ffn_hidden_size > 0;
  WC_TRY_ASSIGN(s.moe_layer_interval, GetInt(j, "decoder_sparse_step", 1));
  if (auto dense = j.find("mlp_only_layers"); dense != j.end() && dense->is_array()) {
    for (size_t i = 0; i < dense->size(); ++i) {
      if (!(*dense)[i].is_number_integer() || (*dense)[i].get<int64_t>() != static_cast<int64_t>(i)) {
        return absl::InvalidArgumentError(
            "config.json: mlp_only_layers: dense layers are supported only as the first layers "
            "(0, 1, ..., k-1)");
      }
    }
    s.first_dense_layers = static_cast<int64_t>(dense->size());
  }
  return absl::OkStatus();
}

// DeepSeek-V2 and V3: multi-head latent attention; routed experts of moe_intermediate_size plus
// n_shared_experts always on; the first first_k_dense_replace layers dense (intermediate_size).
absl::StatusOr<ModelSpec> ImportDeepseek(const json& j, ModelSpec s) {
  WC_TRY_ASSIGN(s.hidden_size, GetInt(j, "hidden_size", std::nullopt));
  WC_TRY_ASSIGN(s.num_attention_heads, GetInt(j, "num_attention_heads", std::nullopt));
  s.num_kv_heads = s.num_attention_heads;  // MLA: every head gets its own K and V
  WC_TRY_ASSIGN(s.num_layers, GetInt(j, "num_hidden_layers", std::nullopt));
  WC_TRY_ASSIGN(s.vocab_size, GetInt(j, "vocab_size", std::nullopt));
  WC_TRY_ASSIGN(s.q_lora_rank, GetInt(j, "q_lora_rank", 0));  // null: a full query projection
  WC_TRY_ASSIGN(s.kv_lora_rank, GetInt(j, "kv_lora_rank", std::nullopt));
  int64_t nope = 0;
  WC_TRY_ASSIGN(nope, GetInt(j, "qk_nope_head_dim", std::nullopt));
  WC_TRY_ASSIGN(s.qk_rope_head_dim, GetInt(j, "qk_rope_head_dim", std::nullopt));
  s.head_dim = nope + s.qk_rope_head_dim;
  WC_TRY_ASSIGN(s.v_head_dim, GetInt(j, "v_head_dim", std::nullopt));
  int64_t dense_width = 0;
  WC_TRY_ASSIGN(dense_width, GetInt(j, "intermediate_size", std::nullopt));
  WC_TRY_ASSIGN(s.num_experts, GetInt(j, "n_routed_experts", 0));
  WC_TRY_ASSIGN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  s.mlp = Mlp::kSwiglu;
  s.norm = Norm::kRmsNorm;
  if (s.num_experts == 0) {
    s.ffn_hidden_size = dense_width;
    return s;
  }
  int64_t freq = 1, shared = 0;
  WC_TRY_ASSIGN(freq, GetInt(j, "moe_layer_freq", 1));
  if (freq != 1) {
    return absl::InvalidArgumentError(
        "config.json: moe_layer_freq other than 1 is not supported (every layer after "
        "first_k_dense_replace must be MoE)");
  }
  WC_TRY_ASSIGN(s.ffn_hidden_size, GetInt(j, "moe_intermediate_size", std::nullopt));
  WC_TRY_ASSIGN(s.experts_per_token, GetInt(j, "num_experts_per_tok", std::nullopt));
  WC_TRY_ASSIGN(shared, GetInt(j, "n_shared_experts", 0));
  s.shared_expert_ffn_hidden_size = shared * s.ffn_hidden_size;
  WC_TRY_ASSIGN(s.first_dense_layers, GetInt(j, "first_k_dense_replace", 0));
  s.dense_ffn_hidden_size = dense_width;
  // Group-limited routing (topk_method "group_limited_greedy" in V2, "noaux_tc" in V3): n_group
  // groups, topk_group of them per token; 1 group is none, and "greedy" routing ignores them.
  WC_TRY_ASSIGN(s.expert_groups, GetInt(j, "n_group", 1));
  WC_TRY_ASSIGN(s.expert_groups_per_token, GetInt(j, "topk_group", s.expert_groups));
  const auto method = j.find("topk_method");
  const bool greedy = method != j.end() && method->is_string() && *method == "greedy";
  if (s.expert_groups <= 1 || greedy) s.expert_groups = s.expert_groups_per_token = 0;
  return s;
}

// Llama 4 (the text model): experts of intermediate_size with a shared expert of the same width,
// top-k routing, every interleave_moe_layer_step-th layer MoE and the others dense of
// intermediate_size_mlp. Its chunked local attention (chunks of 8192 tokens on three layers of
// four) is not modelled: at 8192 tokens or fewer it is ordinary causal attention.
absl::StatusOr<ModelSpec> ImportLlama4(const json& j, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s));
  WC_TRY_ASSIGN(s.num_experts, GetInt(j, "num_local_experts", std::nullopt));
  WC_TRY_ASSIGN(s.experts_per_token, GetInt(j, "num_experts_per_tok", 1));
  s.shared_expert_ffn_hidden_size = s.ffn_hidden_size;
  WC_TRY_ASSIGN(s.moe_layer_interval, GetInt(j, "interleave_moe_layer_step", 1));
  WC_TRY_ASSIGN(s.dense_ffn_hidden_size, GetInt(j, "intermediate_size_mlp", s.ffn_hidden_size));
  WC_TRY_ASSIGN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  return s;
}

// GPT-OSS: experts of intermediate_size with biases (as the attention projections have), top-k,
// alternating local (sliding_window) and full attention, untied embeddings.
absl::StatusOr<ModelSpec> ImportGptOss(const json& j, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s));
  WC_TRY_ASSIGN(s.num_experts, GetInt(j, "num_local_experts", std::nullopt));
  // Early configs spell it experts_per_token.
  const char* k_key = j.contains("num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token";
  WC_TRY_ASSIGN(s.experts_per_token, GetInt(j, k_key, std::nullopt));
  bool bias = true;
  WC_TRY_ASSIGN(bias, GetBool(j, "attention_bias", true));
  s.bias = bias ? Bias::kAll : Bias::kNone;
  WC_TRY_ASSIGN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  RETURN_IF_ERROR(ReadSlidingWindow(j, s, 2));
  return s;
}

// Gemma 3 (the text model): Gemma3TextConfig's defaults where the config leaves fields out, a
// gated GELU MLP, tied embeddings, five local layers to one global.
absl::StatusOr<ModelSpec> ImportGemma3(const json& j, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s, Defaults{8, 4, 256, 262208}));
  WC_TRY_ASSIGN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", true));
  // The window's default is Gemma3TextConfig's (4096); its configs set 512 or 1024.
  json with_window = j;
  if (!with_window.contains("sliding_window")) with_window["sliding_window"] = 4096;
  RETURN_IF_ERROR(ReadSlidingWindow(with_window, s, 6));
  return s;
}

// The rest of the Llama family (Llama, Mistral, Qwen2/3, Gemma 1/2, Phi-3, Mixtral, Qwen-MoE).
absl::StatusOr<ModelSpec> ImportLlamaLike(const json& j, const std::string& arch, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s));
  // Gemma and Gemma 2: a gated GELU MLP (the same three matrices as SwiGLU), tied embeddings.
  const bool gemma = arch == "GemmaForCausalLM" || arch == "Gemma2ForCausalLM";
  WC_TRY_ASSIGN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", gemma));
  const bool qkv_bias = arch == "Qwen2ForCausalLM" || arch == "Qwen2MoeForCausalLM";
  bool attention_bias = false;
  WC_TRY_ASSIGN(attention_bias, GetBool(j, "attention_bias", qkv_bias));
  s.bias = attention_bias ? Bias::kQkv : Bias::kNone;
  if (arch == "MixtralForCausalLM") {
    // intermediate_size is each expert's width.
    WC_TRY_ASSIGN(s.num_experts, GetInt(j, "num_local_experts", std::nullopt));
    WC_TRY_ASSIGN(s.experts_per_token, GetInt(j, "num_experts_per_tok", 2));
  }
  if (arch == "Qwen2MoeForCausalLM" || arch == "Qwen3MoeForCausalLM") RETURN_IF_ERROR(ReadQwenMoe(j, s));
  RETURN_IF_ERROR(ReadSlidingWindow(j, s, arch == "Gemma2ForCausalLM" ? 2 : 0));
  return s;
}

// Multimodal configs keep the language model's fields in "text_config".
const json& TextConfig(const json& j, const std::string& arch) {
  if (arch == "Llama4ForConditionalGeneration" || arch == "Gemma3ForConditionalGeneration") {
    if (auto it = j.find("text_config"); it != j.end() && it->is_object()) return *it;
  }
  return j;
}

}  // namespace

absl::StatusOr<ModelSpec> ImportHfConfig(absl::string_view json_text) {
  if (absl::Status st = CheckJsonLimits(json_text); !st.ok()) {
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
    arch = ArchOfModelType(mt->get<std::string>());
  }
  if (arch.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: neither \"architectures\" nor a known \"model_type\" says which model this "
        "is; add \"architectures\": [\"LlamaForCausalLM\"] (or another of: ",
        kSupported, ")"));
  }
  ModelSpec s;
  if (auto it = j.find("_name_or_path"); it != j.end() && it->is_string()) {
    s.name = it->get<std::string>();
  }
  const json& t = TextConfig(j, arch);
  if (arch == "GPT2LMHeadModel") return ImportGpt2(t, std::move(s));
  if (arch == "FalconForCausalLM") return ImportFalcon(t, std::move(s));
  if (arch == "DeepseekV2ForCausalLM" || arch == "DeepseekV3ForCausalLM") {
    return ImportDeepseek(t, std::move(s));
  }
  if (arch == "Llama4ForCausalLM" || arch == "Llama4ForConditionalGeneration") {
    return ImportLlama4(t, std::move(s));
  }
  if (arch == "GptOssForCausalLM") return ImportGptOss(t, std::move(s));
  if (arch == "Gemma3ForCausalLM" || arch == "Gemma3ForConditionalGeneration") {
    return ImportGemma3(t, std::move(s));
  }
  static const absl::string_view kLlamaLike[] = {
      "LlamaForCausalLM",  "MistralForCausalLM", "Qwen2ForCausalLM",    "Qwen3ForCausalLM",
      "GemmaForCausalLM",  "Gemma2ForCausalLM",  "Phi3ForCausalLM",     "MixtralForCausalLM",
      "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"};
  if (std::find(std::begin(kLlamaLike), std::end(kLlamaLike), arch) != std::end(kLlamaLike)) {
    return ImportLlamaLike(t, arch, std::move(s));
  }
  if (arch == "GPTNeoXForCausalLM" || arch == "PhiForCausalLM") {
    WC_TRY_ASSIGN(s.hidden_size, GetInt(t, "hidden_size", std::nullopt));
    WC_TRY_ASSIGN(s.num_attention_heads, GetInt(t, "num_attention_heads", std::nullopt));
    WC_TRY_ASSIGN(s.num_kv_heads, GetInt(t, "num_key_value_heads", s.num_attention_heads));
    WC_TRY_ASSIGN(s.num_layers, GetInt(t, "num_hidden_layers", std::nullopt));
    WC_TRY_ASSIGN(s.ffn_hidden_size, GetInt(t, "intermediate_size", std::nullopt));
    WC_TRY_ASSIGN(s.vocab_size, GetInt(t, "vocab_size", std::nullopt));
    WC_TRY_ASSIGN(s.head_dim, GetInt(t, "head_dim", 0));
    s.mlp = Mlp::kGelu;
    s.norm = Norm::kLayerNorm;
    s.bias = Bias::kAll;
    WC_TRY_ASSIGN(s.tied_embeddings, GetBool(t, "tie_word_embeddings", false));
    return s;
  }
  return absl::InvalidArgumentError(absl::StrCat("config.json: architecture \"", arch,
                                                 "\" is not supported; supported: ", kSupported));
}

}  // namespace wavecrest
