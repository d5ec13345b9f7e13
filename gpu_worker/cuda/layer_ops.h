// The layer engine's kernels beyond GEMMs and fused attention: one elementwise op of a layer
// program (core/layer_program.h) enqueued on a stream with its buffers.
#ifndef WAVECREST_GPU_WORKER_CUDA_LAYER_OPS_H_
#define WAVECREST_GPU_WORKER_CUDA_LAYER_OPS_H_

#include <cuda_runtime.h>

#include <vector>

#include "core/layer_program.h"
#include "gpu_worker/cuda/kernels.h"

namespace wavecrest::engine {

// Whether `kind` is one of EnqueueLayerKernel's (not a GEMM, grouped GEMM or fused attention).
bool IsLayerKernel(LayerOpKind kind);
// `op` on `stream`, its buffers by index in `buffers` (-1: none); `e` the activations' element
// type. cudaErrorInvalidValue for an op it cannot run (a top-k beyond cuda::kMaxTopK).
cudaError_t EnqueueLayerKernel(const LayerOp& op, const std::vector<void*>& buffers, cuda::Elem e,
                               cudaStream_t stream);

}  // namespace wavecrest::engine

#endif  // WAVECREST_GPU_WORKER_CUDA_LAYER_OPS_H_
