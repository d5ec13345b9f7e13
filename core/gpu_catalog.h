// The GPUs wavecrest can predict for, and the parameters of the analytic model for each.
#ifndef WAVECREST_CORE_GPU_CATALOG_H_
#define WAVECREST_CORE_GPU_CATALOG_H_

#include <cstdint>
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
  // Fraction of the dtype's dense peak a full wave of full tiles reaches at large K. Larger tiles
  // reuse each loaded operand byte more (intensity ∝ m·n/(m+n)), so they sit closer to peak.
  double peak_fraction = 1.0;
};

// Parameters of the analytic cost model (core/cost_model.h) for one GPU. Kept in one struct so that
// a later calibration against measurements replaces one value, not a formula. The values below are
// priors, chosen from the public figures cited in gpu_catalog.cc, not fitted to measurements.
struct CostModelParams {
  std::vector<TileShape> tiles;
  // Extra K-steps' worth of time per tile for the pipeline prologue and the epilogue: a tile with
  // reduction K costs as much as one with K + k_overhead at full speed.
  int64_t k_overhead = 32;
  // The mainloop reads K in slices of this many bytes per operand row (64 BF16 elements); a partial
  // last slice costs a whole one.
  int64_t k_tile_bytes = 128;
  // Smallest split-K slice a kernel will use, and the largest number of slices.
  int64_t min_split_k_slice = 256;
  int64_t max_split_k = 16;
  // Efficiency factor for each leading dimension whose byte size is a multiple of 16 but not of
  // the GPU's alignment rule (e.g. 128 B): wider vector loads and the TMA path are lost, in the
  // math and in the bandwidth reached. 0.6 is a prior set so that the model's head-dim penalty
  // has the size the paper measured (h/a = 64 beating h/a = 80 at the same h, unfused attention,
  // A100); it has not been fitted to measurements of our own.
  double sub_alignment_efficiency = 0.6;
  // Efficiency factor when any leading dimension is not a multiple of 16 bytes: cuBLAS must fall
  // back to a kernel family with narrow (or scalar) loads.
  double misaligned_efficiency = 0.45;
  // Achievable fraction of the datasheet memory bandwidth.
  double memory_efficiency = 0.85;
  // Smallest time any kernel takes (launch plus minimal execution), seconds.
  double latency_floor_s = 4e-6;
  // Fused (Flash) attention kernels: fraction of dense peak reached, forward and backward, at a
  // head dim of 128; smaller head dims reach less (scaled by d/128 below 64).
  double flash_forward_fraction = 0.60;
  double flash_backward_fraction = 0.45;
  // Non-GEMM work (norms, activations, softmax, residuals): achievable memory-bandwidth fraction.
  double elementwise_memory_efficiency = 0.70;
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
  CostModelParams model;
  std::string sources;  // where the figures come from

  double PeakFlops(DType dtype) const;
  bool Supports(DType dtype) const { return PeakFlops(dtype) > 0; }
};

// Every catalogued GPU, in a stable order.
const std::vector<GpuSpec>& GpuCatalog();

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
