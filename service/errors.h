// Errors as values, and their one conversion to gRPC.
//
// Field violations ride on an absl::Status as a google.rpc.BadRequest payload, and a retry delay as
// a google.rpc.RetryInfo payload, so that core-facing code returns plain absl::Status and the
// server turns it into a rich grpc::Status in exactly one place (ToGrpcStatus).
#ifndef WAVECREST_SERVICE_ERRORS_H_
#define WAVECREST_SERVICE_ERRORS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/model_spec.h"
#include "grpcpp/support/status.h"

namespace wavecrest {

inline constexpr absl::string_view kBadRequestUrl = "type.googleapis.com/google.rpc.BadRequest";
inline constexpr absl::string_view kRetryInfoUrl = "type.googleapis.com/google.rpc.RetryInfo";
inline constexpr absl::string_view kErrorInfoUrl = "type.googleapis.com/google.rpc.ErrorInfo";

// Bounds that keep every error small enough for gRPC's trailers (8 KiB by default): at most
// kMaxViolations violations (then one saying how many more), each description truncated.
inline constexpr size_t kMaxViolations = 20;
inline constexpr size_t kMaxFieldChars = 100;
inline constexpr size_t kMaxDescriptionChars = 200;

// `text`, cut to `max_chars` with a note of what was cut: for echoing input in errors.
std::string Truncated(absl::string_view text, size_t max_chars);

// INVALID_ARGUMENT whose message lists the violations (at most kMaxViolations) and whose payload
// carries them as a BadRequest. Each field name is prefixed with `prefix` (e.g. "model.").
absl::Status InvalidArgumentWithViolations(const std::vector<FieldViolation>& violations,
                                           absl::string_view prefix = "");

// One violation.
absl::Status FieldError(absl::string_view field, absl::string_view description);

// Attaches a RetryInfo payload (and an ErrorInfo reason) to `status`.
absl::Status WithRetryDelay(absl::Status status, absl::Duration delay, absl::string_view reason);

// The field violations carried by `status` (empty if none).
std::vector<FieldViolation> ViolationsOf(const absl::Status& status);

// The retry delay carried by `status`, or zero.
absl::Duration RetryDelayOf(const absl::Status& status);

// The one place an absl::Status becomes a grpc::Status: same code and message, payloads as
// google.rpc.Status details in the grpc-status-details-bin trailer.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The inverse, for clients: details are turned back into payloads.
absl::Status FromGrpcStatus(const grpc::Status& status);

// A gRPC code's name as metrics and logs label it ("DEADLINE_EXCEEDED"): Abseil's name of the same
// code (absl::StatusCodeToString), "UNKNOWN" for a number neither names.
std::string StatusCodeName(grpc::StatusCode code);

}  // namespace wavecrest

#endif  // WAVECREST_SERVICE_ERRORS_H_
