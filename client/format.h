// Human-readable rendering of Advisor responses for the CLI (tables), and JSON via the protobuf
// JSON mapping (field names as in the .proto files).
#ifndef WAVECREST_CLIENT_FORMAT_H_
#define WAVECREST_CLIENT_FORMAT_H_

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {

// The protobuf JSON mapping of `message`, snake_case names, defaults printed, indented.
std::string FormatJson(const google::protobuf::Message& message);

std::string FormatAnalysis(const v1::AnalyzeResponse& r);
// The step of a training run, component by component (analyze --gpus ...).
std::string FormatStepBreakdown(const v1::StepBreakdown& b);
std::string FormatDevices(const v1::ListDevicesResponse& r);
std::string FormatTimingHeader();
std::string FormatTiming(const v1::GemmTiming& t);
// `time --layers`: one row per layer, with the analytic sum of its parts beside it.
std::string FormatLayerTimings(const std::vector<v1::LayerTiming>& layers);
std::string FormatRecommendation(const v1::RecommendResponse& r);

// The shape fields `to` changes from `from`, in the table's words ("h 4096 → 4352, expert width
// f 8192 → 8704, shared expert width 8192 → 8704, L 48 → 47"); empty when none.
std::string ShapeChanges(const v1::ModelSpec& from, const v1::ModelSpec& to);
// KEEP, CHANGE, NO CANDIDATES (UNKNOWN for an old server's unset verdict).
absl::string_view VerdictName(v1::Verdict v);
// A sweep's points as a table; `dimension` names the varied one ("hidden").
std::string FormatSweep(const v1::SweepResponse& r, absl::string_view dimension);

// One line for a failed call: "INVALID_ARGUMENT: model.hidden_size: must be in [1, 262144]; got 0"
std::string FormatError(const absl::Status& status);

// "PREDICTED", "MEASURED", "CACHED" ("?" for an unset source).
std::string SourceName(v1::Source s);

// "1.23 ms", "45.6 us", "2.00 s"
std::string HumanSeconds(double s);
// "MEASURED", "CACHED", "PREDICTED".
std::string SourceName(v1::Source s);
// After a fresh result's source: where it was not kept, " (spooled)" or " (not stored)" ("" when
// stored, or not fresh).
absl::string_view StorageNote(v1::StorageFate f);
// "6.74B", "124.4M"
std::string HumanCount(double n);

}  // namespace wavecrest

#endif  // WAVECREST_CLIENT_FORMAT_H_
