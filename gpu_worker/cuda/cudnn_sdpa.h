// Fused (Flash) attention for the layer engine through cuDNN's scaled-dot-product attention: the
// graphs of core/sdpa_graph.h on cuDNN's backend API. cuDNN is optional, like CUDA: it is loaded at
// run time (dlopen of libcudnn.so.9, the library PyTorch's wheels and the CUDA images carry), never
// linked, so a worker without it still runs and its fused-attention layers are predicted, saying
// why.
#ifndef WAVECREST_GPU_WORKER_CUDA_CUDNN_SDPA_H_
#define WAVECREST_GPU_WORKER_CUDA_CUDNN_SDPA_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/layer_program.h"
#include "core/sdpa_graph.h"

namespace wavecrest::engine {

// One attention shape (a kFusedAttention op of a layer program), ready to run on one stream.
class SdpaRunner {
 public:
  virtual ~SdpaRunner() = default;
  // Device workspace it holds, bytes.
  virtual int64_t workspace_bytes() const = 0;
  // For the engine string: "cudnn-sdpa 9.x engine N".
  virtual std::string Describe() const = 0;
  // Q, K, V read in place from the QKV rows; O rows and the FP32 softmax statistics written.
  virtual absl::Status Forward(const void* qkv, void* o, void* stats) = 0;
  // dQKV rows from dO, QKV, O and the statistics.
  virtual absl::Status Backward(const void* d_o, const void* qkv, const void* o, const void* stats,
                                void* dqkv) = 0;
};

// The runner for `op`, or FAILED_PRECONDITION saying why fused attention cannot be timed here (no
// cuDNN 9 to load, or a shape or dtype its SDPA engines refuse).
absl::StatusOr<std::unique_ptr<SdpaRunner>> MakeCudnnSdpa(const LayerOp& op, DType dtype,
                                                          bool training, cudaStream_t stream);

// The cuDNN version this process can load ("9.10.2"), or why none ("libcudnn.so.9: cannot open
// shared object file").
std::string CudnnVersion(bool* loaded);
// The loaded version, or "none".
std::string CudnnVersionString();

// Every tensor and operation descriptor of `graph` built and finalized, without a GPU (cuDNN checks
// each operation's shapes and types then; only the operation graph needs a device): what the
// worker's tests run on any machine with libcudnn. FAILED_PRECONDITION with cuDNN's reason.
absl::Status FinalizeSdpaOperations(const SdpaGraph& graph);

}  // namespace wavecrest::engine

#endif  // WAVECREST_GPU_WORKER_CUDA_CUDNN_SDPA_H_
