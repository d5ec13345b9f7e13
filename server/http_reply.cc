#include "server/http_reply.h"

#include <civetweb.h>

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "service/errors.h"
#include "service/text.h"

namespace wavecrest {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 421:
      return "Misdirected Request";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 429:
      return "Too Many Requests";
    case 499:
      return "Client Closed Request";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Internal Server Error";
  }
}

}  // namespace

thread_local std::string t_response_headers;

int HttpStatusFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

std::string ErrorBody(const absl::Status& st) {
  nlohmann::json e = {{"code", absl::StatusCodeToString(st.code())},
                      {"message", std::string(st.message())}};
  nlohmann::json v = nlohmann::json::array();
  for (const FieldViolation& f : ViolationsOf(st)) {
    v.push_back({{"field", f.field}, {"description", f.description}});
  }
  if (!v.empty()) e["field_violations"] = std::move(v);
  const absl::Duration retry = RetryDelayOf(st);
  if (retry > absl::ZeroDuration()) e["retry_after_s"] = absl::ToDoubleSeconds(retry);
  return JsonText(nlohmann::json{{"error", std::move(e)}});
}

void Reply(mg_connection* c, int status, absl::string_view content_type, absl::string_view body,
           absl::string_view extra_headers) {
  mg_printf(c,
            "HTTP/1.1 %d %s\r\nContent-Type: %.*s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n%s%.*s\r\n",
            status, Reason(status), static_cast<int>(content_type.size()), content_type.data(),
            body.size(), t_response_headers.c_str(), static_cast<int>(extra_headers.size()),
            extra_headers.data());
  mg_write(c, body.data(), body.size());
}

int SendError(mg_connection* c, const absl::Status& st) {
  const int status = HttpStatusFor(st.code());
  const absl::Duration retry = RetryDelayOf(st);
  const std::string extra =
      retry > absl::ZeroDuration()
          ? absl::StrCat("Retry-After: ",
                         static_cast<int64_t>(std::ceil(absl::ToDoubleSeconds(retry))), "\r\n")
          : "";
  Reply(c, status, "application/json", ErrorBody(st), extra);
  return status;
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

absl::Status FromJson(absl::string_view body, google::protobuf::Message* m) {
  if (absl::StripAsciiWhitespace(body).empty()) return absl::OkStatus();  // {} by default
  google::protobuf::util::JsonParseOptions o;
  o.ignore_unknown_fields = false;
  const auto st = google::protobuf::util::JsonStringToMessage(std::string(body), m, o);
  if (!st.ok()) {
    return FieldError("body",
                      absl::StrCat("not a ", m->GetDescriptor()->name(),
                                   " in the protobuf JSON mapping: ", std::string(st.message())));
  }
  return absl::OkStatus();
}

}  // namespace wavecrest
