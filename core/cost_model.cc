#include "core/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace wavecrest {

absl::string_view BoundName(Bound bound) {
  switch (bound) {
    case Bound::kCompute:
      return "compute";
    case Bound::kMemory:
      return "memory";
    case Bound::kLatency:
      return "latency";
  }
  return "?";
}

namespace {

constexpr int64_t kMinVectorBytes = 16;
constexpr int64_t kSplitKPartialBytes = 4;  // split-K partial sums are FP32
// FlashAttention kernels are compiled for head dims in steps of this many elements.
constexpr int64_t kFlashHeadDimStep = 32;
constexpr int64_t kFlashQueryBlock = 128;  // query rows per CTA
constexpr double kFlashHeadDimFull = 128;  // head dim at which the kernel reaches its fraction

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int OutputBytes(DType dtype) {
  // FP8 GEMMs write BF16 in training recipes; the others write their input type.
  return dtype == DType::kFp8E4M3 ? 2 : DTypeBytes(dtype);
}

// The leading dimensions cuBLAS sees for this layout (see core/gemm.h): A, B, then C.
std::vector<int64_t> LeadingDims(const GemmKey& key) {
  const GemmShape& s = key.shape;
  switch (key.layout) {
    case Layout::kTN:
      return {s.k, s.n};  // A and B have ld K; C has ld N
    case Layout::kNN:
      return {s.n, s.k};  // A ld N, B ld K, C ld N
    case Layout::kNT:
      return {s.n, s.m};  // A ld N, B ld M, C ld N
  }
  return {s.k, s.n};
}

double MemoryTime(const GpuSpec& gpu, const GemmKey& key) {
  const GemmShape& s = key.shape;
  const double in = DTypeBytes(key.dtype);
  const double bytes = (static_cast<double>(s.m) * s.k + static_cast<double>(s.k) * s.n) * in +
                       static_cast<double>(s.m) * s.n * OutputBytes(key.dtype);
  return bytes * static_cast<double>(s.batch) /
         (gpu.memory_bandwidth_bytes_per_s * gpu.model.memory_efficiency);
}

void Finish(GemmPrediction& p, double useful_flops, double latency_floor_s) {
  p.time_s = std::max({p.compute_time_s, p.memory_time_s, latency_floor_s});
  if (p.time_s == latency_floor_s &&
      latency_floor_s > std::max(p.compute_time_s, p.memory_time_s)) {
    p.bound = Bound::kLatency;
  } else if (p.memory_time_s > p.compute_time_s) {
    p.bound = Bound::kMemory;
  } else {
    p.bound = Bound::kCompute;
  }
  p.tflops = useful_flops / p.time_s / 1e12;
}

}  // namespace

DimAlignment AlignmentOf(int64_t dim, DType dtype, const GpuSpec& gpu) {
  DimAlignment a;
  a.pow2 = LargestPow2Factor(dim);
  a.meets_rule = dim > 0 && (dim * DTypeBytes(dtype)) % gpu.alignment_bytes == 0;
  return a;
}

double AlignmentEfficiency(const GemmKey& key, const GpuSpec& gpu) {
  std::vector<int64_t> dims = LeadingDims(key);
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  const int64_t bytes = DTypeBytes(key.dtype);
  double eff = 1.0;
  for (int64_t d : dims) {
    if ((d * bytes) % kMinVectorBytes != 0) return gpu.model.misaligned_efficiency;
    if ((d * bytes) % gpu.alignment_bytes != 0) eff *= gpu.model.sub_alignment_efficiency;
  }
  return eff;
}

GemmPrediction PredictGemmWithTile(const GpuSpec& gpu, const GemmKey& key, const TileShape& tile,
                                   int64_t split_k) {
  const GemmShape& s = key.shape;
  const CostModelParams& mp = gpu.model;
  GemmPrediction p;
  p.tile = tile;
  p.split_k = split_k;
  const double peak = gpu.PeakFlops(key.dtype);
  const int64_t tm = CeilDiv(s.m, tile.m);
  const int64_t tn = CeilDiv(s.n, tile.n);
  p.tiles = tm * tn * s.batch * split_k;
  const int64_t slots = gpu.sm_count * tile.ctas_per_sm;
  p.waves = CeilDiv(p.tiles, slots);
  p.tile_efficiency = static_cast<double>(s.m) * s.n /
                      (static_cast<double>(tm * tile.m) * static_cast<double>(tn * tile.n));
  p.wave_efficiency = static_cast<double>(p.tiles) / (static_cast<double>(p.waves) * slots);
  p.alignment_efficiency = AlignmentEfficiency(key, gpu);
  const int64_t tile_k = std::max<int64_t>(1, mp.k_tile_bytes / DTypeBytes(key.dtype));
  const double k_slice =
      static_cast<double>(CeilDiv(CeilDiv(s.k, split_k), tile_k) * tile_k + mp.k_overhead);
  const double mem_bw = gpu.memory_bandwidth_bytes_per_s * mp.memory_efficiency;
  if (peak <= 0) {
    p.compute_time_s = std::numeric_limits<double>::infinity();
  } else {
    const double t_tile = 2.0 * tile.m * tile.n * k_slice * static_cast<double>(slots) /
                          (peak * tile.peak_fraction * p.alignment_efficiency);
    p.compute_time_s = static_cast<double>(p.waves) * t_tile;
    if (split_k > 1) {
      p.compute_time_s += 2.0 * kSplitKPartialBytes * split_k * static_cast<double>(s.m) * s.n *
                          static_cast<double>(s.batch) / mem_bw;
    }
  }
  // Narrow loads and stores lower the bandwidth reached as much as the math rate.
  p.memory_time_s = MemoryTime(gpu, key) / p.alignment_efficiency;
  Finish(p, GemmFlops(s), mp.latency_floor_s);
  return p;
}

GemmPrediction PredictGemm(const GpuSpec& gpu, const GemmKey& key) {
  GemmPrediction best;
  best.time_s = std::numeric_limits<double>::infinity();
  for (const TileShape& tile : gpu.model.tiles) {
    for (int64_t split = 1; split <= gpu.model.max_split_k; split *= 2) {
      if (split > 1 && key.shape.k / split < gpu.model.min_split_k_slice) break;
      GemmPrediction p = PredictGemmWithTile(gpu, key, tile, split);
      if (p.time_s < best.time_s) best = p;
    }
  }
  return best;
}

GemmPrediction PredictFusedAttention(const GpuSpec& gpu, const Gemm& gemm) {
  const GemmShape& s = gemm.shape;  // (s_q, s_kv, d, batch)
  const CostModelParams& mp = gpu.model;
  GemmPrediction p;
  const double peak = gpu.PeakFlops(gemm.dtype);
  const int64_t d = s.k;
  const int64_t padded_d = CeilDiv(d, kFlashHeadDimStep) * kFlashHeadDimStep;
  const double fraction =
      gemm.pass == Pass::kForward ? mp.flash_forward_fraction : mp.flash_backward_fraction;
  // Small head dims keep the tensor cores less busy per byte of K and V loaded.
  const double d_factor = std::min(1.0, static_cast<double>(padded_d) / kFlashHeadDimFull);
  p.tile = {kFlashQueryBlock, s.n, 1, fraction};
  p.tiles = CeilDiv(s.m, kFlashQueryBlock) * s.batch;
  p.waves = CeilDiv(p.tiles, gpu.sm_count);
  p.tile_efficiency = static_cast<double>(d) / static_cast<double>(padded_d);
  p.wave_efficiency = static_cast<double>(p.tiles) / (static_cast<double>(p.waves) * gpu.sm_count);
  p.alignment_efficiency = 1.0;
  if (peak <= 0) {
    p.compute_time_s = std::numeric_limits<double>::infinity();
  } else {
    p.compute_time_s =
        gemm.flops / (peak * fraction * d_factor * p.tile_efficiency * p.wave_efficiency);
  }
  const double io_tensors = gemm.pass == Pass::kForward ? 4.0 : 8.0;  // Q K V O (+ their grads)
  const double bytes = io_tensors * static_cast<double>(std::max(s.m, s.n)) * d *
                       static_cast<double>(s.batch) * DTypeBytes(gemm.dtype);
  p.memory_time_s = bytes / (gpu.memory_bandwidth_bytes_per_s * mp.memory_efficiency);
  Finish(p, gemm.flops, mp.latency_floor_s);
  return p;
}

GemmPrediction Predict(const GpuSpec& gpu, const Gemm& gemm) {
  return gemm.fused_attention ? PredictFusedAttention(gpu, gemm) : PredictGemm(gpu, gemm.key());
}

ElementwiseEstimate EstimateElementwise(const ModelSpec& spec, const GpuSpec& gpu) {
  const DerivedShape d = Derive(spec);
  const double eb = DTypeBytes(spec.dtype) == 1 ? 2 : DTypeBytes(spec.dtype);  // FP8 keeps BF16
  const double h = static_cast<double>(spec.hidden_size);
  const double f = static_cast<double>(d.ffn_per_rank);
  // Per token and layer, forward: two norms (read h, write h), two residual adds (read 2h, write
  // h), the activation (GELU: read f, write f; SwiGLU: read 2f, write f).
  double per_token = 2 * 2 * h + 2 * 3 * h + (spec.mlp == Mlp::kGelu ? 2 * f : 3 * f);
  if (spec.attention == Attention::kUnfused) {
    // Softmax over each score row, read and written, per head on this rank.
    const double kv_len =
        spec.workload == Workload::kDecode ? spec.kv_cache_length : spec.seq_length;
    per_token += 2 * kv_len * static_cast<double>(d.heads_per_rank);
  }
  double bytes = per_token * eb * static_cast<double>(d.tokens) * spec.num_layers;
  // Loss over the logits: read, softmax, write the gradient.
  const double logit_rows = spec.workload == Workload::kTraining
                                ? static_cast<double>(d.tokens)
                                : static_cast<double>(spec.micro_batch_size);
  bytes += 3 * logit_rows * static_cast<double>(d.vocab_per_rank) * eb;
  if (spec.workload == Workload::kTraining) bytes *= 3;  // backward moves about twice as much
  ElementwiseEstimate e;
  e.bytes = bytes;
  e.time_s = bytes / (gpu.memory_bandwidth_bytes_per_s * gpu.model.elementwise_memory_efficiency);
  return e;
}

std::string TimingMethod(absl::string_view backend, bool autotune, bool warm_l2) {
  const bool analytic = backend == "analytic";
  return absl::StrCat(analytic ? kCostModelName : kCublasLtMethod, analytic ? " emulated" : "",
                      warm_l2 ? " warm-L2" : " cold-L2", autotune ? " autotune" : " heuristic");
}

}  // namespace wavecrest
