// Export of a ModelSpec as a Hugging Face transformers `config.json`: how a team takes a
// recommended shape into its training code. The architecture is the one that expresses the spec
// (Llama for a dense gated MLP, GPT-NeoX or GPT-2 for a GELU one, Mistral or Qwen3 for local
// attention, Mixtral, Qwen2-MoE, Qwen3-MoE or Llama 4 for a mixture of experts, DeepSeek-V3 for
// latent attention), chosen so that ImportHfConfig reads back the same shape: the GEMMs and the
// parameter count are unchanged by the round trip (tests/core/hf_export_test.cc holds it for
// every example model). What no supported architecture expresses (shared experts without a gate
// and without latent attention, say) is FAILED_PRECONDITION naming the field; the wavecrest spec
// itself (its JSON mapping) always exports.
#ifndef WAVECREST_CORE_HF_EXPORT_H_
#define WAVECREST_CORE_HF_EXPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model_spec.h"

namespace wavecrest {

// The config.json text (indented, keys sorted) of a normalized spec.
absl::StatusOr<std::string> ExportHfConfig(const ModelSpec& spec);

// "layer_types" of `layers` layers with `sliding` local ones: the smallest period P whose pattern
// (every P-th layer global, the last of its group, as Gemma 2 and 3 and GPT-OSS lay them out)
// has that many; failing one, the global layers spread evenly.
std::vector<std::string> LayerTypesFor(int64_t layers, int64_t sliding);

// The spec as a drop-in edit of `base_config_json`, the config.json it was derived from
// (core/hf_export_over.cc): the base's architecture, model_type, key order and every field the
// spec does not change (rope settings, positions, norms, windows, softcaps, fields wavecrest does
// not know) are kept; only the shape fields whose values differ are rewritten, in the base
// class's own spelling (Mixtral's intermediate_size and num_local_experts, DBRX's d_model and
// ffn_config, GPT-J's n_embd, ...; inside text_config for a multimodal config), and `changed`
// lists them. No key the base's config class lacks is added (a head dim equal to hidden / heads
// is left to the class that derives it). When the layer count changes, "layer_types" keeps the
// base's own period and phase (GPT-OSS's alternation), and a base that says its pattern another
// way (Gemma 3's sliding_window_pattern, Gemma 2's alternation) gets no layer_types at all. The
// result reads back (ImportHfConfig) as the spec's shape; where it would not (a change the base's
// architecture cannot say), FAILED_PRECONDITION names the fields. INVALID_ARGUMENT when the base
// is not an importable config.
absl::StatusOr<std::string> ExportHfConfigOver(const ModelSpec& spec,
                                               absl::string_view base_config_json,
                                               std::vector<std::string>* changed);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_HF_EXPORT_H_
