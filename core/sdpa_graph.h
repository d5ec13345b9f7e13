// Fused (Flash) attention as cuDNN runs it: the operation graph of cuDNN's scaled-dot-product
// attention, forward and backward, described without cuDNN so that it is built and checked on any
// machine. gpu_worker/cuda/cudnn_sdpa.cc turns it into backend descriptors, one for one.
//
// cuDNN 9 has no single "attention" operation every version accepts: its fused-attention engines
// recognise a graph of matmul, pointwise and reduction operations (the pattern cuDNN's own frontend
// lowers `sdpa` and `sdpa_backward` to before its unified softmax operation of 9.21; Apache-2.0,
// github.com/NVIDIA/cudnn-frontend,
// include/cudnn_frontend/node/scaled_dot_product_flash_attention.h and softmax.h). The graphs here
// are that pattern for the one case a layer runs: no dropout, no bias, no padding, causal
// (top-left) or not, a sliding window (cudnn-frontend's sliding_window_length before its
// diagonal-band node: col + window > row, a float window added to the column index), grouped-query
// heads, a value head dim other than the query's (multi-head latent attention), BF16 or FP16 in and
// out, FP32 inside:
//
//   forward   S = Q·Kᵀ · scale; causal: S = row ≥ col ? S : lowest; window: S = col + window > row
//             ? S : lowest; M = max S; E = exp(S − M);
//             Z = Σ E; [training: stats = M + log Z]; P = E / Z; O = P·V
//   backward  D = Σ (dO ∘ O) per row; P = exp(mask(Q·Kᵀ · scale) − stats); dV = Pᵀ·dO;
//             dS = P ∘ (dO·Vᵀ − D) · scale; dQ = dS·K (FP32 accumulator); dK = dSᵀ·Q; grouped KV
//             heads: dK and dV summed over the query heads that share them.
//
// Tensors are 4-D [batch, heads, rows, cols] with strides; Q, K, V are read in place from the
// layer's QKV rows ([tokens, H·d + Hkv·d + Hkv·d_v], Megatron's layout: the query heads, then K,
// then V), the output and its gradient are rows [tokens, H·d_v], the statistics FP32 [b, H, s_q, 1]. Decode
// (one query row against a cache) reads K and V from caches the runner owns.
#ifndef WAVECREST_CORE_SDPA_GRAPH_H_
#define WAVECREST_CORE_SDPA_GRAPH_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/layer_program.h"

namespace wavecrest {

// Element types: kIo is the layer's BF16 or FP16.
enum class SdpaType { kIo, kFloat, kInt32, kBool };

// Where a tensor's values live. Virtual tensors live nowhere (cuDNN fuses them away); kOwn is
// device memory the runner allocates (K/V caches, the backward's row sums and dQ accumulator);
// kByValue is a host scalar passed with each launch.
enum class SdpaSlot { kVirtual, kQkvRows, kORows, kStats, kDoRows, kDqkvRows, kOwn, kByValue };

struct SdpaTensor {
  int64_t uid = 0;
  std::string name;
  SdpaType type = SdpaType::kFloat;
  std::array<int64_t, 4> dims{}, strides{};
  SdpaSlot slot = SdpaSlot::kVirtual;
  int64_t offset_bytes = 0;  // from the slot's base (16-byte aligned)
  float value = 0;           // kByValue (FP32)
};

enum class SdpaOpKind { kMatmul, kPointwise, kReduction, kReshape };
enum class SdpaMode {
  kNone,  // matmul, reshape
  kMul,
  kAdd,
  kSub,
  kDiv,
  kExp,
  kLog,
  kIdentity,
  kGenIndex,      // the index along `axis` of each element of the input
  kCmpGe,         // x ≥ b
  kCmpGt,         // x > b
  kBinarySelect,  // t ? x : b
  kMax,           // reductions: to the output's shape (dims of 1, or grouped heads)
  kSum,
};

struct SdpaOp {
  SdpaOpKind kind = SdpaOpKind::kPointwise;
  SdpaMode mode = SdpaMode::kNone;
  std::string name;
  SdpaType compute = SdpaType::kFloat;
  int axis = -1;            // kGenIndex
  std::vector<int64_t> in;  // matmul: A, B; pointwise: x [, b [, t]]; reduction, reshape: x
  int64_t out = 0;
};

struct SdpaShape {
  int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  int64_t v_head_dim = 0;  // 0 = head_dim
  int64_t window = 0;      // keys more than window − 1 behind the query masked (0 = none)
  bool causal = true;
  float scale = 1.0f;
  DType dtype = DType::kBf16;
};

struct SdpaGraph {
  std::string name;  // "sdpa forward", "sdpa backward"
  SdpaShape shape;
  std::vector<SdpaTensor> tensors;
  std::vector<SdpaOp> ops;
  int64_t own_bytes = 0;         // device memory of the kOwn tensors
  int64_t own_random_bytes = 0;  // its prefix the runner fills with random values (K/V caches)
  // A region of the runner's memory to zero before each launch: the backward's FP32 dQ
  // accumulator, which cuDNN before 9.6 does not clear itself. -1: none.
  int64_t zero_offset = -1, zero_bytes = 0;

  const SdpaTensor* Find(int64_t uid) const;
};

// The attention of a kFusedAttention or kFusedAttentionBackward op of a layer program.
SdpaShape SdpaShapeOf(const LayerOp& op, DType dtype);

// What the graphs cover: BF16/FP16, head dims (query and value) multiples of 8 up to 256, query
// heads a multiple of the KV heads, a window only under the causal mask. INVALID_ARGUMENT naming
// the field otherwise.
absl::Status CheckSdpaShape(const SdpaShape& shape);

// Decode: one query row per sequence against a KV cache of kv_len.
inline bool SdpaDecode(const SdpaShape& s) { return s.q_len != s.kv_len; }
inline int64_t SdpaValueDim(const SdpaShape& s) {
  return s.v_head_dim > 0 ? s.v_head_dim : s.head_dim;
}

absl::StatusOr<SdpaGraph> SdpaForwardGraph(const SdpaShape& shape, bool training);
absl::StatusOr<SdpaGraph> SdpaBackwardGraph(const SdpaShape& shape);

// Structural checks (what cuDNN's finalize would refuse, and what would write outside a buffer):
// unique ids, every input defined before it is read, each tensor written once, matmul, pointwise,
// reduction and reshape shapes consistent, device tensors 16-byte aligned.
absl::Status ValidateSdpaGraph(const SdpaGraph& graph);

int SdpaTypeBytes(SdpaType type);
// The byte just past the last one a tensor reaches from its slot's base.
int64_t SdpaTensorEndBytes(const SdpaTensor& t);

}  // namespace wavecrest

#endif  // WAVECREST_CORE_SDPA_GRAPH_H_
