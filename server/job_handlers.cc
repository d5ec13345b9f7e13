#include "server/job_handlers.h"

#include "absl/strings/str_cat.h"
#include "service/recommend_logic.h"
#include "service/sweep_logic.h"

namespace wavecrest {
namespace {

// Where a timing run's answers came from, for the measuring stage's counts.
void CountsOf(const TimingSummary& summary, MeasureCounts* counts) {
  counts->measured = summary.measured;
  counts->cached = summary.cached;
  counts->predicted = summary.predicted;
  counts->notes = summary.notes;
}

// The context of one job on `gpu_name`: a measurer through `timing` when the name resolves (it
// stays null otherwise, and the job reports the name's error). `*gpu_kind` gets the catalog name.
RecommendContext MakeContext(TimingService* timing, absl::string_view gpu_name, v1::Mode mode,
                             absl::Time deadline,
                             const std::function<void(const v1::Progress&)>& progress,
                             const std::function<bool()>& cancelled, Measurer* measurer,
                             std::string* gpu_kind) {
  RecommendContext ctx;
  ctx.deadline = deadline;
  ctx.progress = progress;
  ctx.cancelled = cancelled;
  absl::StatusOr<std::pair<std::string, const GpuSpec*>> gpu = timing->ResolveGpu(gpu_name, "gpu");
  if (!gpu.ok()) return ctx;
  *gpu_kind = gpu->first;
  measurer->can_measure = timing->CanMeasure(gpu->first);
  ctx.no_measure_reason = absl::StrCat("no ", gpu->first, " worker is up");
  if (!measurer->can_measure) ctx.no_measure_error = timing->NoWorkerError(gpu->first);
  const v1::Mode task_mode = mode == v1::MODE_MEASURED ? v1::MODE_MEASURED : v1::MODE_AUTO;
  measurer->measure =
      [timing, gpu = *gpu, task_mode, deadline, cancelled](
          const std::vector<GemmKey>& keys, absl::Time measure_by,
          const std::function<void(int64_t, int64_t)>& on_progress,
          MeasureCounts* counts) -> absl::StatusOr<std::vector<std::optional<GemmTime>>> {
    TimingTask task;
    task.measure_by = measure_by;
    task.kind = gpu.first;
    task.gpu = gpu.second;
    task.gemms = keys;
    task.mode = task_mode;
    task.deadline = deadline;
    std::vector<std::optional<GemmTime>> out(keys.size());
    absl::StatusOr<TimingSummary> summary = timing->Run(
        task,
        [&](size_t i, v1::GemmTiming t) {
          // An emulating worker's answers are predictions and stay labelled so, with the
          // calibration's error band.
          const double spread = t.stats().relative_spread();
          const bool measured = t.provenance().source() != v1::SOURCE_PREDICTED;
          const auto [p10, p90] = measured ? std::make_pair(0.0, 0.0)
                                           : ErrorBand(*gpu.second, keys[i].dtype, t.time_s(),
                                                       AlignedGemm(keys[i]));
          out[i] = GemmTime{t.time_s(), spread, measured, p10, p90};
        },
        [&](int64_t done, int64_t total, absl::string_view) { on_progress(done, total); },
        cancelled);
    if (!summary.ok()) return summary.status();
    CountsOf(*summary, counts);
    return out;
  };
  measurer->measure_layers =
      [timing, gpu = *gpu, deadline, cancelled](
          const std::vector<LayerKey>& keys, absl::Time measure_by,
          const std::function<void(int64_t, int64_t)>& on_progress,
          MeasureCounts* counts) -> absl::StatusOr<std::vector<std::optional<LayerTime>>> {
    LayerTask task;
    task.measure_by = measure_by;
    task.kind = gpu.first;
    task.gpu = gpu.second;
    task.layers = keys;
    // A layer that cannot be measured (no cuDNN, too large) keeps its candidate summed from
    // GEMMs: never fail the ranking over it.
    task.mode = v1::MODE_AUTO;
    task.deadline = deadline;
    std::vector<std::optional<LayerTime>> out(keys.size());
    absl::StatusOr<TimingSummary> summary = timing->RunLayers(
        task,
        [&](size_t i, v1::LayerTiming t) {
          // Only a GPU's measurement replaces the sum of parts; a prediction adds nothing to it.
          if (t.provenance().source() == v1::SOURCE_PREDICTED) return;
          out[i] = LayerTime{t.time_s(), t.stats().relative_spread()};
        },
        [&](int64_t done, int64_t total, absl::string_view) { on_progress(done, total); },
        cancelled);
    if (!summary.ok()) return summary.status();
    CountsOf(*summary, counts);
    return out;
  };
  ctx.measurer = measurer;
  return ctx;
}

}  // namespace

RecommendHandler MakeRecommendHandler(TimingService* timing) {
  return [timing](const v1::RecommendRequest& request, absl::Time deadline,
                  const std::function<void(const v1::Progress&)>& progress,
                  const std::function<bool()>& cancelled) -> absl::StatusOr<v1::RecommendResponse> {
    Measurer measurer;
    std::string kind;
    const RecommendContext ctx = MakeContext(timing, request.gpu(), request.mode(), deadline,
                                             progress, cancelled, &measurer, &kind);
    if (kind.empty()) return RunRecommend(request, ctx);
    // Answer with the catalog name even when the request named a worker device.
    v1::RecommendRequest copy = request;
    copy.set_gpu(kind);
    return RunRecommend(copy, ctx);
  };
}

SweepHandler MakeSweepHandler(TimingService* timing) {
  return [timing](const v1::SweepRequest& request, absl::Time deadline,
                  const std::function<void(const v1::Progress&)>& progress,
                  const std::function<bool()>& cancelled) -> absl::StatusOr<v1::SweepResponse> {
    Measurer measurer;
    std::string kind;
    const RecommendContext ctx = MakeContext(timing, request.gpu(), request.mode(), deadline,
                                             progress, cancelled, &measurer, &kind);
    if (kind.empty()) return RunSweep(request, ctx);
    v1::SweepRequest copy = request;
    copy.set_gpu(kind);
    return RunSweep(copy, ctx);
  };
}

}  // namespace wavecrest
