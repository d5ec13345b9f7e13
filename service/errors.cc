#include "service/errors.h"

#include <algorithm>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/duration.pb.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace wavecrest {

absl::Status InvalidArgumentWithViolations(const std::vector<FieldViolation>& violations,
                                           absl::string_view prefix) {
  std::vector<FieldViolation> prefixed;
  prefixed.reserve(std::min(violations.size(), kMaxViolations + 1));
  google::rpc::BadRequest bad;
  for (size_t i = 0; i < violations.size() && i < kMaxViolations; ++i) {
    const FieldViolation& v = violations[i];
    prefixed.push_back({absl::StrCat(prefix, Truncated(v.field, kMaxFieldChars)),
                        Truncated(v.description, kMaxDescriptionChars)});
    auto* fv = bad.add_field_violations();
    fv->set_field(prefixed.back().field);
    fv->set_description(prefixed.back().description);
  }
  if (violations.size() > kMaxViolations) {
    // One more entry says how many were left out, so that an error always fits in the trailers.
    prefixed.push_back({"(more)", absl::StrCat(violations.size() - kMaxViolations,
                                               " more violations not listed")});
    auto* fv = bad.add_field_violations();
    fv->set_field(prefixed.back().field);
    fv->set_description(prefixed.back().description);
  }
  absl::Status st = ViolationsToStatus(prefixed);
  if (st.ok()) return st;
  st.SetPayload(kBadRequestUrl, absl::Cord(bad.SerializeAsString()));
  return st;
}

std::string Truncated(absl::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  return absl::StrCat(text.substr(0, max_chars), "... (", text.size() - max_chars,
                      " more characters)");
}

absl::Status FieldError(absl::string_view field, absl::string_view description) {
  return InvalidArgumentWithViolations({{std::string(field), std::string(description)}});
}

absl::Status WithRetryDelay(absl::Status status, absl::Duration delay, absl::string_view reason) {
  google::rpc::RetryInfo retry;
  const int64_t ns = absl::ToInt64Nanoseconds(delay);
  retry.mutable_retry_delay()->set_seconds(ns / 1'000'000'000);
  retry.mutable_retry_delay()->set_nanos(static_cast<int32_t>(ns % 1'000'000'000));
  status.SetPayload(kRetryInfoUrl, absl::Cord(retry.SerializeAsString()));
  google::rpc::ErrorInfo info;
  info.set_reason(std::string(reason));
  info.set_domain("wavecrest.v1");
  status.SetPayload(kErrorInfoUrl, absl::Cord(info.SerializeAsString()));
  return status;
}

std::vector<FieldViolation> ViolationsOf(const absl::Status& status) {
  std::vector<FieldViolation> out;
  auto payload = status.GetPayload(kBadRequestUrl);
  if (!payload) return out;
  google::rpc::BadRequest bad;
  if (!bad.ParseFromString(std::string(*payload))) return out;
  for (const auto& fv : bad.field_violations()) out.push_back({fv.field(), fv.description()});
  return out;
}

absl::Duration RetryDelayOf(const absl::Status& status) {
  auto payload = status.GetPayload(kRetryInfoUrl);
  if (!payload) return absl::ZeroDuration();
  google::rpc::RetryInfo retry;
  if (!retry.ParseFromString(std::string(*payload))) return absl::ZeroDuration();
  return absl::Seconds(retry.retry_delay().seconds()) +
         absl::Nanoseconds(retry.retry_delay().nanos());
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(status.code());
  const std::string message(status.message());
  google::rpc::Status rich;
  rich.set_code(static_cast<int>(status.code()));
  rich.set_message(message);
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    google::protobuf::Any* any = rich.add_details();
    any->set_type_url(std::string(url));
    any->set_value(std::string(payload));
  });
  if (rich.details_size() == 0) return grpc::Status(code, message);
  return grpc::Status(code, message, rich.SerializeAsString());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  google::rpc::Status rich;
  if (!status.error_details().empty() && rich.ParseFromString(status.error_details())) {
    for (const auto& any : rich.details()) out.SetPayload(any.type_url(), absl::Cord(any.value()));
  }
  return out;
}

std::string StatusCodeName(grpc::StatusCode code) {
  const std::string name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  return name.empty() ? "UNKNOWN" : name;
}

}  // namespace wavecrest
