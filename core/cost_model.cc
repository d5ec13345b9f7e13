// The GEMM cost model (core/cost_model.h): alignment by kernel family, each (tile, split-K)
// candidate's waves and time, the best of them as cuBLAS's heuristic picks, and why it is slow.
#include "core/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/attention_cost.h"
#include "core/cost_model_internal.h"

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

using cost_model_internal::CeilDiv;
using cost_model_internal::FinishPrediction;
using cost_model_internal::MemoryBandwidth;

constexpr int64_t kMinVectorBytes = 16;
constexpr int64_t kSplitKPartialBytes = 4;  // split-K partial sums are FP32

double MemoryTime(const GpuSpec& gpu, const CostModelParams& mp, const GemmKey& key) {
  const GemmShape& s = key.shape;
  const double in = DTypeBytes(key.dtype);
  const double bytes = (static_cast<double>(s.m) * s.k + static_cast<double>(s.k) * s.n) * in +
                       static_cast<double>(s.m) * s.n * OutputDTypeBytes(key.dtype);
  return bytes * static_cast<double>(s.batch) / MemoryBandwidth(gpu, mp);
}

// Operand reuse of a tile: multiply-adds per operand element loaded, up to a constant.
double Reuse(const TileShape& t) {
  return static_cast<double>(t.m) * static_cast<double>(t.n) / static_cast<double>(t.m + t.n);
}

// Whether the GEMM runs one of Hopper's kernels without TMA (a leading dimension below 16 bytes;
// `min_bytes`: MinAlignmentBytes(key)). Their mainloop and pipeline differ from the TMA kernels'.
bool HopperWithoutTma(const GpuSpec& gpu, int64_t min_bytes) {
  return gpu.compute_capability >= 90 && min_bytes < kMinVectorBytes;
}

// Elements of K one mainloop slice consumes: Hopper's kernels without TMA take K in narrow slices
// (misaligned_k_tile_bytes), the others in k_tile_bytes.
int64_t KTile(const GpuSpec& gpu, const CostModelParams& mp, DType dtype, int64_t min_bytes) {
  return std::max<int64_t>(
      1, (HopperWithoutTma(gpu, min_bytes) ? mp.misaligned_k_tile_bytes : mp.k_tile_bytes) /
             DTypeBytes(dtype));
}

// The pipeline's prologue and epilogue in K elements: Hopper's kernels without TMA have their own
// (at 4-8 bytes and below 4).
double KOverhead(const GpuSpec& gpu, const CostModelParams& mp, int64_t min_bytes) {
  if (!HopperWithoutTma(gpu, min_bytes)) return mp.k_overhead;
  return min_bytes >= 4 ? mp.vector_k_overhead : mp.narrow_k_overhead;
}

// Bytes of the operands an FP8 GEMM must transpose first to run as TN (0 when none must).
double Fp8TransposeBytes(const GpuSpec& gpu, const GemmKey& key) {
  if (!Fp8NeedsTn(gpu, key.dtype) || key.layout == Layout::kTN) return 0;
  const GemmShape& s = key.shape;
  const double batch = static_cast<double>(s.batch);
  // cuBLAS's A is the row-major B[K×N] (needs op T: NN and NT have N); cuBLAS's B is the
  // row-major A[M×K] (needs op N: NT has T).
  double bytes = static_cast<double>(s.k) * static_cast<double>(s.n) * batch;
  if (key.layout == Layout::kNT)
    bytes += static_cast<double>(s.m) * static_cast<double>(s.k) * batch;
  return bytes * DTypeBytes(key.dtype);
}

// "n = 50257, the leading dimension of C, is not a multiple of 8 bf16 elements (16 bytes): no TMA
// kernel on Hopper; predicted 4.9x the time of n = 50264" (empty when every operand is aligned).
std::string AlignmentPenalty(const GpuSpec& gpu, const GemmKey& key) {
  if (MinAlignmentBytes(key) >= kMinVectorBytes) return "";
  // The misaligned dimensions, each with the operands it leads ("k" of "A and B").
  std::vector<std::pair<char, std::string>> dims;
  for (const LeadingDim& d : LeadingDimsOf(key)) {
    if (std::min(kMinVectorBytes, LargestPow2Factor(d.value * DTypeBytes(key.dtype))) >=
        kMinVectorBytes) {
      continue;
    }
    auto it =
        std::find_if(dims.begin(), dims.end(), [&](const auto& x) { return x.first == d.dim; });
    if (it == dims.end()) {
      dims.push_back({d.dim, std::string(1, d.operand)});
    } else {
      absl::StrAppend(&it->second, " and ", std::string(1, d.operand));
    }
  }
  const GemmKey aligned = AlignedNeighbour(key);
  auto value = [](const GemmShape& s, char dim) {
    return dim == 'm' ? s.m : dim == 'n' ? s.n : s.k;
  };
  std::vector<std::string> named, padded;
  for (const auto& [dim, operands] : dims) {
    named.push_back(absl::StrFormat("%c = %d, the leading dimension of %s,", dim,
                                    value(key.shape, dim), operands));
    padded.push_back(absl::StrFormat("%c = %d", dim, value(aligned.shape, dim)));
  }
  const double slowdown = PredictGemmTime(gpu, key) / PredictGemmTime(gpu, aligned);
  return absl::StrFormat(
      "%s %s not a multiple of %d %s elements (16 bytes): %s; predicted %.1fx the time of %s",
      absl::StrJoin(named, " and "), named.size() > 1 ? "are" : "is",
      kMinVectorBytes / DTypeBytes(key.dtype), DTypeName(key.dtype),
      gpu.compute_capability >= 90
          ? absl::StrCat("no TMA kernel on ", gpu.architecture)
          : std::string("cuBLAS falls back to kernels with narrower loads"),
      slowdown, absl::StrJoin(padded, ", "));
}

// Why this GEMM runs slower than its size suggests, in words (for the chosen tile and split).
std::vector<std::string> Penalties(const GpuSpec& gpu, const GemmKey& key,
                                   const GemmPrediction& p) {
  std::vector<std::string> out;
  const GemmShape& s = key.shape;
  const CostModelParams& mp = gpu.Model(key.dtype);
  if (p.transpose_time_s > 0) {
    out.push_back(absl::StrFormat(
        "FP8 runs only as TN on %s: a %s GEMM first transposes its operands (%.0f%% of the time)",
        gpu.architecture, LayoutName(key.layout), 100 * p.transpose_time_s / p.time_s));
  }
  if (std::string why = AlignmentPenalty(gpu, key); !why.empty()) out.push_back(std::move(why));
  // A GEMM bound by memory (decode's skinny M) or by its launch waits on that, not on how its
  // tiles fill the tensor cores: say so, and not the compute-side quantization.
  if (p.bound == Bound::kMemory) {
    const double bytes = p.memory_time_s * MemoryBandwidth(gpu, mp);
    out.push_back(absl::StrFormat(
        "memory-bound: it moves %.1f MB of operands and output, %.0f%% of its time at the "
        "sustained bandwidth, and the tensor cores wait: tile and wave quantization cost nothing "
        "here, and more tokens per step (M) would raise its FLOP/s",
        bytes / 1e6, 100 * p.memory_time_s / p.time_s));
    return out;
  }
  if (p.bound == Bound::kLatency) {
    out.push_back(absl::StrFormat(
        "launch-bound: the kernel's work takes less than its %.1f us launch; fuse or batch it",
        1e6 * (p.time_s - std::max(p.compute_time_s, p.memory_time_s))));
    return out;
  }
  const int64_t min_bytes = MinAlignmentBytes(key);
  const int64_t tk = KTile(gpu, mp, key.dtype, min_bytes);
  const int64_t k_per = CeilDiv(s.k, p.split_k);
  const int64_t k_slice = CeilDiv(k_per, tk) * tk;
  if (static_cast<double>(k_per) < 0.9 * static_cast<double>(k_slice)) {
    out.push_back(absl::StrFormat(
        "K = %d pads to %d in the mainloop's %d-element slices (%.0f%% of the work is useful)",
        k_per, k_slice, tk, 100.0 * static_cast<double>(k_per) / static_cast<double>(k_slice)));
  }
  const double mainloop_share =
      static_cast<double>(k_slice) / (static_cast<double>(k_slice) + KOverhead(gpu, mp, min_bytes));
  if (mainloop_share * (1 - p.epilogue_share) < 0.8) {
    out.push_back(absl::StrFormat(
        "short reduction (K = %d per tile): the pipeline prologue and the output write take %.0f%% "
        "of each wave",
        k_per, 100 * (1 - mainloop_share * (1 - p.epilogue_share))));
  }
  if (p.tile_efficiency < 0.9) {
    out.push_back(absl::StrFormat("tile quantization: %dx%d tiles are %.0f%% full", p.tile.m,
                                  p.tile.n, 100 * p.tile_efficiency));
  }
  if (p.wave_efficiency < 0.9) {
    out.push_back(absl::StrFormat("wave quantization: %d tiles in %d waves of %d (%.0f%% busy)",
                                  p.tiles, p.waves, gpu.sm_count * p.tile.ctas_per_sm,
                                  100 * p.wave_efficiency));
  }
  return out;
}

}  // namespace

bool Fp8NeedsTn(const GpuSpec& gpu, DType dtype) {
  return dtype == DType::kFp8E4M3 && gpu.compute_capability >= 89 && gpu.compute_capability < 100;
}

std::array<LeadingDim, 3> LeadingDimsOf(const GemmKey& key) {
  const GemmShape& s = key.shape;
  switch (key.layout) {
    case Layout::kNN:
      return {{{'A', 'k', s.k}, {'B', 'n', s.n}, {'C', 'n', s.n}}};
    case Layout::kNT:
      return {{{'A', 'm', s.m}, {'B', 'n', s.n}, {'C', 'n', s.n}}};
    case Layout::kTN:
      break;
  }
  return {{{'A', 'k', s.k}, {'B', 'k', s.k}, {'C', 'n', s.n}}};
}

std::array<int64_t, 3> LeadingDims(const GemmKey& key) {
  const std::array<LeadingDim, 3> d = LeadingDimsOf(key);
  return {d[0].value, d[1].value, d[2].value};
}

DimAlignment AlignmentOf(int64_t dim, DType dtype, const GpuSpec& gpu) {
  DimAlignment a;
  a.pow2 = LargestPow2Factor(dim);
  a.meets_rule = dim > 0 && (dim * DTypeBytes(dtype)) % gpu.alignment_bytes == 0;
  return a;
}

namespace {
int64_t AlignmentBytes(int64_t dim, DType dtype) {
  return std::min(kMinVectorBytes, LargestPow2Factor(dim * DTypeBytes(dtype)));
}
}  // namespace

int64_t MinAlignmentBytes(const GemmKey& key) {
  int64_t bytes = kMinVectorBytes;
  for (const LeadingDim& d : LeadingDimsOf(key)) {
    bytes = std::min(bytes, AlignmentBytes(d.value, key.dtype));
  }
  return bytes;
}

bool NarrowOutputOnly(const GemmKey& key) {
  return key.layout == Layout::kTN && AlignmentBytes(key.shape.k, key.dtype) >= 4 &&
         AlignmentBytes(key.shape.n, key.dtype) < 4;
}

AlignmentCost AlignmentCostOf(const GemmKey& key, const GpuSpec& gpu) {
  const CostModelParams& mp = gpu.Model(key.dtype);
  AlignmentCost c;
  c.min_bytes = MinAlignmentBytes(key);
  if (c.min_bytes < kMinVectorBytes) {
    c.memory = mp.misaligned_memory_efficiency;
    if (c.min_bytes >= 4) {
      c.compute = mp.vector_efficiency;
    } else if (key.layout == Layout::kNN) {
      c.compute = mp.narrow_nn_efficiency;
    } else if (key.layout == Layout::kNT) {
      c.compute = mp.narrow_nt_efficiency;
    } else if (NarrowOutputOnly(key)) {
      c.compute = mp.narrow_tn_output_efficiency;
    } else {
      c.compute = mp.narrow_tn_efficiency;
    }
    return c;
  }
  std::array<int64_t, 3> all = LeadingDims(key);
  std::sort(all.begin(), all.end());
  const auto end = std::unique(all.begin(), all.end());
  for (auto it = all.begin(); it != end; ++it) {
    const int64_t d = *it;
    if ((d * DTypeBytes(key.dtype)) % gpu.alignment_bytes != 0) {
      c.compute *= mp.sub_alignment_efficiency;
    }
  }
  return c;
}

double AlignmentEfficiency(const GemmKey& key, const GpuSpec& gpu) {
  return AlignmentCostOf(key, gpu).compute;
}

GemmKey AlignedNeighbour(const GemmKey& key) {
  GemmKey out = key;
  const int64_t step = std::max<int64_t>(1, kMinVectorBytes / DTypeBytes(key.dtype));
  for (const LeadingDim& d : LeadingDimsOf(key)) {
    if (AlignmentBytes(d.value, key.dtype) >= kMinVectorBytes) continue;
    int64_t& dim = d.dim == 'm' ? out.shape.m : d.dim == 'n' ? out.shape.n : out.shape.k;
    dim = CeilDiv(dim, step) * step;
  }
  return out;
}

bool HasStreamK(const GpuSpec& gpu, const AlignmentCost& align) {
  return gpu.compute_capability >= 90 && align.min_bytes >= kMinVectorBytes;
}

namespace {

// Sustained-clock stretch of a compute time t (TilePrediction's clock term); increasing in t.
double ClockStretch(const CostModelParams& mp, double t) {
  if (mp.clock_drop <= 0 || !std::isfinite(t)) return t;
  return t / (1 - mp.clock_drop * t / (t + mp.clock_tau_s));
}

// One (tile, split) prediction with the alignment factor already known. With `stream_k` (split_k
// 1), the persistent kernel's stream-K schedule: the K iterations of all tiles are dealt evenly
// to the slots, so the mainloop runs tiles/slots waves, not ceil(tiles/slots); the tiles cut
// between two slots add a fix-up (partial sums in FP32 written and read back).
// `reuse`: TileReuse(mp, tile, best_reuse), computed once per tile by the caller.
GemmPrediction TilePrediction(const GpuSpec& gpu, const CostModelParams& mp, const GemmKey& key,
                              const TileShape& tile, int64_t split_k, const AlignmentCost& align,
                              double reuse, bool stream_k = false) {
  const double align_eff = align.compute;
  const GemmShape& s = key.shape;
  GemmPrediction p;
  p.tile = tile;
  p.split_k = split_k;
  p.stream_k = stream_k;
  const double peak = gpu.PeakFlops(key.dtype);
  const int64_t tm = CeilDiv(s.m, tile.m);
  const int64_t tn = CeilDiv(s.n, tile.n);
  p.tiles = tm * tn * s.batch * split_k;
  const int64_t slots = gpu.sm_count * tile.ctas_per_sm;
  p.waves = CeilDiv(p.tiles, slots);
  p.tile_efficiency = static_cast<double>(s.m) * s.n /
                      (static_cast<double>(tm * tile.m) * static_cast<double>(tn * tile.n));
  p.wave_efficiency = static_cast<double>(p.tiles) / (static_cast<double>(p.waves) * slots);
  p.alignment_efficiency = align_eff;
  const int64_t tile_k = KTile(gpu, mp, key.dtype, align.min_bytes);
  const double k_slice = static_cast<double>(CeilDiv(CeilDiv(s.k, split_k), tile_k) * tile_k) +
                         KOverhead(gpu, mp, align.min_bytes);
  const double mem_bw = MemoryBandwidth(gpu, mp);
  if (peak <= 0) {
    p.compute_time_s = std::numeric_limits<double>::infinity();
  } else {
    const double t_main = 2.0 * tile.m * tile.n * k_slice * static_cast<double>(slots) /
                          (peak * mp.peak_fraction * reuse * align_eff);
    const double t_epilogue = mp.epilogue_weight * static_cast<double>(slots) * tile.m * tile.n *
                              OutputDTypeBytes(key.dtype) / mem_bw;
    p.compute_time_s = static_cast<double>(p.waves) * (t_main + t_epilogue + mp.wave_latency_s);
    p.epilogue_share = t_epilogue / (t_main + t_epilogue + mp.wave_latency_s);
    if (stream_k && p.tiles % slots != 0) {
      const double fractional = static_cast<double>(p.tiles) / static_cast<double>(slots);
      const double fixup = mp.stream_k_fixup_weight * 2.0 * kSplitKPartialBytes *
                           static_cast<double>(slots) * tile.m * tile.n / mem_bw;
      p.compute_time_s = fractional * t_main +
                         static_cast<double>(p.waves) * (t_epilogue + mp.wave_latency_s) + fixup;
      p.wave_efficiency = fractional * t_main / (fractional * t_main + fixup);
    }
    if (split_k > 1) {
      p.compute_time_s += mp.split_k_weight * 2.0 * kSplitKPartialBytes * split_k *
                          static_cast<double>(s.m) * s.n * static_cast<double>(s.batch) /
                          gpu.memory_bandwidth_bytes_per_s;
    }
  }
  // Sustained clocks: a kernel that keeps the tensor cores busy longer draws the GPU's power for a
  // larger share of the time and runs at a lower clock (duty cycle t / (t + tau)).
  p.compute_time_s = ClockStretch(mp, p.compute_time_s);
  // Kernels without TMA stream operands and write the output with narrower accesses.
  p.memory_time_s = MemoryTime(gpu, mp, key) / align.memory;
  FinishPrediction(p, GemmFlops(s), mp.launch_s);
  return p;
}

double BestReuse(const CostModelParams& mp, const TileShape& fallback) {
  return Reuse(mp.tiles.empty() ? fallback : mp.tiles.front());
}

// How much of the best tile's rate `tile` reaches for its smaller operand reuse.
double TileReuse(const CostModelParams& mp, const TileShape& tile, double best_reuse) {
  return std::pow(Reuse(tile) / best_reuse, mp.tile_reuse_exponent);
}

// A lower bound on TilePrediction(...).time_s of `tile` with split `split` (split 1: also the
// stream-K schedule), so BestTile can skip what cannot win. Every wave-, tile- and K-rounding,
// epilogue and latency term is >= 0 and left out: the mainloop does at least tiles x K of work at
// the tile's rate, plus the split's partial sums. 0 (no bound) when a parameter would break that.
class TileLowerBound {
 public:
  TileLowerBound(const GpuSpec& gpu, const CostModelParams& mp, const GemmKey& key,
                 const TileShape& tile, double reuse, double align_eff, double memory_time_s)
      : mp_(mp), memory_time_s_(memory_time_s) {
    const double peak = gpu.PeakFlops(key.dtype);
    valid_ = peak > 0 && mp.k_overhead >= 0 && mp.vector_k_overhead >= 0 &&
             mp.narrow_k_overhead >= 0 && mp.split_k_weight >= 0 && mp.clock_drop < 1 &&
             mp.clock_tau_s >= 0 && mp.launch_s >= 0;
    if (!valid_) return;
    const GemmShape& s = key.shape;
    const double output_tiles = static_cast<double>(CeilDiv(s.m, tile.m)) *
                                static_cast<double>(CeilDiv(s.n, tile.n)) *
                                static_cast<double>(s.batch);
    mainloop_s_ = output_tiles * 2.0 * tile.m * tile.n * static_cast<double>(s.k) /
                  (peak * mp.peak_fraction * reuse * align_eff);
    partials_s_ = mp.split_k_weight * 2.0 * kSplitKPartialBytes;
    partials_scale_ = static_cast<double>(s.m) * s.n * static_cast<double>(s.batch) /
                      gpu.memory_bandwidth_bytes_per_s;
  }
  // The bound with split `split` (split 1 also covers the stream-K schedule); 0 when none.
  double At(int64_t split) const {
    if (!valid_) return 0;
    double t = mainloop_s_;
    if (split > 1) t += partials_s_ * split * partials_scale_;
    // Below the exact figure by far more than rounding, so a skipped tile could never have won.
    return (mp_.launch_s + std::max(ClockStretch(mp_, t), memory_time_s_)) * (1 - 1e-9);
  }

 private:
  const CostModelParams& mp_;
  double memory_time_s_;
  bool valid_ = false;
  double mainloop_s_ = 0, partials_s_ = 0, partials_scale_ = 0;
};

// The best (tile, split) as cuBLAS's heuristic tries to pick, without band and reasons.
GemmPrediction BestTile(const GpuSpec& gpu, const GemmKey& key) {
  const CostModelParams& mp = gpu.Model(key.dtype);
  const AlignmentCost align = AlignmentCostOf(key, gpu);
  GemmPrediction best;
  best.time_s = std::numeric_limits<double>::infinity();
  if (mp.tiles.empty()) return best;
  const double best_reuse = BestReuse(mp, mp.tiles.front());
  const bool stream_k = HasStreamK(gpu, align);
  const double memory_time_s = MemoryTime(gpu, mp, key) / align.memory;
  for (const TileShape& tile : mp.tiles) {
    const double reuse = TileReuse(mp, tile, best_reuse);
    // The bound grows with the split: once one split cannot win, no larger one can.
    const TileLowerBound bound(gpu, mp, key, tile, reuse, align.compute, memory_time_s);
    auto cannot_win = [&](int64_t split) { return bound.At(split) >= best.time_s; };
    if (cannot_win(1)) continue;  // covers stream-K too
    for (int64_t split = 1; split <= mp.max_split_k; split *= 2) {
      if (split > 1 && key.shape.k / split < mp.min_split_k_slice) break;
      if (split > 1 && cannot_win(split)) break;
      GemmPrediction p = TilePrediction(gpu, mp, key, tile, split, align, reuse);
      if (p.time_s < best.time_s) best = p;
    }
    if (stream_k) {
      GemmPrediction p = TilePrediction(gpu, mp, key, tile, 1, align, reuse, true);
      if (p.time_s < best.time_s) best = p;
    }
  }
  // The GEMM kernel is never faster than the datasheet's dense peak.
  const double ceiling = gpu.PeakFlops(key.dtype);
  if (ceiling > 0) best.time_s = std::max(best.time_s, GemmFlops(key.shape) / ceiling);
  // FP8 on Ada and Hopper runs in TN only: another layout first copies the operands cuBLAS needs
  // transposed (Transformer Engine keeps transposed FP8 copies; XLA transposes): one more kernel
  // that reads and writes each such operand.
  const double copy_bytes = Fp8TransposeBytes(gpu, key);
  if (copy_bytes > 0) {
    best.transpose_time_s = mp.fp8_transpose_launch_s +
                            mp.fp8_transpose_weight * 2 * copy_bytes / MemoryBandwidth(gpu, mp);
    best.time_s += best.transpose_time_s;
  }
  best.tflops = GemmFlops(key.shape) / best.time_s / 1e12;
  return best;
}

}  // namespace

GemmPrediction PredictGemmWithTile(const GpuSpec& gpu, const GemmKey& key, const TileShape& tile,
                                   int64_t split_k) {
  const CostModelParams& mp = gpu.Model(key.dtype);
  return TilePrediction(gpu, mp, key, tile, split_k, AlignmentCostOf(key, gpu),
                        TileReuse(mp, tile, BestReuse(mp, tile)));
}

double PredictGemmTime(const GpuSpec& gpu, const GemmKey& key) { return BestTile(gpu, key).time_s; }

GemmKernelTimes PredictGemmKernels(const GpuSpec& gpu, const GemmKey& key) {
  const GemmPrediction p = BestTile(gpu, key);
  return {p.time_s - p.transpose_time_s, p.transpose_time_s};
}

GemmPrediction PredictGemm(const GpuSpec& gpu, const GemmKey& key) {
  GemmPrediction best = BestTile(gpu, key);
  std::tie(best.band_p10, best.band_p90) = ErrorBand(gpu, key.dtype, best.time_s, AlignedGemm(key));
  best.penalties = Penalties(gpu, key, best);
  return best;
}

bool AlignedGemm(const GemmKey& key) { return MinAlignmentBytes(key) >= 16; }

std::pair<double, double> ErrorBand(const GpuSpec& gpu, DType dtype, double time_s, bool aligned) {
  const CalibrationInfo& c = gpu.Calibration(dtype);
  std::pair<double, double> band{0.0, 0.0};
  if (!c.bands.empty()) band = {c.bands.back().p10, c.bands.back().p90};
  for (const CalibrationInfo::Band& b : c.bands) {
    if (time_s <= b.max_time_s) {
      band = {b.p10, b.p90};
      break;
    }
  }
  if (!aligned && c.misaligned_band) {
    band.first = std::min(band.first, c.misaligned_band->p10);
    band.second = std::max(band.second, c.misaligned_band->p90);
  }
  return band;
}

GemmPrediction Predict(const GpuSpec& gpu, const Gemm& gemm) {
  return gemm.fused_attention ? PredictFusedAttention(gpu, gemm) : PredictGemm(gpu, gemm.key());
}

std::string TimingMethod(absl::string_view backend, bool autotune, bool warm_l2) {
  const bool analytic = backend == "analytic";
  return absl::StrCat(analytic ? kCostModelName : kCublasLtMethod, analytic ? " emulated" : "",
                      warm_l2 ? " warm-L2" : " cold-L2", autotune ? " autotune" : " heuristic");
}

}  // namespace wavecrest
