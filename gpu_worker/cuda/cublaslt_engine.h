// The cuBLASLt timing engine's backend class, shared by the GEMM engine (cublaslt_backend.cc)
// and the layer engine (layer_engine.cc). Internal to gpu_worker/cuda.
//
// What each engine does, step by step, is told at the top of its .cc file.
#ifndef WAVECREST_GPU_WORKER_CUDA_CUBLASLT_ENGINE_H_
#define WAVECREST_GPU_WORKER_CUDA_CUBLASLT_ENGINE_H_

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/cost_model.h"
#include "core/gemm_check.h"
#include "core/gemm_plan.h"
#include "core/gpu_catalog.h"
#include "core/layers.h"
#include "core/timing_stats.h"
#include "gpu_worker/backend.h"
#include "gpu_worker/clock_sampler.h"
#include "gpu_worker/cuda/cudnn_sdpa.h"
#include "gpu_worker/cuda/kernels.h"
#include "service/convert.h"

namespace wavecrest::engine {

using cuda::Elem;

constexpr int64_t kMemoryMargin = int64_t{512} << 20;  // left free for the context and kernels
constexpr int64_t kAlign = 256;                        // offset of each input set
constexpr int kCheckSamples = 16;
constexpr unsigned long long kBlockingNs = 100000;  // blocking kernel before each sample
constexpr unsigned long long kProbeNs = 20000;      // clock probe after each sample
constexpr int kProbeSlots = 4096;

inline bool IsSticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed:
    case cudaErrorDevicesUnavailable:
    case cudaErrorIllegalState:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

struct TypeInfo {
  cudaDataType_t ab;
  cudaDataType_t cd;
  Elem ab_elem;
  Elem cd_elem;
  cublasComputeType_t compute;
  int ab_bytes;
  int cd_bytes;
};

inline TypeInfo Types(DType d) {
  switch (d) {
    case DType::kBf16:
      return {CUDA_R_16BF, CUDA_R_16BF, Elem::kBf16, Elem::kBf16, CUBLAS_COMPUTE_32F, 2, 2};
    case DType::kFp16:
      return {CUDA_R_16F, CUDA_R_16F, Elem::kFp16, Elem::kFp16, CUBLAS_COMPUTE_32F, 2, 2};
    case DType::kTf32:
      return {CUDA_R_32F, CUDA_R_32F, Elem::kFp32, Elem::kFp32, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4};
    case DType::kFp32:
      return {CUDA_R_32F, CUDA_R_32F, Elem::kFp32, Elem::kFp32, CUBLAS_COMPUTE_32F, 4, 4};
    case DType::kFp8E4M3:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, Elem::kFp8E4M3, Elem::kBf16, CUBLAS_COMPUTE_32F, 1, 2};
  }
  return Types(DType::kBf16);
}

// One stored element, decoded on the host.
inline double Decode(const unsigned char* p, Elem e) {
  switch (e) {
    case Elem::kBf16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return Bf16ToFloat(v);
    }
    case Elem::kFp16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return Fp16ToFloat(v);
    }
    case Elem::kFp32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case Elem::kFp8E4M3:
      return Fp8E4M3ToFloat(*p);
  }
  return 0;
}

inline std::string DriverVersion() {
  // The kernel module's release ("580.82.07"); the driver API version when that file is missing.
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (in && std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex(R"((\d+\.\d+(\.\d+)?))"))) return m[1];
  }
  int v = 0;
  cudaDriverGetVersion(&v);
  return absl::StrCat("cuda-driver-api-", v / 1000, ".", (v % 1000) / 10);
}

inline std::string VersionString(int v) { return absl::StrCat(v / 1000, ".", (v % 1000) / 10); }

// Device memory released on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  cudaError_t Allocate(size_t bytes) { return cudaMalloc(&p_, std::max<size_t>(bytes, 256)); }
  template <typename T = void>
  T* get() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

// `sets` copies of one operand in one allocation, each at an aligned offset.
struct OperandSets {
  DeviceBuffer buffer;
  int64_t stride = 0;  // bytes from one set to the next
  void* at(int s) const { return buffer.get<char>() + s * stride; }
};

// One algorithm's timing state: its graph, its samples and the clock probes of its samples.
struct Algo {
  int index = 0;  // in the heuristic's list
  cublasLtMatmulAlgo_t algo{};
  SampleSchedule schedule;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::vector<double> samples;  // seconds per launch
  std::vector<int> probe_slots;
  std::vector<int> nvml_mhz;  // NVML's SM clock readings during the samples
  double median = 0;
  std::string stopped;   // DescribeStop: why sampling ended
  double sampling_s = 0;  // wall time of the reported samples
  bool* broken = nullptr;
  ~Algo() {
    if (*broken) return;  // nothing can be released in a broken context
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

class CublasLtBackend final : public TimingBackend {
 public:
  static absl::StatusOr<std::unique_ptr<TimingBackend>> Create(int device) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);  // 0 when no driver is installed at all
    cudaRuntimeGetVersion(&runtime);
    if (e == cudaErrorInsufficientDriver && driver > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--backend=cublaslt: the NVIDIA driver supports CUDA ", VersionString(driver),
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

  ~CublasLtBackend() override {
    if (broken_) return;  // a broken context cannot be torn down cleanly; the process exits
    cudaSetDevice(device_);
    for (void* p : {workspace_, static_cast<void*>(probes_), static_cast<void*>(one_)}) {
      if (p) cudaFree(p);
    }
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (stream_) cudaStreamDestroy(stream_);
    if (handle_) cublasLtDestroy(handle_);
  }

  v1::DeviceFingerprint Fingerprint() const override { return fp_; }
  bool Broken() const override { return broken_; }

  int64_t FreeMemoryBytes() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return 0;
    cudaSetDevice(device_);
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
    return static_cast<int64_t>(free);
  }

  // Layers whole (gpu_worker/cuda/layer_engine.cc).
  absl::StatusOr<v1::LayerTiming> TimeLayer(const LayerKey& key,
                                            const TimingParams& params) override;

  absl::StatusOr<v1::GemmTiming> Time(const GemmKey& key, const TimingParams& params) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return absl::InternalError("the CUDA context is unusable after a sticky error");
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) return Cuda(e, "cudaSetDevice");
    return TimeLocked(key, params);
  }

 private:
  explicit CublasLtBackend(int device) : device_(device) {}

  // layer_engine.cc: a layer program (core/layer_program.h) captured in one CUDA graph and timed
  // as a GEMM is (warm-up, blocking kernel, events, stopping rule, clocks).
  absl::StatusOr<v1::LayerTiming> TimeLayerLocked(const LayerKey& key, const TimingParams& params);

  absl::Status Cuda(cudaError_t e, absl::string_view what) {
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

  absl::Status Blas(cublasStatus_t s, absl::string_view what) {
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

  template <typename T>
  absl::Status SetDesc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const T& v,
                       absl::string_view what) {
    return Blas(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v)), what);
  }

  absl::Status Init() {
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) return Cuda(e, "cudaSetDevice");
    cudaDeviceProp prop{};
    if (cudaError_t e = cudaGetDeviceProperties(&prop, device_); e != cudaSuccess) {
      return Cuda(e, "cudaGetDeviceProperties");
    }
    int clock_khz = 0;
    if (cudaError_t e = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device_);
        e != cudaSuccess) {
      return Cuda(e, "cudaDeviceGetAttribute");
    }
    int runtime = 0;
    if (cudaError_t e = cudaRuntimeGetVersion(&runtime); e != cudaSuccess) {
      return Cuda(e, "cudaRuntimeGetVersion");
    }
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
    if (absl::Status st = Blas(cublasLtCreate(&handle_), "cublasLtCreate"); !st.ok()) return st;
    if (cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
        e != cudaSuccess) {
      return Cuda(e, "cudaStreamCreate");
    }
    workspace_bytes_ = FrameworkWorkspaceBytes(cc_);
    if (cudaError_t e = cudaMalloc(&workspace_, workspace_bytes_); e != cudaSuccess) {
      return Cuda(e, "workspace");
    }
    if (cudaError_t e = cudaMalloc(&probes_, 2 * kProbeSlots * sizeof(unsigned long long));
        e != cudaSuccess) {
      return Cuda(e, "clock probes");
    }
    // FP8 scale factors (1.0, in the compute type) for A and B.
    const float one = 1.0f;
    if (cudaError_t e = cudaMalloc(&one_, sizeof(float)); e != cudaSuccess) {
      return Cuda(e, "scale");
    }
    if (cudaError_t e = cudaMemcpy(one_, &one, sizeof(one), cudaMemcpyHostToDevice);
        e != cudaSuccess) {
      return Cuda(e, "scale");
    }
    if (cudaError_t e = cudaEventCreate(&start_); e != cudaSuccess) return Cuda(e, "event");
    if (cudaError_t e = cudaEventCreate(&stop_); e != cudaSuccess) return Cuda(e, "event");
    return absl::OkStatus();
  }

  static void Beat(const TimingParams& params, absl::string_view phase) {
    if (params.heartbeat) params.heartbeat(phase);
  }

  absl::StatusOr<v1::GemmTiming> TimeLocked(const GemmKey& key, const TimingParams& params) {
    const EngineOptions options = EngineOptionsOf(params);
    // 1. The plan, before any allocation.
    size_t free = 0, total = 0;
    if (absl::Status st = Cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo"); !st.ok()) {
      return st;
    }
    DeviceLimits limits;
    limits.compute_capability = cc_;
    limits.l2_bytes = l2_bytes_;
    limits.free_bytes = static_cast<int64_t>(free) + workspace_bytes_;  // ours is allocated
    limits.margin_bytes = kMemoryMargin;
    absl::StatusOr<GemmPlan> planned = PlanGemm(key, limits, options);
    if (!planned.ok()) {
      return absl::Status(planned.status().code(),
                          absl::StrCat(planned.status().message(), " (", fp_.name(), ")"));
    }
    const GemmPlan& plan = *planned;
    if (gpu_ != nullptr) {
      // A launch the catalog predicts past the watchdog is refused before it runs.
      if (absl::Status st = CheckWatchdog(PredictGemm(*gpu_, key).time_s, options, key); !st.ok()) {
        return st;
      }
    }
    const TypeInfo ty = Types(key.dtype);

    // 2. Inputs: every set of an operand in one buffer.
    OperandSets a, b, d;
    for (auto [ops, bytes, what] :
         {std::tuple<OperandSets*, int64_t, const char*>{&a, plan.a_bytes, "A"},
          {&b, plan.b_bytes, "B"},
          {&d, plan.d_bytes, "D"}}) {
      ops->stride = (bytes + kAlign - 1) / kAlign * kAlign;
      if (absl::Status st = Cuda(ops->buffer.Allocate(static_cast<size_t>(ops->stride) * plan.sets),
                                 absl::StrCat("cudaMalloc ", what, " (", plan.sets, " sets)"));
          !st.ok()) {
        return st;
      }
    }
    const uint64_t seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
    if (absl::Status st = Cuda(cuda::FillRandom(a.at(0), a.stride / ty.ab_bytes * plan.sets,
                                                ty.ab_elem, seed * 2 + 1, stream_),
                               "fill A");
        !st.ok()) {
      return st;
    }
    if (absl::Status st = Cuda(cuda::FillRandom(b.at(0), b.stride / ty.ab_bytes * plan.sets,
                                                ty.ab_elem, seed * 2 + 2, stream_),
                               "fill B");
        !st.ok()) {
      return st;
    }

    // Descriptors.
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    absl::Cleanup release = [&] {
      if (pref) cublasLtMatmulPreferenceDestroy(pref);
      if (ld) cublasLtMatrixLayoutDestroy(ld);
      if (lb) cublasLtMatrixLayoutDestroy(lb);
      if (la) cublasLtMatrixLayoutDestroy(la);
      if (op) cublasLtMatmulDescDestroy(op);
    };
    if (auto st = Blas(cublasLtMatmulDescCreate(&op, ty.compute, CUDA_R_32F), "matmul desc");
        !st.ok()) {
      return st;
    }
    const cublasOperation_t op_a = plan.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = plan.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (auto st = SetDesc(op, CUBLASLT_MATMUL_DESC_TRANSA, op_a, "TRANSA"); !st.ok()) return st;
    if (auto st = SetDesc(op, CUBLASLT_MATMUL_DESC_TRANSB, op_b, "TRANSB"); !st.ok()) return st;
    if (plan.fp8) {
      const int8_t fast = plan.fp8_fast_accumulation ? 1 : 0;
      const void* scale = one_;
      if (auto st = SetDesc(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast, "FAST_ACCUM"); !st.ok()) {
        return st;
      }
      if (auto st = SetDesc(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale, "A_SCALE_POINTER");
          !st.ok()) {
        return st;
      }
      if (auto st = SetDesc(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale, "B_SCALE_POINTER");
          !st.ok()) {
        return st;
      }
    }
    auto layout = [&](cublasLtMatrixLayout_t* l, cudaDataType_t t, int64_t rows, int64_t cols,
                      int64_t ldim, int64_t stride) -> absl::Status {
      if (auto st = Blas(cublasLtMatrixLayoutCreate(l, t, static_cast<uint64_t>(rows),
                                                    static_cast<uint64_t>(cols), ldim),
                         "matrix layout");
          !st.ok()) {
        return st;
      }
      if (plan.batch > 1) {
        const int32_t count = static_cast<int32_t>(plan.batch);
        if (auto st = Blas(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                            &count, sizeof(count)),
                           "BATCH_COUNT");
            !st.ok()) {
          return st;
        }
        if (auto st =
                Blas(cublasLtMatrixLayoutSetAttribute(
                         *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
                     "STRIDED_BATCH_OFFSET");
            !st.ok()) {
          return st;
        }
      }
      return absl::OkStatus();
    };
    const int64_t a_rows = plan.trans_a ? plan.k : plan.m, a_cols = plan.trans_a ? plan.m : plan.k;
    const int64_t b_rows = plan.trans_b ? plan.n : plan.k, b_cols = plan.trans_b ? plan.k : plan.n;
    if (auto st = layout(&la, ty.ab, a_rows, a_cols, plan.lda, plan.a_elems); !st.ok()) return st;
    if (auto st = layout(&lb, ty.ab, b_rows, b_cols, plan.ldb, plan.b_elems); !st.ok()) return st;
    if (auto st = layout(&ld, ty.cd, plan.m, plan.n, plan.ldd, plan.d_elems); !st.ok()) return st;
    if (auto st = Blas(cublasLtMatmulPreferenceCreate(&pref), "preference"); !st.ok()) return st;
    const uint64_t ws = static_cast<uint64_t>(plan.workspace_bytes);
    if (auto st = Blas(cublasLtMatmulPreferenceSetAttribute(
                           pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
                       "MAX_WORKSPACE_BYTES");
        !st.ok()) {
      return st;
    }
    std::vector<cublasLtMatmulHeuristicResult_t> heur(params.autotune ? params.top_k : 1);
    int returned = 0;
    if (auto st = Blas(
            cublasLtMatmulAlgoGetHeuristic(handle_, op, la, lb, ld, ld, pref,
                                           static_cast<int>(heur.size()), heur.data(), &returned),
            "cublasLtMatmulAlgoGetHeuristic");
        !st.ok()) {
      return st;
    }
    if (returned == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cuBLASLt's heuristic has no algorithm for ", GemmKeyString(key), " on ", fp_.name()));
    }

    const float alpha = 1.0f, beta = 0.0f;
    auto launch = [&](const cublasLtMatmulAlgo_t& algo, int s) {
      return cublasLtMatmul(handle_, op, &alpha, a.at(s), la, b.at(s), lb, &beta, d.at(s), ld,
                            d.at(s), ld, &algo, workspace_,
                            static_cast<size_t>(plan.workspace_bytes), stream_);
    };

    // 3 and 4: check, size, capture, warm up and sample each algorithm.
    std::vector<std::unique_ptr<Algo>> algos;
    for (int h = 0; h < returned; ++h) {
      if (heur[h].state != CUBLAS_STATUS_SUCCESS) continue;
      auto algo = std::make_unique<Algo>();
      algo->index = h;
      algo->algo = heur[h].algo;
      algo->broken = &broken_;
      absl::Status st = PrepareAndSample(key, plan, ty, options, params, a, b, d, launch, *algo);
      if (!st.ok()) {
        // The heuristic's first choice must work (it is what a framework runs); a top-k
        // alternative that fails is skipped, not reported as the best.
        if (h == 0 || broken_) return st;
        continue;
      }
      algos.push_back(std::move(algo));
    }
    if (algos.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("none of the ", returned, " algorithms cuBLASLt's heuristic offered for ",
                       GemmKeyString(key), " could run"));
    }
    Algo* best = algos[0].get();
    for (auto& r : algos) {
      if (r->median < best->median) best = r.get();
    }
    Algo* first = algos[0]->index == 0 ? algos[0].get() : nullptr;

    // 5. Autotuning: the reported samples come from re-timing.
    if (params.autotune) {
      std::vector<Algo*> reported = {best};
      if (first != nullptr && first != best) reported.push_back(first);
      if (absl::Status st = Retime(reported, params); !st.ok()) return st;
      if (reported.size() == 2 && reported[1]->median < reported[0]->median) {
        best = reported[1];  // re-timing reversed the order: report the faster
      }
    }
    // 6. The clock during the reported samples.
    int sm_mhz = MedianMhz(best->nvml_mhz);
    std::string clock_source = sm_mhz > 0 ? "nvml" : "";
    if (sm_mhz == 0) {
      absl::StatusOr<int> probed = ProbedMhz(*best);
      if (!probed.ok()) return probed.status();
      sm_mhz = *probed;
      if (sm_mhz > 0) clock_source = "probe";
    }
    if (broken_) return absl::InternalError("sticky CUDA error after timing");

    int32_t algo_id = 0;
    if (auto st = Blas(cublasLtMatmulAlgoConfigGetAttribute(&best->algo, CUBLASLT_ALGO_CONFIG_ID,
                                                            &algo_id, sizeof(algo_id), nullptr),
                       "ALGO_CONFIG_ID");
        !st.ok()) {
      return st;
    }
    v1::GemmTiming t = TimingOf(key);
    if (params.samples_sink) {
      params.samples_sink(GemmKeyString(key), best->samples, Rule(*best, params),
                          best->sampling_s, best->stopped);
    }
    const SampleStats stats = Summarize(best->samples);
    t.set_time_s(stats.median);
    t.set_tflops(GemmFlops(key.shape) / stats.median / 1e12);
    v1::TimingStats* s = t.mutable_stats();
    s->set_median_s(stats.median);
    s->set_p10_s(stats.p10);
    s->set_p90_s(stats.p90);
    s->set_samples(static_cast<int32_t>(best->samples.size()));
    s->set_relative_spread(stats.relative_spread);
    s->set_stop_rule(best->stopped);
    s->set_sm_clock_mhz(sm_mhz);
    s->set_clock_source(clock_source);
    s->set_algorithm_id(algo_id);
    s->set_heuristic_waves(heur[best->index].wavesCount);
    if (params.autotune && first != nullptr) {
      int32_t first_id = 0;
      if (auto st = Blas(cublasLtMatmulAlgoConfigGetAttribute(&first->algo, CUBLASLT_ALGO_CONFIG_ID,
                                                              &first_id, sizeof(first_id), nullptr),
                         "ALGO_CONFIG_ID");
          !st.ok()) {
        return st;
      }
      s->set_heuristic_median_s(first->median);
      s->set_heuristic_algorithm_id(first_id);
    }
    const int launches = best->schedule.launches_per_sample;
    double sampled = 0;
    for (double v : best->samples) sampled += v * launches;
    s->set_launches_per_sample(launches);
    s->set_sampled_s(sampled);
    s->set_cold_l2(best->schedule.cold_l2);
    s->set_engine(EngineMethod(plan, best->schedule, options));
    v1::Provenance* prov = t.mutable_provenance();
    prov->set_source(v1::SOURCE_MEASURED);
    // The L2 state achieved, not the one asked for (tiny operands cannot make L2 cold).
    prov->set_method(TimingMethod("cublaslt", params.autotune, !best->schedule.cold_l2));
    *prov->mutable_device() = fp_;
    prov->set_samples(static_cast<int32_t>(best->samples.size()));
    prov->set_relative_spread(stats.relative_spread);
    prov->mutable_measured_at()->set_seconds(absl::ToUnixSeconds(absl::Now()));
    return t;
  }

  // Check one algorithm, size its sample from the check's launch, capture, warm up and sample.
  template <typename Launch>
  absl::Status PrepareAndSample(const GemmKey& key, const GemmPlan& plan, const TypeInfo& ty,
                                const EngineOptions& options, const TimingParams& params,
                                const OperandSets& a, const OperandSets& b, const OperandSets& d,
                                const Launch& launch, Algo& algo) {
    Beat(params, "check");
    absl::StatusOr<double> launch_s = CheckOnce(key, plan, ty, a, b, d, launch, algo.algo);
    if (!launch_s.ok()) return launch_s.status();
    if (absl::Status st = CheckWatchdog(*launch_s, options, key); !st.ok()) return st;
    algo.schedule = ScheduleSamples(*launch_s, plan.sets, plan.set_bytes, l2_bytes_, options);
    if (!options.warm_l2 && !algo.schedule.cold_l2 && plan.sets < kMaxInputSets) {
      return absl::InternalError("the sample schedule does not reach a cold L2 (engine defect)");
    }
    // Capture L launches going round the sets.
    if (auto st = Cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
                       "graph capture");
        !st.ok()) {
      return st;
    }
    cublasStatus_t capture_status = CUBLAS_STATUS_SUCCESS;
    for (int i = 0;
         i < algo.schedule.launches_per_sample && capture_status == CUBLAS_STATUS_SUCCESS; ++i) {
      capture_status = launch(algo.algo, i % plan.sets);
    }
    const cudaError_t end = cudaStreamEndCapture(stream_, &algo.graph);
    if (auto st = Blas(capture_status, "cublasLtMatmul (capture)"); !st.ok()) return st;
    if (auto st = Cuda(end, "graph capture"); !st.ok()) return st;
    if (auto st = Cuda(cudaGraphInstantiate(&algo.exec, algo.graph, 0), "graph instantiate");
        !st.ok()) {
      return st;
    }
    // Warm-up, synchronising about twice a second so that heartbeats keep flowing.
    const double replay_s = *launch_s * algo.schedule.launches_per_sample;
    const int per_sync = static_cast<int>(std::clamp(std::floor(0.5 / replay_s), 1.0, 1000.0));
    for (int i = 0; i < algo.schedule.warmup_replays; ++i) {
      if (auto st = Cuda(cudaGraphLaunch(algo.exec, stream_), "graph launch"); !st.ok()) return st;
      if ((i + 1) % per_sync == 0 || i + 1 == algo.schedule.warmup_replays) {
        if (auto st = Cuda(cudaStreamSynchronize(stream_), "warm-up"); !st.ok()) return st;
        Beat(params, "warm-up");
      }
    }
    StoppingRule rule = Rule(algo, params);
    // Without autotuning these samples are the reported ones: NVML samples the clock meanwhile.
    const bool clocked = clocks_ != nullptr && !params.autotune;
    if (clocked) clocks_->Start();
    absl::Cleanup stop_clocks = [&] {
      if (clocked) algo.nvml_mhz = clocks_->Stop();
    };
    const absl::Time start = absl::Now();
    int slot = 0;
    while (true) {
      absl::StatusOr<double> v = TimedReplay(algo, slot++ % (kProbeSlots - 1));
      if (!v.ok()) return v.status();
      algo.samples.push_back(*v);
      Beat(params, "sampling");
      const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
      const StopReason why = rule.Why(algo.samples, elapsed);
      if (why != StopReason::kNotYet) {
        algo.stopped = DescribeStop(why, algo.samples, rule);
        algo.sampling_s = elapsed;
        break;
      }
    }
    algo.median = Percentile(algo.samples, 0.5);
    return absl::OkStatus();
  }

  StoppingRule Rule(const Algo& algo, const TimingParams& params) const {
    StoppingRule rule;
    rule.target_spread = params.target_spread;
    rule.budget_s = params.max_seconds;
    rule.min_samples = algo.schedule.min_samples;
    rule.min_sampled_s = algo.schedule.min_sampled_s;
    rule.sample_scale = algo.schedule.launches_per_sample;
    return rule;
  }

  // One sample: blocking kernel, start, one replay, stop, clock probe into `slot`. Seconds per
  // launch.
  absl::StatusOr<double> TimedReplay(Algo& algo, int slot) {
    if (auto st = Cuda(cuda::ProbeClock(probes_ + 2 * (kProbeSlots - 1), kBlockingNs, stream_),
                       "blocking kernel");
        !st.ok()) {
      return st;
    }
    if (auto st = Cuda(cudaEventRecord(start_, stream_), "event"); !st.ok()) return st;
    if (auto st = Cuda(cudaGraphLaunch(algo.exec, stream_), "graph launch"); !st.ok()) return st;
    if (auto st = Cuda(cudaEventRecord(stop_, stream_), "event"); !st.ok()) return st;
    if (auto st = Cuda(cuda::ProbeClock(probes_ + 2 * slot, kProbeNs, stream_), "clock probe");
        !st.ok()) {
      return st;
    }
    if (auto st = Cuda(cudaEventSynchronize(stop_), "event sync"); !st.ok()) return st;
    float ms = 0;
    if (auto st = Cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
        !st.ok()) {
      return st;
    }
    algo.probe_slots.push_back(slot);
    return ms * 1e-3 / algo.schedule.launches_per_sample;
  }

  // Autotuning: the winner and the heuristic's first choice, re-timed alternately from fresh
  // samples, so that neither is favoured by the selection or by a cooler GPU.
  absl::Status Retime(const std::vector<Algo*>& algos, const TimingParams& params) {
    std::vector<StoppingRule> rules;
    for (Algo* a : algos) {
      a->samples.clear();
      a->probe_slots.clear();
      rules.push_back(Rule(*a, params));
    }
    if (clocks_) clocks_->Start();
    absl::Cleanup stop_clocks = [&] {
      if (!clocks_) return;
      const std::vector<int> readings = clocks_->Stop();
      for (Algo* a : algos) a->nvml_mhz = readings;  // alternating: the same stretch of work
    };
    const absl::Time start = absl::Now();
    int slot = 0;
    while (true) {
      bool done = true;
      for (size_t i = 0; i < algos.size(); ++i) {
        absl::StatusOr<double> v = TimedReplay(*algos[i], slot++ % (kProbeSlots - 1));
        if (!v.ok()) return v.status();
        algos[i]->samples.push_back(*v);
        const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
        const StopReason why = rules[i].Why(algos[i]->samples, elapsed);
        if (why != StopReason::kNotYet) {
          algos[i]->stopped = DescribeStop(why, algos[i]->samples, rules[i]);
          algos[i]->sampling_s = elapsed;
        }
        done = done && why != StopReason::kNotYet;
      }
      Beat(params, "re-timing");
      if (done) break;
    }
    for (Algo* a : algos) a->median = Percentile(a->samples, 0.5);
    return absl::OkStatus();
  }

  // The median SM clock of the probes queued after `algo`'s samples, MHz (0 when none read).
  absl::StatusOr<int> ProbedMhz(const Algo& algo) {
    std::vector<unsigned long long> host(2 * kProbeSlots);
    if (auto st = Cuda(cudaMemcpyAsync(host.data(), probes_, host.size() * sizeof(host[0]),
                                       cudaMemcpyDeviceToHost, stream_),
                       "clock copy");
        !st.ok()) {
      return st;
    }
    if (auto st = Cuda(cudaStreamSynchronize(stream_), "clock sync"); !st.ok()) return st;
    std::vector<int> mhz;
    for (int slot : algo.probe_slots) {
      const unsigned long long cycles = host[2 * slot], ns = host[2 * slot + 1];
      if (ns > 0) mhz.push_back(static_cast<int>(std::lround(1000.0 * cycles / ns)));
    }
    return MedianMhz(mhz);
  }

  // One launch into a NaN-poisoned output, timed; every output element finite; sampled elements
  // against the host's row-major reference. Returns the launch's duration, seconds.
  template <typename Launch>
  absl::StatusOr<double> CheckOnce(const GemmKey& key, const GemmPlan& plan, const TypeInfo& ty,
                                   const OperandSets& a, const OperandSets& b, const OperandSets& d,
                                   const Launch& launch, const cublasLtMatmulAlgo_t& algo) {
    if (auto st = Cuda(cuda::FillNaN(d.at(0), plan.d_elems * plan.batch, ty.cd_elem, stream_),
                       "poison D");
        !st.ok()) {
      return st;
    }
    if (auto st = Cuda(cudaEventRecord(start_, stream_), "event"); !st.ok()) return st;
    if (auto st = Blas(launch(algo, 0), "cublasLtMatmul"); !st.ok()) return st;
    if (auto st = Cuda(cudaEventRecord(stop_, stream_), "event"); !st.ok()) return st;
    if (auto st = Cuda(cudaEventSynchronize(stop_), "check sync"); !st.ok()) return st;
    float ms = 0;
    if (auto st = Cuda(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
        !st.ok()) {
      return st;
    }
    DeviceBuffer bad;
    if (auto st = Cuda(bad.Allocate(sizeof(unsigned long long)), "check alloc"); !st.ok()) {
      return st;
    }
    unsigned long long nonfinite = 0;
    if (auto st = Cuda(cuda::CountNonFinite(d.at(0), plan.d_elems * plan.batch, ty.cd_elem,
                                            bad.get<unsigned long long>(), stream_),
                       "finiteness check");
        !st.ok()) {
      return st;
    }
    if (auto st = Cuda(cudaMemcpyAsync(&nonfinite, bad.get(), sizeof(nonfinite),
                                       cudaMemcpyDeviceToHost, stream_),
                       "check copy");
        !st.ok()) {
      return st;
    }
    if (auto st = Cuda(cudaStreamSynchronize(stream_), "check sync"); !st.ok()) return st;
    if (nonfinite > 0) {
      return absl::InternalError(absl::StrCat("correctness check: ", nonfinite,
                                              " output elements are NaN or infinite after the "
                                              "GEMM (unwritten or wrong): refusing to time it"));
    }
    // Split-K partial sums kept in the output type round once more each.
    int32_t splits = 1;
    uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_NONE;
    if (auto st = Blas(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                            &splits, sizeof(splits), nullptr),
                       "SPLITK_NUM");
        !st.ok()) {
      return st;
    }
    if (auto st =
            Blas(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                      &scheme, sizeof(scheme), nullptr),
                 "REDUCTION_SCHEME");
        !st.ok()) {
      return st;
    }
    const bool output_type_partials =
        splits > 1 && (scheme == CUBLASLT_REDUCTION_SCHEME_INPLACE ||
                       scheme == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE);
    // The sampled elements: the four corners of the first and last batch entries, then spread.
    const GemmShape& s = key.shape;
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    std::vector<unsigned char> xv(static_cast<size_t>(s.k) * ty.ab_bytes),
        wv(static_cast<size_t>(s.k) * ty.ab_bytes);
    for (int n = 0; n < kCheckSamples; ++n) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      int64_t i = static_cast<int64_t>((x >> 11) % static_cast<uint64_t>(s.m));
      int64_t j = static_cast<int64_t>((x >> 29) % static_cast<uint64_t>(s.n));
      const int64_t batch = (n * (s.batch - 1)) / (kCheckSamples - 1);
      if (n < 4) {
        i = (n & 1) ? s.m - 1 : 0;
        j = (n & 2) ? s.n - 1 : 0;
      }
      const ReferenceVectors v = RowMajorVectors(plan.run_layout, s, batch, i, j);
      // cuBLAS's B buffer holds the left operand x, its A buffer the right operand w.
      if (auto st = Fetch(b.at(0), v.x_offset, v.x_stride, s.k, ty.ab_bytes, xv.data()); !st.ok()) {
        return st;
      }
      if (auto st = Fetch(a.at(0), v.w_offset, v.w_stride, s.k, ty.ab_bytes, wv.data()); !st.ok()) {
        return st;
      }
      unsigned char cv[4] = {0, 0, 0, 0};
      if (auto st = Fetch(d.at(0), v.c_offset, 1, 1, ty.cd_bytes, cv); !st.ok()) return st;
      if (auto st = Cuda(cudaStreamSynchronize(stream_), "check sync"); !st.ok()) return st;
      double exact = 0, abs_sum = 0;
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const double p =
            Decode(&xv[kk * ty.ab_bytes], ty.ab_elem) * Decode(&wv[kk * ty.ab_bytes], ty.ab_elem);
        exact += p;
        abs_sum += std::fabs(p);
      }
      const double got = Decode(cv, ty.cd_elem);
      const double tol = CheckTolerance(key.dtype, plan.fp8_fast_accumulation, s.k, exact, abs_sum,
                                        output_type_partials ? splits : 0);
      if (!(std::fabs(got - exact) <= tol)) {
        return absl::InternalError(absl::StrCat(
            "correctness check: C[", i, "][", j, "] of batch ", batch, " is ", got,
            ", the row-major reference ", exact, " (tolerance ", tol, "): refusing to time it"));
      }
    }
    return ms * 1e-3;
  }

  // `count` elements of `bytes` each from `base` + offset, `stride` elements apart, to `out`.
  absl::Status Fetch(const void* base, int64_t offset, int64_t stride, int64_t count, int bytes,
                     void* out) {
    const char* src = static_cast<const char*>(base) + offset * bytes;
    if (stride == 1) {
      return Cuda(cudaMemcpyAsync(out, src, static_cast<size_t>(count) * bytes,
                                  cudaMemcpyDeviceToHost, stream_),
                  "check copy");
    }
    return Cuda(cudaMemcpy2DAsync(out, bytes, src, static_cast<size_t>(stride) * bytes, bytes,
                                  static_cast<size_t>(count), cudaMemcpyDeviceToHost, stream_),
                "check copy");
  }

  const int device_;
  std::mutex mu_;
  bool broken_ = false;
  int cc_ = 0;
  int64_t l2_bytes_ = 0;
  int64_t workspace_bytes_ = 0;
  const GpuSpec* gpu_ = nullptr;  // the catalog's entry for this device, when it has one
  std::unique_ptr<ClockSampler> clocks_;
  std::string clock_why_;  // why NVML is not used
  v1::DeviceFingerprint fp_;
  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* workspace_ = nullptr;
  unsigned long long* probes_ = nullptr;  // kProbeSlots pairs (cycles, ns); the last: blocking
  float* one_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace wavecrest::engine

#endif  // WAVECREST_GPU_WORKER_CUDA_CUBLASLT_ENGINE_H_
