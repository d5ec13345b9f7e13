#include "gpu_worker/cuda/moe_kernels.h"

#include "gpu_worker/cuda/kernel_util.cuh"

namespace wavecrest::cuda {
namespace {

using namespace kernel_util;  // NOLINT: the kernels' element helpers

// The softmax's row max and normalizer of one token's logits (every thread gets both).
template <typename T>
__device__ void RowSoftmaxStats(const T* row, int64_t experts, float* shared, float* m, float* z) {
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < experts; j += kThreads) mx = fmaxf(mx, ToF(row[j]));
  mx = BlockMax(mx, shared);
  float sum = 0;
  for (int64_t j = threadIdx.x; j < experts; j += kThreads) sum += __expf(ToF(row[j]) - mx);
  *m = mx;
  *z = BlockSum(sum, shared);
}

// Whether candidate (va, ia) beats (vb, ib): a larger value, ties to the lower id; -1 is none.
__device__ __forceinline__ bool Beats(float va, int ia, float vb, int ib) {
  return ia >= 0 && (ib < 0 || va > vb || (va == vb && ia < ib));
}

template <typename T>
__global__ void TopKKernel(const T* logits, float* probs, int32_t* ids, int64_t experts,
                           int64_t k) {
  __shared__ float shared[32];
  __shared__ float best_v[kThreads];
  __shared__ int best_i[kThreads];
  __shared__ int chosen[kMaxTopK];
  const T* row = logits + blockIdx.x * experts;
  float m = 0, z = 1;
  RowSoftmaxStats(row, experts, shared, &m, &z);
  for (int64_t r = 0; r < k; ++r) {
    float bv = -INFINITY;
    int bi = -1;
    for (int64_t j = threadIdx.x; j < experts; j += kThreads) {
      bool taken = false;
      for (int64_t q = 0; q < r; ++q) taken |= chosen[q] == j;
      const float v = ToF(row[j]);
      if (!taken && Beats(v, static_cast<int>(j), bv, bi)) {
        bv = v;
        bi = static_cast<int>(j);
      }
    }
    best_v[threadIdx.x] = bv;
    best_i[threadIdx.x] = bi;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
      if (threadIdx.x < stride) {
        const int o = threadIdx.x + stride;
        if (Beats(best_v[o], best_i[o], best_v[threadIdx.x], best_i[threadIdx.x])) {
          best_v[threadIdx.x] = best_v[o];
          best_i[threadIdx.x] = best_i[o];
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      chosen[r] = best_i[0];
      probs[blockIdx.x * k + r] = __expf(best_v[0] - m) / z;
      ids[blockIdx.x * k + r] = best_i[0];
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void TopKBackwardKernel(const float* d_probs, const T* logits, const int32_t* ids,
                                   T* d_logits, int64_t experts, int64_t k) {
  __shared__ float shared[32];
  __shared__ float dot;
  const T* row = logits + blockIdx.x * experts;
  const float* dp = d_probs + blockIdx.x * k;
  const int32_t* id = ids + blockIdx.x * k;
  float m = 0, z = 1;
  RowSoftmaxStats(row, experts, shared, &m, &z);
  if (threadIdx.x == 0) {  // Σ_r dp_r · p_{id_r}
    float s = 0;
    for (int64_t r = 0; r < k; ++r) s += dp[r] * __expf(ToF(row[id[r]]) - m) / z;
    dot = s;
  }
  __syncthreads();
  for (int64_t j = threadIdx.x; j < experts; j += kThreads) {
    float g = 0;
    for (int64_t r = 0; r < k; ++r) g += id[r] == j ? dp[r] : 0.0f;
    const float p = __expf(ToF(row[j]) - m) / z;
    d_logits[blockIdx.x * experts + j] = FromF<T>(p * (g - dot));
  }
}

template <typename T>
__global__ void PermuteKernel(const T* x, T* out, RouteShape s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.rows * s.cols;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / s.cols, c = i % s.cols;
    out[i] = x[((r * s.mult) % s.tokens) * s.cols + c];
  }
}

template <typename T>
__global__ void PermuteBackwardKernel(const T* d_rows, T* dx, RouteShape s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.tokens * s.cols;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = i / s.cols, c = i % s.cols;
    float sum = 0;
    for (int64_t r = (t * s.inverse) % s.tokens; r < s.rows; r += s.tokens) {
      sum += ToF(d_rows[r * s.cols + c]);
    }
    dx[i] = FromF<T>(sum);
  }
}

template <typename T>
__global__ void CombineKernel(const T* rows, const T* shared, const float* probs, T* out,
                              RouteShape s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.tokens * s.cols;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = i / s.cols, c = i % s.cols;
    float sum = shared != nullptr ? ToF(shared[i]) : 0.0f;
    int64_t copy = 0;
    for (int64_t r = (t * s.inverse) % s.tokens; r < s.rows; r += s.tokens, ++copy) {
      sum += probs[t * s.k + (copy < s.k ? copy : s.k - 1)] * ToF(rows[r * s.cols + c]);
    }
    out[i] = FromF<T>(sum);
  }
}

template <typename T>
__global__ void CombineBackwardRowsKernel(const T* d_out, const float* probs, T* d_rows,
                                          RouteShape s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.rows * s.cols;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / s.cols, c = i % s.cols;
    const int64_t t = (r * s.mult) % s.tokens, copy = r / s.tokens;
    const float w = probs[t * s.k + (copy < s.k ? copy : s.k - 1)];
    d_rows[i] = FromF<T>(w * ToF(d_out[t * s.cols + c]));
  }
}

template <typename T>
__global__ void CombineBackwardProbsKernel(const T* d_out, const T* rows, float* d_probs,
                                           RouteShape s) {
  __shared__ float shared[32];
  const int64_t t = blockIdx.x;
  const int64_t r0 = (t * s.inverse) % s.tokens;
  for (int64_t copy = 0; copy < s.k; ++copy) {
    const int64_t r = r0 + copy * s.tokens;
    float dot = 0;
    if (r < s.rows) {
      for (int64_t c = threadIdx.x; c < s.cols; c += kThreads) {
        dot += ToF(d_out[t * s.cols + c]) * ToF(rows[r * s.cols + c]);
      }
    }
    dot = BlockSum(dot, shared);
    if (threadIdx.x == 0) d_probs[t * s.k + copy] = dot;
  }
}

template <typename T>
__global__ void MlaAssembleKernel(const T* q, const T* kv_up, const T* kv_down, T* qkv,
                                  MlaShape s) {
  const int64_t nope = s.d - s.rope, up_w = s.heads * (nope + s.dv);
  const int64_t width = s.heads * (2 * s.d + s.dv), q_w = s.heads * s.d;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.tokens * width;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = i / width, col = i % width;
    const T* up = kv_up + t * up_w;
    if (col < q_w) {
      qkv[i] = q[t * q_w + col];
    } else if (col < 2 * q_w) {
      const int64_t h = (col - q_w) / s.d, c = (col - q_w) % s.d;
      qkv[i] = c < nope ? up[h * (nope + s.dv) + c]
                        : kv_down[t * (s.latent + s.rope) + s.latent + (c - nope)];
    } else {
      const int64_t h = (col - 2 * q_w) / s.dv, c = (col - 2 * q_w) % s.dv;
      qkv[i] = up[h * (nope + s.dv) + nope + c];
    }
  }
}

template <typename T>
__global__ void MlaAssembleBackwardKernel(const T* dqkv, T* dq, T* d_kv_up, T* d_kv_down,
                                          MlaShape s) {
  const int64_t nope = s.d - s.rope, up_w = s.heads * (nope + s.dv);
  const int64_t width = s.heads * (2 * s.d + s.dv), q_w = s.heads * s.d;
  const int64_t per_token = q_w + up_w + s.rope;  // dq, d up, and the rope part of d down
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < s.tokens * per_token;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = i / per_token, col = i % per_token;
    const T* row = dqkv + t * width;
    if (col < q_w) {
      dq[t * q_w + col] = row[col];
    } else if (col < q_w + up_w) {
      const int64_t u = col - q_w, h = u / (nope + s.dv), c = u % (nope + s.dv);
      d_kv_up[t * up_w + u] = c < nope ? row[q_w + h * s.d + c] : row[2 * q_w + h * s.dv + c - nope];
    } else {
      const int64_t c = col - q_w - up_w;  // the shared rotary key part: summed over heads
      float sum = 0;
      for (int64_t h = 0; h < s.heads; ++h) sum += ToF(row[q_w + h * s.d + nope + c]);
      d_kv_down[t * (s.latent + s.rope) + s.latent + c] = FromF<T>(sum);
    }
  }
}

}  // namespace

cudaError_t RouterTopK(const void* logits, float* probs, int32_t* ids, int64_t tokens,
                       int64_t experts, int64_t k, Elem elem, cudaStream_t stream) {
  if (k < 1 || k > kMaxTopK || k > experts) return cudaErrorInvalidValue;
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    TopKKernel<T><<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(
        static_cast<const T*>(logits), probs, ids, experts, k);
  });
}

cudaError_t RouterTopKBackward(const float* d_probs, const void* logits, const int32_t* ids,
                               void* d_logits, int64_t tokens, int64_t experts, int64_t k,
                               Elem elem, cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    TopKBackwardKernel<T><<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(
        d_probs, static_cast<const T*>(logits), ids, static_cast<T*>(d_logits), experts, k);
  });
}

cudaError_t Permute(const void* x, void* out, const RouteShape& s, Elem elem,
                    cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    PermuteKernel<T><<<Blocks(s.rows * s.cols), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(out), s);
  });
}

cudaError_t PermuteBackward(const void* d_rows, void* dx, const RouteShape& s, Elem elem,
                            cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    PermuteBackwardKernel<T><<<Blocks(s.tokens * s.cols), kThreads, 0, stream>>>(
        static_cast<const T*>(d_rows), static_cast<T*>(dx), s);
  });
}

cudaError_t Combine(const void* rows, const void* shared, const float* probs, void* out,
                    const RouteShape& s, Elem elem, cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    CombineKernel<T><<<Blocks(s.tokens * s.cols), kThreads, 0, stream>>>(
        static_cast<const T*>(rows), static_cast<const T*>(shared), probs, static_cast<T*>(out),
        s);
  });
}

cudaError_t CombineBackward(const void* d_out, const void* rows, const float* probs, void* d_rows,
                            float* d_probs, const RouteShape& s, Elem elem, cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    CombineBackwardRowsKernel<T><<<Blocks(s.rows * s.cols), kThreads, 0, stream>>>(
        static_cast<const T*>(d_out), probs, static_cast<T*>(d_rows), s);
    CombineBackwardProbsKernel<T><<<static_cast<unsigned>(s.tokens), kThreads, 0, stream>>>(
        static_cast<const T*>(d_out), static_cast<const T*>(rows), d_probs, s);
  });
}

cudaError_t MlaAssemble(const void* q, const void* kv_up, const void* kv_down, void* qkv,
                        const MlaShape& s, Elem elem, cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    MlaAssembleKernel<T><<<Blocks(s.tokens * s.heads * (2 * s.d + s.dv)), kThreads, 0, stream>>>(
        static_cast<const T*>(q), static_cast<const T*>(kv_up), static_cast<const T*>(kv_down),
        static_cast<T*>(qkv), s);
  });
}

cudaError_t MlaAssembleBackward(const void* dqkv, void* dq, void* d_kv_up, void* d_kv_down,
                                const MlaShape& s, Elem elem, cudaStream_t stream) {
  const int64_t per_token = s.heads * s.d + s.heads * (s.d - s.rope + s.dv) + s.rope;
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    MlaAssembleBackwardKernel<T><<<Blocks(s.tokens * per_token), kThreads, 0, stream>>>(
        static_cast<const T*>(dqkv), static_cast<T*>(dq), static_cast<T*>(d_kv_up),
        static_cast<T*>(d_kv_down), s);
  });
}

}  // namespace wavecrest::cuda
