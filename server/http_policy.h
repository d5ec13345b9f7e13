// The HTTP gateway's rules on a request's headers and paths, as pure functions (tested and fuzzed
// without a socket; server/http_gateway.h applies them):
// - POST bodies must be Content-Type application/json (415 otherwise): a cross-site form or a
//   text/plain fetch cannot reach the API without a CORS preflight.
// - A request with an Origin header must come from this origin (scheme://Host) or one of the
//   allowed origins (403 otherwise); only those get Access-Control-Allow-Origin, never "*".
// - Host must be one of the allowed hosts (421 otherwise), which stops DNS rebinding; the default
//   is localhost, 127.0.0.1, ::1 and the listen address's host (any Host when that is a wildcard).
// - Framing (RFC 9112 sections 3.2 and 6.3): one Content-Length of digits only, not with
//   Transfer-Encoding, one Host (required in HTTP/1.1), no space before a header's colon: a
//   request whose length could be read two ways is refused, not guessed.
// - Static files: regular files under the root with a known extension, never a dotfile, a
//   directory listing or a path through a symlink.
#ifndef WAVECREST_SERVER_HTTP_POLICY_H_
#define WAVECREST_SERVER_HTTP_POLICY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace wavecrest {

// What the rules read of a request: its line and framing headers.
struct HttpHeaders {
  std::string method, path, host, origin, content_type;
  bool has_body = false;
  // How many times framing headers were sent: a request says its length and its host once
  // (two Content-Lengths are how requests are smuggled past a proxy that reads the other one).
  int content_length_count = 0;
  int host_count = 0;
  std::string http_version;                  // "1.1", "1.0"
  std::vector<std::string> content_lengths;  // each Content-Length value as sent
  bool transfer_encoding = false;            // a Transfer-Encoding header was sent
  bool space_before_colon = false;           // a header name was followed by a space
};
struct HttpPolicy {
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_hosts;  // resolved: never empty unless any host is allowed
};

// The Host names allowed by default for a listen address ("127.0.0.1:8080" -> localhost,
// 127.0.0.1, ::1, and its host; a wildcard listen address -> empty = any).
std::vector<std::string> DefaultAllowedHosts(const std::string& listen);
// OK, or the status to answer with: PERMISSION_DENIED (Origin), INVALID_ARGUMENT (Content-Type,
// with the field), FAILED_PRECONDITION (Host). `cors_origin` is set to the Origin to echo in
// Access-Control-Allow-Origin when the request is an allowed cross-origin one.
absl::Status CheckBrowserPolicy(const HttpHeaders& h, const HttpPolicy& p,
                                std::string* cors_origin);
// OK, or INVALID_ARGUMENT naming the header: the framing rules above.
absl::Status CheckFraming(const HttpHeaders& h);
// An Authorization header as the gRPC metadata the service checks: "Bearer <token>" as sent, and
// "Basic base64(user:token)" (a browser's) as "Bearer <token>"; anything else unchanged.
std::string BearerAuthorization(absl::string_view header);
// The file under `root` that `path` names, if it may be served: a regular file with a known
// extension, no path segment starting with '.', no symlink on the way. Sets `mime`.
absl::StatusOr<std::string> StaticFileFor(const std::string& root, const std::string& path,
                                          std::string* mime);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_HTTP_POLICY_H_
