#include "core/hf_import.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/hf_import_families.h"
#include "core/hf_import_fields.h"
#include "core/json_limits.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace wavecrest {

using hf::Defaults;
using hf::GetBool;
using hf::GetInt;
using hf::GetNumber;
using hf::GetPositive;
using hf::ReadLlamaCore;
using hf::ReadSlidingWindow;
using nlohmann::json;

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
  ASSIGN_OR_RETURN(s.hidden_size, GetPositive(j, "hidden_size", std::nullopt));
  // Older Falcon configs spell these n_head and n_layer.
  const char* heads_key = j.contains("num_attention_heads") ? "num_attention_heads" : "n_head";
  ASSIGN_OR_RETURN(s.num_attention_heads, GetPositive(j, heads_key, std::nullopt));
  const char* layers_key = j.contains("num_hidden_layers") ? "num_hidden_layers" : "n_layer";
  ASSIGN_OR_RETURN(s.num_layers, GetPositive(j, layers_key, std::nullopt));
  ASSIGN_OR_RETURN(s.vocab_size, GetPositive(j, "vocab_size", std::nullopt));
  bool new_arch = false;
  ASSIGN_OR_RETURN(new_arch, GetBool(j, "new_decoder_architecture", false));
  bool multi_query = true;
  ASSIGN_OR_RETURN(multi_query, GetBool(j, "multi_query", true));
  if (new_arch) {
    ASSIGN_OR_RETURN(s.num_kv_heads, GetPositive(j, "num_kv_heads", std::nullopt));
  } else {
    s.num_kv_heads = multi_query ? 1 : s.num_attention_heads;
  }
  const int64_t four_h =
      s.hidden_size > 0 && s.hidden_size <= kMaxHiddenSize ? 4 * s.hidden_size : 0;
  ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(j, "ffn_hidden_size", four_h));
  bool bias = false;
  ASSIGN_OR_RETURN(bias, GetBool(j, "bias", false));
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", true));
  s.mlp = Mlp::kGelu;
  s.norm = Norm::kLayerNorm;
  s.bias = bias ? Bias::kAll : Bias::kNone;
  return s;
}

absl::StatusOr<ModelSpec> ImportGpt2(const json& j, ModelSpec s) {
  ASSIGN_OR_RETURN(s.hidden_size, GetPositive(j, "n_embd", std::nullopt));
  ASSIGN_OR_RETURN(s.num_attention_heads, GetPositive(j, "n_head", std::nullopt));
  ASSIGN_OR_RETURN(s.num_layers, GetPositive(j, "n_layer", std::nullopt));
  // 4h as n_inner's default, computed only for an h the spec can hold (no signed overflow).
  const int64_t four_h =
      s.hidden_size > 0 && s.hidden_size <= kMaxHiddenSize ? 4 * s.hidden_size : 0;
  ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(j, "n_inner", four_h));
  ASSIGN_OR_RETURN(s.vocab_size, GetPositive(j, "vocab_size", std::nullopt));
  ASSIGN_OR_RETURN(s.learned_position_embeddings, GetInt(j, "n_positions", 1024));
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", true));
  s.mlp = Mlp::kGelu;
  s.norm = Norm::kLayerNorm;
  s.bias = Bias::kAll;
  return s;
}

// Qwen2-MoE and Qwen3-MoE: experts of moe_intermediate_size, every decoder_sparse_step-th layer;
// "mlp_only_layers" may list dense layers only as the first ones (0, 1, ..., k−1).
absl::Status ReadQwenMoe(const json& j, ModelSpec& s) {
  ASSIGN_OR_RETURN(s.num_experts, GetPositive(j, "num_experts", std::nullopt));
  ASSIGN_OR_RETURN(s.experts_per_token, GetPositive(j, "num_experts_per_tok", std::nullopt));
  s.dense_ffn_hidden_size = s.ffn_hidden_size;
  ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(j, "moe_intermediate_size", std::nullopt));
  ASSIGN_OR_RETURN(s.shared_expert_ffn_hidden_size,
                   GetInt(j, "shared_expert_intermediate_size", 0));
  s.shared_expert_gate = s.shared_expert_ffn_hidden_size > 0;
  ASSIGN_OR_RETURN(s.moe_layer_interval, GetPositive(j, "decoder_sparse_step", 1));
  if (auto dense = j.find("mlp_only_layers"); dense != j.end() && dense->is_array()) {
    for (size_t i = 0; i < dense->size(); ++i) {
      if (!(*dense)[i].is_number_integer() ||
          (*dense)[i].get<int64_t>() != static_cast<int64_t>(i)) {
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
  ASSIGN_OR_RETURN(s.hidden_size, GetPositive(j, "hidden_size", std::nullopt));
  ASSIGN_OR_RETURN(s.num_attention_heads, GetPositive(j, "num_attention_heads", std::nullopt));
  s.num_kv_heads = s.num_attention_heads;  // MLA: every head gets its own K and V
  ASSIGN_OR_RETURN(s.num_layers, GetPositive(j, "num_hidden_layers", std::nullopt));
  ASSIGN_OR_RETURN(s.vocab_size, GetPositive(j, "vocab_size", std::nullopt));
  ASSIGN_OR_RETURN(s.q_lora_rank, GetInt(j, "q_lora_rank", 0));  // null: a full query projection
  ASSIGN_OR_RETURN(s.kv_lora_rank, GetPositive(j, "kv_lora_rank", std::nullopt));
  int64_t nope = 0;
  ASSIGN_OR_RETURN(nope, GetPositive(j, "qk_nope_head_dim", std::nullopt));
  ASSIGN_OR_RETURN(s.qk_rope_head_dim, GetPositive(j, "qk_rope_head_dim", std::nullopt));
  s.head_dim = nope + s.qk_rope_head_dim;
  ASSIGN_OR_RETURN(s.v_head_dim, GetPositive(j, "v_head_dim", std::nullopt));
  int64_t dense_width = 0;
  ASSIGN_OR_RETURN(dense_width, GetPositive(j, "intermediate_size", std::nullopt));
  ASSIGN_OR_RETURN(s.num_experts, GetInt(j, "n_routed_experts", 0));
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  // DeepSeek-V3's multi-token prediction module(s), beside the model in its checkpoint.
  ASSIGN_OR_RETURN(s.mtp_modules, GetInt(j, "num_nextn_predict_layers", 0));
  s.mlp = Mlp::kSwiglu;
  s.norm = Norm::kRmsNorm;
  if (s.num_experts == 0) {
    s.ffn_hidden_size = dense_width;
    return s;
  }
  int64_t freq = 1, shared = 0;
  ASSIGN_OR_RETURN(freq, GetInt(j, "moe_layer_freq", 1));
  if (freq != 1) {
    return absl::InvalidArgumentError(
        "config.json: moe_layer_freq other than 1 is not supported (every layer after "
        "first_k_dense_replace must be MoE)");
  }
  ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(j, "moe_intermediate_size", std::nullopt));
  ASSIGN_OR_RETURN(s.experts_per_token, GetPositive(j, "num_experts_per_tok", std::nullopt));
  ASSIGN_OR_RETURN(shared, GetInt(j, "n_shared_experts", 0));
  s.shared_expert_ffn_hidden_size = shared * s.ffn_hidden_size;
  ASSIGN_OR_RETURN(s.first_dense_layers, GetInt(j, "first_k_dense_replace", 0));
  s.dense_ffn_hidden_size = dense_width;
  // Group-limited routing (topk_method "group_limited_greedy" in V2, "noaux_tc" in V3): n_group
  // groups, topk_group of them per token; 1 group is none, and "greedy" routing ignores them.
  ASSIGN_OR_RETURN(s.expert_groups, GetInt(j, "n_group", 1));
  ASSIGN_OR_RETURN(s.expert_groups_per_token, GetInt(j, "topk_group", s.expert_groups));
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
  ASSIGN_OR_RETURN(s.num_experts, GetPositive(j, "num_local_experts", std::nullopt));
  ASSIGN_OR_RETURN(s.experts_per_token, GetPositive(j, "num_experts_per_tok", 1));
  s.shared_expert_ffn_hidden_size = s.ffn_hidden_size;
  ASSIGN_OR_RETURN(s.moe_layer_interval, GetPositive(j, "interleave_moe_layer_step", 1));
  ASSIGN_OR_RETURN(s.dense_ffn_hidden_size,
                   GetPositive(j, "intermediate_size_mlp", s.ffn_hidden_size));
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  return s;
}

// GPT-OSS: experts of intermediate_size with biases (as the attention projections have), top-k,
// a clamped GLU (swiglu_limit), alternating local (sliding_window) and full attention, untied
// embeddings.
absl::StatusOr<ModelSpec> ImportGptOss(const json& j, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s));
  ASSIGN_OR_RETURN(s.num_experts, GetPositive(j, "num_local_experts", std::nullopt));
  // Early configs spell it experts_per_token.
  const char* k_key =
      j.contains("num_experts_per_tok") ? "num_experts_per_tok" : "experts_per_token";
  ASSIGN_OR_RETURN(s.experts_per_token, GetPositive(j, k_key, std::nullopt));
  bool bias = true;
  ASSIGN_OR_RETURN(bias, GetBool(j, "attention_bias", true));
  s.bias = bias ? Bias::kAll : Bias::kNone;
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  RETURN_IF_ERROR(ReadSlidingWindow(j, s, 2));
  // GptOssConfig's swiglu_limit (7.0 by default): the experts' clamped GLU.
  ASSIGN_OR_RETURN(s.glu_clamp, GetNumber(j, "swiglu_limit", 7.0));
  return s;
}

// Gemma 3 (the text model): Gemma3TextConfig's defaults where the config leaves fields out, a
// gated GELU MLP, tied embeddings, five local layers to one global.
absl::StatusOr<ModelSpec> ImportGemma3(const json& j, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s, Defaults{8, 4, 256, 262208}));
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", true));
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
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", gemma));
  const bool qkv_bias = arch == "Qwen2ForCausalLM" || arch == "Qwen2MoeForCausalLM";
  bool attention_bias = false;
  ASSIGN_OR_RETURN(attention_bias, GetBool(j, "attention_bias", qkv_bias));
  s.bias = attention_bias ? Bias::kQkv : Bias::kNone;
  if (arch == "MixtralForCausalLM") {
    // intermediate_size is each expert's width.
    ASSIGN_OR_RETURN(s.num_experts, GetPositive(j, "num_local_experts", std::nullopt));
    ASSIGN_OR_RETURN(s.experts_per_token, GetPositive(j, "num_experts_per_tok", 2));
  }
  if (arch == "Qwen2MoeForCausalLM" || arch == "Qwen3MoeForCausalLM")
    RETURN_IF_ERROR(ReadQwenMoe(j, s));
  RETURN_IF_ERROR(ReadSlidingWindow(j, s, arch == "Gemma2ForCausalLM" ? 2 : 0));
  return s;
}

// GPT-NeoX (Pythia) and Phi-2: a GELU MLP, LayerNorm, biases on every linear.
absl::StatusOr<ModelSpec> ImportNeox(const json& j, ModelSpec s) {
  ASSIGN_OR_RETURN(s.hidden_size, GetPositive(j, "hidden_size", std::nullopt));
  ASSIGN_OR_RETURN(s.num_attention_heads, GetPositive(j, "num_attention_heads", std::nullopt));
  ASSIGN_OR_RETURN(s.num_kv_heads, GetPositive(j, "num_key_value_heads", s.num_attention_heads));
  ASSIGN_OR_RETURN(s.num_layers, GetPositive(j, "num_hidden_layers", std::nullopt));
  ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(j, "intermediate_size", std::nullopt));
  ASSIGN_OR_RETURN(s.vocab_size, GetPositive(j, "vocab_size", std::nullopt));
  ASSIGN_OR_RETURN(s.head_dim, GetPositive(j, "head_dim", 0));
  s.mlp = Mlp::kGelu;
  s.norm = Norm::kLayerNorm;
  s.bias = Bias::kAll;
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  return s;
}

using Importer = absl::StatusOr<ModelSpec> (*)(const json&, const std::string& arch, ModelSpec);

// Every architecture the importer reads: its name in "architectures", its "model_type" (for
// configs without "architectures"), and how it is read.
struct Family {
  const char* arch;
  const char* model_type;
  Importer import;
};

absl::StatusOr<ModelSpec> LlamaLike(const json& j, const std::string& a, ModelSpec s) {
  return ImportLlamaLike(j, a, std::move(s));
}

constexpr Family kFamilies[] = {
    {"LlamaForCausalLM", "llama", LlamaLike},
    {"MistralForCausalLM", "mistral", LlamaLike},
    {"Qwen2ForCausalLM", "qwen2", LlamaLike},
    {"Qwen3ForCausalLM", "qwen3", LlamaLike},
    {"GemmaForCausalLM", "gemma", LlamaLike},
    {"Gemma2ForCausalLM", "gemma2", LlamaLike},
    {"Phi3ForCausalLM", "phi3", LlamaLike},
    {"MixtralForCausalLM", "mixtral", LlamaLike},
    {"Qwen2MoeForCausalLM", "qwen2_moe", LlamaLike},
    {"Qwen3MoeForCausalLM", "qwen3_moe", LlamaLike},
    {"Gemma3ForCausalLM", "gemma3_text",
     [](const json& j, const std::string&, ModelSpec s) { return ImportGemma3(j, std::move(s)); }},
    {"GPTNeoXForCausalLM", "gpt_neox",
     [](const json& j, const std::string&, ModelSpec s) { return ImportNeox(j, std::move(s)); }},
    {"PhiForCausalLM", "phi",
     [](const json& j, const std::string&, ModelSpec s) { return ImportNeox(j, std::move(s)); }},
    {"GPT2LMHeadModel", "gpt2",
     [](const json& j, const std::string&, ModelSpec s) { return ImportGpt2(j, std::move(s)); }},
    {"FalconForCausalLM", "falcon",
     [](const json& j, const std::string&, ModelSpec s) { return ImportFalcon(j, std::move(s)); }},
    {"DeepseekV2ForCausalLM", "deepseek_v2",
     [](const json& j, const std::string&, ModelSpec s) {
       return ImportDeepseek(j, std::move(s));
     }},
    {"DeepseekV3ForCausalLM", "deepseek_v3",
     [](const json& j, const std::string&, ModelSpec s) {
       return ImportDeepseek(j, std::move(s));
     }},
    {"Llama4ForCausalLM", "llama4_text",
     [](const json& j, const std::string&, ModelSpec s) { return ImportLlama4(j, std::move(s)); }},
    {"GptOssForCausalLM", "gpt_oss",
     [](const json& j, const std::string&, ModelSpec s) { return ImportGptOss(j, std::move(s)); }},
    {"BloomForCausalLM", "bloom",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportBloom(j, std::move(s));
     }},
    {"GPTJForCausalLM", "gptj",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportGptj(j, std::move(s));
     }},
    {"MptForCausalLM", "mpt",
     [](const json& j, const std::string&, ModelSpec s) { return hf::ImportMpt(j, std::move(s)); }},
    {"MPTForCausalLM", "",  // MosaicML's own modelling code
     [](const json& j, const std::string&, ModelSpec s) { return hf::ImportMpt(j, std::move(s)); }},
    {"DbrxForCausalLM", "dbrx",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportDbrx(j, std::move(s));
     }},
    {"Starcoder2ForCausalLM", "starcoder2",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportStarcoder2(j, std::move(s));
     }},
    {"InternLM2ForCausalLM", "internlm2",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportInternLm2(j, std::move(s));
     }},
    {"Olmo2ForCausalLM", "olmo2",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportOlmo(j, false, std::move(s));
     }},
    {"OlmoeForCausalLM", "olmoe",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportOlmo(j, true, std::move(s));
     }},
    {"PhimoeForCausalLM", "phimoe",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportPhimoe(j, std::move(s));
     }},
    {"PhiMoEForCausalLM", "",  // Microsoft's own modelling code
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportPhimoe(j, std::move(s));
     }},
    {"GraniteForCausalLM", "granite",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportGranite(j, false, std::move(s));
     }},
    {"GraniteMoeForCausalLM", "granitemoe",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportGranite(j, true, std::move(s));
     }},
    {"NemotronHForCausalLM", "nemotron_h",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportNemotronH(j, std::move(s));
     }},
    {"GraniteMoeSharedForCausalLM", "granitemoeshared",
     [](const json& j, const std::string&, ModelSpec s) {
       return hf::ImportGranite(j, true, std::move(s));
     }},
};

// Multimodal models whose language model is a "text_config" (and the model_type of that text
// model when its config does not say).
struct Wrapper {
  const char* arch;
  const char* model_type;
  const char* text_model_type;
};
constexpr Wrapper kWrappers[] = {
    {"Llama4ForConditionalGeneration", "llama4", "llama4_text"},
    {"Gemma3ForConditionalGeneration", "gemma3", "gemma3_text"},
    {"LlavaForConditionalGeneration", "llava", "llama"},
    {"LlavaNextForConditionalGeneration", "llava_next", "llama"},
    {"LlavaOnevisionForConditionalGeneration", "llava_onevision", "qwen2"},
    {"Mistral3ForConditionalGeneration", "mistral3", "mistral"},
};

std::string SupportedList() {
  std::string out;
  for (const Family& f : kFamilies) absl::StrAppend(&out, out.empty() ? "" : ", ", f.arch);
  for (const Wrapper& w : kWrappers) absl::StrAppend(&out, ", ", w.arch, " (its text model)");
  return out;
}

const Family* FamilyOf(const std::string& arch, const std::string& model_type) {
  for (const Family& f : kFamilies) {
    if (arch.empty() ? (*f.model_type != '\0' && model_type == f.model_type) : arch == f.arch) {
      return &f;
    }
  }
  return nullptr;
}

// The first entry of "architectures" (or "" when there is none) and "model_type".
std::pair<std::string, std::string> NamesOf(const json& j) {
  std::pair<std::string, std::string> out;
  if (auto it = j.find("architectures");
      it != j.end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
    out.first = (*it)[0].get<std::string>();
  }
  if (auto mt = j.find("model_type"); mt != j.end() && mt->is_string()) {
    out.second = mt->get<std::string>();
  }
  return out;
}

// The defaults of the text model's config class for fields a nested text_config leaves out
// (LlamaConfig's and MistralConfig's; Llava-1.5 states only the vocabulary). Gemma 3's are
// applied by its importer.
json WithClassDefaults(json text, const std::string& model_type) {
  json defaults;
  if (model_type == "llama") {
    defaults = {{"hidden_size", 4096},
                {"intermediate_size", 11008},
                {"num_hidden_layers", 32},
                {"num_attention_heads", 32},
                {"vocab_size", 32000}};
  } else if (model_type == "mistral") {
    defaults = {{"hidden_size", 4096},      {"intermediate_size", 14336},
                {"num_hidden_layers", 32},  {"num_attention_heads", 32},
                {"num_key_value_heads", 8}, {"vocab_size", 32000}};
  }
  for (auto it = defaults.begin(); it != defaults.end(); ++it) {
    if (!text.contains(it.key()) || text[it.key()].is_null()) text[it.key()] = it.value();
  }
  return text;
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
  ModelSpec s;
  if (auto it = j.find("_name_or_path"); it != j.end() && it->is_string()) {
    s.name = it->get<std::string>();
  }
  auto [arch, model_type] = NamesOf(j);
  // A multimodal config: its text model, read as the text model's own family.
  for (const Wrapper& w : kWrappers) {
    if (arch.empty() ? model_type != w.model_type : arch != w.arch) continue;
    auto text = j.find("text_config");
    if (text == j.end() || !text->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config.json: ", w.arch,
                       " keeps its language model in \"text_config\", "
                       "which is missing or not an object"));
    }
    auto [text_arch, text_type] = NamesOf(*text);
    if (text_type.empty()) text_type = w.text_model_type;
    const Family* f = FamilyOf(text_arch, text_type);
    if (f == nullptr) f = FamilyOf("", text_type);
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("config.json: text_config.model_type \"", text_type,
                       "\" is not supported; supported: ", SupportedList()));
    }
    return f->import(WithClassDefaults(*text, text_type), f->arch, std::move(s));
  }
  const Family* f = FamilyOf(arch, model_type);
  if (f == nullptr && arch.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: neither \"architectures\" nor a known \"model_type\" says which model this "
        "is; add \"architectures\": [\"LlamaForCausalLM\"] (or another of: ",
        SupportedList(), ")"));
  }
  if (f == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: architecture \"", arch, "\" is not supported; supported: ", SupportedList()));
  }
  return f->import(j, f->arch, std::move(s));
}

}  // namespace wavecrest
