// The cuBLASLt engine's setup: the device (refused with the reason when there is none usable or
// the driver is too old), its fingerprint (name, SMs, memory, L2, clocks, driver, CUDA, cuBLASLt
// and cuDNN versions, catalog name), and what every timing shares: the cuBLASLt handle, a
// non-blocking stream, the framework's workspace, the clock probes, FP8 scale factors and events.
// Also how CUDA and cuBLAS failures become statuses: a sticky error marks the backend broken (the
// worker reports it and exits).
#include "core/status_macros.h"
#include "gpu_worker/cuda/cublaslt_engine.h"

namespace wavecrest::engine {

absl::StatusOr<std::unique_ptr<TimingBackend>> CublasLtBackend::Create(int device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);  // 0 when no driver is installed at all
  cudaRuntimeGetVersion(&runtime);
  if (e == cudaErrorInsufficientDriver && driver > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--backend=cublaslt: the NVIDIA driver supports CUDA ", VersionString(driver),
                     ", older than this build's runtime (CUDA ", VersionString(runtime),
                     "): update the driver, or build with a toolkit the driver supports"));
  }
  if (e != cudaSuccess || count == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--backend=cublaslt needs a CUDA GPU, and this machine has none usable (",
                     e != cudaSuccess ? cudaGetErrorString(e) : "no devices",
                     "). Use --backend=analytic "
                     "--emulate=GPU to run without one"));
  }
  if (device < 0 || device >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("--device: ", device, " is outside [0, ", count - 1, "]"));
  }
  std::unique_ptr<CublasLtBackend> b(new CublasLtBackend(device));
  if (absl::Status st = b->Init(); !st.ok()) return st;
  return std::unique_ptr<TimingBackend>(std::move(b));
}

CublasLtBackend::~CublasLtBackend() {
  if (broken_) return;  // a broken context cannot be torn down cleanly; the process exits
  cudaSetDevice(device_);
  for (void* p : {workspace_, static_cast<void*>(probes_), static_cast<void*>(one_)}) {
    if (p) cudaFree(p);
  }
  timer_.Destroy();
  if (stream_) cudaStreamDestroy(stream_);
  if (handle_) cublasLtDestroy(handle_);
}

int64_t CublasLtBackend::FreeMemoryBytes() {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_) return 0;
  cudaSetDevice(device_);
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
  return static_cast<int64_t>(free);
}

absl::Status CublasLtBackend::Ready() {
  if (broken_) return absl::InternalError("the CUDA context is unusable after a sticky error");
  if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) return Cuda(e, "cudaSetDevice");
  return absl::OkStatus();
}

absl::Status CublasLtBackend::Cuda(cudaError_t e, absl::string_view what) {
  if (e == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();  // clear a non-sticky error
  if (e == cudaErrorMemoryAllocation) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": out of device memory (", cudaGetErrorString(e), ")"));
  }
  if (IsSticky(e)) broken_ = true;
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorName(e), ": ", cudaGetErrorString(e),
                   broken_ ? " (sticky: the CUDA context is unusable)" : ""));
}

absl::Status CublasLtBackend::Blas(cublasStatus_t s, absl::string_view what) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  // A cuBLAS failure may hide a sticky CUDA error.
  if (cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) return Cuda(e, what);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": cuBLASLt does not support this GEMM on this device"));
  }
  return absl::InternalError(
      absl::StrCat(what, ": ", cublasLtGetStatusName(s), ": ", cublasLtGetStatusString(s)));
}

absl::Status CublasLtBackend::Init() {
  RETURN_IF_ERROR(ReadDevice());
  return Allocate();
}

absl::Status CublasLtBackend::ReadDevice() {
  RETURN_IF_ERROR(Cuda(cudaSetDevice(device_), "cudaSetDevice"));
  cudaDeviceProp prop{};
  RETURN_IF_ERROR(Cuda(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties"));
  int clock_khz = 0;
  RETURN_IF_ERROR(Cuda(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device_),
                       "cudaDeviceGetAttribute"));
  int runtime = 0;
  RETURN_IF_ERROR(Cuda(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion"));
  const size_t lt = cublasLtGetVersion();
  cc_ = prop.major * 10 + prop.minor;
  l2_bytes_ = prop.l2CacheSize;
  fp_.set_name(prop.name);
  fp_.set_compute_capability(cc_);
  fp_.set_sm_count(prop.multiProcessorCount);
  fp_.set_memory_bytes(static_cast<int64_t>(prop.totalGlobalMem));
  fp_.set_l2_bytes(prop.l2CacheSize);
  fp_.set_max_sm_clock_mhz(clock_khz / 1000);
  fp_.set_driver_version(DriverVersion());
  fp_.set_cuda_runtime_version(VersionString(runtime));
  fp_.set_cublaslt_version(absl::StrCat(lt / 10000, ".", (lt / 100) % 100, ".", lt % 100));
  fp_.set_backend("cublaslt");
  if (const std::string cudnn = CudnnVersionString(); cudnn != "none") {
    fp_.set_cudnn_version(cudnn);
  }
  fp_.set_catalog_name(CatalogNameForDevice(prop.name, prop.multiProcessorCount,
                                            static_cast<int64_t>(prop.totalGlobalMem)));
  if (absl::StatusOr<const GpuSpec*> g = FindGpu(fp_.catalog_name()); g.ok()) gpu_ = *g;
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device_) == cudaSuccess) {
    clocks_ = ClockSampler::Open(bus, &clock_why_);
  }
  return absl::OkStatus();
}

absl::Status CublasLtBackend::Allocate() {
  RETURN_IF_ERROR(Blas(cublasLtCreate(&handle_), "cublasLtCreate"));
  RETURN_IF_ERROR(
      Cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
  workspace_bytes_ = FrameworkWorkspaceBytes(cc_);
  RETURN_IF_ERROR(Cuda(cudaMalloc(&workspace_, workspace_bytes_), "workspace"));
  RETURN_IF_ERROR(
      Cuda(cudaMalloc(&probes_, 2 * kProbeSlots * sizeof(unsigned long long)), "clock probes"));
  // FP8 scale factors (1.0, in the compute type) for A and B.
  const float one = 1.0f;
  RETURN_IF_ERROR(Cuda(cudaMalloc(&one_, sizeof(float)), "scale"));
  RETURN_IF_ERROR(Cuda(cudaMemcpy(one_, &one, sizeof(one), cudaMemcpyHostToDevice), "scale"));
  return Cuda(timer_.Create(kMaxWindow), "events");
}

}  // namespace wavecrest::engine
