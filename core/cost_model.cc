#include "core/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

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
constexpr int64_t kFlashKeyBlock = 128;    // key rows per mainloop step
constexpr double kFlashHeadDimFull = 128;  // head dim at which the kernel reaches its fraction

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

double MemoryBandwidth(const GpuSpec& gpu, const CostModelParams& mp) {
  return gpu.memory_bandwidth_bytes_per_s * mp.memory_efficiency;
}

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

void Finish(GemmPrediction& p, double useful_flops, double launch_s) {
  const double work = std::max(p.compute_time_s, p.memory_time_s);
  p.time_s = launch_s + work;
  if (launch_s > work) {
    p.bound = Bound::kLatency;
  } else if (p.memory_time_s > p.compute_time_s) {
    p.bound = Bound::kMemory;
  } else {
    p.bound = Bound::kCompute;
  }
  p.tflops = useful_flops / p.time_s / 1e12;
}

// Whether the GEMM runs one of Hopper's kernels without TMA (a leading dimension below 16 bytes;
// `min_bytes`: MinAlignmentBytes(key)). Their mainloop and pipeline differ from the TMA kernels'.
bool HopperWithoutTma(const GpuSpec& gpu, int64_t min_bytes) {
  return gpu.compute_capability >= 90 && min_bytes < kMinVectorBytes;
}

// Elements of K one mainloop slice consumes: Hopper's kernels without TMA take K in narrow slices
// (misaligned_k_tile_bytes), the others in k_tile_bytes.
int64_t KTile(const GpuSpec& gpu, const CostModelParams& mp, DType dtype, int64_t min_bytes) {
  return std::max<int64_t>(1, (HopperWithoutTma(gpu, min_bytes) ? mp.misaligned_k_tile_bytes
                                                                 : mp.k_tile_bytes) /
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
    auto it = std::find_if(dims.begin(), dims.end(), [&](const auto& x) { return x.first == d.dim; });
    if (it == dims.end()) {
      dims.push_back({d.dim, std::string(1, d.operand)});
    } else {
      absl::StrAppend(&it->second, " and ", std::string(1, d.operand));
    }
  }
  const GemmKey aligned = AlignedNeighbour(key);
  auto value = [](const GemmShape& s, char dim) { return dim == 'm' ? s.m : dim == 'n' ? s.n : s.k; };
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
      static_cast<double>(k_slice) /
      (static_cast<double>(k_slice) + KOverhead(gpu, mp, min_bytes));
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
  const double k_slice =
      static_cast<double>(CeilDiv(CeilDiv(s.k, split_k), tile_k) * tile_k) +
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
  Finish(p, GemmFlops(s), mp.launch_s);
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
  std::tie(best.band_p10, best.band_p90) =
      ErrorBand(gpu, key.dtype, best.time_s, AlignedGemm(key));
  best.penalties = Penalties(gpu, key, best);
  return best;
}

bool AlignedGemm(const GemmKey& key) { return MinAlignmentBytes(key) >= 16; }

std::pair<double, double> ErrorBand(const GpuSpec& gpu, DType dtype, double time_s,
                                    bool aligned) {
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

namespace {

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

// Why a fused attention is slow, as for a GEMM: what the kernel's shape costs, largest effects
// named.
void AddAttentionPenalties(const GpuSpec& gpu, const Gemm& gemm, int64_t padded_d,
                           double d_factor, double overhead_share, GemmPrediction& p) {
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

}  // namespace

GemmPrediction PredictFusedAttention(const GpuSpec& gpu, const Gemm& gemm) {
  const GemmShape& s = gemm.shape;  // (s_q, s_kv, d, batch)
  const CostModelParams& mp = gpu.Model(gemm.dtype);
  GemmPrediction p;
  const double peak = gpu.PeakFlops(gemm.dtype);
  const int64_t d = s.k;
  const int64_t padded_d = CeilDiv(d, kFlashHeadDimStep) * kFlashHeadDimStep;
  const bool forward = gemm.pass == Pass::kForward;
  const FusedKernelRate kernel = FusedKernelRateOf(gpu, gemm.dtype, gemm.kernel, gemm.pass);
  const double fraction =
      (forward ? mp.flash_forward_fraction : mp.flash_backward_fraction) * kernel.rate;
  // Small head dims keep the tensor cores less busy per byte of K and V loaded.
  const double exponent =
      forward ? mp.flash_head_dim_exponent : mp.flash_backward_head_dim_exponent;
  const double d_factor =
      std::min(1.0, std::pow(static_cast<double>(padded_d) / kFlashHeadDimFull, exponent));
  const FlashBlocks blocks = BlocksVisited(gemm, mp);
  const int64_t q_blocks = blocks.q_blocks, kv_blocks = blocks.kv_blocks;
  const double visited = blocks.visited, longest_blocks = blocks.longest;
  const double causal_efficiency = blocks.causal_efficiency;
  // (Decode's single query row fills one row of a block, not 128: its work is that row's.)
  const double block_rows = static_cast<double>(std::min(s.m, kFlashQueryBlock));
  const double per_block_flops =
      gemm.flops / GemmFlops(s) * 2.0 * block_rows * kFlashKeyBlock * static_cast<double>(d);
  const double work_flops = (visited + mp.flash_block_overhead * static_cast<double>(q_blocks)) *
                            static_cast<double>(s.batch) * per_block_flops;
  p.tile = {kFlashQueryBlock, kFlashKeyBlock, 1};
  p.tiles = q_blocks * s.batch;
  p.waves = CeilDiv(p.tiles, gpu.sm_count);
  p.tile_efficiency = static_cast<double>(d) / static_cast<double>(padded_d);
  p.wave_efficiency = static_cast<double>(p.tiles) / (static_cast<double>(p.waves) * gpu.sm_count);
  if (gemm.causal && p.tiles > 0 && gpu.sm_count > 0) {
    // Unequal blocks: the makespan (in block units per SM) against the mean load per SM.
    const double longest = longest_blocks + mp.flash_block_overhead;
    const double mean = (visited + mp.flash_block_overhead * static_cast<double>(q_blocks)) *
                        static_cast<double>(s.batch) / static_cast<double>(gpu.sm_count);
    const double makespan = p.tiles <= gpu.sm_count
                                ? longest
                                : std::max(longest, mean + mp.flash_tail_fraction * longest);
    p.wave_efficiency = mean / makespan;
  }
  p.alignment_efficiency = 1.0;
  if (peak <= 0) {
    p.compute_time_s = std::numeric_limits<double>::infinity();
  } else {
    p.compute_time_s = work_flops / (peak * fraction * d_factor * causal_efficiency *
                                     p.tile_efficiency * p.wave_efficiency);
  }
  const double overhead_share = mp.flash_block_overhead * static_cast<double>(q_blocks) /
                                (visited + mp.flash_block_overhead * static_cast<double>(q_blocks));
  AddAttentionPenalties(gpu, gemm, padded_d, d_factor, overhead_share, p);
  if (kernel.rate < 1) {
    p.penalties.push_back(absl::StrFormat(
        "%s kernel: %.0f%% of the calibrated fused kernel's %s rate (FlashAttention-2 paper)",
        AttentionName(gemm.kernel), 100 * kernel.rate, forward ? "forward" : "backward"));
  }
  p.memory_time_s = AttentionBytes(gemm) / MemoryBandwidth(gpu, mp);
  // The rate is of the work the kernel does (under a causal mask about half the product), as
  // FlashAttention and cuDNN report it; the step's FLOPs (MFU) count the whole product.
  const double done = static_cast<double>(q_blocks) * static_cast<double>(kv_blocks);
  Finish(p, gemm.flops * (done > 0 ? visited / done : 1.0), mp.launch_s);
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

GemmPrediction Predict(const GpuSpec& gpu, const Gemm& gemm) {
  return gemm.fused_attention ? PredictFusedAttention(gpu, gemm) : PredictGemm(gpu, gemm.key());
}

double Fp8CastBytesPerToken(const ModelSpec& spec) {
  const DerivedShape d = Derive(spec);
  const double t = static_cast<double>(spec.tensor_parallel);
  const double h = static_cast<double>(spec.hidden_size);
  const double q = static_cast<double>(d.q_width) / t;                         // attention out
  const double qkv = static_cast<double>(d.q_width + 2 * d.kv_width) / t;      // QKV out
  const auto up_of = [&](double f) { return spec.mlp == Mlp::kGelu ? f : 2 * f; };  // up out
  // Forward: the projection's input (attention's BF16 output) cast alone, read 2 write 1 byte;
  // the other inputs come out of a fused norm or activation already in FP8 (LayerNormLinear,
  // LayerNormMLP). Wgrad needs every input transposed in FP8 (the fused cast-transpose writes one
  // more byte), and backward casts and transposes each output gradient (read 2, write 1 + 1).
  const auto dense = [&](double f) {
    return 3 * q + 1 * (2 * h + q + f) + 4 * (qkv + h + up_of(f) + h);
  };
  if (d.moe_layers == 0) return dense(static_cast<double>(d.active_ffn_per_rank));
  // A MoE layer's experts take their inputs after the permutation and the activation, in BF16,
  // and cast them themselves (Transformer Engine's GroupedLinear quantizes each expert's rows,
  // both orientations: read 2, write 1 + 1), the shared experts' linears likewise; each token's
  // k copies (rows per token on this rank: k × capacity padding × expert TP / t) pass the up
  // projection's input and the down projection's output gradient.
  const double f = static_cast<double>(d.active_ffn_per_rank);
  const double rows = static_cast<double>(spec.experts_per_token) * d.expert_padding *
                      static_cast<double>(ExpertTensorParallel(spec)) / t;
  const double copies = (rows + (spec.shared_expert_ffn_hidden_size > 0 ? 1 : 0)) * h;
  const double moe = 3 * q + 1 * (h + q) + 4 * (copies + f) + 4 * (qkv + h + up_of(f) + copies);
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
  if (d.moe_layers > 0) {
    // A MoE layer permutes each token's k copies into expert order (read h, write k·h) and back,
    // weighted and summed (read k·h, write h); averaged over the layers.
    const double k = static_cast<double>(spec.experts_per_token);
    per_token += 2 * (k + 1) * h * static_cast<double>(d.moe_layers) /
                 static_cast<double>(spec.num_layers);
  }
  double softmax_per_token = 0;
  if (spec.attention == Attention::kUnfused) {
    // Softmax over each score row, read and written, per head on this rank.
    const double kv_len =
        spec.workload == Workload::kDecode ? spec.kv_cache_length : spec.seq_length;
    softmax_per_token = 2 * kv_len * static_cast<double>(d.heads_per_rank);
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
  const double bw =
      gpu.memory_bandwidth_bytes_per_s * gpu.Model(spec.dtype).elementwise_memory_efficiency;
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

std::string TimingMethod(absl::string_view backend, bool autotune, bool warm_l2) {
  const bool analytic = backend == "analytic";
  return absl::StrCat(analytic ? kCostModelName : kCublasLtMethod, analytic ? " emulated" : "",
                      warm_l2 ? " warm-L2" : " cold-L2", autotune ? " autotune" : " heuristic");
}

}  // namespace wavecrest
