// Import of Hugging Face transformers `config.json` files into a ModelSpec.
//
// Supported architectures: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
// GPTNeoXForCausalLM, GPT2LMHeadModel, GemmaForCausalLM, PhiForCausalLM, Phi3ForCausalLM.
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
