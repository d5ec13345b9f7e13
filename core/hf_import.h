// Import of Hugging Face transformers `config.json` files into a ModelSpec.
//
// Supported architectures (core/hf_import.cc, kFamilies): the Llama line (Llama, Mistral,
// Qwen2/3, Gemma 1/2/3, Phi-3, Mixtral, Qwen2/3-MoE, Llama 4, GPT-OSS, DeepSeek-V2/V3), GPT-2,
// GPT-NeoX, Phi-2, Falcon, and (core/hf_import_families.cc) BLOOM, GPT-J, MPT, DBRX, StarCoder2,
// InternLM2/2.5, OLMo 2, OLMoE, Phi-3.5-MoE, Granite and Granite-MoE; multimodal configs
// (Llama 4, Gemma 3, Llava, Mistral 3) by the text model of their "text_config", missing fields
// taking its config class's defaults. Sizes must be at least 1 where given
// ("num_key_value_heads: 0" is refused, naming the field). Linear in the text.
// A config does not say how the model is trained, so seq_length, micro_batch_size,
// tensor_parallel and dtype stay 0 / default here (seq 2048, microbatch 1, TP 1, bf16 unless the
// caller's flags say otherwise). Gated MLPs (SwiGLU, and Gemma's GeGLU, which has the same GEMMs)
// map to Mlp::kSwiglu. Whether gate and up run as one GEMM is the training framework's choice, not
// the architecture's, so fused_gate_up keeps its default (fused, as Megatron runs it).
#ifndef WAVECREST_CORE_HF_IMPORT_H_
#define WAVECREST_CORE_HF_IMPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model_spec.h"

namespace wavecrest {

// True when `json_text` parses as a JSON object with "architectures" or "model_type" (the marks of
// a Hugging Face config; a wavecrest spec has neither), or with the layer count of one
// ("num_hidden_layers", "n_layer"): such a config without its marks gets a clear error.
bool LooksLikeHfConfig(absl::string_view json_text);

// INVALID_ARGUMENT for malformed JSON, an unsupported architecture (listing the supported ones),
// or a missing or mistyped field (naming it).
absl::StatusOr<ModelSpec> ImportHfConfig(absl::string_view json_text);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_HF_IMPORT_H_
