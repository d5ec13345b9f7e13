// The cuBLASLt timing engine's backend class. Internal to gpu_worker/cuda. Its parts live in one
// .cc per phase group, shared by the GEMM path and the layer path (the split follows nvbench's:
// the state of one timed thing, how it is launched, and when sampling stops):
//   engine_setup.cc    the device, its fingerprint, the stream, workspace and probes; errors
//   engine_phases.cc   descriptors and the heuristic, graph capture, warm-up, windows of samples
//                      (the stop rule itself is host code: core/timing_stats.h), the SM clock,
//                      and the parts of the answer every timing has
//   engine_together.cc items of a request prepared in groups and sampled interleaved
//   gemm_engine.cc     one GEMM: plan, inputs, the check of each algorithm, the answer
//   layer_engine.cc    one layer whole: plan, buffers, the program, its check, the answer
// What each path does, step by step, is told at the top of its .cc file.
#ifndef WAVECREST_GPU_WORKER_CUDA_CUBLASLT_ENGINE_H_
#define WAVECREST_GPU_WORKER_CUDA_CUBLASLT_ENGINE_H_

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
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
// Blocking kernel before each window of n samples: long enough for the host to queue the
// window's events and graph launches (a few microseconds each) before the GPU starts them.
constexpr unsigned long long kBlockingNs = 100000;
constexpr unsigned long long kBlockingNsPerSample = 8000;
constexpr unsigned long long kProbeNs = 50000;  // clock probe after each window
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

// The time a stream takes between points, by CUDA events (as nvbench's cuda_timer): the one way
// the engine times. Event i is recorded before sample i and event n after the last, so n samples
// need n + 1 events and run back to back: each event ends one sample and starts the next. The
// backend creates it with its stream and destroys it unless the context broke (a broken context
// is not torn down; the process exits).
class EventTimer {
 public:
  cudaError_t Create(int samples) {
    events_.assign(static_cast<size_t>(samples) + 1, nullptr);
    for (cudaEvent_t& e : events_) {
      if (const cudaError_t err = cudaEventCreate(&e); err != cudaSuccess) return err;
    }
    return cudaSuccess;
  }
  void Destroy() {
    for (cudaEvent_t& e : events_) {
      if (e) cudaEventDestroy(e);
      e = nullptr;
    }
  }
  int capacity() const { return static_cast<int>(events_.size()) - 1; }
  cudaError_t Record(int i, cudaStream_t stream) { return cudaEventRecord(events_[i], stream); }
  // Waits for event n; the n intervals between events 0..n, seconds.
  cudaError_t Intervals(int n, std::vector<double>* seconds) {
    seconds->clear();
    cudaError_t e = cudaEventSynchronize(events_[n]);
    for (int i = 0; i < n && e == cudaSuccess; ++i) {
      float ms = 0;
      e = cudaEventElapsedTime(&ms, events_[i], events_[i + 1]);
      seconds->push_back(ms * 1e-3);
    }
    return e;
  }

 private:
  std::vector<cudaEvent_t> events_;
};

// `sets` copies of one operand in one allocation, each at an aligned offset.
struct OperandSets {
  DeviceBuffer buffer;
  int64_t stride = 0;  // bytes from one set to the next
  void* at(int s) const { return buffer.get<char>() + s * stride; }
};

// One timed thing's state (an algorithm of a GEMM, or a layer's program): its graph, its samples
// and the clock probes of its samples.
struct Algo {
  int index = 0;  // in the heuristic's list
  cublasLtMatmulAlgo_t algo{};
  SampleSchedule schedule;
  double launch_s = 0;  // one launch, as the check timed it (sizes the first window)
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::vector<double> samples;  // seconds per launch
  std::vector<int> probe_slots;
  std::vector<int> nvml_mhz;  // NVML's SM clock readings during the samples
  std::vector<int64_t> sample_end_ns;  // when each sample ended (SteadyNowNs)
  std::vector<int> sample_mhz;         // the clock each sample ran at (0 unknown)
  int clock_states = 0;                // core/sample_policies.h SeparateClockStates
  std::string clock_policy;
  double median = 0;
  std::string stopped;    // DescribeStop: why sampling ended
  double sampling_s = 0;  // wall time of the reported samples
  bool* broken = nullptr;
  ~Algo() {
    if (broken != nullptr && *broken) return;  // nothing can be released in a broken context
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

// One GEMM's cuBLASLt descriptors, released on scope exit.
struct MatmulDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  MatmulDescriptors() = default;
  MatmulDescriptors(const MatmulDescriptors&) = delete;
  MatmulDescriptors& operator=(const MatmulDescriptors&) = delete;
  ~MatmulDescriptors() {
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// The SM clock during a timed thing's samples, and where it was read ("nvml", "probe", "").
struct SmClock {
  int mhz = 0;
  std::string source;
};

// One GEMM of a layer program, ready to launch (layer_engine.cc).
struct LayerGemm;

class CublasLtBackend final : public TimingBackend {
 public:
  // engine_setup.cc
  static absl::StatusOr<std::unique_ptr<TimingBackend>> Create(int device);
  ~CublasLtBackend() override;
  v1::DeviceFingerprint Fingerprint() const override { return fp_; }
  bool Broken() const override { return broken_; }
  int64_t FreeMemoryBytes() override;

  // gemm_engine.cc
  absl::StatusOr<v1::GemmTiming> Time(const GemmKey& key, const TimingParams& params) override;
  // layer_engine.cc
  absl::StatusOr<v1::LayerTiming> TimeLayer(const LayerKey& key,
                                            const TimingParams& params) override;
  // engine_together.cc: GEMMs (without autotuning) and layers timed together, interleaved.
  std::vector<absl::StatusOr<v1::GemmTiming>> TimeTogether(
      const std::vector<GemmKey>& keys, const TimingParams& params, const OnItem& on_item,
      const OnDone<v1::GemmTiming>& on_done = nullptr) override;
  std::vector<absl::StatusOr<v1::LayerTiming>> TimeLayersTogether(
      const std::vector<LayerKey>& keys, const TimingParams& params, const OnItem& on_item,
      const OnDone<v1::LayerTiming>& on_done = nullptr) override;

 private:
  explicit CublasLtBackend(int device) : device_(device) {}

  // engine_setup.cc: the device's fingerprint, then the handle, stream, workspace, probes, scale
  // factors and events.
  absl::Status Init();
  absl::Status ReadDevice();
  absl::Status Allocate();
  // Refuses in a broken context, selects the device (mu_ held): every timing call starts so.
  absl::Status Ready();
  // A CUDA (cuBLAS) failure as a status; a sticky one marks the backend broken.
  absl::Status Cuda(cudaError_t e, absl::string_view what);
  absl::Status Blas(cublasStatus_t s, absl::string_view what);
  template <typename T>
  absl::Status SetDesc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const T& v,
                       absl::string_view what) {
    return Blas(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v)), what);
  }
  static void Beat(const TimingParams& params, absl::string_view phase) {
    if (params.heartbeat) params.heartbeat(phase);
  }

  // engine_phases.cc: the descriptors of `plan` (the output's type `d_type`; FP8 scale factors
  // when the plan is FP8) and the heuristic's first `count` algorithms for them with `workspace`
  // bytes (FAILED_PRECONDITION naming `what` when it has none).
  absl::Status MakeDescriptors(const GemmPlan& plan, const TypeInfo& ty, cudaDataType_t d_type,
                               MatmulDescriptors* out);
  absl::StatusOr<std::vector<cublasLtMatmulHeuristicResult_t>> Heuristics(
      const MatmulDescriptors& desc, int64_t workspace, int count, absl::string_view what);
  // Captures the timed thing's launches_per_sample enqueues (`enqueue(i)`) in one CUDA graph and
  // instantiates it.
  absl::Status CaptureGraph(Algo& algo, const std::function<absl::Status(int)>& enqueue);
  // Replays the graph for the schedule's warm-up, synchronising about twice a second so that
  // heartbeats keep flowing (`launch_s`: one launch's time from the check).
  absl::Status WarmUp(Algo& algo, double launch_s, const TimingParams& params);
  // Samples in windows until the stopping rule says stop; NVML samples the clock meanwhile when
  // `clocked`.
  absl::Status Sample(Algo& algo, const TimingParams& params, bool clocked);
  StoppingRule Rule(const Algo& algo, const TimingParams& params) const;
  // One window of the next WindowSamples samples: a blocking kernel, then the replays back to
  // back with an event between each, then a clock probe into `slot`; one wait at the end. Appends
  // the samples (seconds per launch), when each ended and their probe slot to `algo`.
  absl::Status TimedWindow(Algo& algo, const StoppingRule& rule, int slot);
  // Items timed together (engine_together.cc): `algos[j]` is item `index[j]`'s, prepared and
  // warmed up. Sampled in rounds, one window of each in every round, announced to `on_item`
  // first, until every stopping rule (over the item's own sampled wall time) is met after
  // kMinInterleavedRounds, or max_seconds of rounds (AnotherRound). NVML samples the clock
  // through all of it.
  absl::Status SampleInterleaved(const std::vector<Algo*>& algos, const std::vector<size_t>& index,
                                 const TimingParams& params, const OnItem& on_item);
  // The device lock held, prepares items 0..n-1 in turn, in groups as large as device memory
  // allows, samples each group interleaved (each Prepared's `timed`), answers its items and frees
  // them. `prepare(i)`: the item prepared, or why not (RESOURCE_EXHAUSTED while a group holds
  // memory ends the group, and the item is tried again in the next). `answer` turns a sampled
  // item into its result; `on_done` gets each result once it is final.
  template <typename Timing, typename Prepared>
  std::vector<absl::StatusOr<Timing>> TimeInGroups(
      size_t n, const TimingParams& params, const OnItem& on_item, const OnDone<Timing>& on_done,
      const std::function<absl::StatusOr<std::unique_ptr<Prepared>>(size_t)>& prepare,
      const std::function<absl::StatusOr<Timing>(const Prepared&)>& answer);
  // Autotuning: the winner and the heuristic's first choice, re-timed from fresh samples in
  // alternating windows (SampleInterleaved), so that neither is favoured by the selection or by
  // a cooler GPU.
  absl::Status Retime(const std::vector<Algo*>& algos, const TimingParams& params);
  // NVML's readings over a stretch of sampling: all of them, and each sample's (ClockPerSample).
  static void TakeClocks(const std::vector<ClockReading>& readings, Algo& algo);
  // Sets aside samples of a clock state other than the one with most of the work.
  static void KeepOneClockState(Algo& algo);
  // The SM clock during the samples: NVML's, else the median of the probes queued after them.
  absl::StatusOr<SmClock> ReadClock(const Algo& algo);
  absl::StatusOr<int> ProbedMhz(const Algo& algo);
  // Each sample's clock as the probe after its window measured it (MHz, 0 unknown).
  absl::StatusOr<std::vector<int>> ProbeMhzPerSample(const Algo& algo);
  // The parts of the answer every timing has: the samples' statistics, the clock, the schedule,
  // and the provenance (MEASURED by this device with `method`). Hands the samples to the
  // params' sink (named `name`) first. Returns the statistics.
  SampleStats Assemble(const Algo& algo, const SmClock& clock, const TimingParams& params,
                       const std::string& name, const std::string& method, v1::TimingStats* s,
                       v1::Provenance* prov);
  // One launch of `enqueue` between events, seconds (the check's run).
  absl::StatusOr<double> TimeOnce(const std::function<absl::Status()>& enqueue);
  // How many of `elements` of `elem` at `p` are NaN or infinite.
  absl::StatusOr<uint64_t> CountNonFinite(const void* p, int64_t elements, Elem elem);

  // gemm_engine.cc
  absl::StatusOr<v1::GemmTiming> TimeLocked(const GemmKey& key, const TimingParams& params);
  absl::StatusOr<GemmPlan> PlanFor(const GemmKey& key, const EngineOptions& options);
  absl::Status AllocateInputs(const GemmPlan& plan, const TypeInfo& ty, OperandSets& a,
                              OperandSets& b, OperandSets& d);
  using Launch = std::function<cublasStatus_t(const cublasLtMatmulAlgo_t&, int set)>;
  // What every step of one GEMM's timing reads: the GEMM, its plan and types, the options, its
  // operand sets and how to launch it with an algorithm on a set.
  struct GemmRun {
    const GemmKey& key;
    const GemmPlan& plan;
    const TypeInfo& ty;
    const EngineOptions& options;
    const TimingParams& params;
    const OperandSets& a;
    const OperandSets& b;
    const OperandSets& d;
    const Launch& launch;
  };
  // Each algorithm checked, sized, captured, warmed up and sampled; the ones that ran.
  absl::StatusOr<std::vector<std::unique_ptr<Algo>>> TimeAlgorithms(
      const GemmRun& run, const std::vector<cublasLtMatmulHeuristicResult_t>& heuristics);
  absl::Status PrepareAndSample(const GemmRun& run, Algo& algo);
  // The check, the sample schedule, the graph and the warm-up: ready to sample.
  absl::Status Prepare(const GemmRun& run, Algo& algo);
  // One GEMM with everything its timing holds on to while others are timed beside it
  // (engine_together.cc): plan, inputs, descriptors, the heuristic's first algorithm, prepared.
  struct PreparedGemm;
  absl::StatusOr<std::unique_ptr<PreparedGemm>> PrepareGemm(const GemmKey& key,
                                                            const TimingParams& params);
  absl::StatusOr<v1::GemmTiming> AnswerPrepared(const PreparedGemm& p, const TimingParams& params);
  absl::StatusOr<v1::GemmTiming> AnswerGemm(const GemmKey& key, const GemmPlan& plan,
                                            const EngineOptions& options,
                                            const TimingParams& params, const Algo& best,
                                            const Algo* first,
                                            const cublasLtMatmulHeuristicResult_t& heuristic);
  // The check: one launch into a NaN-poisoned output, timed; every output element finite;
  // sampled elements against the host's row-major reference. Returns the launch's duration.
  absl::StatusOr<double> CheckOnce(const GemmRun& run, const cublasLtMatmulAlgo_t& algo);
  absl::Status CheckSampledElements(const GemmRun& run, const cublasLtMatmulAlgo_t& algo);
  // Split-K partial sums kept in the output type round once more each: how many (0 if none).
  absl::StatusOr<int> OutputTypePartials(const cublasLtMatmulAlgo_t& algo);
  // `count` elements of `bytes` each from `base` + offset, `stride` elements apart, to `out`.
  absl::Status Fetch(const void* base, int64_t offset, int64_t stride, int64_t count, int bytes,
                     void* out);

  // layer_engine.cc: a layer program (core/layer_program.h) captured in one CUDA graph and timed
  // as a GEMM is (warm-up, blocking kernel, events, stopping rule, clocks).
  // The program, its buffers, GEMMs and attention runner (defined in layer_engine.cc).
  struct LayerRun;
  absl::Status PlanLayer(const LayerKey& key, const EngineOptions& options,
                         const TimingParams& params, LayerRun& run);
  absl::Status AllocateBuffers(LayerRun& run);
  absl::Status MakeLayerGemms(const EngineOptions& options, LayerRun& run);
  // One GEMM's descriptors and algorithm (shared by equal keys): its index in the run's GEMMs.
  absl::StatusOr<int> MakeLayerGemm(const GemmKey& key, const std::string& name,
                                    const EngineOptions& options, LayerRun& run);
  absl::Status EnqueueGemm(const LayerRun& run, const LayerGemm& g, const void* a, const void* b,
                           void* c, const std::string& what);
  absl::Status EnqueueGroupedGemm(const LayerRun& run, size_t op);
  // The program, enqueued once on the stream (also while capturing).
  absl::Status EnqueueProgram(const LayerRun& run);
  // One run, timed, into NaN-poisoned outputs that must come out finite. Seconds.
  absl::StatusOr<double> CheckLayer(const LayerRun& run, const TimingParams& params);
  v1::LayerTiming AnswerLayer(const LayerRun& run, const Algo& timed, const SmClock& clock,
                              const TimingParams& params);
  // A layer planned, allocated, checked, captured and warmed up, ready to sample beside others.
  struct PreparedLayer;
  absl::StatusOr<std::unique_ptr<PreparedLayer>> PrepareLayer(const LayerKey& key,
                                                              const TimingParams& params);
  absl::StatusOr<v1::LayerTiming> AnswerPreparedLayer(const PreparedLayer& p,
                                                      const TimingParams& params);

  // Whether the GPU finished timed work within options.hot_window_s (ScheduleSamples' gpu_hot).
  bool GpuHot(const EngineOptions& options) const {
    return absl::Now() - last_sampled_ < absl::Seconds(options.hot_window_s);
  }

  const int device_;
  std::mutex mu_;
  bool broken_ = false;
  absl::Time last_sampled_ = absl::InfinitePast();  // when Sample or Retime last finished
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
  EventTimer timer_;
};

template <typename Timing, typename Prepared>
std::vector<absl::StatusOr<Timing>> CublasLtBackend::TimeInGroups(
    size_t n, const TimingParams& params, const OnItem& on_item, const OnDone<Timing>& on_done,
    const std::function<absl::StatusOr<std::unique_ptr<Prepared>>(size_t)>& prepare,
    const std::function<absl::StatusOr<Timing>(const Prepared&)>& answer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status st = Ready(); !st.ok()) return std::vector<absl::StatusOr<Timing>>(n, st);
  std::vector<absl::StatusOr<Timing>> out(n, absl::CancelledError("the batch was stopped"));
  std::vector<std::unique_ptr<Prepared>> prepared(n);
  size_t next = 0;
  bool go_on = true;
  while (next < n && go_on && !broken_) {
    std::vector<Algo*> algos;
    std::vector<size_t> group;
    const absl::Time began = absl::Now();
    for (; next < n; ++next) {
      // Half the time left is for sampling what is prepared and sending it back.
      if (!group.empty() && absl::Now() - began > (params.deadline - began) / 2) break;
      if (!(go_on = on_item(next))) break;
      absl::StatusOr<std::unique_ptr<Prepared>> p = prepare(next);
      if (p.ok()) {
        prepared[next] = *std::move(p);
        algos.push_back(&prepared[next]->timed);
        group.push_back(next);
        continue;
      }
      if (p.status().code() == absl::StatusCode::kResourceExhausted && !group.empty()) break;
      out[next] = p.status();
      if (on_done) on_done(next, out[next]);
      if (broken_) break;
    }
    if (!go_on) {
      for (size_t i : group) prepared[i].reset();
      break;
    }
    absl::Status sampled = group.empty() || broken_
                               ? absl::OkStatus()
                               : SampleInterleaved(algos, group, params, on_item);
    for (size_t i : group) {
      out[i] = sampled.ok() ? answer(*prepared[i]) : sampled;
      if (on_done) on_done(i, out[i]);
      prepared[i].reset();
    }
    if (!sampled.ok() && sampled.code() == absl::StatusCode::kCancelled) go_on = false;
  }
  for (size_t i = next; i < n && broken_; ++i) {
    out[i] = absl::UnavailableError("the worker's CUDA context is unusable");
  }
  return out;
}

}  // namespace wavecrest::engine

#endif  // WAVECREST_GPU_WORKER_CUDA_CUBLASLT_ENGINE_H_
