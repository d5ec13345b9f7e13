#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gpu_worker/cuda/layer_kernels.h"

#include "gpu_worker/cuda/kernel_util.cuh"

namespace wavecrest::cuda {
namespace {

using namespace kernel_util;  // NOLINT: the kernels' element helpers

template <typename T>
__global__ void NormKernel(const T* x, const T* scale, T* y, int64_t cols, int64_t x_stride,
                           bool rms) {
  __shared__ float shared[32];
  const T* row = x + blockIdx.x * x_stride;
  T* out = y + blockIdx.x * cols;
  float sum = 0, sq = 0;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    const float v = ToF(row[j]);
    sum += v;
    sq += v * v;
  }
  sum = BlockSum(sum, shared);
  sq = BlockSum(sq, shared);
  const float n = static_cast<float>(cols);
  const float mean = rms ? 0.0f : sum / n;
  const float var = rms ? sq / n : fmaxf(sq / n - mean * mean, 0.0f);
  const float rstd = rsqrtf(var + 1e-5f);
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    out[j] = FromF<T>((ToF(row[j]) - mean) * rstd * ToF(scale[j]));
  }
}

template <typename T>
__global__ void NormBackwardKernel(const T* dy, const T* x, const T* scale, T* dx, int64_t cols,
                                   int64_t x_stride, bool rms) {
  __shared__ float shared[32];
  const int64_t base = blockIdx.x * x_stride, dy_base = blockIdx.x * cols;
  float sum = 0, sq = 0;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    const float v = ToF(x[base + j]);
    sum += v;
    sq += v * v;
  }
  sum = BlockSum(sum, shared);
  sq = BlockSum(sq, shared);
  const float n = static_cast<float>(cols);
  const float mean = rms ? 0.0f : sum / n;
  const float rstd = rsqrtf((rms ? sq / n : fmaxf(sq / n - mean * mean, 0.0f)) + 1e-5f);
  float g_sum = 0, gx_sum = 0;  // Σ g·dy and Σ g·dy·x̂
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    const float g = ToF(scale[j]) * ToF(dy[dy_base + j]);
    const float xhat = (ToF(x[base + j]) - mean) * rstd;
    g_sum += g;
    gx_sum += g * xhat;
  }
  g_sum = BlockSum(g_sum, shared) / n;
  gx_sum = BlockSum(gx_sum, shared) / n;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    const float g = ToF(scale[j]) * ToF(dy[dy_base + j]);
    const float xhat = (ToF(x[base + j]) - mean) * rstd;
    dx[base + j] = FromF<T>(rstd * (g - (rms ? 0.0f : g_sum) - xhat * gx_sum));
  }
}

__device__ __forceinline__ float Gelu(float v) {
  const float u = 0.7978845608f * (v + 0.044715f * v * v * v);
  return 0.5f * v * (1.0f + tanhf(u));
}
__device__ __forceinline__ float GeluGrad(float v) {
  const float u = 0.7978845608f * (v + 0.044715f * v * v * v);
  const float t = tanhf(u);
  return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * 0.7978845608f * (1.0f + 0.134145f * v * v);
}
__device__ __forceinline__ float Sigmoid(float v) { return 1.0f / (1.0f + __expf(-v)); }

template <typename T>
__global__ void ActivationKernel(const T* x, const T* up, int64_t stride, T* y, int64_t rows,
                                 int64_t cols, bool swiglu) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < rows * cols;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, j = i % cols;
    const float g = ToF(x[r * stride + j]);
    if (!swiglu) {
      y[i] = FromF<T>(Gelu(g));
    } else {
      const float u = up ? ToF(up[r * cols + j]) : ToF(x[r * stride + cols + j]);
      y[i] = FromF<T>(g * Sigmoid(g) * u);
    }
  }
}

template <typename T>
__global__ void ActivationBackwardKernel(const T* dy, const T* x, const T* up, int64_t stride,
                                         T* dx, T* dup, int64_t rows, int64_t cols, bool swiglu) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < rows * cols;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / cols, j = i % cols;
    const float d = ToF(dy[i]);
    const float g = ToF(x[r * stride + j]);
    if (!swiglu) {
      dx[r * stride + j] = FromF<T>(d * GeluGrad(g));
      continue;
    }
    const float u = up ? ToF(up[r * cols + j]) : ToF(x[r * stride + cols + j]);
    const float sg = Sigmoid(g);
    const float silu = g * sg;
    dx[r * stride + j] = FromF<T>(d * u * sg * (1.0f + g * (1.0f - sg)));
    if (dup) {
      dup[r * cols + j] = FromF<T>(d * silu);
    } else {
      dx[r * stride + cols + j] = FromF<T>(d * silu);
    }
  }
}

template <typename T>
__global__ void AddKernel(const T* a, const T* b, T* c, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    c[i] = FromF<T>(ToF(a[i]) + ToF(b[i]));
  }
}

template <typename T>
__global__ void SoftmaxKernel(T* s, int64_t cols, int64_t q_len, bool causal, int64_t window,
                              float scale) {
  __shared__ float shared[32];
  T* row = s + blockIdx.x * cols;
  // Query i (of its block of q_len rows) sees keys 0 .. i + cols − q_len; under a window, only
  // the last `window` of them.
  const int64_t last = causal ? (blockIdx.x % q_len) + cols - q_len : cols - 1;
  const int64_t first = window > 0 && last - window + 1 > 0 ? last - window + 1 : 0;
  float m = -INFINITY;
  for (int64_t j = first + threadIdx.x; j <= last; j += kThreads) {
    m = fmaxf(m, ToF(row[j]) * scale);
  }
  m = BlockMax(m, shared);
  float sum = 0;
  for (int64_t j = first + threadIdx.x; j <= last; j += kThreads) {
    sum += __expf(ToF(row[j]) * scale - m);
  }
  sum = BlockSum(sum, shared);
  const float inv = 1.0f / sum;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    row[j] = FromF<T>(j >= first && j <= last ? __expf(ToF(row[j]) * scale - m) * inv : 0.0f);
  }
}

template <typename T>
__global__ void SoftmaxBackwardKernel(T* dp, const T* p, int64_t cols, float scale) {
  __shared__ float shared[32];
  const int64_t base = blockIdx.x * cols;
  float dot = 0;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads)
    dot += ToF(p[base + j]) * ToF(dp[base + j]);
  dot = BlockSum(dot, shared);
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    dp[base + j] = FromF<T>(scale * ToF(p[base + j]) * (ToF(dp[base + j]) - dot));
  }
}

template <typename T>
__global__ void SplitHeadsKernel(const T* rows, T* q, T* k, T* v, HeadShape sh) {
  const int64_t width = sh.kv_heads > 0 ? (sh.heads + 2 * sh.kv_heads) * sh.d : sh.heads * sh.d;
  const int64_t total = sh.b * sh.heads * sh.s * sh.d;
  const int64_t group = sh.kv_heads > 0 ? sh.heads / sh.kv_heads : 1;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    // i = ((bi·H + hi)·s + t)·d + c
    const int64_t c = i % sh.d, t = (i / sh.d) % sh.s, hi = (i / (sh.d * sh.s)) % sh.heads,
                  bi = i / (sh.d * sh.s * sh.heads);
    const T* row = rows + (bi * sh.s + t) * width;
    q[i] = row[hi * sh.d + c];
    if (k != nullptr) {
      const int64_t kvh = hi / group;
      k[i] = row[(sh.heads + kvh) * sh.d + c];
      v[i] = row[(sh.heads + sh.kv_heads + kvh) * sh.d + c];
    }
  }
}

template <typename T>
__global__ void MergeHeadsKernel(const T* q, const T* dk, const T* dv, T* rows, HeadShape sh) {
  const bool qkv = dk != nullptr;
  const int64_t width = qkv ? (sh.heads + 2 * sh.kv_heads) * sh.d : sh.heads * sh.d;
  const int64_t total = sh.b * sh.s * width;
  const int64_t group = qkv ? sh.heads / sh.kv_heads : 1;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t col = i % width, t = (i / width) % sh.s, bi = i / (width * sh.s);
    const int64_t c = col % sh.d, head = col / sh.d;
    auto at = [&](int64_t hi) { return ((bi * sh.heads + hi) * sh.s + t) * sh.d + c; };
    if (head < sh.heads) {
      rows[i] = q[at(head)];
      continue;
    }
    // A KV head's gradient: the sum over the query heads that share it.
    const bool is_k = head < sh.heads + sh.kv_heads;
    const int64_t kvh = head - sh.heads - (is_k ? 0 : sh.kv_heads);
    const T* src = is_k ? dk : dv;
    float sum = 0;
    for (int64_t g = 0; g < group; ++g) sum += ToF(src[at(kvh * group + g)]);
    rows[i] = FromF<T>(sum);
  }
}

}  // namespace

cudaError_t Norm(const void* x, const void* scale, void* y, int64_t rows, int64_t cols,
                 int64_t x_stride, bool rms, Elem elem, cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    NormKernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<T*>(y), cols,
        x_stride > 0 ? x_stride : cols, rms);
  });
}

cudaError_t NormBackward(const void* dy, const void* x, const void* scale, void* dx, int64_t rows,
                         int64_t cols, int64_t x_stride, bool rms, Elem elem,
                         cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    NormBackwardKernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(scale),
        static_cast<T*>(dx), cols, x_stride > 0 ? x_stride : cols, rms);
  });
}

cudaError_t Activation(const void* x, const void* up, int64_t x_stride, void* y, int64_t rows,
                       int64_t cols, bool swiglu, Elem elem, cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    ActivationKernel<T><<<Blocks(rows * cols), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(up), x_stride, static_cast<T*>(y), rows,
        cols, swiglu);
  });
}

cudaError_t ActivationBackward(const void* dy, const void* x, const void* up, int64_t x_stride,
                               void* dx, void* dup, int64_t rows, int64_t cols, bool swiglu,
                               Elem elem, cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    ActivationBackwardKernel<T><<<Blocks(rows * cols), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(up), x_stride,
        static_cast<T*>(dx), static_cast<T*>(dup), rows, cols, swiglu);
  });
}

cudaError_t Add(const void* a, const void* b, void* c, int64_t count, Elem elem,
                cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    AddKernel<T><<<Blocks(count), kThreads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), count);
  });
}

cudaError_t Softmax(void* scores, int64_t rows, int64_t cols, int64_t q_len, bool causal,
                    int64_t window, float scale, Elem elem, cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    SoftmaxKernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<T*>(scores), cols, q_len, causal, window, scale);
  });
}

cudaError_t SoftmaxBackward(void* dp, const void* p, int64_t rows, int64_t cols, float scale,
                            Elem elem, cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    SoftmaxBackwardKernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<T*>(dp), static_cast<const T*>(p), cols, scale);
  });
}

cudaError_t SplitHeads(const void* rows, void* q, void* k, void* v, const HeadShape& shape,
                       Elem elem, cudaStream_t stream) {
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    SplitHeadsKernel<T><<<Blocks(shape.b * shape.heads * shape.s * shape.d), kThreads, 0, stream>>>(
        static_cast<const T*>(rows), static_cast<T*>(q), static_cast<T*>(k), static_cast<T*>(v),
        shape);
  });
}

cudaError_t MergeHeads(const void* q, const void* dk, const void* dv, void* rows,
                       const HeadShape& shape, Elem elem, cudaStream_t stream) {
  const int64_t width =
      dk != nullptr ? (shape.heads + 2 * shape.kv_heads) * shape.d : shape.heads * shape.d;
  return Dispatch(elem, [&](auto t) {
    using T = decltype(t);
    MergeHeadsKernel<T><<<Blocks(shape.b * shape.s * width), kThreads, 0, stream>>>(
        static_cast<const T*>(q), static_cast<const T*>(dk), static_cast<const T*>(dv),
        static_cast<T*>(rows), shape);
  });
}

}  // namespace wavecrest::cuda
