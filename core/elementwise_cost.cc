// EstimateElementwise and Fp8CastBytesPerToken (core/elementwise_cost.h): the bytes the step's
// non-GEMM kernels move, at the elementwise bandwidth.
#include "core/elementwise_cost.h"

namespace wavecrest {

double ElementwiseBandwidth(const ModelSpec& spec, const GpuSpec& gpu) {
  return gpu.memory_bandwidth_bytes_per_s * gpu.Model(spec.dtype).elementwise_memory_efficiency;
}

namespace {

// Each token's routed copies on this tensor-parallel rank: k × capacity padding × expert TP / t.
double ExpertRowsPerToken(const ModelSpec& spec) {
  return static_cast<double>(spec.experts_per_token) * Derive(spec).expert_padding *
         static_cast<double>(ExpertTensorParallel(spec)) /
         static_cast<double>(spec.tensor_parallel);
}

// The bandwidth the step's elementwise kernels move bytes at.

// A layer's linear widths on this tensor-parallel rank, per token, in elements: the model's
// width, attention's output (the projection's input), QKV's output, and the up projection's
// output for an MLP of width f (gate and up for a GLU).
struct RankWidths {
  double h = 0, q = 0, qkv = 0;
  bool gelu = false;
  double Up(double f) const { return gelu ? f : 2 * f; }
};
RankWidths WidthsOnRank(const ModelSpec& spec, const DerivedShape& d) {
  const double t = static_cast<double>(spec.tensor_parallel);
  return {static_cast<double>(spec.hidden_size), static_cast<double>(d.q_width) / t,
          static_cast<double>(d.q_width + 2 * d.kv_width) / t, spec.mlp == Mlp::kGelu};
}

// Fp8CastBytesPerToken of a hybrid model: its layers' blocks each as a transformer layer's casts
// count them (attention's projections; the MLP's or the experts'; a Mamba-2 mixer's in_proj
// input out of its fused norm, its out_proj input cast alone, and both outputs' gradients and
// inputs transposed), averaged over the layers.
double HybridFp8CastBytesPerToken(const ModelSpec& spec, const DerivedShape& d) {
  const RankWidths w = WidthsOnRank(spec, d);
  const double h = w.h, q = w.q, qkv = w.qkv;
  const double attention = 3 * q + 1 * (h + q) + 4 * (qkv + h);
  const double dense_f = static_cast<double>(d.dense_ffn_per_rank);
  const double dense = 1 * (h + dense_f) + 4 * (w.Up(dense_f) + h);
  double moe = 0;
  if (d.moe_layers > 0) {
    const double f = static_cast<double>(d.active_ffn_per_rank);
    const double copies =
        (ExpertRowsPerToken(spec) + (spec.shared_expert_ffn_hidden_size > 0 ? 1 : 0)) * h;
    moe = 4 * (copies + f) + 4 * (w.Up(f) + copies);
  }
  const double inner = static_cast<double>(d.mamba_inner_per_rank);
  const double mamba =
      1 * h + 3 * inner + 4 * (static_cast<double>(d.mamba_in_proj_per_rank) + h);
  return (static_cast<double>(d.attention_layers) * attention +
          static_cast<double>(d.dense_layers) * dense + static_cast<double>(d.moe_layers) * moe +
          static_cast<double>(d.mamba_layers) * mamba) /
         static_cast<double>(spec.num_layers);
}

// EstimateElementwise's bytes per token and layer of a hybrid model (elements; forward), on
// average over its layers: each layer's one norm (read h, write h) and residual add (read 2h,
// write h); an MLP layer's activation, a MoE layer's permutation there and back; a Mamba-2
// mixer's conv1d with its SiLU (read and write x, B, C), the scan's per-head discretisation
// (dt's softplus, the decay's cumulative sum: about 3 values a head) and the gated RMSNorm (read
// the scan's output and z, write); decode also reads and writes each head's N × P state (FP32)
// and shifts the conv1d's window.
double HybridElementwisePerToken(const ModelSpec& spec, const DerivedShape& d) {
  const double h = static_cast<double>(spec.hidden_size);
  const double f = static_cast<double>(d.active_ffn_per_rank);
  const double layers = static_cast<double>(spec.num_layers);
  const double activation = spec.mlp == Mlp::kGelu ? 2 * f : 3 * f;
  double per_token = 2 * h + 3 * h +
                     activation * static_cast<double>(d.dense_layers + d.moe_layers) / layers;
  if (d.moe_layers > 0) {
    const double k = static_cast<double>(spec.experts_per_token);
    per_token += 2 * (k + 1) * h * static_cast<double>(d.moe_layers) / layers;
  }
  if (d.mamba_layers > 0) {
    const double conv = static_cast<double>(d.mamba_conv_per_rank);
    const double inner = static_cast<double>(d.mamba_inner_per_rank);
    double mamba = 2 * conv + 3 * static_cast<double>(d.mamba_heads_per_rank) + 3 * inner;
    if (spec.workload == Workload::kDecode) {
      // (The state in FP32: 2 + 2 16-bit elements' worth read and written.)
      mamba += 4 * inner * static_cast<double>(spec.mamba_state_dim) +
               2 * static_cast<double>(spec.mamba_conv_kernel - 1) * conv;
    }
    per_token += mamba * static_cast<double>(d.mamba_layers) / layers;
  }
  return per_token;
}

}  // namespace

double Fp8CastBytesPerToken(const ModelSpec& spec) {
  const DerivedShape d = Derive(spec);
  const RankWidths w = WidthsOnRank(spec, d);
  const double h = w.h, q = w.q, qkv = w.qkv;
  // Forward: the projection's input (attention's BF16 output) cast alone, read 2 write 1 byte;
  // the other inputs come out of a fused norm or activation already in FP8 (LayerNormLinear,
  // LayerNormMLP). Wgrad needs every input transposed in FP8 (the fused cast-transpose writes one
  // more byte), and backward casts and transposes each output gradient (read 2, write 1 + 1).
  const auto dense = [&](double f) {
    return 3 * q + 1 * (2 * h + q + f) + 4 * (qkv + h + w.Up(f) + h);
  };
  if (IsHybrid(spec)) return HybridFp8CastBytesPerToken(spec, d);
  if (d.moe_layers == 0) return dense(static_cast<double>(d.active_ffn_per_rank));
  // A MoE layer's experts take their inputs after the permutation and the activation, in BF16,
  // and cast them themselves (Transformer Engine's GroupedLinear quantizes each expert's rows,
  // both orientations: read 2, write 1 + 1), the shared experts' linears likewise; each token's
  // k copies (rows per token on this rank: k × capacity padding × expert TP / t) pass the up
  // projection's input and the down projection's output gradient.
  const double f = static_cast<double>(d.active_ffn_per_rank);
  const double rows = ExpertRowsPerToken(spec);
  const double copies = (rows + (spec.shared_expert_ffn_hidden_size > 0 ? 1 : 0)) * h;
  const double moe = 3 * q + 1 * (h + q) + 4 * (copies + f) + 4 * (qkv + h + w.Up(f) + copies);
  const double dense_f = static_cast<double>(d.dense_ffn_per_rank);
  return (static_cast<double>(d.dense_layers) * dense(dense_f) +
          static_cast<double>(d.moe_layers) * moe) /
         static_cast<double>(spec.num_layers);
}

ElementwiseEstimate EstimateElementwise(const ModelSpec& spec, const GpuSpec& gpu) {
  const DerivedShape d = Derive(spec);
  const double eb = DTypeBytes(spec.dtype) == 1 ? 2 : DTypeBytes(spec.dtype);  // FP8 keeps BF16
  const double h = static_cast<double>(spec.hidden_size);
  const double f = static_cast<double>(d.active_ffn_per_rank);  // MoE: k experts + shared
  const double tokens = static_cast<double>(d.tokens);
  // Per token and layer, forward: two norms (read h, write h), two residual adds (read 2h, write
  // h), the activation (GELU: read f, write f; SwiGLU: read 2f, write f).
  double per_token = 2 * 2 * h + 2 * 3 * h + (spec.mlp == Mlp::kGelu ? 2 * f : 3 * f);
  if (IsHybrid(spec)) {
    per_token = HybridElementwisePerToken(spec, d);
  } else if (d.moe_layers > 0) {
    // A MoE layer permutes each token's k copies into expert order (read h, write k·h) and back,
    // weighted and summed (read k·h, write h); averaged over the layers.
    const double k = static_cast<double>(spec.experts_per_token);
    per_token +=
        2 * (k + 1) * h * static_cast<double>(d.moe_layers) / static_cast<double>(spec.num_layers);
  }
  double softmax_per_token = 0;
  if (spec.attention == Attention::kUnfused) {
    // Softmax over each score row, read and written, per head on this rank.
    const double kv_len =
        spec.workload == Workload::kDecode ? spec.kv_cache_length : spec.seq_length;
    softmax_per_token = 2 * kv_len * static_cast<double>(d.heads_per_rank);
    if (IsHybrid(spec)) {  // the attention layers' share
      softmax_per_token *= static_cast<double>(d.attention_layers) /
                           static_cast<double>(spec.num_layers);
    }
  }
  // FP8 training under Transformer Engine's recipe: what its casts move beyond the BF16 step
  // (per token and layer, in bytes, not elements: Fp8CastBytesPerToken).
  const double fp8_bytes = spec.workload == Workload::kTraining && spec.dtype == DType::kFp8E4M3
                               ? Fp8CastBytesPerToken(spec)
                               : 0;
  // Loss over the logits: read, softmax, write the gradient.
  const double logit_rows =
      spec.workload == Workload::kTraining ? tokens : static_cast<double>(spec.micro_batch_size);
  const double loss_bytes = 3 * logit_rows * static_cast<double>(d.vocab_per_rank) * eb;
  // Backward moves about twice as much as forward.
  const double passes = spec.workload == Workload::kTraining ? 3 : 1;
  const double bw = ElementwiseBandwidth(spec, gpu);
  ElementwiseEstimate e;
  const double layer_bytes =
      (per_token + softmax_per_token) * eb * tokens * passes + fp8_bytes * tokens;
  e.bytes = layer_bytes * static_cast<double>(spec.num_layers) + loss_bytes * passes;
  e.layer_time_s = layer_bytes / bw;
  e.softmax_time_s = softmax_per_token * eb * tokens * passes / bw;
  e.loss_time_s = loss_bytes * passes / bw;
  e.time_s = e.bytes / bw;
  return e;
}

double RopeUnfusedBytesPerToken(const ModelSpec& spec) {
  if (spec.learned_position_embeddings != 0) return 0;  // no rotary positions
  const DerivedShape d = Derive(spec);
  return 20 * static_cast<double>((d.heads_per_rank + d.kv_heads_per_rank) * d.head_dim);
}

double RopeUnfusedLayerTimeS(const ModelSpec& spec, const GpuSpec& gpu) {
  return 3 * RopeUnfusedBytesPerToken(spec) * static_cast<double>(Derive(spec).tokens) /
         ElementwiseBandwidth(spec, gpu);
}

double EagerExtraBytesPerToken(const ModelSpec& spec) {
  const DerivedShape d = Derive(spec);
  const double h = static_cast<double>(spec.hidden_size);
  const double f = static_cast<double>(d.active_ffn_per_rank);
  const double norm_extra = spec.norm == Norm::kRmsNorm ? 36 - 4 : 0;
  const double activation_extra = spec.mlp == Mlp::kGelu ? 0 : (10 - 6) * f;
  return 2 * norm_extra * h + RopeUnfusedBytesPerToken(spec) + activation_extra;
}

double Fp8RowwiseExtraBytesPerToken(const ModelSpec& spec) {
  const DerivedShape d = Derive(spec);
  const RankWidths w = WidthsOnRank(spec, d);
  const double f = static_cast<double>(d.active_ffn_per_rank);
  // The linears' inputs (QKV, projection, up, down) are also their input gradients' widths.
  const double inputs = w.h + w.q + w.h + f;
  const double output_gradients = w.qkv + w.h + w.Up(f) + w.h;
  return 1 * inputs + 2 * output_gradients + 4 * inputs;
}

double Fp8RowwiseExtraLayerTimeS(const ModelSpec& spec, const GpuSpec& gpu) {
  return Fp8RowwiseExtraBytesPerToken(spec) * static_cast<double>(Derive(spec).tokens) /
         ElementwiseBandwidth(spec, gpu);
}

double EagerLossExtraTimeS(const ModelSpec& spec, const GpuSpec& gpu) {
  const DerivedShape d = Derive(spec);
  return kEagerLossExtraBytesPerLogit * static_cast<double>(d.tokens) *
         static_cast<double>(d.vocab_per_rank) / ElementwiseBandwidth(spec, gpu);
}

double EagerExtraLayerTimeS(const ModelSpec& spec, const GpuSpec& gpu) {
  const double bw = ElementwiseBandwidth(spec, gpu);
  return 3 * EagerExtraBytesPerToken(spec) * static_cast<double>(Derive(spec).tokens) / bw;
}

MoeUnfusedBytes MoeUnfusedOpsBytesPerToken(const ModelSpec& spec) {
  MoeUnfusedBytes b;
  if (spec.num_experts == 0) return b;
  const double rows = ExpertRowsPerToken(spec);
  const double h = static_cast<double>(spec.hidden_size);
  // The expert's width on this rank (split over the experts' tensor-parallel ranks).
  const double f = static_cast<double>(spec.ffn_hidden_size) /
                   static_cast<double>(ExpertTensorParallel(spec));
  if (spec.bias == Bias::kAll) {
    b.forward += 28 * rows * h;
    b.total += (28 + 36) * rows * h;
  }
  if (spec.glu_clamp > 0 && spec.mlp != Mlp::kGelu) {
    b.forward += 16 * rows * f;
    b.total += (16 + 20) * rows * f;
  }
  return b;
}

MoeUnfusedTime MoeUnfusedOpsLayerTimeS(const ModelSpec& spec, const GpuSpec& gpu) {
  const MoeUnfusedBytes b = MoeUnfusedOpsBytesPerToken(spec);
  const double bw = ElementwiseBandwidth(spec, gpu);
  const double tokens = static_cast<double>(Derive(spec).tokens);
  return {b.forward * tokens / bw, b.total * tokens / bw};
}

}  // namespace wavecrest
