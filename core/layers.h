// Layer benchmarks: what a transformer layer runs beyond single GEMMs, as units the GPU worker
// times whole (gpu_worker/cuda) and the analytic model predicts (here).
//
//   kFusedAttention     one fused (Flash) attention kernel: cuDNN's scaled-dot-product attention,
//                       forward (and backward when training), causal, GQA as the spec has it.
//   kUnfusedAttention   attention as the paper's GPT-NeoX ran it: the score bmm Q·Kᵀ, a scale +
//                       causal mask + softmax kernel, the value bmm P·V (and their gradients).
//   kTransformerLayer   one whole layer, forward (+ backward when training): QKV, attention (as the
//                       spec says), projection, two norms, the MLP (GELU or SwiGLU, or a mixture
//                       of experts), two residual adds. The gap between "the sum of its GEMMs" and
//                       "the layer" is what measuring it whole shows.
//
// A layer key is the one-layer, one-rank model it runs: num_layers 1, tensor_parallel 1, heads,
// KV heads and widths per rank, explicit head_dim, and every field that does not change the work
// (name, vocabulary, bias, pipeline, data parallel, ...) at a fixed value, so that two models with
// the same layer share one cached benchmark. Attention keys also drop the hidden size and MLP.
#ifndef WAVECREST_CORE_LAYERS_H_
#define WAVECREST_CORE_LAYERS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"

namespace wavecrest {

// The GPU workers' layer timing method (gpu_worker/cuda): bump the version whenever what a figure
// means changes, so that the result cache never mixes methods.
inline constexpr absl::string_view kLayerTimingMethod = "cuda-layer-timing-v1";

// The method string of a layer result, part of its cache key: "cuda-layer-timing-v1 cold-L2",
// "wavecrest-analytic-v7 emulated layer cold-L2". `backend` is "cublaslt" or "analytic".
std::string LayerTimingMethod(absl::string_view backend, bool warm_l2);

enum class LayerKind { kFusedAttention, kUnfusedAttention, kTransformerLayer };
// "fused_attention", "unfused_attention", "transformer_layer"
absl::string_view LayerKindName(LayerKind kind);
absl::StatusOr<LayerKind> ParseLayerKind(absl::string_view name);

struct LayerKey {
  LayerKind kind = LayerKind::kTransformerLayer;
  ModelSpec layer;  // normalized, canonical (see the file comment)
  friend bool operator==(const LayerKey&, const LayerKey&) = default;
};

// The key of `kind` for a normalized model (a one-layer key's own spec gives the same key back).
// INVALID_ARGUMENT when the model has no such layer: a fused-attention key of a model whose
// attention is unfused (and the reverse).
absl::StatusOr<LayerKey> MakeLayerKey(LayerKind kind, const ModelSpec& model);

// The layers worth timing whole for a model: its attention (fused or unfused, as it runs) and
// the whole layer.
std::vector<LayerKey> LayerKeysOf(const ModelSpec& model);

// "transformer_layer bf16 training b4 s2048 h4096 heads32/8 d128 ffn11008 swiglu rmsnorm flash"
// The cache key of the layer (with the device, method and version beside it).
std::string LayerKeyString(const LayerKey& key);

// What one layer runs, as the GEMM list of its one-layer spec: the layer's GEMMs only (no logits);
// for attention keys only the attention products.
std::vector<Gemm> LayerGemms(const LayerKey& key);

// FLOPs of one execution of the layer (its GEMMs and fused attention, as the model counts them).
double LayerFlops(const LayerKey& key);

// The analytic model's answer for one layer: the sum of its GEMMs' and fused attention's
// predictions plus its share of the elementwise estimate (norms, activation, residuals, softmax).
struct LayerPrediction {
  double time_s = 0;
  double gemm_time_s = 0;         // GEMMs and fused attention
  double elementwise_time_s = 0;  // the estimate (a prior; see kElementwiseRelativeSigma)
  double flops = 0;
  double tflops = 0;
  // Time-weighted error band of the GEMM part (measured/predicted − 1 at p10 and p90).
  double band_p10 = 0;
  double band_p90 = 0;
};
LayerPrediction PredictLayer(const GpuSpec& gpu, const LayerKey& key);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_LAYERS_H_
