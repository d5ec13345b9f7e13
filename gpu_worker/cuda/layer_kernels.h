// The elementwise kernels of a whole-layer benchmark (core/layer_program.h): norms, activations,
// residual adds, the unfused attention's softmax and head reshapes, forward and backward. One pass
// each, FP32 arithmetic, BF16/FP16/FP32 storage: what an eager framework layer runs, kernel for
// kernel. Every function launches on `stream` and returns cudaGetLastError().
#ifndef WAVECREST_GPU_WORKER_CUDA_LAYER_KERNELS_H_
#define WAVECREST_GPU_WORKER_CUDA_LAYER_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu_worker/cuda/kernels.h"

namespace wavecrest::cuda {

// y = norm(x)·scale over each of `rows` rows of `cols`; RMSNorm when `rms`, else LayerNorm. x's
// rows are `x_stride` elements apart (0 = cols; MLA's latent sits in wider rows); y is dense.
cudaError_t Norm(const void* x, const void* scale, void* y, int64_t rows, int64_t cols,
                 int64_t x_stride, bool rms, Elem elem, cudaStream_t stream);
// dx from dy and x (statistics recomputed), scale's gradient not formed; x and dx rows
// `x_stride` apart, dy dense.
cudaError_t NormBackward(const void* dy, const void* x, const void* scale, void* dx, int64_t rows,
                         int64_t cols, int64_t x_stride, bool rms, Elem elem,
                         cudaStream_t stream);

// y[rows × cols] = GELU(x) (tanh form), or SwiGLU: silu(gate)·up with the gate at x[r·stride + j]
// and the up half at up[r·cols + j] when `up` is given, else at x[r·stride + cols + j].
cudaError_t Activation(const void* x, const void* up, int64_t x_stride, void* y, int64_t rows,
                       int64_t cols, bool swiglu, Elem elem, cudaStream_t stream);
// The input gradient(s): dx (gate half, or the whole GELU input; same stride as x) and, for
// SwiGLU with a separate up buffer, dup.
cudaError_t ActivationBackward(const void* dy, const void* x, const void* up, int64_t x_stride,
                               void* dx, void* dup, int64_t rows, int64_t cols, bool swiglu,
                               Elem elem, cudaStream_t stream);

// c = a + b over `count` elements.
cudaError_t Add(const void* a, const void* b, void* c, int64_t count, Elem elem,
                cudaStream_t stream);

// In place over rows of `cols` scores: scale, causal mask (query i of a block of q_len rows sees
// keys up to i + cols − q_len), a sliding window (only the last `window` of those; 0 = all),
// softmax.
cudaError_t Softmax(void* scores, int64_t rows, int64_t cols, int64_t q_len, bool causal,
                    int64_t window, float scale, Elem elem, cudaStream_t stream);
// In place: dP → dS = scale · P ⊙ (dP − Σ_j P·dP).
cudaError_t SoftmaxBackward(void* dp, const void* p, int64_t rows, int64_t cols, float scale,
                            Elem elem, cudaStream_t stream);

// Attention shapes: b sequences of s tokens, H query heads, Hkv key/value heads, head dim d.
struct HeadShape {
  int64_t b = 0, s = 0, heads = 0, kv_heads = 0, d = 0;
};
// From token rows [b, s, W] (W = (H + 2·Hkv)·d, or H·d when kv_heads is 0) to q [b·H, s, d] and,
// when given, k and v [b·H, s, d] (each KV head repeated for its H/Hkv query heads).
cudaError_t SplitHeads(const void* rows, void* q, void* k, void* v, const HeadShape& shape,
                       Elem elem, cudaStream_t stream);
// From heads [b·H, s, d] to token rows [b, s, H·d]; with dk and dv (gradients, [b·H, s, d]) to QKV
// rows [b, s, (H + 2·Hkv)·d], each KV head's gradient summed over its query heads.
cudaError_t MergeHeads(const void* q, const void* dk, const void* dv, void* rows,
                       const HeadShape& shape, Elem elem, cudaStream_t stream);

}  // namespace wavecrest::cuda

#endif  // WAVECREST_GPU_WORKER_CUDA_LAYER_KERNELS_H_
