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
//             A local layer masks keys more than `window` behind the query (fused: the kernel's
//             diagonal band; unfused: in the softmax, every score still computed); decode reads a
//             cache of the window only. Context parallelism runs the rank's c ring steps of
//             (s/c) queries, each timed as a causal block of (s/c)² (Megatron-Core's other steps
//             are half-masked blocks of the same work); the K/V exchange is communication and is
//             not in the program.
//   MLA       (multi-head latent attention, DeepSeek-V2/V3) instead of qkv: the query's down
//             projection, its RMSNorm and up projection (or one full query projection), the keys'
//             and values' down projection to the latent and the decoupled rotary part, the
//             latent's RMSNorm, its up projection to every head's key (no-rope part) and value,
//             then an assembly kernel writing Q, K (the rotary part shared by every head) and V
//             rows for the fused attention, whose value head dim differs from the query's.
//             Rotary embeddings themselves are not applied (nor in dense layers).
//   MoE block (a mixture-of-experts MLP): the router GEMM (h → E), softmax + top-k, the dispatch
//             permutation (each of the rank's R routed rows gathered from its token), the
//             experts' up (gate|up) GEMMs as one grouped GEMM with the stated routing's
//             per-expert rows (core/moe_routing.h), the activation over the R rows, the grouped
//             down GEMMs, the shared expert (a dense MLP over every token), and the combine
//             (each token's rows weighted by its router probabilities, summed, plus the shared
//             expert's output). The routing is stated, not the router's: the top-k runs for its
//             time, and the permutation follows a fixed scattered order with the stated counts.
//             Under expert parallelism the rank runs its E/e experts on the rows e ranks send it;
//             the all-to-alls are communication and are not in the program. Qwen2-MoE's sigmoid
//             gate on the shared expert (an h × 1 product) is not run.
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
  // c = op(a_j)·op(b_j) for each expert j with groups[j] token rows (GroupGemm); a and c hold
  // the groups' rows back to back, b (or c for wgrad) one matrix per expert.
  kGroupedGemm,
  kRouterTopK,          // a = logits [rows × cols=E] → c = probabilities [rows × k] (FP32),
                        // d = expert ids [rows × k] (int32): softmax, then the k largest
  kRouterTopKBackward,  // a = d probabilities, b = logits, d = ids → c = d logits
  kPermute,             // c[rows × cols] = a[src(r)] (dispatch: routed row r from its token)
  kPermuteBackward,     // c[tokens × cols] = Σ a[r] over the rows of each token (scatter-add)
  kCombine,             // c[tokens × cols] = Σ_r w(r)·a[r] (+ b, the shared expert's output),
                        // the weights w the probabilities in d
  kCombineBackward,     // a = dc [tokens × cols], b = the experts' rows, d = probabilities →
                        // c = d rows [rows × cols], e = d probabilities
  kMlaAssemble,         // a = q rows, b = the latent's up projection, d = the down projection's
                        // rows (rotary part after `latent`) → c = QKV rows for the attention
  kMlaAssembleBackward,  // a = dQKV rows → c = dq rows, d = d up-projection rows, e = the
                         // rotary part of the down projection's gradient rows
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
  // Local attention: keys more than `window` − 1 behind the query are masked (0 = none).
  int64_t window = 0;
  int64_t v_head_dim = 0;  // attention's value head dim (0 = head_dim; MLA's differs)
  // kNorm*: RMSNorm (else LayerNorm). kActivation*: SwiGLU (else GELU). Split gate/up GEMMs
  // write two buffers: a is the gate and b the up half then (a_stride = cols).
  bool rms = false;
  bool swiglu = false;
  int64_t a_stride = 0;  // elements between rows of a (0 = cols)
  int64_t x_stride = 0;  // kNorm*: elements between rows of the input x and of dx (0 = cols)
  // kGroupedGemm: each expert's token rows, in `gemm`'s m (forward, dgrad: layouts TN, NN) or k
  // (wgrad: NT); `gemm.shape` holds the largest group there and batch = the number of groups.
  std::vector<int64_t> groups;
  // MoE routing ops: tokens, experts and experts per token; the dispatch order src(r) =
  // (r·perm_mult) mod tokens, and perm_inverse = perm_mult⁻¹ mod tokens for the way back.
  int64_t tokens = 0, experts = 0, top_k = 0, perm_mult = 1, perm_inverse = 1;
  // kMlaAssemble*: the latent's width (the down projection's rows are latent + rope wide) and the
  // rotary part's head dim; heads and head_dim/v_head_dim above.
  int64_t latent = 0, rope = 0;
};

struct LayerProgram {
  std::vector<LayerBuffer> buffers;
  std::vector<LayerOp> ops;
  int64_t bytes = 0;          // all buffers
  int outputs[2] = {-1, -1};  // buffers whose values the engine checks: y (and dx)
  bool training = false;
};

// The program of `key`. FAILED_PRECONDITION for what the engine does not run whole (FP8,
// TF32/FP32 attention through cuDNN, unfused multi-head latent attention) — the caller then
// predicts it and says why; INVALID_ARGUMENT when a size overflows.
absl::StatusOr<LayerProgram> PlanLayerProgram(const LayerKey& key);

// Group j of a kGroupedGemm op as one GEMM (its token rows in m or k); empty shape when the
// expert has no rows.
GemmKey GroupGemm(const LayerOp& op, size_t j);

// Where group j of a kGroupedGemm op reads and writes, in elements from the start of buffers a, b
// and c: the token rows of a (and c, or of b for wgrad) back to back, one matrix per expert for
// the rest (forward TN: a rows·k, b n×k, c rows·n; dgrad NN: a rows·k, b k×n, c rows·n; wgrad NT:
// a rows·m, b rows·n, c m×n).
struct GroupOffsets {
  int64_t a = 0, b = 0, c = 0;
};
GroupOffsets GroupGemmOffsets(const LayerOp& op, size_t j);

// The program's GEMMs, in order, each group of a grouped GEMM on its own (empty groups left out).
std::vector<GemmKey> ProgramGemms(const LayerProgram& program);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_LAYER_PROGRAM_H_
