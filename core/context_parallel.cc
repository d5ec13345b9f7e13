// Context parallelism's ring (core/context_parallel.h).
#include "core/context_parallel.h"

#include <algorithm>
#include <cstdint>

#include "core/collectives.h"
#include "core/derived_shape.h"
#include "core/elementwise_cost.h"
#include "core/parallelism.h"

namespace wavecrest {

namespace {

// PyTorch's ring of one layer and micro-batch (CpRing::kTorch), what attention's kernels do not
// hide: the query heads' K and V chunks (`chunk` bytes a rank, 16-bit) all-gathered over the c
// ranks under the first of the c steps' attention, forward and backward; backward's FP32
// gradients of K and V sent on at each step under the next step's attention, the last exposed.
double TorchRingLayerS(const Analysis& a, const RunConfig& run, double chunk,
                       double forward_layer_s, double backward_layer_s) {
  const ModelSpec& s = a.spec;
  const int64_t c = s.context_parallel;
  const double cd = static_cast<double>(c);
  const double gather =
      GatherS(cd * chunk, c, GroupPath(*a.gpu, run, c, s.tensor_parallel));
  const Path path = PathFor(*a.gpu, run, s.tensor_parallel * c);
  const double send = 2 * chunk / path.bw + path.latency;
  const double forward = std::max(0.0, gather - forward_layer_s / cd);
  const double backward_step = backward_layer_s / cd;
  const double backward = std::max(0.0, gather - backward_step) +
                          (cd - 1) * std::max(0.0, send - backward_step) + send;
  return forward * (run.recompute == Recompute::kFull ? 2 : 1) + backward;
}

// What PyTorch's ring moves on the compute stream beyond its attention kernels, bytes per element
// of a layer's attention output on this rank (b·(s/c) tokens × query heads × value head dim),
// counted from _templated_ring_attention and its backward (torch/distributed/tensor/
// experimental/_attention.py), not measured. Forward, each step after the first: the K and V concatenated for
// the next (8), the step's output cast to FP32 and merged by its logsumexp (_SDPAMerger: 38 on a
// step of every query, 27 on a load-balanced half step whose merged half is copied back whole by
// torch.cat; 32.5 on average); once, the first step's cast and the result cast back (12).
// Backward, each step after the first: K and V concatenated (8), the FP32 gradients of K and V
// accumulated (23 on average, the half steps' copied back whole), concatenated to send (16), the
// query's accumulated (11.5); once, three FP32 zero buffers, the first step's accumulations, the
// send and the casts back (76).
inline constexpr double kTorchRingForwardBytesPerStep = 40.5;
inline constexpr double kTorchRingForwardBytesOnce = 12;
inline constexpr double kTorchRingBackwardBytesPerStep = 58.5;
inline constexpr double kTorchRingBackwardBytesOnce = 76;

// Those bytes of one layer and micro-batch, seconds at the elementwise bandwidth (forward twice
// under full recomputation).
double TorchRingMergeS(const Analysis& a, const RunConfig& run, double out_elements) {
  const double steps = static_cast<double>(a.spec.context_parallel - 1);
  const double forward = steps * kTorchRingForwardBytesPerStep + kTorchRingForwardBytesOnce;
  const double backward = steps * kTorchRingBackwardBytesPerStep + kTorchRingBackwardBytesOnce;
  const double bytes =
      (forward * (run.recompute == Recompute::kFull ? 2 : 1) + backward) * out_elements;
  return bytes / ElementwiseBandwidth(a.spec, *a.gpu);
}

}  // namespace

double TorchRingChunkBytes(const ModelSpec& spec) {
  const DerivedShape d = Derive(spec);
  return static_cast<double>(d.tokens) *
         static_cast<double>(d.heads_per_rank * (d.head_dim + d.v_head_dim)) * 2;
}

// Transformer Engine's ring (CpRing::kTe): each layer's K and V chunk (b·s/c tokens of
// this rank's KV heads, 16-bit; under MLA K and V of every head) goes around c ranks in c - 1
// sends forward, and backward sends K, V and their gradients (twice that); full recomputation
// re-runs the forward ring; the sends of a layer overlap its attention kernels. PyTorch's
// (CpRing::kTorch): TorchRingLayerS.
double ContextParallelS(const Analysis& a, const RunConfig& run, double layers,
                        double attention_layer_s, double attention_forward_layer_s) {
  const ModelSpec& s = a.spec;
  const int64_t c = s.context_parallel;
  if (c <= 1) return 0;
  const DerivedShape d = Derive(s);
  if (run.cp_ring == CpRing::kTorch) {
    const double chunk = TorchRingChunkBytes(s);
    const double out_elements = static_cast<double>(d.tokens) *
                                static_cast<double>(d.heads_per_rank * d.v_head_dim);
    return layers * (TorchRingLayerS(a, run, chunk, attention_forward_layer_s,
                                     attention_layer_s - attention_forward_layer_s) +
                     TorchRingMergeS(a, run, out_elements));
  }
  const double kv_elements =
      s.kv_lora_rank > 0 ? static_cast<double>(d.heads_per_rank * (d.head_dim + d.v_head_dim))
                         : 2.0 * static_cast<double>(d.kv_heads_per_rank * d.head_dim);
  const double chunk = static_cast<double>(d.tokens) * kv_elements * 2;
  const Path path = PathFor(*a.gpu, run, s.tensor_parallel * c);
  const double sends = (1 + 2 + (run.recompute == Recompute::kFull ? 1 : 0)) *
                       static_cast<double>(c - 1);
  const double per_layer = sends * (chunk / path.bw + path.latency);
  return layers * std::max(0.0, per_layer - attention_layer_s);
}

}  // namespace wavecrest
