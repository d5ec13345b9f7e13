// cuDNN's backend API (cudnn_graph.h) as the worker reaches it: libcudnn.so.9 loaded at run time
// (dlopen, never linked, so that a worker without cuDNN still runs), its status codes turned into
// absl::Status with cuDNN's own reason, and its backend descriptors owned. What is built from
// them (the attention graphs and plans) is gpu_worker/cuda/cudnn_sdpa.cc's.
#ifndef WAVECREST_GPU_WORKER_CUDA_CUDNN_API_H_
#define WAVECREST_GPU_WORKER_CUDA_CUDNN_API_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"

// Builds without cuDNN's headers have no cuDNN at all (cudnn_sdpa.cc then says so).
#if __has_include(<cudnn_graph.h>)
#include <cudnn_graph.h>
#define WAVECREST_HAVE_CUDNN_HEADERS 1
#endif

#ifdef WAVECREST_HAVE_CUDNN_HEADERS

namespace wavecrest::engine {

// libcudnn.so.9's entry points, looked up once (never closed: cuDNN keeps state until exit).
struct CudnnApi {
  void* lib = nullptr;
  std::string error;
  size_t (*get_version)() = nullptr;
  const char* (*error_string)(cudnnStatus_t) = nullptr;
  void (*last_error)(char*, size_t) = nullptr;  // cuDNN 9.0+
  cudnnStatus_t (*create)(cudnnHandle_t*) = nullptr;
  cudnnStatus_t (*destroy)(cudnnHandle_t) = nullptr;
  cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t) = nullptr;
  cudnnStatus_t (*create_desc)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t*) = nullptr;
  cudnnStatus_t (*destroy_desc)(cudnnBackendDescriptor_t) = nullptr;
  cudnnStatus_t (*set)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t,
                       cudnnBackendAttributeType_t, int64_t, const void*) = nullptr;
  cudnnStatus_t (*get)(cudnnBackendDescriptor_t, cudnnBackendAttributeName_t,
                       cudnnBackendAttributeType_t, int64_t, int64_t*, void*) = nullptr;
  cudnnStatus_t (*finalize)(cudnnBackendDescriptor_t) = nullptr;
  cudnnStatus_t (*execute)(cudnnHandle_t, cudnnBackendDescriptor_t,
                           cudnnBackendDescriptor_t) = nullptr;
  bool ok() const { return error.empty(); }
};

// The process's cuDNN, loaded on first use; `error` says why it cannot be used (not found, an
// entry point missing, older than 9).
const CudnnApi& Cudnn();

// The loaded cuDNN's version number (9.10.2 is 91002).
inline size_t CudnnVersionNumber() { return Cudnn().get_version(); }

// OK for CUDNN_STATUS_SUCCESS; otherwise FAILED_PRECONDITION naming `what`, with cuDNN's error
// string and its last error message when it has one.
absl::Status CudnnCheck(cudnnStatus_t s, absl::string_view what);

// One backend descriptor, destroyed with its owner.
class CudnnDesc {
 public:
  CudnnDesc() = default;
  CudnnDesc(CudnnDesc&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  CudnnDesc& operator=(CudnnDesc&& o) noexcept {
    std::swap(d_, o.d_);
    return *this;
  }
  CudnnDesc(const CudnnDesc&) = delete;
  CudnnDesc& operator=(const CudnnDesc&) = delete;
  ~CudnnDesc() {
    if (d_ != nullptr) Cudnn().destroy_desc(d_);
  }
  static absl::StatusOr<CudnnDesc> Make(cudnnBackendDescriptorType_t type) {
    CudnnDesc d;
    RETURN_IF_ERROR(CudnnCheck(Cudnn().create_desc(type, &d.d_), "create descriptor"));
    return d;
  }
  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnBackendDescriptor_t* out() { return &d_; }

  template <typename T>
  absl::Status Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                   const T* values, int64_t count, absl::string_view what) {
    return CudnnCheck(Cudnn().set(d_, name, type, count, values), what);
  }
  absl::Status SetDesc(cudnnBackendAttributeName_t name, const CudnnDesc& other,
                       absl::string_view what) {
    cudnnBackendDescriptor_t raw = other.get();
    return Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw, 1, what);
  }
  absl::Status Finalize(absl::string_view what) { return CudnnCheck(Cudnn().finalize(d_), what); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

}  // namespace wavecrest::engine

#endif  // WAVECREST_HAVE_CUDNN_HEADERS

#endif  // WAVECREST_GPU_WORKER_CUDA_CUDNN_API_H_
