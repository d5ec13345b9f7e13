// The kernels of a mixture-of-experts block and of multi-head latent attention's assembly, for the
// layer engine (core/layer_program.h: kRouterTopK, kPermute, kCombine, kMlaAssemble and their
// backwards). One pass each, FP32 arithmetic, BF16/FP16/FP32 storage; the router's probabilities
// are FP32 and its expert ids int32. Every function launches on `stream` and returns
// cudaGetLastError().
//
// The routed rows follow a fixed scattered order: routed row r holds token src(r) = (r·mult) mod
// tokens, and the rows of token t are r ≡ t·inverse (mod tokens), r < rows (core/layer_program.h).
#ifndef WAVECREST_GPU_WORKER_CUDA_MOE_KERNELS_H_
#define WAVECREST_GPU_WORKER_CUDA_MOE_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu_worker/cuda/kernels.h"

namespace wavecrest::cuda {

// The most experts per token the top-k kernel selects.
inline constexpr int64_t kMaxTopK = 64;

// Per token: softmax over `experts` logits, then the k largest probabilities and their ids.
cudaError_t RouterTopK(const void* logits, float* probs, int32_t* ids, int64_t tokens,
                       int64_t experts, int64_t k, Elem elem, cudaStream_t stream);
// d logits = softmax backward of the selected probabilities' gradient.
cudaError_t RouterTopKBackward(const float* d_probs, const void* logits, const int32_t* ids,
                               void* d_logits, int64_t tokens, int64_t experts, int64_t k,
                               Elem elem, cudaStream_t stream);

struct RouteShape {
  int64_t rows = 0, tokens = 0, cols = 0, k = 0, mult = 1, inverse = 1;
};
// out[r] = x[src(r)] over the routed rows.
cudaError_t Permute(const void* x, void* out, const RouteShape& s, Elem elem, cudaStream_t stream);
// dx[t] = Σ d_rows[r] over token t's rows.
cudaError_t PermuteBackward(const void* d_rows, void* dx, const RouteShape& s, Elem elem,
                            cudaStream_t stream);
// out[t] = shared[t] (when given) + Σ_i probs[t, min(i, k − 1)] · rows[r_i(t)].
cudaError_t Combine(const void* rows, const void* shared, const float* probs, void* out,
                    const RouteShape& s, Elem elem, cudaStream_t stream);
// d_rows[r] = w(r) · d_out[src(r)]; d_probs[t, i] = d_out[t] · rows[r_i(t)].
cudaError_t CombineBackward(const void* d_out, const void* rows, const float* probs, void* d_rows,
                            float* d_probs, const RouteShape& s, Elem elem, cudaStream_t stream);

// Multi-head latent attention's rows: `heads` heads of query/key dim d (nope + rope) and value
// dim dv; the up projection's rows hold per head [k nope | v], the down projection's rows
// [latent | rope] (the rotary key part, shared by every head).
struct MlaShape {
  int64_t tokens = 0, heads = 0, d = 0, dv = 0, rope = 0, latent = 0;
};
// QKV rows [tokens, heads·(2·d + dv)]: Q, K (nope from the up projection, rope from the down
// projection), V.
cudaError_t MlaAssemble(const void* q, const void* kv_up, const void* kv_down, void* qkv,
                        const MlaShape& s, Elem elem, cudaStream_t stream);
// From dQKV rows: dq, the up projection's gradient rows, and the rotary part of the down
// projection's gradient rows (summed over the heads; its latent part is left to the norm).
cudaError_t MlaAssembleBackward(const void* dqkv, void* dq, void* d_kv_up, void* d_kv_down,
                                const MlaShape& s, Elem elem, cudaStream_t stream);

}  // namespace wavecrest::cuda

#endif  // WAVECREST_GPU_WORKER_CUDA_MOE_KERNELS_H_
