// The families a team brings beside the Llama line: BLOOM, GPT-J, MPT and DBRX (each with its own
// spelling of the fields), and StarCoder2, InternLM2/2.5, OLMo 2, OLMoE, Phi-3.5-MoE, Granite and
// Granite-MoE (Llama's spelling, their own MLPs, norms, biases and experts), and NVIDIA's hybrid
// Nemotron-H / Nemotron 3 (Mamba-2 layers among attention, MLP and MoE ones). Field names and
// defaults are those of transformers' config classes (BloomConfig, GPTJConfig, MptConfig,
// DbrxConfig, Starcoder2Config, InternLM2Config, Olmo2Config, OlmoeConfig, PhimoeConfig,
// GraniteConfig, GraniteMoeConfig, GraniteMoeSharedConfig). What wavecrest's spec does not hold
// is left out of the parameter count and named where it is read (BLOOM's embedding LayerNorm,
// OLMo 2's query/key norms); each is under 0.01% of its model.
#include "core/hf_import_families.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/hf_import_fields.h"
#include "core/status_macros.h"

namespace wavecrest::hf {
namespace {

// 4h, computed only for an h the spec can hold (no signed overflow).
int64_t FourH(int64_t h) { return h > 0 && h <= kMaxHiddenSize ? 4 * h : 0; }

// An object field (MPT's and DBRX's attn_config, ffn_config); an empty object when absent.
absl::StatusOr<json> GetObject(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return json::object();
  if (!it->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: field \"", key, "\" must be an object; got ", it->type_name()));
  }
  return *it;
}

}  // namespace

// BLOOM (bigscience/bloom-*): ALiBi (no position table), LayerNorm, a GELU MLP of 4h, biases on
// every linear, tied embeddings. BloomConfig spells h hidden_size (older configs n_embed) and
// takes n_head / n_layer (num_attention_heads / num_hidden_layers through its attribute map).
// Its LayerNorm after the embedding (2h) is not counted.
absl::StatusOr<ModelSpec> ImportBloom(const json& j, ModelSpec s) {
  ASSIGN_OR_RETURN(s.hidden_size, GetPositive(j, FirstKey(j, {"hidden_size", "n_embed"}), 64));
  ASSIGN_OR_RETURN(s.num_attention_heads,
                   GetPositive(j, FirstKey(j, {"n_head", "num_attention_heads"}), 8));
  ASSIGN_OR_RETURN(s.num_layers, GetPositive(j, FirstKey(j, {"n_layer", "num_hidden_layers"}), 2));
  ASSIGN_OR_RETURN(s.vocab_size, GetPositive(j, "vocab_size", 250880));
  s.ffn_hidden_size = FourH(s.hidden_size);
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", true));
  s.mlp = Mlp::kGelu;
  s.norm = Norm::kLayerNorm;
  s.bias = Bias::kAll;
  return s;
}

// GPT-J (EleutherAI/gpt-j-6b): rotary positions on rotary_dim of each head, attention and MLP in
// parallel after one LayerNorm (counted as two), a GELU MLP of n_inner (4h), biases on the MLP
// and the output layer but not on attention (counted as Bias::kAll: 4h per layer more), an untied
// output layer.
absl::StatusOr<ModelSpec> ImportGptj(const json& j, ModelSpec s) {
  ASSIGN_OR_RETURN(s.hidden_size, GetPositive(j, "n_embd", std::nullopt));
  ASSIGN_OR_RETURN(s.num_attention_heads, GetPositive(j, "n_head", std::nullopt));
  ASSIGN_OR_RETURN(s.num_layers, GetPositive(j, "n_layer", std::nullopt));
  ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(j, "n_inner", FourH(s.hidden_size)));
  ASSIGN_OR_RETURN(s.vocab_size, GetPositive(j, "vocab_size", std::nullopt));
  int64_t rotary = 0;
  ASSIGN_OR_RETURN(rotary, GetPositive(j, "rotary_dim", 0));
  if (s.num_attention_heads > 0 && s.hidden_size % s.num_attention_heads == 0 &&
      rotary > s.hidden_size / s.num_attention_heads) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: rotary_dim: must be at most the head dim (", s.hidden_size,
                     " / ", s.num_attention_heads, "); got ", rotary));
  }
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  s.mlp = Mlp::kGelu;
  s.norm = Norm::kLayerNorm;
  s.bias = Bias::kAll;
  return s;
}

// MPT (mosaicml/mpt-7b, -30b): ALiBi, LayerNorm, an MLP of expansion_ratio·d_model (GELU; a
// gated one for ffn_type "mptglu"), no biases unless no_bias is false, tied embeddings; grouped
// or multi-query attention per attn_config.attn_type (kv_n_heads).
absl::StatusOr<ModelSpec> ImportMpt(const json& j, ModelSpec s) {
  ASSIGN_OR_RETURN(s.hidden_size, GetPositive(j, "d_model", std::nullopt));
  ASSIGN_OR_RETURN(s.num_attention_heads, GetPositive(j, "n_heads", std::nullopt));
  ASSIGN_OR_RETURN(s.num_layers, GetPositive(j, "n_layers", std::nullopt));
  ASSIGN_OR_RETURN(s.vocab_size, GetPositive(j, "vocab_size", std::nullopt));
  double ratio = 4;
  ASSIGN_OR_RETURN(ratio, GetNumber(j, "expansion_ratio", 4.0));
  if (!(ratio > 0 && ratio <= 64)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: expansion_ratio: must be in (0, 64]; got ", ratio));
  }
  json attn, ffn;
  ASSIGN_OR_RETURN(attn, GetObject(j, "attn_config"));
  ASSIGN_OR_RETURN(ffn, GetObject(j, "ffn_config"));
  const int64_t by_ratio = s.hidden_size <= kMaxHiddenSize
                               ? std::llround(ratio * static_cast<double>(s.hidden_size))
                               : 0;
  ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(ffn, "ffn_hidden_size", by_ratio));
  std::string attn_type, ffn_type;
  ASSIGN_OR_RETURN(attn_type, GetString(attn, "attn_type", "multihead_attention"));
  ASSIGN_OR_RETURN(ffn_type, GetString(ffn, "ffn_type", "mptmlp"));
  if (attn_type == "multiquery_attention") {
    s.num_kv_heads = 1;
  } else if (attn_type == "grouped_query_attention") {
    ASSIGN_OR_RETURN(s.num_kv_heads, GetPositive(attn, "kv_n_heads", std::nullopt));
  } else {
    s.num_kv_heads = s.num_attention_heads;
  }
  bool no_bias = true;
  ASSIGN_OR_RETURN(no_bias, GetBool(j, "no_bias", true));
  s.mlp = ffn_type == "mptglu" ? Mlp::kSwiglu : Mlp::kGelu;
  s.norm = Norm::kLayerNorm;
  s.bias = no_bias ? Bias::kNone : Bias::kAll;
  s.tied_embeddings = true;
  return s;
}

// DBRX (databricks/dbrx-base): every layer a mixture of moe_num_experts gated (SiLU) experts of
// ffn_hidden_size, top moe_top_k; grouped-query attention (attn_config.kv_n_heads), LayerNorm
// without biases, no linear biases, untied embeddings. Missing sub-fields take
// DbrxAttentionConfig's and DbrxFFNConfig's defaults.
absl::StatusOr<ModelSpec> ImportDbrx(const json& j, ModelSpec s) {
  ASSIGN_OR_RETURN(s.hidden_size, GetPositive(j, "d_model", std::nullopt));
  ASSIGN_OR_RETURN(s.num_attention_heads, GetPositive(j, "n_heads", std::nullopt));
  ASSIGN_OR_RETURN(s.num_layers, GetPositive(j, "n_layers", std::nullopt));
  ASSIGN_OR_RETURN(s.vocab_size, GetPositive(j, "vocab_size", std::nullopt));
  json attn, ffn;
  ASSIGN_OR_RETURN(attn, GetObject(j, "attn_config"));
  ASSIGN_OR_RETURN(ffn, GetObject(j, "ffn_config"));
  ASSIGN_OR_RETURN(s.num_kv_heads, GetPositive(attn, "kv_n_heads", 1));
  ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(ffn, "ffn_hidden_size", 3584));
  ASSIGN_OR_RETURN(s.num_experts, GetPositive(ffn, "moe_num_experts", 4));
  ASSIGN_OR_RETURN(s.experts_per_token, GetPositive(ffn, "moe_top_k", 1));
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  s.mlp = Mlp::kSwiglu;
  s.norm = Norm::kLayerNorm;
  s.bias = Bias::kNone;
  return s;
}

// StarCoder2 (bigcode/starcoder2-*): grouped-query attention, a GELU MLP (c_fc, c_proj, not
// gated), LayerNorm, biases on every linear (use_bias), tied embeddings, a sliding window on
// every layer.
absl::StatusOr<ModelSpec> ImportStarcoder2(const json& j, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s));
  bool bias = true;
  ASSIGN_OR_RETURN(bias, GetBool(j, "use_bias", true));
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", true));
  s.mlp = Mlp::kGelu;
  s.norm = Norm::kLayerNorm;
  s.bias = bias ? Bias::kAll : Bias::kNone;
  RETURN_IF_ERROR(ReadSlidingWindow(j, s));
  return s;
}

// InternLM2 and 2.5 (internlm/internlm2*-): Llama's shape with Q, K and V as one wqkv; "bias"
// puts biases on wqkv and wo (counted on Q, K, V).
absl::StatusOr<ModelSpec> ImportInternLm2(const json& j, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s));
  bool bias = true;
  ASSIGN_OR_RETURN(bias, GetBool(j, "bias", true));
  s.bias = bias ? Bias::kQkv : Bias::kNone;
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  return s;
}

// OLMo 2 (allenai/OLMo-2-*): Llama's shape with its norms after each block and RMSNorm on the
// queries and keys (2h per layer, not counted), untied embeddings. OLMoE (allenai/OLMoE-*): the
// same attention, every layer a mixture of num_experts experts of intermediate_size, top
// num_experts_per_tok.
absl::StatusOr<ModelSpec> ImportOlmo(const json& j, bool moe, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s));
  bool bias = false;
  ASSIGN_OR_RETURN(bias, GetBool(j, "attention_bias", false));
  s.bias = bias ? Bias::kQkv : Bias::kNone;
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  if (moe) {
    ASSIGN_OR_RETURN(s.num_experts, GetPositive(j, "num_experts", 64));
    ASSIGN_OR_RETURN(s.experts_per_token, GetPositive(j, "num_experts_per_tok", 8));
  }
  return s;
}

// Phi-3.5-MoE (microsoft/Phi-3.5-MoE-instruct; PhimoeConfig): every layer a mixture of
// num_local_experts gated experts of intermediate_size, top num_experts_per_tok; LayerNorm,
// biases on the attention projections (attention_bias), untied embeddings, a sliding window.
absl::StatusOr<ModelSpec> ImportPhimoe(const json& j, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s));
  ASSIGN_OR_RETURN(s.num_experts, GetPositive(j, "num_local_experts", 16));
  ASSIGN_OR_RETURN(s.experts_per_token, GetPositive(j, "num_experts_per_tok", 2));
  bool bias = false;
  ASSIGN_OR_RETURN(bias, GetBool(j, "attention_bias", false));
  s.bias = bias ? Bias::kQkv : Bias::kNone;
  s.norm = Norm::kLayerNorm;
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  RETURN_IF_ERROR(ReadSlidingWindow(j, s));
  return s;
}

// Granite (ibm-granite/granite-3.*): Llama's shape and multipliers on the embedding, residuals,
// attention and logits (no GEMM changes); biases per attention_bias and mlp_bias. Granite-MoE:
// every layer a mixture of num_local_experts experts of intermediate_size, top
// num_experts_per_tok; Granite-MoE-Shared adds an ungated shared expert of
// shared_intermediate_size.
absl::StatusOr<ModelSpec> ImportGranite(const json& j, bool moe, ModelSpec s) {
  RETURN_IF_ERROR(ReadLlamaCore(j, s));
  bool attention_bias = false, mlp_bias = false;
  ASSIGN_OR_RETURN(attention_bias, GetBool(j, "attention_bias", false));
  ASSIGN_OR_RETURN(mlp_bias, GetBool(j, "mlp_bias", false));
  s.bias = mlp_bias ? Bias::kAll : attention_bias ? Bias::kQkv : Bias::kNone;
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  if (moe) {
    ASSIGN_OR_RETURN(s.num_experts, GetPositive(j, "num_local_experts", 8));
    ASSIGN_OR_RETURN(s.experts_per_token, GetPositive(j, "num_experts_per_tok", 2));
    ASSIGN_OR_RETURN(s.shared_expert_ffn_hidden_size, GetInt(j, "shared_intermediate_size", 0));
  }
  return s;
}

// Nemotron-H, Nemotron Nano 2 and Nemotron 3 (NemotronHForCausalLM, model_type nemotron_h): a
// hybrid of Mamba-2 mixers, attention, MLP and MoE layers, one a layer, in the order of
// "hybrid_override_pattern" (Megatron-Core's letters; a '|' marks a pipeline split and is
// dropped). Names as Megatron-Bridge's NemotronHBridge maps them (nemotron_h_bridge.py at
// 067f987d): mamba_num_heads, mamba_head_dim, ssm_state_size, n_groups, conv_kernel, chunk_size;
// the attention's head dim in "head_dim" or "attention_head_dim"; an ungated MLP (squared ReLU:
// mlp_hidden_act "relu2"); RMSNorm; biases where "use_bias"; MoE layers of n_routed_experts
// experts of moe_intermediate_size, num_experts_per_tok a token, a shared expert of
// moe_shared_expert_intermediate_size.
absl::StatusOr<ModelSpec> ImportNemotronH(const json& j, ModelSpec s) {
  ASSIGN_OR_RETURN(s.hidden_size, GetPositive(j, "hidden_size", std::nullopt));
  ASSIGN_OR_RETURN(s.num_attention_heads, GetPositive(j, "num_attention_heads", std::nullopt));
  ASSIGN_OR_RETURN(s.num_kv_heads,
                   GetPositive(j, "num_key_value_heads", s.num_attention_heads));
  ASSIGN_OR_RETURN(s.head_dim, GetPositive(j, FirstKey(j, {"head_dim", "attention_head_dim"}), 0));
  ASSIGN_OR_RETURN(s.num_layers, GetPositive(j, "num_hidden_layers", std::nullopt));
  ASSIGN_OR_RETURN(s.vocab_size, GetPositive(j, "vocab_size", std::nullopt));
  std::string pattern;
  ASSIGN_OR_RETURN(pattern, GetString(j, "hybrid_override_pattern", ""));
  pattern.erase(std::remove(pattern.begin(), pattern.end(), '|'), pattern.end());
  if (pattern.empty()) {
    return absl::InvalidArgumentError(
        "config.json: field \"hybrid_override_pattern\" is missing: a Nemotron-H config names "
        "its layers there (M Mamba-2, * attention, - MLP, E MoE)");
  }
  s.hybrid_pattern = pattern;
  const bool moe = pattern.find(kHybridMoe) != std::string::npos;
  const bool dense = pattern.find(kHybridMlp) != std::string::npos;
  if (moe) {
    ASSIGN_OR_RETURN(s.num_experts, GetPositive(j, "n_routed_experts", std::nullopt));
    ASSIGN_OR_RETURN(s.experts_per_token, GetPositive(j, "num_experts_per_tok", std::nullopt));
    ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(j, "moe_intermediate_size", std::nullopt));
    ASSIGN_OR_RETURN(s.shared_expert_ffn_hidden_size,
                     GetInt(j, "moe_shared_expert_intermediate_size", 0));
    if (dense) {
      ASSIGN_OR_RETURN(s.dense_ffn_hidden_size, GetPositive(j, "intermediate_size", 0));
    }
  } else {
    ASSIGN_OR_RETURN(s.ffn_hidden_size, GetPositive(j, "intermediate_size", std::nullopt));
  }
  if (pattern.find(kHybridMamba) != std::string::npos) {
    ASSIGN_OR_RETURN(s.mamba_heads, GetPositive(j, "mamba_num_heads", 0));
    ASSIGN_OR_RETURN(s.mamba_head_dim, GetPositive(j, "mamba_head_dim", 0));
    ASSIGN_OR_RETURN(s.mamba_state_dim, GetPositive(j, "ssm_state_size", 0));
    ASSIGN_OR_RETURN(s.mamba_groups, GetPositive(j, "n_groups", 0));
    ASSIGN_OR_RETURN(s.mamba_conv_kernel, GetPositive(j, "conv_kernel", 0));
    ASSIGN_OR_RETURN(s.mamba_chunk_size, GetPositive(j, "chunk_size", 0));
  }
  std::string act;
  ASSIGN_OR_RETURN(act, GetString(j, "mlp_hidden_act", "relu2"));
  s.mlp = act == "silu" || act == "swiglu" ? Mlp::kSwiglu : Mlp::kGelu;  // relu2: ungated
  s.norm = Norm::kRmsNorm;
  bool bias = false;
  ASSIGN_OR_RETURN(bias, GetBool(j, "use_bias", false));
  s.bias = bias ? Bias::kAll : Bias::kNone;
  ASSIGN_OR_RETURN(s.tied_embeddings, GetBool(j, "tie_word_embeddings", false));
  return s;
}

}  // namespace wavecrest::hf
