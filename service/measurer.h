// The one port through which the logic layer gets timings: `Measurer`. Every RPC that needs GEMM
// or layer times (TimeGemms, TimeLayers, Recommend, Sweep) asks it with a task and gets timings
// back, each with its provenance (MEASURED by a GPU, CACHED, or PREDICTED by the analytic model).
// The server implements it with the measurement store, the GPU worker pool and the analytic model
// (server/timing_service.h); tests implement it with a fake (tests/fakes/fake_measurer.h).
//
// Also here: what every call of the logic layer carries (CallContext: deadline, cancellation,
// progress, the Measurer) and the measuring stage's policy constants.
#ifndef WAVECREST_SERVICE_MEASURER_H_
#define WAVECREST_SERVICE_MEASURER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/gemm.h"
#include "core/gpu_catalog.h"
#include "core/layers.h"
#include "core/recommend.h"
#include "service/clock.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// GPU time one GEMM (or layer) measurement takes, in units of its own time (warm-up, samples and
// launches per sample), for GPU-seconds budgets.
inline constexpr double kMeasureCostFactor = 400;
// The measuring budget of Recommend and Sweep when the request gives none, seconds.
inline constexpr double kDefaultMaxGpuSeconds = 60;

// A request's GPU, resolved: the kind (catalog name) and its catalog entry.
struct GpuTarget {
  std::string kind;
  const GpuSpec* spec = nullptr;
};

// How a measurement is taken and until when: the one set of timing options from the request to
// the engine. The logic's tasks carry it (TimingTaskBase), the server hands it to its workers
// (GpuWorkers::Measure), which send it as v1::TimingOptions; a worker reads that into its
// TimingParams, which are the engine's EngineOptions (gpu_worker/backend.h).
struct MeasureOptions {
  bool autotune = false;  // GEMMs only
  bool warm_l2 = false;
  absl::Time deadline = absl::InfiniteFuture();
};

struct TimingTaskBase : MeasureOptions {
  std::string kind;              // catalog name
  const GpuSpec* gpu = nullptr;  // for predictions
  v1::Mode mode = v1::MODE_AUTO;
  // The end of the measuring budget (wall time): what is not measured by then is PREDICTED, even
  // in MODE_MEASURED, and a note says how many; `deadline` still ends the call.
  absl::Time measure_by = absl::InfiniteFuture();
};
struct TimingTask : TimingTaskBase {
  std::vector<GemmKey> gemms;  // distinct
};
struct LayerTask : TimingTaskBase {
  std::vector<LayerKey> layers;  // distinct
  // Per layer, when asked of a model (TimeLayers): how many of its layers run it, and its role
  // where they differ (core/layers.h, LayerUse). Empty otherwise.
  std::vector<int64_t> model_layers;
  std::vector<std::string> roles;
  std::vector<std::string> notes;  // for the answer: the model's layers no key stands for
};

// Where a task's or an answer's timings came from (distinct GEMMs or layers), and notes for the
// reader: the one count type, from the Measurer to the access log.
struct MeasureCounts {
  int64_t measured = 0;  // by source: a GPU measured it
  int64_t cached = 0;
  int64_t predicted = 0;           // the analytic model, here or in an emulating worker
  int64_t shared = 0;              // of all these, taken from an identical request measuring them
  std::vector<std::string> notes;  // e.g. why measurement was not possible
};

// `progress(done, total, what)` of a task.
using TaskProgress = std::function<void(int64_t done, int64_t total, absl::string_view what)>;

class Measurer {
 public:
  virtual ~Measurer() = default;

  // Resolves a request's GPU field (a catalog name, or a worker's device name as ListDevices
  // shows it). INVALID_ARGUMENT naming `field` when empty; NOT_FOUND listing the known names.
  virtual absl::StatusOr<GpuTarget> ResolveGpu(absl::string_view name,
                                               absl::string_view field) const = 0;
  // A worker of `kind` is up now.
  virtual bool CanMeasure(absl::string_view kind) const = 0;
  // A worker of `kind` is configured (up or not): only then can a budget check or waiting matter.
  virtual bool MightMeasure(absl::string_view kind) const = 0;
  // What MODE_MEASURED gets when no worker of `kind` is up (never OK): UNAVAILABLE with a retry
  // hint while one is configured, FAILED_PRECONDITION when none is.
  virtual absl::Status NoWorkerError(absl::string_view kind) const = 0;

  // One result per task GEMM through `emit(index, timing)` (one call at a time, from any thread),
  // `progress` after each. MODE_MEASURED with no worker: UNAVAILABLE. Stops early with CANCELLED
  // or DEADLINE_EXCEEDED when `cancelled()` turns true or the task's deadline passes; past its
  // `measure_by`, the rest is predicted with a note.
  virtual absl::StatusOr<MeasureCounts> TimeGemms(
      const TimingTask& task, const std::function<void(size_t, v1::GemmTiming)>& emit,
      const TaskProgress& progress, const std::function<bool()>& cancelled) = 0;
  // The same for layers timed whole (core/layers.h).
  virtual absl::StatusOr<MeasureCounts> TimeLayers(
      const LayerTask& task, const std::function<void(size_t, v1::LayerTiming)>& emit,
      const TaskProgress& progress, const std::function<bool()>& cancelled) = 0;
};

// What every call of the logic layer carries. The transport (server/advisor_service.cc, the CLI's
// offline mode) fills it. `deadline` and the measuring budget are read on `clock` (the wall clock
// unless a test gives its own).
struct CallContext {
  Clock* clock = &Clock::Real();
  absl::Time deadline = absl::InfiniteFuture();
  std::function<void(const v1::Progress&)> progress = [](const v1::Progress&) {};
  std::function<bool()> cancelled = [] { return false; };
  Measurer* measurer = nullptr;  // null: predictions only, for `no_measure_reason`
  std::string no_measure_reason = "no worker of this GPU kind is up";
};

// Streams one message of a call's answer to its caller.
template <typename Response>
using Send = std::function<void(Response)>;

// CANCELLED or DEADLINE_EXCEEDED when the call behind `ctx` should stop; OK otherwise. Long loops
// (candidate generation, scoring, sweeps) poll it.
absl::Status StopStatus(const CallContext& ctx);

// The end of a measuring budget of `budget_s` seconds from now on the call's clock: never later
// than the call's deadline less what ranking and answering need (a second, or a twentieth of the
// time left), so a measured call answers, with what was measured, before its deadline.
absl::Time MeasureBy(const CallContext& ctx, double budget_s);

// Sends a progress message (done of total, and what is happening) through `ctx`.
void ReportProgress(const CallContext& ctx, int64_t done, int64_t total, std::string message);

// The request's GPU through the call's measurer (worker device names too), else the catalog.
absl::StatusOr<GpuTarget> ResolveCallGpu(const CallContext& ctx, absl::string_view name,
                                         absl::string_view field);

// Whether the call can measure on `gpu` now; when not, why (for notes) and the error
// MODE_MEASURED gets (OK when the call has no measurer: the caller words it).
struct MeasureAvailability {
  bool can_measure = false;
  std::string reason;
  absl::Status error;
};
MeasureAvailability Availability(const CallContext& ctx, const GpuTarget& gpu);

// Where an answer's GEMM times came from (RecommendResponse, SweepResponse).
template <typename Response>
MeasureCounts GemmCountsOf(const Response& r) {
  MeasureCounts c;
  c.measured = r.gemms_measured();
  c.cached = r.gemms_cached();
  c.predicted = r.gemms_predicted();
  return c;
}

// The measuring stage's view of the Measurer (Recommend, Sweep): times for the distinct `keys`,
// one entry each: a GPU measurement (or a cached one), an emulating worker's prediction labelled
// as one (with the calibration's error band), or nullopt. `mode` MODE_MEASURED or MODE_AUTO.
// `counts`: what came from where.
absl::StatusOr<std::vector<std::optional<GemmTime>>> MeasureGemmTimes(
    const CallContext& ctx, const GpuTarget& gpu, v1::Mode mode, const std::vector<GemmKey>& keys,
    absl::Time measure_by, const std::function<void(int64_t, int64_t)>& progress,
    MeasureCounts* counts);
// The note of an answer whose predictions were scaled to agree with the measurements beside them
// (MixedTimes): "4 GEMMs of the measured rows were not measured; ..."; empty when none was.
std::string ScaledNote(const MixedTimes& mixed, absl::string_view what);
// Whole layers: a GPU measurement (or a cached one) per key, or nullopt (predicted only, or
// failed: the candidate is then summed from GEMMs). MODE_AUTO always: never fail a ranking over a
// layer that cannot be measured.
absl::StatusOr<std::vector<std::optional<LayerTime>>> MeasureLayerTimes(
    const CallContext& ctx, const GpuTarget& gpu, const std::vector<LayerKey>& keys,
    absl::Time measure_by, const std::function<void(int64_t, int64_t)>& progress,
    MeasureCounts* counts);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_MEASURER_H_
