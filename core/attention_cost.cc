// PredictFusedAttention and FusedKernelRateOf (core/attention_cost.h): a fused attention kernel
// priced by the query × key blocks it visits, its head dim and its waves over the SMs.
#include "core/attention_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "core/cost_model_internal.h"

namespace wavecrest {
namespace {

using cost_model_internal::CeilDiv;
using cost_model_internal::FinishPrediction;
using cost_model_internal::MemoryBandwidth;

// FlashAttention kernels are compiled for head dims in steps of this many elements.
constexpr int64_t kFlashHeadDimStep = 32;
constexpr int64_t kFlashQueryBlock = 128;  // query rows per CTA
constexpr int64_t kFlashKeyBlock = 128;    // key rows per mainloop step
constexpr double kFlashHeadDimFull = 128;  // head dim at which the kernel reaches its fraction

// The blocks of 128 × 128 (query × key) a fused attention visits: each query block visits every
// key block, or under a causal mask the ones at or before it (block i sees i + 1).
struct FlashBlocks {
  int64_t q_blocks = 0, kv_blocks = 0;
  double visited = 0;
  double longest = 0;  // the most key blocks one query block visits (the causal tail's longest)
  double causal_efficiency = 1.0;
};

FlashBlocks BlocksVisited(const Gemm& gemm, const CostModelParams& mp) {
  const GemmShape& s = gemm.shape;
  FlashBlocks b;
  b.q_blocks = CeilDiv(s.m, kFlashQueryBlock);
  b.kv_blocks = CeilDiv(s.n, kFlashKeyBlock);
  const int64_t q_blocks = b.q_blocks, kv_blocks = b.kv_blocks;
  b.visited = static_cast<double>(q_blocks) * static_cast<double>(kv_blocks);
  b.longest = static_cast<double>(std::min(q_blocks, kv_blocks));
  if (gemm.causal && gemm.window > 0) {
    // A causal window: query block i visits its own block and the window's blocks before it,
    // min(i + 1, window blocks + 1) (shape.n is the FLOP convention's, not the keys visited).
    b.causal_efficiency = mp.flash_causal_efficiency;
    const int64_t reach = CeilDiv(gemm.window, kFlashKeyBlock) + 1;
    const double ramp = static_cast<double>(std::min(q_blocks, reach));
    b.visited = ramp * (ramp + 1) / 2 + static_cast<double>(q_blocks - std::min(q_blocks, reach)) *
                                            static_cast<double>(reach);
    b.longest = ramp;
  } else if (gemm.causal) {
    b.causal_efficiency = mp.flash_causal_efficiency;
    const double full = static_cast<double>(std::min(q_blocks, kv_blocks));
    b.visited = full * (full + 1) / 2 +
                static_cast<double>(q_blocks - std::min(q_blocks, kv_blocks)) * kv_blocks;
  }
  return b;
}

}  // namespace

double FusedAttentionWorkShare(const Gemm& gemm) {
  if (!gemm.fused_attention) return 1.0;
  const FlashBlocks b = BlocksVisited(gemm, CostModelParams{});
  const double all = static_cast<double>(b.q_blocks) * static_cast<double>(b.kv_blocks);
  return all > 0 ? b.visited / all : 1.0;
}

namespace {

// Why a fused attention is slow, as for a GEMM: what the kernel's shape costs, largest effects
// named.
void AddAttentionPenalties(const GpuSpec& gpu, const Gemm& gemm, int64_t padded_d, double d_factor,
                           double overhead_share, GemmPrediction& p) {
  const int64_t d = gemm.shape.k;
  if (p.tile_efficiency < 0.9) {
    p.penalties.push_back(absl::StrFormat(
        "head dim %d pads to %d in the kernel's tiles (%.0f%% of the work is useful)", d, padded_d,
        100 * p.tile_efficiency));
  }
  if (d_factor < 0.9) {
    p.penalties.push_back(absl::StrFormat(
        "head dim %d < %.0f: fewer FLOPs per byte of K and V loaded, %.0f%% of the rate at %.0f", d,
        kFlashHeadDimFull, 100 * d_factor, kFlashHeadDimFull));
  }
  if (overhead_share > 0.15) {
    p.penalties.push_back(absl::StrFormat(
        "short sequence: loading Q, rescaling and writing O take %.0f%% of the work",
        100 * overhead_share));
  }
  if (p.wave_efficiency < 0.9) {
    p.penalties.push_back(
        gemm.causal
            ? absl::StrFormat(
                  "causal blocks of unequal work: %d query blocks on %d SMs, the last SMs "
                  "finish alone (%.0f%% busy)",
                  p.tiles, gpu.sm_count, 100 * p.wave_efficiency)
            : absl::StrFormat("wave quantization: %d query blocks in %d waves of %d (%.0f%% busy)",
                              p.tiles, p.waves, gpu.sm_count, 100 * p.wave_efficiency));
  }
}

// Forward reads Q and K, V and writes O; backward also reads O and dO and writes dQ, dK, dV.
// Q-sized tensors have batch = query heads; K and V, the key/value heads (GQA/MQA share them).
double AttentionBytes(const Gemm& gemm) {
  const GemmShape& s = gemm.shape;
  const double per_side = gemm.pass == Pass::kForward ? 2.0 : 4.0;
  const double kv_batch = static_cast<double>(gemm.kv_batch > 0 ? gemm.kv_batch : s.batch);
  // Every key is read at least once, a windowed layer's too (its shape.n is the FLOP convention's).
  const double keys = static_cast<double>(gemm.window > 0 ? s.m : s.n);
  return per_side * static_cast<double>(s.k) * DTypeBytes(gemm.dtype) *
         (static_cast<double>(s.m) * static_cast<double>(s.batch) + keys * kv_batch);
}

// Small head dims keep the tensor cores less busy per byte of K and V loaded: the share of the
// rate at head dim 128 that a kernel compiled for `padded_d` reaches.
double HeadDimFactor(const CostModelParams& mp, int64_t padded_d, bool forward) {
  const double exponent =
      forward ? mp.flash_head_dim_exponent : mp.flash_backward_head_dim_exponent;
  return std::min(1.0, std::pow(static_cast<double>(padded_d) / kFlashHeadDimFull, exponent));
}

// The kernel's query blocks over the SMs: its tiles (query blocks, one CTA each), waves, and how
// full they run (head dim padding; wave quantization, or under a causal mask the tail of the
// unequal blocks).
void SpreadOverSms(const GpuSpec& gpu, const Gemm& gemm, const CostModelParams& mp,
                   const FlashBlocks& blocks, int64_t padded_d, GemmPrediction& p) {
  const GemmShape& s = gemm.shape;
  p.tile = {kFlashQueryBlock, kFlashKeyBlock, 1};
  p.tiles = blocks.q_blocks * s.batch;
  p.waves = CeilDiv(p.tiles, gpu.sm_count);
  p.tile_efficiency = static_cast<double>(s.k) / static_cast<double>(padded_d);
  p.wave_efficiency = static_cast<double>(p.tiles) / (static_cast<double>(p.waves) * gpu.sm_count);
  if (gemm.causal && p.tiles > 0 && gpu.sm_count > 0) {
    // Unequal blocks: the makespan (in block units per SM) against the mean load per SM.
    const double longest = blocks.longest + mp.flash_block_overhead;
    const double mean =
        (blocks.visited + mp.flash_block_overhead * static_cast<double>(blocks.q_blocks)) *
        static_cast<double>(s.batch) / static_cast<double>(gpu.sm_count);
    const double makespan = p.tiles <= gpu.sm_count
                                ? longest
                                : std::max(longest, mean + mp.flash_tail_fraction * longest);
    p.wave_efficiency = mean / makespan;
  }
}

// The FLOPs the kernel spends: every visited block's, plus a fixed overhead per query block
// (loading Q, rescaling, writing O), over the batch.
double FlashWorkFlops(const Gemm& gemm, const CostModelParams& mp, const FlashBlocks& blocks) {
  const GemmShape& s = gemm.shape;
  // (Decode's single query row fills one row of a block, not 128: its work is that row's.)
  const double block_rows = static_cast<double>(std::min(s.m, kFlashQueryBlock));
  const double per_block_flops =
      gemm.flops / GemmFlops(s) * 2.0 * block_rows * kFlashKeyBlock * static_cast<double>(s.k);
  return (blocks.visited + mp.flash_block_overhead * static_cast<double>(blocks.q_blocks)) *
         static_cast<double>(s.batch) * per_block_flops;
}

}  // namespace

GemmPrediction PredictFusedAttention(const GpuSpec& gpu, const Gemm& gemm) {
  const CostModelParams& mp = gpu.Model(gemm.dtype);
  GemmPrediction p;
  const double peak = gpu.PeakFlops(gemm.dtype);
  const int64_t padded_d = CeilDiv(gemm.shape.k, kFlashHeadDimStep) * kFlashHeadDimStep;
  const bool forward = gemm.pass == Pass::kForward;
  const FusedKernelRate kernel = FusedKernelRateOf(gpu, gemm.dtype, gemm.kernel, gemm.pass);
  const double fraction =
      (forward ? mp.flash_forward_fraction : mp.flash_backward_fraction) * kernel.rate;
  const double d_factor = HeadDimFactor(mp, padded_d, forward);
  const FlashBlocks blocks = BlocksVisited(gemm, mp);
  SpreadOverSms(gpu, gemm, mp, blocks, padded_d, p);
  p.alignment_efficiency = 1.0;
  if (peak <= 0) {
    p.compute_time_s = std::numeric_limits<double>::infinity();
  } else {
    p.compute_time_s =
        FlashWorkFlops(gemm, mp, blocks) / (peak * fraction * d_factor * blocks.causal_efficiency *
                                            p.tile_efficiency * p.wave_efficiency);
  }
  const double q_overhead = mp.flash_block_overhead * static_cast<double>(blocks.q_blocks);
  AddAttentionPenalties(gpu, gemm, padded_d, d_factor, q_overhead / (blocks.visited + q_overhead),
                        p);
  if (kernel.rate < 1) {
    p.penalties.push_back(absl::StrFormat(
        "%s kernel: %.0f%% of the calibrated fused kernel's %s rate (FlashAttention-2 paper)",
        AttentionName(gemm.kernel), 100 * kernel.rate, forward ? "forward" : "backward"));
  }
  p.memory_time_s = AttentionBytes(gemm) / MemoryBandwidth(gpu, mp);
  // The rate is of the work the kernel does (under a causal mask about half the product), as
  // FlashAttention and cuDNN report it; the step's FLOPs (MFU) count the whole product.
  const double done = static_cast<double>(blocks.q_blocks) * static_cast<double>(blocks.kv_blocks);
  FinishPrediction(p, gemm.flops * (done > 0 ? blocks.visited / done : 1.0), mp.launch_s);
  std::tie(p.band_p10, p.band_p90) = ErrorBand(gpu, gemm.dtype, p.time_s);
  p.band_p10 = std::min(p.band_p10, mp.flash_band_p10) - kernel.spread;
  p.band_p90 = std::max(p.band_p90, mp.flash_band_p90) + kernel.spread;
  return p;
}

namespace {

// This model's kFlash rate at the FlashAttention-2 paper's best benchmark setting (head dim 128,
// no mask, 16k tokens in one sequence, hidden 2048 = 16 heads), by the paper's FLOP count.
double ReferenceRate(const GpuSpec& gpu, DType dtype, Pass pass) {
  Gemm g;
  g.name = std::string(kAttnFused);
  g.fused_attention = true;
  g.pass = pass;
  g.shape = {16384, 16384, 128, 16};
  g.dtype = dtype;
  g.flops = (pass == Pass::kForward ? 2 : 5) * GemmFlops(g.shape);
  return g.flops / PredictFusedAttention(gpu, g).time_s;
}

// FlashAttention-2's rate as a fraction of kFlash's (see the header).
double FlashAttention2Rate(const GpuSpec& gpu, DType dtype, Pass pass) {
  const double peak = gpu.PeakFlops(dtype);
  if (gpu.compute_capability < 90) {
    return (pass == Pass::kForward ? 0.73 : 0.63) * peak / ReferenceRate(gpu, dtype, pass);
  }
  // Hopper: 335 TFLOP/s forward + backward (3.5 forward FLOPs) on an H100 SXM, as a fraction of
  // its dense peak (the catalog's), carried to this GPU's.
  static const double kHopperFraction = 335e12 / (*FindGpu("h100-sxm"))->PeakFlops(DType::kBf16);
  const double both = 3.5 / (1 / ReferenceRate(gpu, dtype, Pass::kForward) +
                             2.5 / ReferenceRate(gpu, dtype, Pass::kBackward));
  return kHopperFraction * peak / both;
}

}  // namespace

FusedKernelRate FusedKernelRateOf(const GpuSpec& gpu, DType dtype, Attention kernel, Pass pass) {
  if (!IsNamedFusedKernel(kernel) || gpu.PeakFlops(dtype) <= 0) return {1.0, 0.0};
  const double fa2 = FlashAttention2Rate(gpu, dtype, pass);
  const bool forward = pass == Pass::kForward;
  switch (kernel) {
    case Attention::kFlash1:
      return {fa2 / 2, 0.0};
    case Attention::kFlash1Triton:
      return forward ? FusedKernelRate{fa2 / 1.4, 0.07} : FusedKernelRate{fa2 / 2, 0.0};
    default:
      return {fa2, 0.0};
  }
}

}  // namespace wavecrest
