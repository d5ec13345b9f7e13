// The analytic cost model: a prediction of one GEMM's time on one catalogued GPU, with parameters
// per GPU and dtype (CostModelParams, core/gpu_catalog.h) that `wavecrest calibrate` fits to
// measurements (core/calibration.h).
//
// For every tile T = (Tm, Tn, c = CTAs per SM) in the menu and every split-K factor S (powers of
// two with K/S >= min_split_k_slice, S <= max_split_k):
//
//   tiles      = ceil(M/Tm) · ceil(N/Tn) · batch · S
//   slots      = SMs · c                                   (tiles that run at once: one wave)
//   waves      = ceil(tiles / slots)
//   tile_eff   = M·N / (ceil(M/Tm)·Tm · ceil(N/Tn)·Tn)     (tile quantization)
//   wave_eff   = tiles / (waves · slots)                   (wave quantization)
//   align_eff  = by the smallest alignment of A's, B's and C's leading dimensions (bytes, at most
//                16): 1 at 16 bytes; vector_efficiency at 4 or 8; narrow_{tn,nn,nt}_efficiency
//                below 4 (per layout; TN with aligned inputs and a narrow output:
//                narrow_tn_output_efficiency); and sub_alignment_efficiency^(leading dimensions missing
//                the GPU's 128-byte preference; 1 by the evidence)
//   mem_eff    = misaligned_memory_efficiency below 16 bytes, else 1
//   K_slice    = ceil(ceil(K/S) / Tk) · Tk,  Tk = k_tile_bytes / dtype bytes  (K quantization: the
//                mainloop consumes K in fixed slices, so K = 80 costs what K = 128 does in BF16);
//                Hopper's kernels without TMA take misaligned_k_tile_bytes (16) instead
//   reuse      = (I(T) / I(best))^γ, I = Tm·Tn/(Tm+Tn)     (smaller tiles reuse operands less)
//   k_overhead = the pipeline's prologue and epilogue in K elements; on Hopper the kernels without
//                TMA have their own (vector_k_overhead at 4-8 bytes, narrow_k_overhead below)
//   t_main     = 2·Tm·Tn·(K_slice + k_overhead) · slots / (peak · peak_fraction · reuse ·
//                align_eff)
//   t_epilogue = epilogue_weight · slots·Tm·Tn·out_bytes / (BW · memory_efficiency)
//   t_compute  = waves · (t_main + t_epilogue) + t_reduce,  t_reduce = 2·4·S·M·N·batch / BW_eff
//   t_memory   = ((M·K + K·N)·in_bytes + M·N·out_bytes) · batch / (BW · memory_efficiency ·
//                mem_eff)
//   stream-K   (Hopper and later, 16-byte aligned): the mainloop runs tiles/slots waves instead
//                of waves; + stream_k_fixup_weight · 2·4·slots·Tm·Tn / BW_eff when tiles do not
//                fill whole waves (the tiles cut between two SMs reduce FP32 partial sums)
//   t          = launch_s + max(t_compute, t_memory)  (+ t_transpose: FP8 on Ada and Hopper runs
//                only as TN, so another layout first copies the operands it needs transposed:
//                launch_s + 2·bytes / BW_eff)
//
// and the prediction is the (tile, S) with the smallest t, as cuBLAS's heuristic tries to pick;
// ties go to the larger tile and the smaller S. The GEMM is compute-, memory- or latency-bound by
// which of t_compute, t_memory and launch_s is largest. K does not enter tiles or waves: it sets
// the time per wave (and, through k_overhead and the epilogue, makes short reductions less
// efficient: the paper's small-K attention GEMMs); split-K turns K back into parallelism.
//
// Why alignment costs what it does: on Hopper, cuBLASLt's fast kernels load operands with the TMA
// engine, which needs every leading dimension to be a multiple of 16 bytes. When one is not (A's,
// B's or C's: which one hardly matters), cuBLASLt runs a kernel family without TMA at a fraction
// of the speed: 3-8x slower on an H100 (the device sweeps in data/measurements/). GPUs without TMA
// pay a smaller, unmeasured price (a prior). 16-byte aligned dimensions that miss the 128-byte
// preference cost nothing measurable (CostModelParams has the evidence of each constant).
//
// The other kernels of a step have their own files: fused attention core/attention_cost.h, the
// elementwise work (norms, activations, softmax, the loss, FP8 casts) core/elementwise_cost.h.
#ifndef WAVECREST_CORE_COST_MODEL_H_
#define WAVECREST_CORE_COST_MODEL_H_

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"

namespace wavecrest {

// Names the model and its version; every PREDICTED number carries it. v3: fused attention priced
// by the blocks it visits (half under a causal mask), fitted to cuDNN's published times. v4: a
// causal kernel's unequal blocks end with a tail (few-wave prefill), and the refit constants.
// v5: alignment by kernel family (the smallest alignment of A, B and C picks TMA, 4-8-byte or
// narrower kernels, each with its own rate and bandwidth), fitted with the rest to cuBLASLt 13.1
// through PyTorch on H100 and H200 (the device sweeps). v6: TN with only the output misaligned
// (an odd vocabulary's logits) as its own, slower family; Hopper's kernels without TMA take K in
// 16-byte slices; the offline fit with more starts. v7: Hopper's kernels without TMA have their
// own pipeline prologue (vector_k_overhead, narrow_k_overhead: short reductions such as attention
// with an odd head dim); XLA's FP8 rows on Hopper fitted as the median of their two kernels.
inline constexpr absl::string_view kCostModelName = "wavecrest-analytic-v7";
// The library whose kernels the model describes (a prediction's provenance names it).
inline constexpr absl::string_view kModelledLibrary = "cuBLASLt 13.1 (through PyTorch 2.11)";
// The GPU workers' timing method (gpu_worker/cuda): bump the version whenever what a figure means
// changes (warm-up, sampling, statistics), so that the measurement store never mixes methods.
inline constexpr absl::string_view kCublasLtMethod = "cublaslt-timing-v2";

// The method string of a worker's result, part of the measurement store's key:
// "cublaslt-timing-v2 cold-L2 heuristic", "wavecrest-analytic-v7 emulated autotune", ...
// For a measured result, warm_l2 is the state the engine achieved (see core/gemm_plan.h).
// `backend` is the worker's backend ("cublaslt" or "analytic").
std::string TimingMethod(absl::string_view backend, bool autotune, bool warm_l2);

enum class Bound { kCompute, kMemory, kLatency };
absl::string_view BoundName(Bound bound);  // "compute", "memory", "latency"

struct GemmPrediction {
  double time_s = 0;
  // Relative error band of time_s from the calibration (measured/predicted − 1 at p10 and p90).
  double band_p10 = 0;
  double band_p90 = 0;
  double tflops = 0;  // achieved: useful FLOPs / time_s / 1e12
  Bound bound = Bound::kCompute;
  TileShape tile;
  int64_t split_k = 1;
  bool stream_k = false;  // the persistent stream-K schedule (Hopper and later, TMA kernels)
  int64_t tiles = 0;
  int64_t waves = 0;
  double tile_efficiency = 1;
  double wave_efficiency = 1;
  double alignment_efficiency = 1;
  double compute_time_s = 0;
  double memory_time_s = 0;
  double epilogue_share = 0;  // of each wave's compute time, the output write
  // FP8 on Ada/Hopper in a layout other than TN: the transpose kernel before the GEMM (in time_s).
  double transpose_time_s = 0;
  // Why the GEMM loses speed, in words: "K = 80 pads to 128 in the mainloop (62% of the slices
  // do work)", "a leading dimension (10922) is not a multiple of 16 bytes: narrow-load kernels"
  std::vector<std::string> penalties;
};

// The alignment of one dimension for one dtype on one GPU.
struct DimAlignment {
  int64_t pow2 = 0;         // largest power of two dividing the dimension
  bool meets_rule = false;  // dim·bytes is a multiple of the GPU's alignment_bytes
};
DimAlignment AlignmentOf(int64_t dim, DType dtype, const GpuSpec& gpu);

// One operand's leading (contiguous) dimension, in the row-major terms of core/gemm.h: TN is
// A[m,k]·B[n,k]ᵀ (leading k, k; C's n), NN is A[m,k]·B[k,n] (k, n; n), NT is A[k,m]ᵀ·B[k,n]
// (m, n; n).
struct LeadingDim {
  char operand;  // 'A', 'B' or 'C'
  char dim;      // 'm', 'n' or 'k'
  int64_t value;
};
std::array<LeadingDim, 3> LeadingDimsOf(const GemmKey& key);
// Their values alone: A's, B's, then C's.
std::array<int64_t, 3> LeadingDims(const GemmKey& key);

// The smallest alignment of the leading dimensions, in bytes: the largest power of two dividing
// ld · element bytes, at most 16 (16 = every operand can use TMA).
int64_t MinAlignmentBytes(const GemmKey& key);
// Whether every leading dimension is a multiple of 16 bytes (TMA kernels on Hopper; the class a
// misaligned GEMM's error band and the calibration report tell apart).
bool AlignedGemm(const GemmKey& key);

// A TN GEMM whose inputs' leading dimension (k) is at least 4-byte aligned and whose output's (n)
// is not: cuBLASLt's kernels for it run slower than for misaligned inputs (narrow_tn_output_...).
bool NarrowOutputOnly(const GemmKey& key);

// What alignment costs a GEMM with this key (see the file comment): factors of the mainloop's
// rate and of the bandwidth reached.
struct AlignmentCost {
  int64_t min_bytes = 16;
  double compute = 1;
  double memory = 1;
};
AlignmentCost AlignmentCostOf(const GemmKey& key, const GpuSpec& gpu);
// Its compute factor alone.
double AlignmentEfficiency(const GemmKey& key, const GpuSpec& gpu);

// Whether cuBLASLt has a persistent stream-K kernel for such a GEMM: its TMA kernels on Hopper and
// later (the kernels without TMA are the older data-parallel ones, and pay wave quantization).
bool HasStreamK(const GpuSpec& gpu, const AlignmentCost& align);

// The same GEMM with every leading dimension that misses 16 bytes rounded up to the next multiple
// of 16 bytes (the shape a team would pad to).
GemmKey AlignedNeighbour(const GemmKey& key);

// The relative error band of a prediction of `time_s` for this GPU and dtype (p10, p90 of
// measured/predicted − 1). A GEMM that is not `aligned` (a leading dimension misses 16 bytes)
// takes the wider of its size class's band and the misaligned rows' band, where the fit had one.
std::pair<double, double> ErrorBand(const GpuSpec& gpu, DType dtype, double time_s,
                                    bool aligned = true);

// Best prediction over the tile menu and split-K factors. The dtype must be supported by the GPU
// (callers check Supports first; an unsupported dtype predicts an infinite time).
GemmPrediction PredictGemm(const GpuSpec& gpu, const GemmKey& key);

// FP8 on this GPU runs in the TN layout only (Ada and Hopper); other layouts transpose first.
bool Fp8NeedsTn(const GpuSpec& gpu, DType dtype);

// The time of PredictGemm alone, without its band and reasons: the fitter's hot path.
double PredictGemmTime(const GpuSpec& gpu, const GemmKey& key);

// PredictGemmTime's kernels apart: the GEMM kernel's own time (at least the datasheet peak's) and
// the FP8 transpose kernel's that runs before it (0 when none does). A source that times kernels
// one by one (XLA's table: the median of every kernel it traced) reports them apart.
struct GemmKernelTimes {
  double gemm_s = 0;
  double transpose_s = 0;
};
GemmKernelTimes PredictGemmKernels(const GpuSpec& gpu, const GemmKey& key);

// The prediction for one given tile and split-K factor (what PredictGemm minimises over).
GemmPrediction PredictGemmWithTile(const GpuSpec& gpu, const GemmKey& key, const TileShape& tile,
                                   int64_t split_k);

// PredictGemm, or for a fused attention kernel PredictFusedAttention (core/attention_cost.h).
GemmPrediction Predict(const GpuSpec& gpu, const Gemm& gemm);

// 1.2816 standard deviations: the p10 and p90 of a normally distributed error (a band of
// ±kP90Sigmas · sigma).
inline constexpr double kP90Sigmas = 1.2816;

}  // namespace wavecrest

#endif  // WAVECREST_CORE_COST_MODEL_H_
