#include "server/recommend_handler.h"

#include "absl/strings/str_cat.h"
#include "server/recommend_logic.h"

namespace wavecrest {

RecommendHandler MakeRecommendHandler(TimingService* timing) {
  return [timing](const v1::RecommendRequest& request, absl::Time deadline,
                  const std::function<void(const v1::Progress&)>& progress,
                  const std::function<bool()>& cancelled) -> absl::StatusOr<v1::RecommendResponse> {
    RecommendContext ctx;
    ctx.deadline = deadline;
    ctx.progress = progress;
    ctx.cancelled = cancelled;
    Measurer measurer;
    absl::StatusOr<std::pair<std::string, const GpuSpec*>> gpu =
        timing->ResolveGpu(request.gpu(), "gpu");
    if (gpu.ok()) {
      measurer.can_measure = timing->CanMeasure(gpu->first);
      ctx.no_measure_reason = absl::StrCat("no ", gpu->first, " worker is up");
      if (!measurer.can_measure) ctx.no_measure_error = timing->NoWorkerError(gpu->first);
      const v1::Mode mode = request.mode() == v1::MODE_MEASURED ? v1::MODE_MEASURED : v1::MODE_AUTO;
      measurer.measure = [timing, gpu, mode, deadline, &cancelled](
                             const std::vector<GemmKey>& keys,
                             const std::function<void(int64_t, int64_t)>& on_progress,
                             v1::RecommendResponse* counts)
          -> absl::StatusOr<std::vector<std::optional<GemmTime>>> {
        TimingTask task;
        task.kind = gpu->first;
        task.gpu = gpu->second;
        task.gemms = keys;
        task.mode = mode;
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
                                               : ErrorBand(*gpu->second, keys[i].dtype, t.time_s());
              out[i] = GemmTime{t.time_s(), spread, measured, p10, p90};
            },
            [&](int64_t done, int64_t total, absl::string_view) { on_progress(done, total); },
            cancelled);
        if (!summary.ok()) return summary.status();
        counts->set_gemms_measured(summary->measured);
        counts->set_gemms_cached(summary->cached);
        counts->set_gemms_predicted(summary->predicted);
        for (const auto& n : summary->notes) counts->add_notes(n);
        return out;
      };
      ctx.measurer = &measurer;
      // Answer with the catalog name even when the request named a worker device.
      v1::RecommendRequest copy = request;
      copy.set_gpu(gpu->first);
      return RunRecommend(copy, ctx);
    }
    return RunRecommend(request, ctx);
  };
}

}  // namespace wavecrest
