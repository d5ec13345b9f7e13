// A timing backend: what a worker times GEMMs with. `cublaslt` (gpu_worker/cuda, only when built
// with CUDA and a GPU is present) measures; `analytic` answers with the core's cost model for an
// emulated GPU and labels every result PREDICTED, so that the whole system runs without a GPU.
#ifndef WAVECREST_GPU_WORKER_BACKEND_H_
#define WAVECREST_GPU_WORKER_BACKEND_H_

#include <cstdint>
#include <functional>
#include <vector>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/gemm.h"
#include "core/gemm_plan.h"
#include "core/layers.h"
#include "core/timing_stats.h"
#include "wavecrest/v1/worker.pb.h"

namespace wavecrest {

// How one GEMM or layer is timed: the engine's options (core/gemm_plan.h, one definition of
// autotune, top_k, warm_l2, target_spread, max_seconds, watchdog_s, hot_window_s and the sample
// schedule), and the worker's hooks around them. v1::TimingOptions arrives as this
// (ParamsFromProto) and the engine reads it as its EngineOptions.
struct TimingParams : EngineOptions {
  // When the caller stops waiting (a worker call's gRPC deadline). Things timed together are
  // sampled and answered in time: a group stops taking in items once half the time left when it
  // began is gone, and its rounds take at most half of what is left when they start.
  absl::Time deadline = absl::InfiniteFuture();
  // Called now and then while a GEMM is timed (phase: "check", "warm-up", "sampling",
  // "re-timing"); the worker turns it into heartbeat events. May be empty.
  std::function<void(absl::string_view phase)> heartbeat;
  // Called once per timed GEMM or layer with the reported samples (seconds per launch), the
  // stopping rule they were taken under, the wall time the sampling took, why it stopped
  // (DescribeStop) and, per sample, the SM clock NVML read and the one the device's clock probe
  // measured after its window (MHz; each empty when unknown), so that a device run can record
  // the streams the rule is replayed on. May be empty.
  std::function<void(absl::string_view key, const std::vector<double>& samples_s,
                     const StoppingRule& rule, double sampling_wall_s, absl::string_view stopped,
                     const std::vector<int>& nvml_mhz, const std::vector<int>& probe_mhz)>
      samples_sink;
};
// The engine's options of these parameters (inline: the CUDA engine's library uses it without
// linking the worker's).
inline const EngineOptions& EngineOptionsOf(const TimingParams& params) { return params; }
// Applies the documented defaults to unset fields; INVALID_ARGUMENT for out-of-range values.
absl::StatusOr<TimingParams> ParamsFromProto(const v1::TimingOptions& options);

class TimingBackend {
 public:
  virtual ~TimingBackend() = default;
  virtual v1::DeviceFingerprint Fingerprint() const = 0;
  // Free device memory, bytes; 0 when not applicable.
  virtual int64_t FreeMemoryBytes() = 0;
  // Times one GEMM. The result has shape, layout, dtype, time_s, tflops, stats and provenance
  // (source, method = TimingMethod(...), device, samples, spread, measured_at).
  // RESOURCE_EXHAUSTED: does not fit in free device memory. FAILED_PRECONDITION: the device cannot
  // run the dtype. INTERNAL: a CUDA or cuBLASLt error (see Broken()) or a failed correctness check.
  virtual absl::StatusOr<v1::GemmTiming> Time(const GemmKey& key, const TimingParams& params) = 0;
  // Times one layer whole (core/layers.h). The result has shape, key, time_s, flops, tflops,
  // predicted_sum_s, stats and provenance (method = LayerTimingMethod(...)). FAILED_PRECONDITION
  // for a kind this backend cannot run (the server predicts it and says why); otherwise as Time.
  // (Inline, like the rest of this interface: the CUDA engine's library implements it without
  // linking the worker's.)
  virtual absl::StatusOr<v1::LayerTiming> TimeLayer(const LayerKey& key,
                                                    const TimingParams& /*params*/) {
    return absl::FailedPreconditionError(absl::StrCat("this worker's backend (",
                                                      Fingerprint().backend(), ") cannot time ",
                                                      LayerKindName(key.kind), " layers"));
  }
  // True once a sticky CUDA error left the context unusable: the process must exit.
  virtual bool Broken() const { return false; }

  // Called with an item's index whenever the engine works on it (preparing or sampling it); the
  // caller reports that item as in flight. False stops the batch: the items not finished answer
  // CANCELLED.
  using OnItem = std::function<bool(size_t index)>;
  // Called with an item's result as soon as it is final (may be empty): one after another, at
  // once; interleaved, when its group is done. Items it is not called for answer in the returned
  // vector only (stopped or unusable).
  template <typename Timing>
  using OnDone = std::function<void(size_t index, const absl::StatusOr<Timing>& result)>;
  // Times several GEMMs together: the cuBLASLt engine prepares each (plan, inputs, check, graph,
  // warm-up), then samples them interleaved, one window each per round, so that all of them see
  // the same stretch of clocks and power and drift between them cancels in their ratios (issue
  // 35); groups as large as device memory allows. Results in key order. This default times them
  // one after the other (the analytic model has no drift; autotuning re-times pairs itself).
  virtual std::vector<absl::StatusOr<v1::GemmTiming>> TimeTogether(
      const std::vector<GemmKey>& keys, const TimingParams& params, const OnItem& on_item,
      const OnDone<v1::GemmTiming>& on_done = nullptr) {
    return OneAfterAnother<v1::GemmTiming>(
        keys.size(), on_item, on_done, [&](size_t i) { return Time(keys[i], params); });
  }
  // Layers whole, together, as TimeTogether does GEMMs.
  virtual std::vector<absl::StatusOr<v1::LayerTiming>> TimeLayersTogether(
      const std::vector<LayerKey>& keys, const TimingParams& params, const OnItem& on_item,
      const OnDone<v1::LayerTiming>& on_done = nullptr) {
    return OneAfterAnother<v1::LayerTiming>(
        keys.size(), on_item, on_done, [&](size_t i) { return TimeLayer(keys[i], params); });
  }

 protected:
  // Items 0..n-1 timed by `time`, each announced first; after a refusal to go on or a broken
  // context the rest answer CANCELLED or UNAVAILABLE.
  template <typename Timing, typename TimeFn>
  std::vector<absl::StatusOr<Timing>> OneAfterAnother(size_t n, const OnItem& on_item,
                                                      const OnDone<Timing>& on_done,
                                                      const TimeFn& time) {
    std::vector<absl::StatusOr<Timing>> out;
    for (size_t i = 0; i < n; ++i) {
      if (Broken()) {
        out.push_back(absl::UnavailableError("the worker's CUDA context is unusable"));
      } else if (!on_item(i)) {
        out.push_back(absl::CancelledError("the batch was stopped"));
      } else {
        out.push_back(time(i));
        if (on_done) on_done(i, out.back());
      }
    }
    return out;
  }
};

// The analytic model for catalogued GPU `emulate` (NOT_FOUND lists the known names).
absl::StatusOr<std::unique_ptr<TimingBackend>> MakeAnalyticBackend(absl::string_view emulate);

// cuBLASLt on CUDA device `device`. FAILED_PRECONDITION with a clear message when this build has no
// CUDA, when there is no GPU or driver, or when `device` does not exist.
absl::StatusOr<std::unique_ptr<TimingBackend>> MakeCublasLtBackend(int device);

// One visible CUDA device, as `wavecrest-worker devices` lists it.
struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  std::string catalog_name;  // empty when the catalog does not know it
};
// Visible CUDA devices; empty without CUDA, driver or GPU (the reason in `why_none`).
std::vector<CudaDeviceInfo> ListCudaDevices(std::string* why_none);

}  // namespace wavecrest

#endif  // WAVECREST_GPU_WORKER_BACKEND_H_
