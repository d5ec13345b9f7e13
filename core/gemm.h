// The GEMMs one step of a model runs, per tensor-parallel rank.
//
// Shapes follow the paper's row-major convention: C[M×N] = op(A)[M×K] · op(B)[K×N], repeated
// `batch` times (strided-batched), FLOPs = 2·M·N·K·batch. For a linear layer Y = X·Wᵀ with X of
// T×in and W of out×in: forward M = T, N = out, K = in; dgrad dX = dY·W has M = T, N = in, K = out;
// wgrad dW = dYᵀ·X has M = out, N = in, K = T.
//
// `layout` is in cuBLAS (column-major) terms, as the worker calls it: the row-major product is run
// as Cᵀ = op(B)ᵀ·op(A)ᵀ, i.e. cuBLAS m = N, n = M, k = K, and the two letters are cuBLAS's opA,
// opB:
//   forward Y = X·Wᵀ  -> TN (leading dims K, K; C's leading dim N)
//   dgrad  dX = dY·W  -> NN (leading dims N, K)
//   wgrad  dW = dYᵀ·X -> NT (leading dims N, M)
#ifndef WAVECREST_CORE_GEMM_H_
#define WAVECREST_CORE_GEMM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/model_spec.h"

namespace wavecrest {

enum class Pass { kForward, kDgrad, kWgrad, kBackward };
enum class Layout { kTN, kNN, kNT };

absl::string_view PassName(Pass pass);        // "forward", "dgrad", "wgrad", "backward"
absl::string_view LayoutName(Layout layout);  // "TN", "NN", "NT"
absl::StatusOr<Layout> ParseLayout(absl::string_view name);

struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
  friend auto operator<=>(const GemmShape&, const GemmShape&) = default;
};

// What one timing measures: the identity of a GEMM for the cache and the worker.
struct GemmKey {
  GemmShape shape;
  Layout layout = Layout::kTN;
  DType dtype = DType::kBf16;
  friend bool operator==(const GemmKey&, const GemmKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const GemmKey& g) {
    return H::combine(std::move(h), g.shape.m, g.shape.n, g.shape.k, g.shape.batch,
                      static_cast<int>(g.layout), static_cast<int>(g.dtype));
  }
};
std::string GemmKeyString(const GemmKey& key);  // "bf16 TN 8192x12288x4096 b1"

// Names used in reports.
inline constexpr absl::string_view kQkv = "qkv";
inline constexpr absl::string_view kAttnScore = "attn_score";
inline constexpr absl::string_view kAttnOverValue = "attn_over_value";
inline constexpr absl::string_view kAttnFused = "attn_fused";  // FlashAttention: one kernel
inline constexpr absl::string_view kAttnProj = "attn_proj";
inline constexpr absl::string_view kMlpUp = "mlp_up";
inline constexpr absl::string_view kMlpGate = "mlp_gate";
inline constexpr absl::string_view kMlpGateUp = "mlp_gate_up";  // SwiGLU, gate and up fused
inline constexpr absl::string_view kMlpDown = "mlp_down";
inline constexpr absl::string_view kLogits = "logits";
inline constexpr absl::string_view kMoeRouter = "moe_router";   // h -> E scores per token
inline constexpr absl::string_view kMoeGateUp = "moe_gate_up";  // experts, batch = E
inline constexpr absl::string_view kMoeUp = "moe_up";           // GELU experts
inline constexpr absl::string_view kMoeDown = "moe_down";
inline constexpr absl::string_view kSharedGateUp = "shared_gate_up";  // always-on shared experts
inline constexpr absl::string_view kSharedUp = "shared_up";
inline constexpr absl::string_view kSharedDown = "shared_down";
// Multi-head latent attention (DeepSeek-V2/V3) instead of qkv: the query's down and up
// projections (or one full q_proj), the keys' and values' down projection to the latent (with
// the rotary part) and its up projection to every head's key and value.
inline constexpr absl::string_view kMlaQDown = "mla_q_down";
inline constexpr absl::string_view kMlaQUp = "mla_q_up";
inline constexpr absl::string_view kMlaQ = "mla_q";
inline constexpr absl::string_view kMlaKvDown = "mla_kv_down";
inline constexpr absl::string_view kMlaKvUp = "mla_kv_up";
// A Mamba-2 mixer (hybrid models): its in and out projections, and the chunked scan's (SSD's)
// products per chunk of Q tokens: C·Bᵀ per group (Q × Q × N), the masked scores times X per head
// (Q × P × Q), the chunk's state Bᵀ·X (N × P × Q) and C times the carried state (Q × P × N).
inline constexpr absl::string_view kMambaInProj = "mamba_in_proj";
inline constexpr absl::string_view kMambaOutProj = "mamba_out_proj";
inline constexpr absl::string_view kSsdCb = "ssd_cb";
inline constexpr absl::string_view kSsdDiag = "ssd_diag";
inline constexpr absl::string_view kSsdState = "ssd_state";
inline constexpr absl::string_view kSsdOff = "ssd_off";
// Whether a GEMM is one of the chunked scan's products (BF16 in an FP8 run, like attention's).
inline bool IsSsdGemm(absl::string_view name) {
  return name == kSsdCb || name == kSsdDiag || name == kSsdState || name == kSsdOff;
}

// Whether a GEMM is a routed expert's (grouped over the rank's experts), and whether it is any
// of a MoE block's (those, the router and the shared expert).
inline bool IsRoutedExpertGemm(absl::string_view name) {
  return name == kMoeGateUp || name == kMoeUp || name == kMoeDown;
}
inline bool IsMoeBlockGemm(absl::string_view name) {
  return IsRoutedExpertGemm(name) || name == kMoeRouter || name == kSharedGateUp ||
         name == kSharedUp || name == kSharedDown;
}

struct Gemm {
  std::string name;
  Pass pass = Pass::kForward;
  GemmShape shape;
  Layout layout = Layout::kTN;
  DType dtype = DType::kBf16;
  int64_t count = 1;  // times per step (per layer GEMMs: num_layers)
  // A fused attention kernel, not a GEMM: `shape` is (s_q, s_kv, head_dim, batch = b·a/t) and
  // `flops` counts its two (forward) or five (backward, with recompute) matrix products.
  bool fused_attention = false;
  // Fused attention: which kernel runs it (model_spec.h: kFlash, kFlash1 or kFlash1Triton).
  Attention kernel = Attention::kFlash;
  // Fused attention: key/value heads in the batch (b·a_kv per rank, K and V read once per group
  // of query heads); 0 = one per query head.
  int64_t kv_batch = 0;
  // Fused attention with a causal mask (training and prefill of a decoder): the kernel skips the
  // key blocks past each query block, about half the work; `flops` still counts the full product
  // (the paper's 4·b·s²·h convention, which MFU uses).
  bool causal = false;
  // Fused attention of a layer with local attention: each query sees at most this many of the
  // latest keys (0 = all); the kernel visits only their blocks, and `flops` counts twice that
  // work (s_kv = min(s, 2·window): the causal convention of full attention).
  int64_t window = 0;
  double flops = 0;  // of one execution (multiply by count for the step)

  GemmKey key() const { return {shape, layout, dtype}; }
  double step_flops() const { return flops * static_cast<double>(count); }
};

double GemmFlops(const GemmShape& s);  // 2·M·N·K·batch

// The operand type a GEMM named `name` (kAttnFused, kLogits, ...) runs in when the model's is
// `model`: FP8 as Transformer Engine's default recipe runs it, the linear layers in FP8,
// attention's core (DotProductAttention without fp8_dpa), the output layer (Megatron's non-TE
// output_layer) and a Mamba-2 mixer's chunked scan (Triton kernels in BF16) in BF16.
DType ComputeDType(DType model, absl::string_view name);

// What the expert GEMMs of a mixture of experts assume of routing, in words (empty for a dense
// model): balanced dropless routing, a skew over expert-parallel ranks, or a capacity factor in
// training; in prefill and decode the experts the step's tokens touch and the rows they share.
std::string ExpertRoutingAssumption(const ModelSpec& spec);

// The GEMM list of one step of `spec`'s workload (spec must be normalized): forward only for
// prefill and decode; forward, dgrad and wgrad for training. Per tensor-parallel rank.
std::vector<Gemm> BuildGemms(const ModelSpec& spec);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_GEMM_H_
