// What an emulating worker (the analytic backend) answers for a layer timed whole: the layer's
// program (core/layer_program.h) priced kernel by kernel with the analytic model, instead of the
// planner's sum of parts (core/layers.h, PredictLayer).
//
//   GEMMs              the calibrated GEMM model (cost_model.h, PredictGemm), each one
//   grouped GEMMs      one GEMM per expert with its own rows (the loop of cuBLASLt matmuls the
//                      engine runs; an expert without rows costs nothing)
//   fused attention    the calibrated fused-attention model (PredictFusedAttention), with the
//                      op's window, causal mask, grouped KV heads and value head dim
//   elementwise        the bytes each kernel reads and writes (LayerOpBytes) at the GPU's memory
//                      bandwidth times its elementwise efficiency (the catalog's, as
//                      EstimateElementwise prices the planner's elementwise work), plus the GEMM
//                      model's fitted per-kernel launch time
//
// The planner prices the same layer as its GEMM list (a MoE's experts as one batched GEMM of
// balanced rows), its fused attention and a per-token elementwise estimate. The gap between the
// two (program / planner − 1) is what the emulation adds: uneven expert rows, the router's top-k,
// the dispatch and combine, every kernel's launch. Both come from the same calibrations, so the
// gap says what the planner leaves out, not how far either is from a GPU; a GPU worker's
// measurement of the same program says that.
#ifndef WAVECREST_CORE_LAYER_EMULATION_H_
#define WAVECREST_CORE_LAYER_EMULATION_H_

#include "core/gpu_catalog.h"
#include "core/layer_program.h"
#include "core/layers.h"

namespace wavecrest {

struct LayerEmulation {
  double time_s = 0;
  double gemm_time_s = 0;       // GEMMs and grouped GEMMs
  double attention_time_s = 0;  // fused attention kernels
  double elementwise_time_s = 0;
  double elementwise_bytes = 0;
  int kernels = 0;  // launches (each group of a grouped GEMM one)
  double flops = 0;  // the program's GEMM and attention FLOPs (the planner's convention)
  // Time-weighted error band (measured/predicted − 1 at p10 and p90).
  double band_p10 = 0;
  double band_p90 = 0;
};

// `program` must be PlanLayerProgram(key).
LayerEmulation EmulateLayerProgram(const GpuSpec& gpu, const LayerKey& key,
                                   const LayerProgram& program);

// Bytes an elementwise op reads and writes (0 for GEMMs and fused attention).
double LayerOpBytes(const LayerProgram& program, const LayerOp& op);

// A fused-attention op as the cost model's Gemm (core/gemm.h's convention: a local layer's
// shape.n is min(kv_len, 2·window), the FLOPs weigh Q·Kᵀ by the query head dim and P·V by the
// value head dim).
Gemm FusedAttentionGemm(const LayerOp& op, DType dtype);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_LAYER_EMULATION_H_
