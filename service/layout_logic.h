// Analyze's layout search (core/layout_search.h) for a request: the degrees `plan` chooses on the
// run's GPUs, and the plan that fits beside a run as given that does not.
#ifndef WAVECREST_SERVICE_LAYOUT_LOGIC_H_
#define WAVECREST_SERVICE_LAYOUT_LOGIC_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/layout_search.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// A planner's "run.global_batch: must be ..." as a violation of that field; others of "run".
absl::Status RunFieldError(const absl::Status& status);

// Whether `run` asks for the degrees to be searched: `plan` with num_gpus and global_batch,
// without keep_degrees, in training (`spec`, the request's model with its defaults), and some
// degree the request leaves at 0 or 1.
bool SearchesDegrees(const v1::ModelSpec& requested, const ModelSpec& spec, const RunConfig& run);

// The search for a request (SearchesDegrees): the micro-batch planned too where the request
// leaves it 0. Its winner's degrees and micro-batch are written into `spec` (the kernels are then
// analysed at that layout) and its step into `planned`.
absl::StatusOr<LayoutSearch> SearchRequestedLayout(const v1::ModelSpec& requested,
                                                   const GpuSpec& gpu, const RunConfig& run,
                                                   ModelSpec& spec, PlannedMicroBatch& planned);

// A run as given whose memory does not fit (response.step): the layouts that fit on its GPUs at
// its global batch, every degree free, as response.layouts, and the step's first assumption
// saying it does not fit and which plan does. Nothing when it fits or nothing does.
void AddPlanThatFits(const v1::ModelSpec& requested, const GpuSpec& gpu, const RunConfig& run,
                     const ModelSpec& spec, v1::AnalyzeResponse& response);

// The search's ranked layouts and counts into the response.
void AddLayouts(const LayoutSearch& search, v1::AnalyzeResponse& response);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_LAYOUT_LOGIC_H_
