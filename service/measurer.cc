#include "service/measurer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/cost_model.h"
#include "service/advisor_logic.h"

namespace wavecrest {
namespace {

// The parts of a task every measuring stage sets alike.
void FillTask(const CallContext& ctx, const GpuTarget& gpu, absl::Time measure_by,
              TimingTaskBase* task) {
  task->measure_by = measure_by;
  task->kind = gpu.kind;
  task->gpu = gpu.spec;
  task->deadline = ctx.deadline;
}

TaskProgress TaskProgressOf(const std::function<void(int64_t, int64_t)>& progress) {
  return [&progress](int64_t done, int64_t total, absl::string_view) { progress(done, total); };
}

}  // namespace

absl::Status StopStatus(const CallContext& ctx) {
  if (ctx.cancelled()) return absl::CancelledError("the call was cancelled");
  if (ctx.clock->Now() > ctx.deadline) return absl::DeadlineExceededError("deadline passed");
  return absl::OkStatus();
}

absl::Time MeasureBy(const CallContext& ctx, double budget_s) {
  const absl::Time now = ctx.clock->Now();
  absl::Time by = now + absl::Seconds(budget_s);
  if (ctx.deadline != absl::InfiniteFuture()) {
    const absl::Duration reserve = std::max(absl::Seconds(1), (ctx.deadline - now) / 20);
    by = std::min(by, ctx.deadline - reserve);
  }
  return by;
}

void ReportProgress(const CallContext& ctx, int64_t done, int64_t total, std::string message) {
  v1::Progress p;
  p.set_done(done);
  p.set_total(total);
  p.set_message(std::move(message));
  ctx.progress(p);
}

absl::StatusOr<GpuTarget> ResolveCallGpu(const CallContext& ctx, absl::string_view name,
                                         absl::string_view field) {
  if (ctx.measurer != nullptr) return ctx.measurer->ResolveGpu(name, field);
  absl::StatusOr<const GpuSpec*> gpu = CatalogGpuFromRequest(name, field);
  if (!gpu.ok()) return gpu.status();
  return GpuTarget{(*gpu)->name, *gpu};
}

MeasureAvailability Availability(const CallContext& ctx, const GpuTarget& gpu) {
  MeasureAvailability a;
  if (ctx.measurer == nullptr) {
    a.reason = ctx.no_measure_reason;
    return a;
  }
  a.can_measure = ctx.measurer->CanMeasure(gpu.kind);
  if (!a.can_measure) {
    a.reason = absl::StrCat("no ", gpu.kind, " worker is up");
    a.error = ctx.measurer->NoWorkerError(gpu.kind);
  }
  return a;
}

absl::StatusOr<std::vector<std::optional<GemmTime>>> MeasureGemmTimes(
    const CallContext& ctx, const GpuTarget& gpu, v1::Mode mode, const std::vector<GemmKey>& keys,
    absl::Time measure_by, const std::function<void(int64_t, int64_t)>& progress,
    MeasureCounts* counts) {
  TimingTask task;
  FillTask(ctx, gpu, measure_by, &task);
  task.gemms = keys;
  task.mode = mode == v1::MODE_MEASURED ? v1::MODE_MEASURED : v1::MODE_AUTO;
  std::vector<std::optional<GemmTime>> out(keys.size());
  absl::StatusOr<MeasureCounts> summary = ctx.measurer->TimeGemms(
      task,
      [&](size_t i, v1::GemmTiming t) {
        // An emulating worker's answers are predictions and stay labelled so, with the
        // calibration's error band.
        const bool measured = t.provenance().source() != v1::SOURCE_PREDICTED;
        const auto [p10, p90] =
            measured ? std::make_pair(0.0, 0.0)
                     : ErrorBand(*gpu.spec, keys[i].dtype, t.time_s(), AlignedGemm(keys[i]));
        out[i] = GemmTime{t.time_s(), t.stats().relative_spread(), measured, p10, p90};
      },
      TaskProgressOf(progress), ctx.cancelled);
  if (!summary.ok()) return summary.status();
  *counts = *summary;
  return out;
}

std::string ScaledNote(const MixedTimes& mixed, absl::string_view what) {
  if (mixed.scaled() == 0) return "";
  return absl::StrFormat(
      "%d %s were not measured; each of their predictions is scaled by the measured/predicted "
      "ratio of the measured GEMMs of its kind nearest it in size (%d measured, median ratio "
      "%.2f), so that what was measured and what was not compare fairly",
      mixed.scaled(), what, mixed.scale().samples(), mixed.scale().MedianRatio());
}

absl::StatusOr<std::vector<std::optional<LayerTime>>> MeasureLayerTimes(
    const CallContext& ctx, const GpuTarget& gpu, const std::vector<LayerKey>& keys,
    absl::Time measure_by, const std::function<void(int64_t, int64_t)>& progress,
    MeasureCounts* counts) {
  LayerTask task;
  FillTask(ctx, gpu, measure_by, &task);
  task.layers = keys;
  task.mode = v1::MODE_AUTO;
  std::vector<std::optional<LayerTime>> out(keys.size());
  absl::StatusOr<MeasureCounts> summary = ctx.measurer->TimeLayers(
      task,
      [&](size_t i, v1::LayerTiming t) {
        // Only a GPU's measurement replaces the sum of parts; a prediction adds nothing to it.
        if (t.provenance().source() == v1::SOURCE_PREDICTED) return;
        out[i] = LayerTime{t.time_s(), t.stats().relative_spread()};
      },
      TaskProgressOf(progress), ctx.cancelled);
  if (!summary.ok()) return summary.status();
  *counts = *summary;
  return out;
}

}  // namespace wavecrest
