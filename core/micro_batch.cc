#include "core/micro_batch.h"

#include "core/elementwise_cost.h"
#include "core/gemm.h"
#include "core/op_recompute.h"

namespace wavecrest {

namespace {

// What the run's unfused kernels add to the layers' elementwise work: eager PyTorch's (or the
// rotary embedding's alone), rowwise FP8's backward casts, Megatron-Core's unfused expert ops.
void AddUnfusedKernels(const Analysis& a, const RunConfig& run, MicroBatch& mb) {
  const double layers = static_cast<double>(a.spec.num_layers);
  if (run.eager || run.rope_unfused) {
    // Eager PyTorch's unfused elementwise kernels (or of them the rotary embedding's alone):
    // forward a third, recomputed with the rest.
    const double eager = layers * (run.eager ? EagerExtraLayerTimeS(a.spec, *a.gpu)
                                             : RopeUnfusedLayerTimeS(a.spec, *a.gpu));
    mb.layers_s += eager;
    mb.layers_forward_s += eager / 3;
    mb.op_recompute_s += eager / 3;
  }
  if (a.spec.dtype == DType::kFp8E4M3 && run.fp8_recipe == Fp8Recipe::kRowwise) {
    // Rowwise FP8's backward casts and rescales, at the elementwise bandwidth.
    mb.layers_s += layers * Fp8RowwiseExtraLayerTimeS(a.spec, *a.gpu);
  }
  if (run.moe_unfused_ops) {  // on the MoE layers, spread over the layers as the rest
    const MoeUnfusedTime t = MoeUnfusedOpsLayerTimeS(a.spec, *a.gpu);
    const double moe_layers = static_cast<double>(Derive(a.spec).moe_layers);
    mb.layers_s += moe_layers * t.total_s;
    mb.layers_forward_s += moe_layers * t.forward_s;
    if (run.recompute == Recompute::kOp) mb.op_recompute_s += moe_layers * t.forward_s;
    mb.moe_forward_s += moe_layers * t.forward_s;
  }
}

}  // namespace

MicroBatch SplitMicroBatch(const Analysis& a, const RunConfig& run) {
  MicroBatch mb;
  const double layers = static_cast<double>(a.spec.num_layers);
  // A step holds the GPU at its power limit for seconds: its GEMMs at the sustained rate
  // (GpuSpec::sustained_gemm_stretch), attention's fused kernel at its own.
  const double stretch = run.sustained_gemm_stretch.value_or(a.gpu->sustained_gemm_stretch);
  double logits_s = 0;
  for (const GemmAnalysis& g : a.gemms) {
    const bool attention = g.gemm.fused_attention || g.gemm.name == kAttnScore ||
                           g.gemm.name == kAttnOverValue;
    const double t = g.prediction.time_s * static_cast<double>(g.gemm.count) *
                     (g.gemm.fused_attention ? 1.0 : stretch);
    if (g.gemm.name == kLogits) {
      logits_s += t;
      continue;
    }
    mb.layers_s += t;
    if (attention) mb.attention_s += t;
    if (g.gemm.pass != Pass::kForward) continue;
    mb.layers_forward_s += t;
    if (IsMoeBlockGemm(g.gemm.name)) mb.moe_forward_s += t;
    if (g.gemm.name == kMlaQUp || g.gemm.name == kMlaKvUp) mb.mla_up_forward_s += t;
    if (attention) mb.attention_forward_s += t;
  }
  // Elementwise kernels: their forward is taken as a third of forward + backward (backward reads
  // about twice what forward does).
  mb.layers_s += layers * a.elementwise.layer_time_s;
  mb.layers_forward_s += layers * a.elementwise.layer_time_s / 3;
  mb.attention_forward_s += layers * a.elementwise.softmax_time_s / 3;
  mb.head_s = logits_s + a.elementwise.loss_time_s;
  if (run.loss == LossKernel::kEager) mb.head_s += EagerLossExtraTimeS(a.spec, *a.gpu);
  if (run.recompute == Recompute::kOp) mb.op_recompute_s = OpRecomputeForwardS(a, stretch);
  AddUnfusedKernels(a, run, mb);
  if (run.mtp_layers > 0) {  // RunConfig::mtp_layers: the projection is 2h/V of the logits' work
    const double projection = logits_s * 2 * static_cast<double>(a.spec.hidden_size) /
                              static_cast<double>(a.spec.vocab_size);
    mb.head_s += static_cast<double>(run.mtp_layers) *
                 (mb.layers_s / layers + projection + mb.head_s);
  }
  return mb;
}

}  // namespace wavecrest
