// Context parallelism's ring (core/context_parallel.h).
#include "core/context_parallel.h"

#include <algorithm>
#include <cstdint>

#include "core/collectives.h"
#include "core/derived_shape.h"
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

}  // namespace

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
    const double chunk = static_cast<double>(d.tokens) *
                         static_cast<double>(d.heads_per_rank * (d.head_dim + d.v_head_dim)) * 2;
    return layers * TorchRingLayerS(a, run, chunk, attention_forward_layer_s,
                                    attention_layer_s - attention_forward_layer_s);
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
