// The cuBLASLt timing engine: how wavecrest measures a GEMM.
//
// Per GEMM: check free device memory; allocate input sets (random values, never zeros) enough to
// rotate through a working set larger than L2 (cold L2; one set when warm L2 is asked for); ask the
// heuristic for its first algorithm (what a framework gets) and, when autotuning, its top k. For
// each algorithm: run once into a NaN-poisoned output and check it (every element finite, sampled
// elements against a reference), capture L launches rotating over the sets in a CUDA graph (L such
// that one replay lasts about a millisecond, so launch gaps stay a small part of each sample), warm
// up, then time replays with events until (p90 - p10) / median falls under the target or the time
// budget ends. The figure is the median per launch; the SM clock is read right after with a clock
// probe kernel. A sticky CUDA error marks the backend broken: the worker reports it and exits.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/cost_model.h"
#include "core/gpu_catalog.h"
#include "core/timing_stats.h"
#include "gpu_worker/backend.h"
#include "gpu_worker/cuda/kernels.h"
#include "server/convert.h"

namespace wavecrest {
namespace {

using cuda::Elem;

constexpr size_t kWorkspaceBytes = size_t{64} << 20;   // cuBLASLt recommends >= 32 MiB on Hopper
constexpr int64_t kMemoryMargin = int64_t{512} << 20;  // left free for the context and kernels
constexpr double kSampleTargetS = 1e-3;                // one graph replay lasts about this long
constexpr int kMaxLaunchesPerSample = 1000;
constexpr int kCheckSamples = 16;

bool IsSticky(cudaError_t e) {
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
    case cudaErrorLaunchTimeout:
    case cudaErrorContextIsDestroyed:
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
  double out_rel;  // tolerance relative to |ref| (output rounding)
  double acc_rel;  // tolerance relative to sum |a·b| (input rounding, accumulation order)
};

TypeInfo Types(DType d) {
  switch (d) {
    case DType::kBf16:
      return {CUDA_R_16BF, CUDA_R_16BF, Elem::kBf16, Elem::kBf16, CUBLAS_COMPUTE_32F,
              2,           2,           1.0 / 128,   1e-3};
    case DType::kFp16:
      return {CUDA_R_16F, CUDA_R_16F, Elem::kFp16, Elem::kFp16, CUBLAS_COMPUTE_32F,
              2,          2,          1.0 / 512,   1e-3};
    case DType::kTf32:
      return {CUDA_R_32F, CUDA_R_32F, Elem::kFp32, Elem::kFp32, CUBLAS_COMPUTE_32F_FAST_TF32,
              4,          4,          1e-5,        4e-3};
    case DType::kFp32:
      return {CUDA_R_32F, CUDA_R_32F, Elem::kFp32, Elem::kFp32, CUBLAS_COMPUTE_32F,
              4,          4,          1e-5,        1e-4};
    case DType::kFp8E4M3:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, Elem::kFp8E4M3, Elem::kBf16, CUBLAS_COMPUTE_32F, 1, 2,
              1.0 / 128,      1e-3};
  }
  return Types(DType::kBf16);
}

std::string DriverVersion() {
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

class CublasLtBackend final : public TimingBackend {
 public:
  static absl::StatusOr<std::unique_ptr<TimingBackend>> Create(int device) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
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
    if (workspace_) cudaFree(workspace_);
    if (clock_) cudaFree(clock_);
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

  absl::StatusOr<v1::GemmTiming> Time(const GemmKey& key, const TimingParams& params) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return absl::InternalError("the CUDA context is unusable after a sticky error");
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) return Cuda(e, "cudaSetDevice");
    return TimeLocked(key, params);
  }

 private:
  explicit CublasLtBackend(int device) : device_(device) {}

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

  absl::Status Init() {
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) return Cuda(e, "cudaSetDevice");
    cudaDeviceProp prop{};
    if (cudaError_t e = cudaGetDeviceProperties(&prop, device_); e != cudaSuccess) {
      return Cuda(e, "cudaGetDeviceProperties");
    }
    int clock_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device_);
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
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
    fp_.set_cuda_runtime_version(absl::StrCat(runtime / 1000, ".", (runtime % 1000) / 10));
    fp_.set_cublaslt_version(absl::StrCat(lt / 10000, ".", (lt / 100) % 100, ".", lt % 100));
    fp_.set_backend("cublaslt");
    fp_.set_catalog_name(CatalogNameForDevice(prop.name, prop.multiProcessorCount,
                                              static_cast<int64_t>(prop.totalGlobalMem)));
    if (absl::Status st = Blas(cublasLtCreate(&handle_), "cublasLtCreate"); !st.ok()) return st;
    if (cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
        e != cudaSuccess) {
      return Cuda(e, "cudaStreamCreate");
    }
    if (cudaError_t e = cudaMalloc(&workspace_, kWorkspaceBytes); e != cudaSuccess) {
      return Cuda(e, "workspace");
    }
    if (cudaError_t e = cudaMalloc(&clock_, 2 * sizeof(unsigned long long)); e != cudaSuccess) {
      return Cuda(e, "clock probe");
    }
    if (cudaError_t e = cudaEventCreate(&start_); e != cudaSuccess) return Cuda(e, "event");
    if (cudaError_t e = cudaEventCreate(&stop_); e != cudaSuccess) return Cuda(e, "event");
    return absl::OkStatus();
  }

  bool Supports(DType d) const {
    switch (d) {
      case DType::kFp16:
      case DType::kFp32:
        return true;
      case DType::kBf16:
      case DType::kTf32:
        return cc_ >= 80;
      case DType::kFp8E4M3:
        return cc_ >= 89;
    }
    return false;
  }

  struct AlgoResult {
    int index = 0;                // in the heuristic's list
    std::vector<double> samples;  // seconds per launch
    double median = 0;
    int launches = 1;  // per sample
  };

  // The operands of one GEMM in cuBLAS terms (column-major): D[m×n] = op(A)·op(B) with cuBLAS
  // m = our N, n = our M, k = K; see proto Layout.
  struct Operands {
    cublasOperation_t op_a, op_b;
    int64_t m, n, k, batch;
    int64_t a_rows, a_cols, lda, b_rows, b_cols, ldb, ldd;
    int64_t a_elems() const { return a_rows * a_cols; }
    int64_t b_elems() const { return b_rows * b_cols; }
    int64_t d_elems() const { return m * n; }
  };

  static Operands MakeOperands(const GemmKey& key) {
    Operands o{};
    o.m = key.shape.n;
    o.n = key.shape.m;
    o.k = key.shape.k;
    o.batch = key.shape.batch;
    const bool ta = key.layout == Layout::kTN;  // op(A) = Aᵀ
    const bool tb = key.layout == Layout::kNT;  // op(B) = Bᵀ
    o.op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    o.op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    o.a_rows = ta ? o.k : o.m;
    o.a_cols = ta ? o.m : o.k;
    o.b_rows = tb ? o.n : o.k;
    o.b_cols = tb ? o.k : o.n;
    o.lda = o.a_rows;
    o.ldb = o.b_rows;
    o.ldd = o.m;
    return o;
  }

  absl::StatusOr<v1::GemmTiming> TimeLocked(const GemmKey& key, const TimingParams& params) {
    if (!Supports(key.dtype)) {
      return absl::FailedPreconditionError(
          absl::StrCat(fp_.name(), " (compute capability ", cc_ / 10, ".", cc_ % 10,
                       ") cannot run ", DTypeName(key.dtype), " GEMMs on tensor cores"));
    }
    if (key.dtype == DType::kFp8E4M3 && key.layout != Layout::kTN) {
      return absl::FailedPreconditionError(
          "cuBLASLt runs FP8 GEMMs only in the TN layout (A transposed, B not)");
    }
    const TypeInfo ty = Types(key.dtype);
    const Operands o = MakeOperands(key);
    const int64_t a_bytes = o.a_elems() * o.batch * ty.ab_bytes;
    const int64_t b_bytes = o.b_elems() * o.batch * ty.ab_bytes;
    const int64_t d_bytes = o.d_elems() * o.batch * ty.cd_bytes;
    const int64_t set_bytes = a_bytes + b_bytes + d_bytes;

    // Memory check before any allocation.
    size_t free = 0, total = 0;
    if (absl::Status st = Cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo"); !st.ok()) {
      return st;
    }
    const int64_t usable = static_cast<int64_t>(free) - kMemoryMargin;
    if (set_bytes > usable) {
      return absl::ResourceExhaustedError(
          absl::StrCat(GemmKeyString(key), " needs ", set_bytes >> 20, " MiB of device memory; ",
                       std::max<int64_t>(usable, 0) >> 20, " MiB are free on ", fp_.name()));
    }
    const int sets = InputSets(set_bytes, l2_bytes_, usable, params.warm_l2);
    const bool cold = !params.warm_l2 && sets * set_bytes >= 2 * l2_bytes_;

    std::vector<std::unique_ptr<DeviceBuffer>> a(sets), b(sets), d(sets);
    for (int s = 0; s < sets; ++s) {
      a[s] = std::make_unique<DeviceBuffer>();
      b[s] = std::make_unique<DeviceBuffer>();
      d[s] = std::make_unique<DeviceBuffer>();
      if (absl::Status st = Cuda(a[s]->Allocate(a_bytes), "cudaMalloc A"); !st.ok()) return st;
      if (absl::Status st = Cuda(b[s]->Allocate(b_bytes), "cudaMalloc B"); !st.ok()) return st;
      if (absl::Status st = Cuda(d[s]->Allocate(d_bytes), "cudaMalloc D"); !st.ok()) return st;
      const uint64_t seed = (static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) << 8) + s;
      if (absl::Status st = Cuda(cuda::FillRandom(a[s]->get(), o.a_elems() * o.batch, ty.ab_elem,
                                                  seed * 2 + 1, stream_),
                                 "fill A");
          !st.ok()) {
        return st;
      }
      if (absl::Status st = Cuda(cuda::FillRandom(b[s]->get(), o.b_elems() * o.batch, ty.ab_elem,
                                                  seed * 2 + 2, stream_),
                                 "fill B");
          !st.ok()) {
        return st;
      }
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
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &o.op_a, sizeof(o.op_a));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &o.op_b, sizeof(o.op_b));
    auto layout = [&](cublasLtMatrixLayout_t* l, cudaDataType_t t, int64_t rows, int64_t cols,
                      int64_t ldim) -> absl::Status {
      if (auto st = Blas(cublasLtMatrixLayoutCreate(l, t, rows, cols, ldim), "matrix layout");
          !st.ok()) {
        return st;
      }
      if (o.batch > 1) {
        const int32_t count = static_cast<int32_t>(o.batch);
        const int64_t stride = rows * cols;
        cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                         sizeof(count));
        cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                         sizeof(stride));
      }
      return absl::OkStatus();
    };
    if (auto st = layout(&la, ty.ab, o.a_rows, o.a_cols, o.lda); !st.ok()) return st;
    if (auto st = layout(&lb, ty.ab, o.b_rows, o.b_cols, o.ldb); !st.ok()) return st;
    if (auto st = layout(&ld, ty.cd, o.m, o.n, o.ldd); !st.ok()) return st;
    if (auto st = Blas(cublasLtMatmulPreferenceCreate(&pref), "preference"); !st.ok()) return st;
    const size_t ws = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                         sizeof(ws));
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
      return cublasLtMatmul(handle_, op, &alpha, a[s]->get(), la, b[s]->get(), lb, &beta,
                            d[s]->get(), ld, d[s]->get(), ld, &algo, workspace_, kWorkspaceBytes,
                            stream_);
    };

    std::vector<AlgoResult> results;
    for (int h = 0; h < returned; ++h) {
      if (heur[h].state != CUBLAS_STATUS_SUCCESS) continue;
      // Correctness: a poisoned output, one run, every element finite, samples match.
      if (auto st = CheckOnce(heur[h].algo, launch, o, ty, a[0]->get(), b[0]->get(), d[0]->get());
          !st.ok()) {
        if (h == 0 || broken_) return st;
        continue;  // a top-k alternative that fails is skipped, not reported as the best
      }
      absl::StatusOr<AlgoResult> r = Sample(heur[h].algo, launch, sets, params, h);
      if (!r.ok()) {
        if (h == 0 || broken_) return r.status();
        continue;
      }
      results.push_back(std::move(*r));
    }
    if (results.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("none of the ", returned, " algorithms cuBLASLt's heuristic offered for ",
                       GemmKeyString(key), " could run"));
    }
    const AlgoResult* best = &results[0];
    for (const AlgoResult& r : results) {
      if (r.median < best->median) best = &r;
    }
    // The SM clock right after the samples (the clocks under this load).
    int sm_mhz = 0;
    if (Cuda(cuda::ProbeClock(clock_, 200000, stream_), "clock probe").ok()) {
      unsigned long long host[2] = {0, 0};
      if (Cuda(cudaMemcpyAsync(host, clock_, sizeof(host), cudaMemcpyDeviceToHost, stream_),
               "clock copy")
              .ok() &&
          Cuda(cudaStreamSynchronize(stream_), "clock sync").ok() && host[1] > 0) {
        sm_mhz = static_cast<int>(
            std::lround(1000.0 * static_cast<double>(host[0]) / static_cast<double>(host[1])));
      }
    }
    if (broken_) return absl::InternalError("sticky CUDA error after timing");

    int algo_id = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&heur[best->index].algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id,
                                         sizeof(algo_id), nullptr);
    v1::GemmTiming t = TimingOf(key);
    const SampleStats stats = Summarize(best->samples);
    const double p10 = stats.p10, p90 = stats.p90, spread = stats.relative_spread;
    t.set_time_s(best->median);
    t.set_tflops(GemmFlops(key.shape) / best->median / 1e12);
    v1::TimingStats* st = t.mutable_stats();
    st->set_median_s(best->median);
    st->set_p10_s(p10);
    st->set_p90_s(p90);
    st->set_samples(static_cast<int32_t>(best->samples.size()));
    st->set_relative_spread(spread);
    st->set_sm_clock_mhz(sm_mhz);
    st->set_algorithm_id(algo_id);
    st->set_heuristic_waves(heur[best->index].wavesCount);
    if (params.autotune && results[0].index == 0) {
      int first_id = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&heur[0].algo, CUBLASLT_ALGO_CONFIG_ID, &first_id,
                                           sizeof(first_id), nullptr);
      st->set_heuristic_median_s(results[0].median);
      st->set_heuristic_algorithm_id(first_id);
    }
    st->set_launches_per_sample(best->launches);
    st->set_cold_l2(cold);
    v1::Provenance* prov = t.mutable_provenance();
    prov->set_source(v1::SOURCE_MEASURED);
    prov->set_method(TimingMethod("cublaslt", params.autotune, params.warm_l2));
    *prov->mutable_device() = fp_;
    prov->set_samples(static_cast<int32_t>(best->samples.size()));
    prov->set_relative_spread(spread);
    prov->mutable_measured_at()->set_seconds(absl::ToUnixSeconds(absl::Now()));
    return t;
  }

  template <typename Launch>
  absl::Status CheckOnce(const cublasLtMatmulAlgo_t& algo, const Launch& launch, const Operands& o,
                         const TypeInfo& ty, const void* a, const void* b, void* d) {
    if (auto st = Cuda(cuda::FillNaN(d, o.d_elems() * o.batch, ty.cd_elem, stream_), "poison D");
        !st.ok()) {
      return st;
    }
    if (auto st = Blas(launch(algo, 0), "cublasLtMatmul"); !st.ok()) return st;
    // Sample positions: the four corners, then spread pseudo-randomly; batches spread too.
    std::vector<int64_t> host(3 * kCheckSamples);
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int s = 0; s < kCheckSamples; ++s) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      int64_t row = static_cast<int64_t>((x >> 11) % static_cast<uint64_t>(o.m));
      int64_t col = static_cast<int64_t>((x >> 29) % static_cast<uint64_t>(o.n));
      if (s < 4) {
        row = (s & 1) ? o.m - 1 : 0;
        col = (s & 2) ? o.n - 1 : 0;
      }
      host[s] = row;
      host[kCheckSamples + s] = col;
      host[2 * kCheckSamples + s] = (s * (o.batch - 1)) / std::max(kCheckSamples - 1, 1);
    }
    DeviceBuffer idx, out, bad;
    if (auto st = Cuda(idx.Allocate(host.size() * sizeof(int64_t)), "check alloc"); !st.ok()) {
      return st;
    }
    if (auto st = Cuda(out.Allocate(3 * kCheckSamples * sizeof(float)), "check alloc"); !st.ok()) {
      return st;
    }
    if (auto st = Cuda(bad.Allocate(sizeof(unsigned long long)), "check alloc"); !st.ok()) {
      return st;
    }
    if (auto st = Cuda(cudaMemcpyAsync(idx.get(), host.data(), host.size() * sizeof(int64_t),
                                       cudaMemcpyHostToDevice, stream_),
                       "check copy");
        !st.ok()) {
      return st;
    }
    cuda::ReferenceArgs r;
    r.a = a;
    r.b = b;
    r.d = d;
    r.ab_elem = ty.ab_elem;
    r.d_elem = ty.cd_elem;
    r.trans_a = o.op_a == CUBLAS_OP_T;
    r.trans_b = o.op_b == CUBLAS_OP_T;
    r.k = o.k;
    r.lda = o.lda;
    r.ldb = o.ldb;
    r.ldd = o.ldd;
    r.stride_a = o.a_elems();
    r.stride_b = o.b_elems();
    r.stride_d = o.d_elems();
    r.samples = kCheckSamples;
    r.rows = idx.get<int64_t>();
    r.cols = idx.get<int64_t>() + kCheckSamples;
    r.batches = idx.get<int64_t>() + 2 * kCheckSamples;
    r.ref = out.get<float>();
    r.abs_sum = out.get<float>() + kCheckSamples;
    r.got = out.get<float>() + 2 * kCheckSamples;
    if (auto st = Cuda(cuda::ReferenceSamples(r, stream_), "reference"); !st.ok()) return st;
    if (auto st = Cuda(cuda::CountNonFinite(d, o.d_elems() * o.batch, ty.cd_elem,
                                            bad.get<unsigned long long>(), stream_),
                       "finiteness check");
        !st.ok()) {
      return st;
    }
    std::vector<float> vals(3 * kCheckSamples);
    unsigned long long nonfinite = 0;
    if (auto st = Cuda(cudaMemcpyAsync(vals.data(), out.get(), vals.size() * sizeof(float),
                                       cudaMemcpyDeviceToHost, stream_),
                       "check copy");
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
    for (int s = 0; s < kCheckSamples; ++s) {
      const double ref = vals[s], abs_sum = vals[kCheckSamples + s],
                   got = vals[2 * kCheckSamples + s];
      const double tol = ty.out_rel * std::fabs(ref) + ty.acc_rel * abs_sum + 1e-6;
      if (!(std::fabs(got - ref) <= tol)) {
        return absl::InternalError(
            absl::StrCat("correctness check: output (", host[s], ", ", host[kCheckSamples + s],
                         ") of batch ", host[2 * kCheckSamples + s], " is ", got,
                         ", the reference ", ref, " (tolerance ", tol, "): refusing to time it"));
      }
    }
    return absl::OkStatus();
  }

  // The timing loop for one algorithm: L launches (rotating over the input sets) captured in a
  // graph; warm-up; replays timed with events until the spread target or the budget is reached.
  template <typename Launch>
  absl::StatusOr<AlgoResult> Sample(const cublasLtMatmulAlgo_t& algo, const Launch& launch,
                                    int sets, const TimingParams& params, int index) {
    AlgoResult r;
    r.index = index;
    // A first estimate of one launch, to choose L.
    if (auto st = Cuda(cudaEventRecord(start_, stream_), "event"); !st.ok()) return st;
    for (int i = 0; i < 3; ++i) {
      if (auto st = Blas(launch(algo, i % sets), "cublasLtMatmul"); !st.ok()) return st;
    }
    if (auto st = Cuda(cudaEventRecord(stop_, stream_), "event"); !st.ok()) return st;
    if (auto st = Cuda(cudaEventSynchronize(stop_), "event sync"); !st.ok()) return st;
    float ms = 0;
    cudaEventElapsedTime(&ms, start_, stop_);
    const double estimate = std::max(ms / 3.0 * 1e-3, 1e-7);
    r.launches = LaunchesPerSample(estimate, kSampleTargetS, kMaxLaunchesPerSample);

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    absl::Cleanup free_graph = [&] {
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
    };
    if (auto st = Cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
                       "graph capture");
        !st.ok()) {
      return st;
    }
    cublasStatus_t capture_status = CUBLAS_STATUS_SUCCESS;
    for (int i = 0; i < r.launches && capture_status == CUBLAS_STATUS_SUCCESS; ++i) {
      capture_status = launch(algo, i % sets);
    }
    cudaError_t end = cudaStreamEndCapture(stream_, &graph);
    if (auto st = Blas(capture_status, "cublasLtMatmul (capture)"); !st.ok()) return st;
    if (auto st = Cuda(end, "graph capture"); !st.ok()) return st;
    if (auto st = Cuda(cudaGraphInstantiate(&exec, graph, 0), "graph instantiate"); !st.ok()) {
      return st;
    }
    // Warm-up: at least one replay and about 50 ms of work, to settle clocks and caches.
    const int warm =
        static_cast<int>(std::clamp<double>(std::ceil(0.05 / (estimate * r.launches)), 1, 200));
    for (int i = 0; i < warm; ++i) {
      if (auto st = Cuda(cudaGraphLaunch(exec, stream_), "graph launch"); !st.ok()) return st;
    }
    if (auto st = Cuda(cudaStreamSynchronize(stream_), "warm-up"); !st.ok()) return st;

    StoppingRule rule;
    rule.target_spread = params.target_spread;
    rule.budget_s = params.max_seconds;
    const absl::Time start = absl::Now();
    while (true) {
      if (auto st = Cuda(cudaEventRecord(start_, stream_), "event"); !st.ok()) return st;
      if (auto st = Cuda(cudaGraphLaunch(exec, stream_), "graph launch"); !st.ok()) return st;
      if (auto st = Cuda(cudaEventRecord(stop_, stream_), "event"); !st.ok()) return st;
      if (auto st = Cuda(cudaEventSynchronize(stop_), "event sync"); !st.ok()) return st;
      cudaEventElapsedTime(&ms, start_, stop_);
      r.samples.push_back(ms * 1e-3 / r.launches);
      if (rule.Done(r.samples, absl::ToDoubleSeconds(absl::Now() - start))) break;
    }
    r.median = Percentile(r.samples, 0.5);
    return r;
  }

  const int device_;
  std::mutex mu_;
  bool broken_ = false;
  int cc_ = 0;
  int64_t l2_bytes_ = 0;
  v1::DeviceFingerprint fp_;
  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* workspace_ = nullptr;
  unsigned long long* clock_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace

absl::StatusOr<std::unique_ptr<TimingBackend>> MakeCublasLtBackend(int device) {
  return CublasLtBackend::Create(device);
}

std::vector<CudaDeviceInfo> ListCudaDevices(std::string* why_none) {
  std::vector<CudaDeviceInfo> out;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why_none) *why_none = absl::StrCat(cudaGetErrorName(e), ": ", cudaGetErrorString(e));
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    out.push_back({i, prop.name,
                   CatalogNameForDevice(prop.name, prop.multiProcessorCount,
                                        static_cast<int64_t>(prop.totalGlobalMem))});
  }
  if (out.empty() && why_none) *why_none = "no CUDA devices";
  return out;
}

}  // namespace wavecrest
