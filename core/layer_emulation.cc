#include "core/layer_emulation.h"

#include <algorithm>

#include "core/attention_cost.h"
#include "core/cost_model.h"
#include "core/elementwise_cost.h"

namespace wavecrest {

namespace {

double Elements(const LayerProgram& p, int buffer) {
  return buffer >= 0 ? static_cast<double>(p.buffers[buffer].elements) : 0;
}

double Bytes(const LayerProgram& p, int buffer) {
  return buffer >= 0 ? Elements(p, buffer) * p.buffers[buffer].element_bytes : 0;
}

// Bytes of the MoE routing ops: routed rows R of h, tokens T, experts E, k per token.
double RoutingBytes(const LayerOp& op, double eb) {
  const double R = static_cast<double>(op.rows), h = static_cast<double>(op.cols);
  const double T = static_cast<double>(op.tokens), E = static_cast<double>(op.experts);
  const double k = static_cast<double>(op.top_k);
  switch (op.kind) {
    case LayerOpKind::kRouterTopK:  // logits in; probabilities and ids out
      return T * E * eb + T * k * 8;
    case LayerOpKind::kRouterTopKBackward:  // d probabilities, ids and logits in; d logits out
      return T * k * 8 + 2 * T * E * eb;
    case LayerOpKind::kPermute:  // gathered rows in, routed rows out
      return 2 * R * h * eb;
    case LayerOpKind::kPermuteBackward:  // routed rows in, token rows out
      return (R + T) * h * eb;
    case LayerOpKind::kCombine:  // routed rows and weights in (the shared output too), tokens out
      return (R + T) * h * eb + T * k * 4 + (op.b >= 0 ? T * h * eb : 0);
    case LayerOpKind::kCombineBackward:  // d out gathered and rows in; d rows, d weights out
      return 3 * R * h * eb + 2 * T * k * 4;
    default:
      return 0;
  }
}

}  // namespace

double LayerOpBytes(const LayerProgram& p, const LayerOp& op) {
  const double eb = op.a >= 0 ? p.buffers[op.a].element_bytes : 2;
  const double n = static_cast<double>(op.rows) * static_cast<double>(op.cols);
  switch (op.kind) {
    case LayerOpKind::kGemm:
    case LayerOpKind::kGroupedGemm:
    case LayerOpKind::kFusedAttention:
    case LayerOpKind::kFusedAttentionBackward:
      return 0;
    case LayerOpKind::kNorm:
    case LayerOpKind::kSoftmax:
      return 2 * n * eb;
    case LayerOpKind::kNormBackward:
    case LayerOpKind::kAdd:
    case LayerOpKind::kSoftmaxBackward:
      return 3 * n * eb;
    case LayerOpKind::kActivation:
      return (op.swiglu ? 3 : 2) * n * eb;
    case LayerOpKind::kActivationBackward:
      return (op.swiglu ? 5 : 3) * n * eb;
    case LayerOpKind::kSplitHeads:
    case LayerOpKind::kMergeHeads:
    case LayerOpKind::kMlaAssemble:
    case LayerOpKind::kMlaAssembleBackward:
      // Every input read once, every output written once.
      return Bytes(p, op.a) + Bytes(p, op.b) + Bytes(p, op.c) + Bytes(p, op.d) + Bytes(p, op.e);
    case LayerOpKind::kRouterTopK:
    case LayerOpKind::kRouterTopKBackward:
    case LayerOpKind::kPermute:
    case LayerOpKind::kPermuteBackward:
    case LayerOpKind::kCombine:
    case LayerOpKind::kCombineBackward:
      return RoutingBytes(op, eb);
  }
  return 0;
}

Gemm FusedAttentionGemm(const LayerOp& op, DType dtype) {
  Gemm g;
  g.name = std::string(kAttnFused);
  g.fused_attention = true;
  g.kernel = Attention::kFlash;
  g.pass = op.kind == LayerOpKind::kFusedAttention ? Pass::kForward : Pass::kBackward;
  g.dtype = ComputeDType(dtype, kAttnFused);
  const int64_t keys = op.window > 0 && op.causal ? std::min(op.kv_len, 2 * op.window) : op.kv_len;
  g.shape = {op.q_len, keys, op.head_dim, op.batch * op.heads};
  g.kv_batch = op.batch * op.kv_heads;
  g.causal = op.causal;
  g.window = op.causal ? op.window : 0;
  const double dq = static_cast<double>(op.head_dim);
  const double dv = static_cast<double>(op.v_head_dim > 0 ? op.v_head_dim : op.head_dim);
  // Forward Q·Kᵀ and P·V; backward recomputes S, then dV, dP, dQ, dK (three by d, two by d_v).
  const double matmuls =
      g.pass == Pass::kForward ? (dq + dv) / dq : (3 * dq + 2 * dv) / dq;
  g.flops = matmuls * GemmFlops(g.shape);
  return g;
}

LayerEmulation EmulateLayerProgram(const GpuSpec& gpu, const LayerKey& key,
                                   const LayerProgram& program) {
  LayerEmulation e;
  const CostModelParams& mp = gpu.Model(key.layer.dtype);
  const double bw = gpu.memory_bandwidth_bytes_per_s * mp.elementwise_memory_efficiency;
  double band_lo = 0, band_hi = 0;  // time-weighted sums
  auto add_gemm = [&](const GemmPrediction& p, double flops, double* bucket) {
    *bucket += p.time_s;
    band_lo += p.band_p10 * p.time_s;
    band_hi += p.band_p90 * p.time_s;
    e.flops += flops;
    ++e.kernels;
  };
  for (const LayerOp& op : program.ops) {
    switch (op.kind) {
      case LayerOpKind::kGemm:
        add_gemm(PredictGemm(gpu, op.gemm), GemmFlops(op.gemm.shape), &e.gemm_time_s);
        break;
      case LayerOpKind::kGroupedGemm:
        for (size_t j = 0; j < op.groups.size(); ++j) {
          if (op.groups[j] == 0) continue;
          const GemmKey g = GroupGemm(op, j);
          add_gemm(PredictGemm(gpu, g), GemmFlops(g.shape), &e.gemm_time_s);
        }
        break;
      case LayerOpKind::kFusedAttention:
      case LayerOpKind::kFusedAttentionBackward: {
        const Gemm g = FusedAttentionGemm(op, key.layer.dtype);
        add_gemm(PredictFusedAttention(gpu, g), g.flops, &e.attention_time_s);
        break;
      }
      default: {
        const double bytes = LayerOpBytes(program, op);
        e.elementwise_bytes += bytes;
        e.elementwise_time_s += mp.launch_s + (bw > 0 ? bytes / bw : 0);
        ++e.kernels;
      }
    }
  }
  band_lo -= kP90Sigmas * kElementwiseRelativeSigma * e.elementwise_time_s;
  band_hi += kP90Sigmas * kElementwiseRelativeSigma * e.elementwise_time_s;
  e.time_s = e.gemm_time_s + e.attention_time_s + e.elementwise_time_s;
  if (e.time_s > 0) {
    e.band_p10 = band_lo / e.time_s;
    e.band_p90 = band_hi / e.time_s;
  }
  return e;
}

}  // namespace wavecrest
