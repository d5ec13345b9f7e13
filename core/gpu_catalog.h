// The GPUs wavecrest can predict for, and the parameters of the analytic model for each.
#ifndef WAVECREST_CORE_GPU_CATALOG_H_
#define WAVECREST_CORE_GPU_CATALOG_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model_spec.h"

namespace wavecrest {

// One output tile shape a GEMM kernel family can use.
struct TileShape {
  int64_t m = 0;  // rows of C per CTA (paper M direction)
  int64_t n = 0;  // columns of C per CTA
  // CTAs of this tile that are resident on one SM at once (the c in waves = tiles / (SMs·c)).
  int64_t ctas_per_sm = 1;
};

// Parameters of the analytic cost model (core/cost_model.h) for one GPU and one dtype. Kept in one
// struct so that calibration (core/calibration.h) replaces values, never formulas. Each field says
// where its value comes from: FITTED (by `wavecrest calibrate`, per GPU and dtype, to the
// measurements named in the calibration file), CITED (a public source), or PRIOR (assumed; the
// calibration file lists which GPUs and dtypes still run on priors).
struct CostModelParams {
  // PRIOR: cuBLAS's tile menu (paper notes §4: 256×128 / 128×256 down to 64×64).
  std::vector<TileShape> tiles;
  // FITTED: fraction of the dtype's dense peak that a full wave of the largest tiles reaches in
  // the mainloop. Prior 0.80 (paper notes §5: about 80% on H100 through PyTorch).
  double peak_fraction = 0.80;
  // FITTED: how much less a smaller tile reaches: rate(tile) = rate(best) · (I/I_best)^γ with
  // I = m·n/(m+n), the operand reuse of the tile (multiply-adds per element loaded).
  double tile_reuse_exponent = 0.3;
  // FITTED: pipeline prologue and epilogue of one tile, in K elements at full speed: a tile with
  // reduction K costs as much as K + k_overhead.
  double k_overhead = 32;
  // FITTED on Hopper (the device sweeps), carried with the alignment cliff: the same for the
  // kernels without TMA, at 4-8 bytes (vector) and below 4 (narrow), whose pipelines differ from
  // the TMA kernels'. Only short reductions see it: on both GPUs batched TN with K = 100 or 132
  // (8-byte) ran 11-41% slower than the TMA kernels' overhead predicts, and with K = 63, 65 or
  // 127 (2-byte) mostly 7-17% faster.
  double vector_k_overhead = 32;
  double narrow_k_overhead = 32;
  // FITTED: fixed latency of one wave of tiles, seconds: filling the load pipeline before the
  // first multiply-add and draining the last output, whatever the tile's size.
  double wave_latency_s = 1e-6;
  // FITTED: cost of split-K's partial sums relative to writing and reading them once at the
  // datasheet memory bandwidth (partials of small outputs stay in L2, so less than 1).
  double split_k_weight = 1.0;
  // FITTED: cost of stream-K's fix-up (cost_model.h) relative to writing and reading the FP32
  // partial sums of one wave of tiles once at the effective bandwidth. Hopper and later only:
  // cuBLASLt's persistent TMA kernels deal K iterations evenly to the SMs, so an aligned
  // 2048x2560x2560 on H100 (160 tiles of 256x128, 132 SMs: 61% of a second wave) ran at 620-680
  // TFLOP/s, not the 61% that data-parallel waves would give (the device sweeps).
  double stream_k_fixup_weight = 1.0;
  // FITTED: how much of the transposes an FP8 GEMM in a layout other than TN needs on Ada and
  // Hopper (core/cost_model.h) the measurements include (1 = all of a copy kernel's time).
  double fp8_transpose_weight = 1.0;
  // FITTED: fixed time of those transposes (their kernel launches), seconds.
  double fp8_transpose_launch_s = 4e-6;
  // FITTED: the share of each wave's output write that is not hidden behind the mainloop (1 = the
  // whole wave's tiles are written at memory bandwidth after their math).
  double epilogue_weight = 0.5;
  // FITTED: fixed time of one kernel as the measurement sees it (launch and ramp), seconds, added
  // to the larger of the compute and memory times.
  double launch_s = 4e-6;
  // FITTED: sustained clocks. The mainloop's rate falls by clock_drop · t / (t + clock_tau_s) for
  // a kernel of compute time t: measured back to back, a short kernel leaves the GPU idle between
  // launches (lower average power, clocks near boost), a long one holds it at its power limit.
  // 0 before calibration (no such term).
  double clock_drop = 0;
  double clock_tau_s = 100e-6;
  // FITTED: fraction of the datasheet memory bandwidth that streaming operands reach.
  double memory_efficiency = 0.85;
  // CITED: the mainloop consumes K in slices of this many bytes per operand row; a partial last
  // slice costs a whole one. 128 bytes = the 64-element BF16 K tiles of cuBLAS's Hopper kernels
  // ("tilesize128x256x64") and the "_64x3" stages of its Ampere ones.
  int64_t k_tile_bytes = 128;
  // CHOSEN by cross-validation on the H100 and H200 device sweeps: the slice of K that Hopper's
  // kernels without TMA (a leading dimension below 16 bytes) consume. With 128 bytes, K = 65
  // would cost twice K = 63; on the H100 both ran at 56 TFLOP/s (TN 4096x4096xK, batch 32), and
  // K = 127 ran no faster per FLOP than K = 100. Slices of 128, 64 and 16 bytes were compared
  // (aligned/misaligned pairs within 20% of the measured ratio, both GPUs, 336 pairs: 304, 307,
  // 312); 16 bytes, an 8-element BF16 vector, is the finest. GPUs before Hopper keep
  // k_tile_bytes (no misaligned measurements there).
  int64_t misaligned_k_tile_bytes = 16;
  // PRIOR: smallest split-K slice a kernel will use, and the largest number of slices.
  int64_t min_split_k_slice = 128;
  int64_t max_split_k = 16;
  // Alignment. cuBLASLt picks a kernel family by the smallest alignment of A's, B's and C's
  // leading dimensions: the largest power of two (at most 16) dividing ld · element bytes. At 16
  // bytes Hopper runs its TMA kernels; below, kernels with narrower loads (cp.async of 4 or 8
  // bytes; below 4 bytes, element by element) and stores. The layout matters, and in TN whether
  // the inputs or only the output are misaligned (H100 BF16 medians, large GEMMs: below 4 bytes
  // TN 95 (output) or 120 (inputs), NN 133, NT 148 TFLOP/s; at 4 or 8 bytes 216-244, any
  // layout; aligned 650-750). FITTED on H100 and H200 BF16 to the
  // device sweeps (data/measurements/h1?0-torch-gemm-sweep.csv, cuBLASLt 13.1 through PyTorch
  // 2.11); carried to Blackwell (TMA too); PRIOR on GPUs before Hopper (no TMA, no measurement
  // of a misaligned GEMM there: the 0.685 a public H100 FP16 SwiGLU sweep once showed).
  // The catalog's priors set all six to 0.685 (gpu_catalog.cc); the fits: below.
  //   The mainloop's rate below 4 bytes, per layout, as a factor of the aligned rate (H100 fit:
  //   TN 0.18, NN 0.19, NT 0.22):
  double narrow_tn_efficiency = 0.685;
  //   TN whose inputs are aligned (k) but whose output is not (n below 4 bytes): the logits
  //   GEMM of an odd vocabulary. Its kernels run slower than TN's with misaligned inputs (H100
  //   BF16 medians, large GEMMs: 95 against 120 TFLOP/s; H100 fit 0.14):
  double narrow_tn_output_efficiency = 0.685;
  double narrow_nn_efficiency = 0.685;
  double narrow_nt_efficiency = 0.685;
  //   The mainloop's rate at 4 or 8 bytes, any layout (H100 fit: 0.33):
  double vector_efficiency = 0.685;
  //   The bandwidth those kernels reach for operands and output (short-K and batched GEMMs are
  //   bound by it), as a factor of memory_efficiency's:
  double misaligned_memory_efficiency = 0.685;
  // Efficiency factor for each leading dimension that is a multiple of 16 bytes but not of the
  // GPU's preferred alignment (128 B). CITED evidence says none: on H100, K = 10848, 10880 and
  // 10912 (multiples of 32/16/32 elements) ran within 1% of K = 10944 (paper notes §4). So 1.
  double sub_alignment_efficiency = 1.0;
  // Fused (Flash) attention kernels (attention_cost.cc, PredictFusedAttention). FITTED on H100 SXM
  // BF16 to cuDNN's published forward and backward times (FlashAttention-3 paper, 48 rows,
  // data/measurements/fa3-h100-cudnn-attention.csv; `wavecrest calibrate --attention` refits them
  // and a test holds these defaults to that fit); PRIOR elsewhere (the same values).
  //   Fraction of dense peak at head dim 128 and above, forward and backward (FLOPs as counted
  //   by FlashAttention: backward 2.5× forward, causal half).
  double flash_forward_fraction = 0.6548;
  double flash_backward_fraction = 0.5057;
  //   Below head dim 128 the fraction falls as (d/128)^exponent (fewer FLOPs per byte of K and V
  //   loaded), forward and backward.
  double flash_head_dim_exponent = 0.5540;
  double flash_backward_head_dim_exponent = 0.2413;
  //   Fixed work of each 128-row query block (loading Q, the final rescale, writing O and the
  //   statistics; in the backward, dQ's reduction), in units of one 128-key block's work.
  double flash_block_overhead = 1.049;
  //   Under a causal mask the diagonal block is masked element by element: the rate falls by
  //   this factor (the unequal blocks' tail is flash_tail_fraction's).
  double flash_causal_efficiency = 0.9498;
  //   The causal tail. Query blocks of unequal work (block i visits i + 1 key blocks) go to SMs
  //   as SMs free up; the kernel ends when the last SM does. With more blocks than SMs the
  //   makespan is the mean load per SM plus this fraction of the longest block's work (greedy
  //   list scheduling ends within one longest block of the mean, Graham 1969, "Bounds on
  //   multiprocessing timing anomalies"; a block started at a point uniform within the others'
  //   last block leaves half of one on average). PRIOR 0.5, from that argument, not fitted: the
  //   fitted rows (16k tokens per batch) hardly see the tail. With no more blocks than SMs the
  //   makespan is the longest block.
  double flash_tail_fraction = 0.5;
  //   The error band of a fused-attention prediction (measured / predicted − 1, 10th and 90th
  //   percentile): the wider of the fit's cross-validation by sequence length and the held-out
  //   check (cuDNN 9.27 on H200, batch-1 GQA prefill: data/measurements/cudnn-fe-h200-prefill.csv,
  //   never fitted); a GPU's GEMM band widens it where that is wider.
  double flash_band_p10 = -0.209;
  double flash_band_p90 = 0.059;
  // PRIOR: non-GEMM work (norms, activations, softmax, residuals), fraction of memory bandwidth.
  double elementwise_memory_efficiency = 0.70;
};

// Where one GPU's and dtype's parameters come from, and how far their predictions are off.
struct CalibrationInfo {
  bool calibrated = false;  // fitted to measurements of this GPU (or an identical one)
  // "xla-gemm-perf-table (sm_90, bf16xbf16->bf16), 225 rows, 5-fold CV median 4.1%" or
  // "uncalibrated prior: ..." — every PREDICTED figure carries it.
  std::string label;
  // Relative error band of predicted times: measured/predicted − 1 at the 10th and 90th
  // percentile of the cross-validated residuals, per size class (by predicted time).
  struct Band {
    double max_time_s = 0;  // the class holds predictions up to this time (the last: infinity)
    double p10 = 0;
    double p90 = 0;
  };
  std::vector<Band> bands;
  // The p10–p90 of the cross-validated residuals of GEMMs with a leading dimension that is not a
  // multiple of 16 bytes (the alignment cliff), when the fit saw enough of them; their predictions
  // carry the wider of it and their size class's band. max_time_s unused.
  std::optional<Band> misaligned_band;
};

// How a GPU talks to the others of a run: the scale-up domain (NVLink/NVSwitch) and the scale-out
// network, per GPU and per direction, as NVIDIA's system datasheets give them (the reference
// system for each GPU: DGX-1, DGX A100, DGX H100/H200, DGX B200; PCIe parts as one GPU per
// NVLink domain behind a 200 Gb/s NIC). Collectives reach a fraction of these
// (kCollectiveEfficiency in core/parallelism.h).
struct Interconnect {
  int64_t domain_gpus = 1;         // GPUs one NVLink/NVSwitch domain joins (a node)
  double nvlink_bytes_per_s = 0;   // per GPU, one direction
  double network_bytes_per_s = 0;  // per GPU, one direction (InfiniBand/RoCE NICs)
  double host_bytes_per_s = 0;     // to host memory (PCIe), one direction: activation offload
  // The reference system's host memory per GPU (its datasheet's system memory / its GPUs): the
  // room activation offload has; 0 where no reference system is taken (PCIe cards): not checked.
  double host_memory_bytes = 0;
  double nvlink_latency_s = 0;     // per collective step
  double network_latency_s = 0;
  // NVLink SHARP (NVLS): the NVSwitch reduces an all-reduce inside the domain; its algorithm
  // bandwidth per GPU (bytes reduced / time), 0 where the switch cannot (or it is not measured).
  double nvls_allreduce_bytes_per_s = 0;
  std::string source;
};

struct GpuSpec {
  std::string name;            // catalog key, lowercase: "h100-sxm"
  std::string display_name;    // "NVIDIA H100 SXM5 80GB"
  std::string architecture;    // "Hopper"
  int compute_capability = 0;  // 90 for 9.0
  int64_t sm_count = 0;
  int64_t boost_clock_mhz = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  double memory_bandwidth_bytes_per_s = 0;
  // Dense (non-sparse) peak FLOP/s per dtype; 0 = the GPU cannot run that dtype on tensor cores
  // (FP32 is the CUDA-core rate).
  double peak_bf16 = 0;
  double peak_fp16 = 0;
  double peak_tf32 = 0;
  double peak_fp32 = 0;
  double peak_fp8 = 0;
  // The tensor-core alignment rule, in bytes of each leading dimension: 16 (V100), 128 (A100 and
  // later, per NVIDIA's Matrix Multiplication Background guide).
  int64_t alignment_bytes = 128;
  // The cost model's parameters and their provenance, per dtype (indexed by DType).
  std::array<CostModelParams, kDTypeCount> models;
  std::array<CalibrationInfo, kDTypeCount> calibration;
  std::string sources;  // where the figures come from
  // A variant of another catalogued GPU (same die, same kernels) that takes that GPU's calibration
  // (ApplyCalibration) instead of its own; empty for most.
  std::string calibrated_as;
  // MEASURED where set (1 elsewhere: none assumed): how much longer a training step's GEMMs take
  // under seconds of sustained load than the cost model's rates, which were measured in bursts of
  // at most a fraction of a second at clocks near boost (the model's clock term prices what a
  // kernel's own length does). Applied to the planner's step (SplitMicroBatch), not to the
  // per-GEMM table, Recommend or attention's fused kernel. `sustained_source` says where it was
  // measured.
  double sustained_gemm_stretch = 1.0;
  std::string sustained_source;
  Interconnect link;

  double PeakFlops(DType dtype) const;
  bool Supports(DType dtype) const { return PeakFlops(dtype) > 0; }
  const CostModelParams& Model(DType dtype) const { return models[static_cast<size_t>(dtype)]; }
  CostModelParams& Model(DType dtype) { return models[static_cast<size_t>(dtype)]; }
  const CalibrationInfo& Calibration(DType dtype) const {
    return calibration[static_cast<size_t>(dtype)];
  }
  CalibrationInfo& Calibration(DType dtype) { return calibration[static_cast<size_t>(dtype)]; }
};

// Every catalogued GPU, in a stable order, with the current calibration applied.
const std::vector<GpuSpec>& GpuCatalog();

// The catalog with only the built-in priors (no calibration file applied): what `wavecrest
// calibrate` starts from and reports as "before".
std::vector<GpuSpec> PriorCatalog();

// Publishes a new catalog generation (e.g. after a refit). References and pointers into earlier
// generations stay valid for the life of the process (generations are never freed: a refit is
// rare, and a caller may hold a GpuSpec* across a request). Thread-safe.
void PublishCatalog(std::vector<GpuSpec> catalog);

// Looks a GPU up by its catalog name (case-insensitive; a few aliases such as "h100" accepted).
// NOT_FOUND names every known GPU.
absl::StatusOr<const GpuSpec*> FindGpu(absl::string_view name);

// The catalog name of a device as the CUDA driver names it ("NVIDIA H100 80GB HBM3" with 132 SMs ->
// "h100-sxm"); empty when the catalog has no entry for it (an H100 NVL, say).
std::string CatalogNameForDevice(absl::string_view device_name, int64_t sm_count,
                                 int64_t memory_bytes);

// "v100-sxm2, a100-sxm-40gb, ..."
std::string KnownGpuNames();

}  // namespace wavecrest

#endif  // WAVECREST_CORE_GPU_CATALOG_H_
