// What the GPU worker runs to time a layer whole (gpu_worker/cuda/layer_engine.cc carries it
// out), decided without a GPU so that it is tested on any machine: the buffers, and the kernels in
// order, forward then backward, as Megatron-LM and GPT-NeoX run one transformer layer per rank.
//
// Every GEMM of the program is a GEMM of LayerGemms(key) (core/layers.h), with the same key, in
// row-major terms (C = op(A)·op(B), core/gemm.h); the tests hold the two lists equal. Around them:
//
//   forward   norm1 · qkv · attention · proj · residual · norm2 · mlp up (gate_up) · activation ·
//             mlp down · residual
//   backward  the same in reverse: dgrad and wgrad of each linear layer, activation, norm and
//             attention backward, gradient adds at the residual branches
//   attention fused: one cuDNN scaled-dot-product attention (forward; backward with recompute)
//             reading Q, K, V in place from the QKV output. Unfused (GPT-NeoX): split heads (K and
//             V repeated for grouped-query attention, as Hugging Face's eager attention does),
//             score bmm, scale + causal mask + softmax, value bmm, merge heads.
//
// Elementwise kernels are our own (one pass each, FP32 arithmetic): the figure is what this
// program runs, which is what a framework's eager layer runs kernel for kernel, not what a fused
// training library's kernels would take.
#ifndef WAVECREST_CORE_LAYER_PROGRAM_H_
#define WAVECREST_CORE_LAYER_PROGRAM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/gemm.h"
#include "core/layers.h"

namespace wavecrest {

enum class LayerOpKind {
  kGemm,                // c = op(a)·op(b) as `gemm`
  kNorm,                // c = norm(a) over rows × cols (scale `b`, cols wide)
  kNormBackward,        // c = d norm / d input, given the output gradient a, input b, scale d
  kActivation,          // c[rows × cols] = act(a) (SwiGLU: a holds gate | up, 2·cols wide)
  kActivationBackward,  // c = d act, given the output gradient a and the input b
  kAdd,                 // c = a + b (residual branch, gradient accumulation)
  kSplitHeads,          // a = QKV rows → q [b·H, s, d] (c), k and v [b·H, s, d] (d, e)
  kMergeHeads,       // a = heads [b·H, s, d] → c rows (reducing grouped KV heads when d ≥ 0)
  kSoftmax,          // in place on a: scale, causal mask, softmax over rows × cols
  kSoftmaxBackward,  // in place on a (dP → dS), given the probabilities b
  kFusedAttention,   // cuDNN SDPA forward: Q, K, V in a (QKV rows) → c, statistics d
  kFusedAttentionBackward,  // cuDNN SDPA backward: dO a, QKV b, O c, stats d → dQKV e
};
absl::string_view LayerOpKindName(LayerOpKind kind);

struct LayerBuffer {
  std::string name;
  int64_t elements = 0;
  int element_bytes = 2;  // the dtype's (FP32 statistics: 4)
};

struct LayerOp {
  LayerOpKind kind = LayerOpKind::kGemm;
  std::string name;                            // "qkv forward", "norm1", "softmax", ...
  GemmKey gemm;                                // kGemm
  int a = -1, b = -1, c = -1, d = -1, e = -1;  // buffer indices, by kind (see LayerOpKind)
  int64_t rows = 0, cols = 0;                  // elementwise work
  // Attention: batch b, query and key/value heads per rank, lengths, head dim, causal, scale.
  int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  bool causal = true;
  float scale = 1.0f;
  // kNorm*: RMSNorm (else LayerNorm). kActivation*: SwiGLU (else GELU). Split gate/up GEMMs
  // write two buffers: a is the gate and b the up half then (a_stride = cols).
  bool rms = false;
  bool swiglu = false;
  int64_t a_stride = 0;  // elements between rows of a (0 = cols)
};

struct LayerProgram {
  std::vector<LayerBuffer> buffers;
  std::vector<LayerOp> ops;
  int64_t bytes = 0;          // all buffers
  int outputs[2] = {-1, -1};  // buffers whose values the engine checks: y (and dx)
  bool training = false;
};

// The program of `key`. FAILED_PRECONDITION for what the engine does not run whole (mixtures of
// experts, FP8, TF32/FP32 attention through cuDNN) — the caller then predicts it and says why;
// INVALID_ARGUMENT when a size overflows.
absl::StatusOr<LayerProgram> PlanLayerProgram(const LayerKey& key);

// The program's GEMMs, in order.
std::vector<GemmKey> ProgramGemms(const LayerProgram& program);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_LAYER_PROGRAM_H_
