// Recommend, from request to response: constraints, candidates, the analytic stage over all of
// them, the measuring stage over the best K and the baseline, ranking and the answer.
#ifndef WAVECREST_SERVICE_RECOMMEND_LOGIC_H_
#define WAVECREST_SERVICE_RECOMMEND_LOGIC_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/recommend.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// Most entries of one repeated constraint field (vary, allowed_head_dims, ...).
inline constexpr int kMaxListEntries = 256;
inline constexpr int kDefaultMeasureTopK = 8;
inline constexpr double kDefaultMaxGpuSeconds = 60;
// GPU time one GEMM measurement takes, in units of the GEMM's own time (warm-up, samples and
// launches per sample), for the GPU-seconds budget.
inline constexpr double kMeasureCostFactor = 400;

// What the measuring stage can do.
// Where a measurer's answers came from (distinct GEMMs), and notes for the reader.
struct MeasureCounts {
  int64_t measured = 0;
  int64_t cached = 0;
  int64_t predicted = 0;
  std::vector<std::string> notes;
};

struct Measurer {
  bool can_measure = false;  // a worker of the GPU kind is up (or a cache may answer)
  // Times `keys` (distinct); returns one entry per key: a measured (or cached) time, or nullopt.
  // `progress(done, total)` as results arrive. Counts what came from where. At `measure_by` (the
  // measuring budget's end, wall time) what is not measured yet is predicted, with a note in
  // `counts`, even in MODE_MEASURED.
  std::function<absl::StatusOr<std::vector<std::optional<GemmTime>>>(
      const std::vector<GemmKey>& keys, absl::Time measure_by,
      const std::function<void(int64_t, int64_t)>& progress, MeasureCounts* counts)>
      measure;
  // Times whole layers (distinct); one entry per key: a GPU measurement (or a cached one), or
  // nullopt (predicted only, or failed). May be empty: candidates are then summed from GEMMs.
  std::function<absl::StatusOr<std::vector<std::optional<LayerTime>>>(
      const std::vector<LayerKey>& keys, absl::Time measure_by,
      const std::function<void(int64_t, int64_t)>& progress, MeasureCounts* counts)>
      measure_layers;
};

struct RecommendContext {
  absl::Time deadline = absl::InfiniteFuture();
  std::function<void(const v1::Progress&)> progress = [](const v1::Progress&) {};
  std::function<bool()> cancelled = [] { return false; };
  const Measurer* measurer = nullptr;  // null: predictions only
  std::string no_measure_reason = "no worker of this GPU kind is up";
  // The error MODE_MEASURED gets when nothing can measure; OK = UNAVAILABLE naming the reason.
  absl::Status no_measure_error;
};

// CANCELLED or DEADLINE_EXCEEDED when the call behind `ctx` should stop; OK otherwise. Long loops
// (candidate generation, scoring, sweeps) poll it.
absl::Status StopStatus(const RecommendContext& ctx);

// The end of a measuring budget of `budget_s` seconds of wall time from now: never later than the
// call's deadline less what ranking and answering need (a second, or a twentieth of the time
// left), so a measured call answers, with what was measured, before its deadline.
absl::Time MeasureBy(const RecommendContext& ctx, double budget_s);

// Sends a progress message (done of total, and what is happening) through `ctx`.
void ReportProgress(const RecommendContext& ctx, int64_t done, int64_t total, std::string message);

// Reads the constraints of `request` (0 fields take their defaults). Violations name the fields.
absl::StatusOr<RecommendConstraints> ConstraintsFromRequest(const v1::RecommendRequest& request);

absl::StatusOr<v1::RecommendResponse> RunRecommend(const v1::RecommendRequest& request,
                                                   const RecommendContext& context);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_RECOMMEND_LOGIC_H_
