// The fused (Flash) attention kernel's cost (core/attention_cost.cc): the blocks it visits, its
// rate against the dense peak, and the published rates of the named FlashAttention kernels. A
// prediction is a GemmPrediction (core/cost_model.h), so callers treat it as one GEMM's.
#ifndef WAVECREST_CORE_ATTENTION_COST_H_
#define WAVECREST_CORE_ATTENTION_COST_H_

#include "core/cost_model.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/model_spec.h"

namespace wavecrest {

// A fused (Flash) attention kernel (Gemm::fused_attention): the 128 × 128 query × key blocks it
// visits (under a causal mask, only those at or before each query block) plus a fixed overhead per
// query block, at a fraction of peak that falls below head dim 128 (kernels are compiled for head
// dims in steps of 32, so d is padded up), with wave quantization over query blocks, and a memory
// floor for Q, K, V and O. Fitted to cuDNN's published H100 times (gpu_catalog.h).
GemmPrediction PredictFusedAttention(const GpuSpec& gpu, const Gemm& gemm);

// The share of a fused attention's `flops` (the whole s × s product) its kernel computes: the
// blocks it visits over all of them (under a causal mask about half, in a local window less); 1
// for a GEMM.
double FusedAttentionWorkShare(const Gemm& gemm);

// A named fused kernel's rate as a fraction of kFlash's (the calibrated model; 1 for kFlash),
// forward or backward, and the spread of that fraction in time (± relative). CITED: the
// FlashAttention-2 paper (Dao 2023, arXiv:2307.08691). FlashAttention-2 itself: on GPUs before
// Hopper "up to 73% of the theoretical max throughput in the forward pass, and up to 63% ... in
// the backward pass" (A100, §1), on Hopper "up to 335 TFLOPs/s" forward and backward together
// without its new instructions (H100 SXM, §4.1: 33.9% of the dense BF16 peak), each against this
// model's rate at the paper's best setting (head dim 128, no mask, 16k tokens, 16 heads); Blackwell
// and later are priced as Hopper (no published figure). The older kernels against
// FlashAttention-2 on an A100 (§4.1): "around 2× faster than FlashAttention" (kFlash1: 1/2 forward
// and backward) and "around 1.3-1.5× faster than FlashAttention in Triton in the forward pass and
// around 2× faster in the backward pass" (kFlash1Triton: 1/1.4 ± 0.07 forward, 1/2 backward);
// the same ratios are taken on every architecture.
struct FusedKernelRate {
  double rate = 1.0;
  double spread = 0.0;
};
FusedKernelRate FusedKernelRateOf(const GpuSpec& gpu, DType dtype, Attention kernel, Pass pass);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_ATTENTION_COST_H_
