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
//
// A model whose layers differ has one key per kind of layer (LayerStackOf): local (sliding-window)
// and global attention, mixture-of-experts and dense MLPs. A local key carries the window (dropped
// where the window covers every key: the layer is then global); a MoE key the rank's share of the
// experts (expert_parallel e: E/e experts on the tokens of e ranks) and the stated routing
// (core/moe_routing.h); a context-parallel key its c ring steps (seq_length s, s/c tokens on the
// rank); multi-head latent attention its low-rank projections and value head dim.
#ifndef WAVECREST_CORE_LAYERS_H_
#define WAVECREST_CORE_LAYERS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"
#include "core/moe_routing.h"

namespace wavecrest {

// The GPU workers' layer timing method (gpu_worker/cuda): bump the version whenever what a figure
// means changes, so that the measurement store never mixes methods.
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
  ModelSpec layer;     // normalized, canonical (see the file comment)
  MoeRouting routing;  // a MoE layer's (balanced for every other key)
  friend bool operator==(const LayerKey&, const LayerKey&) = default;
};

// Which of a model's layers a key stands for: a mixture of experts or a dense MLP, local
// (sliding-window) or global attention.
struct LayerRole {
  bool moe = false;
  bool local = false;
  friend bool operator==(const LayerRole&, const LayerRole&) = default;
};
// The role of the model's first layers: MoE when it has MoE layers, local when it has local ones.
LayerRole DefaultRole(const ModelSpec& model);

// The key of `kind` for a normalized model, its layers of `role` (a one-layer key's own spec gives
// the same key back). INVALID_ARGUMENT when the model has no such layer: a fused-attention key of
// a model whose attention is unfused (and the reverse), a routing that does not fit its experts.
// UNIMPLEMENTED for a layer a one-rank key cannot stand for (whole experts under tensor
// parallelism, expert_tensor_parallel 1).
absl::StatusOr<LayerKey> MakeLayerKey(LayerKind kind, const ModelSpec& model, LayerRole role,
                                      const MoeRouting& routing = {});
absl::StatusOr<LayerKey> MakeLayerKey(LayerKind kind, const ModelSpec& model);

// One kind of layer of a model's stack: its key, how many of the model's layers run it, and its
// role in words where the stack mixes kinds ("local", "MoE global", "dense"; empty otherwise).
struct LayerUse {
  LayerKey key;
  int64_t layers = 0;
  std::string role;
};
// The model's stack: each distinct attention and whole-layer key with the layers that run it,
// attention first (local, then global), then the layers (MoE before dense, local before global).
// Where a model mixes both MoE/dense and local/global layers, local layers are taken to be spread
// evenly over the MoE and dense ones (the spec gives their counts, not their order). A hybrid
// model (hybrid_pattern) has its attention layers' key alone: no whole-layer key stands for its
// Mamba-2, MLP or MoE blocks yet. A reason instead when the model has no layer a key can stand
// for.
absl::StatusOr<std::vector<LayerUse>> LayerStackOf(const ModelSpec& model,
                                                   const MoeRouting& routing = {});

// The layers worth timing whole for a model: the keys of its stack (LayerStackOf), or none.
std::vector<LayerKey> LayerKeysOf(const ModelSpec& model);

// "transformer_layer bf16 training b4 s2048 h4096 heads32/8 d128 ffn11008 swiglu rmsnorm flash"
// (" window4096", " mla q1536 kv512 rope64 dv128", " cp2", " moe64x6 ep8 shared2816 zipf1.2" where
// the key has them). The cache key of the layer (with the device, method and version beside it).
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
