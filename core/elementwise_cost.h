// The non-GEMM work of a step (core/elementwise_cost.cc): norms, activations, residual adds, the
// softmax of unfused attention, the loss, and FP8's casts, priced by the bytes they move.
#ifndef WAVECREST_CORE_ELEMENTWISE_COST_H_
#define WAVECREST_CORE_ELEMENTWISE_COST_H_

#include "core/gpu_catalog.h"
#include "core/model_spec.h"

namespace wavecrest {

// The non-GEMM work of one step (norms, activation, residual adds, softmax of unfused attention,
// the loss over the logits), estimated from the bytes it must move at elementwise bandwidth.
struct ElementwiseEstimate {
  double bytes = 0;
  double time_s = 0;  // num_layers · layer_time_s + loss_time_s
  // One layer's share (norms, activation, residual adds; softmax of unfused attention), and of it
  // the softmax alone; the loss over the logits, once per step. Backward included when training.
  double layer_time_s = 0;
  double softmax_time_s = 0;
  double loss_time_s = 0;
};
ElementwiseEstimate EstimateElementwise(const ModelSpec& spec, const GpuSpec& gpu);

// FP8 training (DType::kFp8E4M3) under Transformer Engine's default recipe, with TE's fused
// layers (LayerNormLinear, LayerNormMLP: the norm and the activation write FP8 themselves, as
// llm-foundry's te_ln_mlp runs them; Megatron-Core's dense MLP activates in BF16 by default,
// bias_swiglu_impl, and its fc2 casts that alone: 3 more bytes per MLP element there, left out):
// the bytes per token and layer, on one tensor-parallel rank, that the recipe's casts
// move beyond a BF16 step. The projection's input is cast alone (3 bytes per element), every
// linear input is also written transposed for wgrad (1), and every output gradient is cast and
// transposed (4: read 2, write 1 + 1); a MoE layer's experts cast their inputs themselves after
// the permutation and the activation (4 per element of each token's k copies and of the expert
// MLP's width), and the k copies' output gradients too. The amax reductions run inside the
// casts; the weights' casts (once per step with Megatron's FP8 weight caching) are not counted.
// Zero cost in time beyond memory traffic: priced with the elementwise work at its bandwidth.
double Fp8CastBytesPerToken(const ModelSpec& spec);

// The bandwidth elementwise kernels and copies reach on this GPU at the spec's dtype, bytes/s.
double ElementwiseBandwidth(const ModelSpec& spec, const GpuSpec& gpu);

// The relative standard deviation of the elementwise estimate: a PRIOR (no measurements of norms,
// activations and softmax yet; measured layer benchmarks replace the estimate where they exist).
inline constexpr double kElementwiseRelativeSigma = 0.15;

// Eager PyTorch (no torch.compile, no fused kernels): each elementwise op of a Llama block its
// own kernel, as TorchTitan writes the block (torchtitan/models/norms.py and models/llama/model.py
// at 9dec370). Bytes per token and layer on one tensor-parallel rank, forward, beyond what
// EstimateElementwise counts for fused kernels: an RMSNorm in FP32 steps (x.float() 6 bytes an
// element, pow 8, mean 4, x * rsqrt 8, type_as 6, * weight 4: 36, where a fused norm moves 4),
// twice a layer; the rotary embedding of the queries and keys in complex FP32 (float() 6, the
// complex product 8, type_as 6: 20 an element, uncounted for fused kernels); SwiGLU as silu (4)
// then the product (6), 10 an element of the MLP's width where a fused one moves 6 (GELU: no
// extra; LayerNorm is one kernel eager too). The residual adds are separate kernels either way.
double EagerExtraBytesPerToken(const ModelSpec& spec);
// Of those, the rotary embedding's (20 an element of the queries and keys on this rank; 0 for a
// model with a learned position table). TorchTitan's Llama RoPE runs so under torch.compile too
// (RunConfig::rope_unfused): TorchInductor generates no code for complex operators ("Torchinductor
// does not support code generation for complex operators", pytorch/torchtitan#15), and its
// complex product runs as its own kernels.
double RopeUnfusedBytesPerToken(const ModelSpec& spec);
// Those bytes for one layer and micro-batch of training, forward and backward, seconds (as
// EagerExtraLayerTimeS counts them).
double RopeUnfusedLayerTimeS(const ModelSpec& spec, const GpuSpec& gpu);

// FP8 with rowwise scales (RunConfig::fp8_recipe kRowwise, torchao's "rowwise" recipe: every
// operand scaled along the dimension its GEMM contracts, torchao/float8/config.py and
// float8_ops.py at 6243040, June 2025): the bytes per token and layer on one tensor-parallel rank
// its backward moves beyond tensorwise FP8's (Fp8CastBytesPerToken). Each linear's input is cast
// again from BF16 with column scales for wgrad (read 2, write 1, where tensorwise transposes its
// FP8 copy: read 1, write 1): 1 more per element; each output gradient is cast twice, along each
// GEMM's contraction (3 + 3 against a cast and transpose, 4): 2 more; and the dgrad GEMM, run
// without fast accumulation, goes to cuBLAS's tensorwise kernel with unit scales and is rescaled
// after (addmm_float8_unwrapped: read 2, write 2 of each input gradient): 4 per element. Not
// counted: the forward, the weights' casts, wgrad's rescale (weight-sized, once a micro-batch)
// and the row-scaled forward kernel's own rate; a MoE layer's experts are counted as one MLP of
// its active width (their k copies of each token's input not apart: an undercount there).
double Fp8RowwiseExtraBytesPerToken(const ModelSpec& spec);
// Those bytes for one layer and micro-batch, seconds at the GPU's elementwise bandwidth.
double Fp8RowwiseExtraLayerTimeS(const ModelSpec& spec, const GpuSpec& gpu);

// PyTorch's eager cross_entropy over an FP32 copy of 16-bit logits (LossKernel::kEager): bytes
// per logit its passes move beyond the fused loss's 18 (EstimateElementwise's: read, softmax,
// write, backward twice that, 2 bytes each). COUNTED from its ops' reads and writes, one pass each
// and two for the softmax's row reductions: forward the copy (read 2, write 4), the log-softmax's
// max and sum (read 4) and its output (read 4, write 4), 18; backward the NLL's gradient written
// (4), the log-softmax backward's row sum (read 4) and its output (read 4 + 4, write 4), the cast
// back to 16 bits (read 4, write 2), 26. 44 in all: 26 more. Not measured.
inline constexpr double kEagerLossExtraBytesPerLogit = 44 - 18;
// Those bytes for one micro-batch's logits on one rank (training), seconds at the GPU's
// elementwise bandwidth.
double EagerLossExtraTimeS(const ModelSpec& spec, const GpuSpec& gpu);

// One layer's eager extra (EagerExtraBytesPerToken) for one micro-batch of training, forward and
// backward (backward moving twice what forward does, as EstimateElementwise counts), seconds at
// the GPU's elementwise bandwidth.
double EagerExtraLayerTimeS(const ModelSpec& spec, const GpuSpec& gpu);

// A MoE layer's expert ops as Megatron-Core's TEGroupedMLP runs them without fused MoE kernels
// (RunConfig::moe_unfused_ops): bytes per token and MoE layer on one rank beyond what
// EstimateElementwise counts, forward and forward + backward. From megatron/core/transformer/
// moe/experts.py and megatron/core/fusions/fused_bias_geglu.py (NVIDIA/Megatron-LM), the same at
// the submodule commits of NeMo's 25.11 (0d8e0714), 26.02 (b0cc2706) and 26.04 (d7288711)
// containers:
// - experts with biases (Bias::kAll): fc2's bias added expert by expert, scaled by each copy's
//   routing probability in FP32 (_apply_bias: b * p, t + b·p, torch.cat, .to(dtype)): forward 28
//   bytes an element of a copy's output (write 4; read 2 + 4, write 4; read 4, write 4; read 4,
//   write 2), backward 36 (the cast back 6, the gradient cast to BF16 6, the bias's and the
//   probability's gradients 12 each). Megatron-LM replaced the loop with one vectorised
//   kernel in 883533e049 (2026-08-14).
// - a clamped GLU (ModelSpec::glu_clamp): fc1's two halves clamped and concatenated again
//   outside the fused activation (weighted_bias_quick_geglu_impl): forward 16 bytes an element
//   of the expert's width (each half's clamp read 2 write 2, the concatenation read 4 write 4),
//   backward 20 (each clamp's gradient 6, the halves' gradients concatenated 8).
// Each token's copies on this rank: k × capacity padding × expert TP / t (as
// Fp8CastBytesPerToken counts them). Left out: the clamp's forward again when the activation is
// recomputed (recompute_modules "moe_act"), and the host synchronisation of the GLU offset's
// torch.tensor(..., device=...) copy in every call.
struct MoeUnfusedBytes {
  double forward = 0;
  double total = 0;
};
MoeUnfusedBytes MoeUnfusedOpsBytesPerToken(const ModelSpec& spec);

// MoeUnfusedOpsBytesPerToken for one MoE layer and one micro-batch, seconds at the GPU's
// elementwise bandwidth.
struct MoeUnfusedTime {
  double forward_s = 0;
  double total_s = 0;
};
MoeUnfusedTime MoeUnfusedOpsLayerTimeS(const ModelSpec& spec, const GpuSpec& gpu);
}  // namespace wavecrest

#endif  // WAVECREST_CORE_ELEMENTWISE_COST_H_
