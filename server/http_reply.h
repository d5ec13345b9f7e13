// Replies of the HTTP gateway (server/http_gateway.h): status lines and their phrases, the JSON
// error body, and the protobuf JSON mapping both ways.
#ifndef WAVECREST_SERVER_HTTP_REPLY_H_
#define WAVECREST_SERVER_HTTP_REPLY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

struct mg_connection;

namespace wavecrest {

// Headers every reply of the request this thread serves carries (CORS for an allowed origin);
// civetweb serves one request per thread at a time.
extern thread_local std::string t_response_headers;

// The HTTP status gRPC-gateway maps a status code to.
int HttpStatusFor(absl::StatusCode code);
// {"error": {"code", "message", "field_violations", "retry_after_s"}}, valid JSON whatever
// bytes the status holds.
std::string ErrorBody(const absl::Status& status);
// A whole reply: status line, headers (`extra_headers` ends each with CRLF), `body`.
void Reply(mg_connection* c, int status, absl::string_view content_type, absl::string_view body,
           absl::string_view extra_headers = "");
// `st` as its HTTP status and error body (Retry-After from its retry delay); returns the status.
int SendError(mg_connection* c, const absl::Status& st);

// A message in the protobuf JSON mapping (field names as in the .proto files).
std::string ToJson(const google::protobuf::Message& m);
// `body` into `m` (an empty body is the default message); INVALID_ARGUMENT naming the body.
absl::Status FromJson(absl::string_view body, google::protobuf::Message* m);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_HTTP_REPLY_H_
