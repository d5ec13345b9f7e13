// The HTTP/JSON gateway (--http_listen): the Advisor API as JSON over HTTP for browsers and
// scripts, and the team dashboard's files.
//
// Every API call goes through the server's own gRPC service over an in-process channel, so HTTP
// callers get exactly the gRPC validation, limits, authentication (the Authorization header is
// passed on), metrics and errors. The caller's address travels as the x-wavecrest-http-peer
// metadata, which the service trusts only on in-process calls (server/auth.h PeerOf).
//
//   POST /v1/analyze          AnalyzeRequest -> AnalyzeResponse
//   POST /v1/recommend        RecommendRequest -> newline-delimited RecommendResponse messages
//   POST /v1/sweep            SweepRequest -> newline-delimited SweepResponse messages
//   POST /v1/time-gemms       TimeGemmsRequest -> newline-delimited TimeGemmsResponse messages
//   POST /v1/time-layers      TimeLayersRequest -> newline-delimited TimeLayersResponse messages
//   GET  /v1/devices          ListDevicesResponse
//   GET  /v1/health           {"overall": "SERVING", "advisor": ..., "measure": ...}
//   GET  /v1/models           the shipped example models (--http_models_dir), as ModelSpec JSON
//   POST /v1/parse-model      a wavecrest spec or a Hugging Face config.json -> ModelSpec JSON
//   GET  /...                 the dashboard (--http_static_dir)
//
// JSON is the protobuf JSON mapping (field names as in the .proto files; unknown fields are an
// error). An error is {"error": {"code": "INVALID_ARGUMENT", "message": ..., "field_violations":
// [{"field", "description"}], "retry_after_s"}} with the HTTP status gRPC-gateway uses (400, 401,
// 403, 404, 429, 499, 500, 501, 503, 504). A stream that fails after its first message ends with
// one such error line.
#ifndef WAVECREST_SERVER_HTTP_GATEWAY_H_
#define WAVECREST_SERVER_HTTP_GATEWAY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "server/metrics.h"

struct mg_context;
struct mg_connection;

namespace wavecrest {

// Browser safety and slow clients (SECURITY.md):
// - POST bodies must be Content-Type application/json (415 otherwise): a cross-site form or a
//   text/plain fetch cannot reach the API without a CORS preflight.
// - A request with an Origin header must come from this origin (scheme://Host) or one of
//   allowed_origins (403 otherwise); only those get Access-Control-Allow-Origin, never "*".
// - Host must be one of allowed_hosts (421 otherwise), which stops DNS rebinding; the default
//   is localhost, 127.0.0.1, ::1 and the listen address's host (any Host when that is a wildcard).
// - civetweb serves no file itself: the gateway's own handler serves regular files under
//   static_dir with a known extension, never a dotfile, a directory listing or a path through a
//   symlink, and runs nothing (civetweb's CGI, SSI and Lua never see a request).
// - request_timeout_ms bounds each read and write of a connection; `threads` connections are
//   served at once (civetweb 1.15 runs one thread per connection and has no per-address cap).
struct HttpGatewayOptions {
  std::string listen;      // "127.0.0.1:8080"; port 0 picks a free one
  std::string static_dir;  // the dashboard's files; empty = no dashboard
  std::string models_dir;  // example model specs for /v1/models; empty = none
  int threads = 128;       // connections served at once (streams hold one each)
  int request_timeout_ms = 10000;
  int64_t max_body_bytes = int64_t{4} << 20;
  std::vector<std::string> allowed_origins;  // "https://dash.example.com"; same-origin always
  std::vector<std::string> allowed_hosts;    // empty = the default above
};

// The browser-safety checks above, as pure functions (tested and fuzzed without a socket).
struct HttpHeaders {
  std::string method, path, host, origin, content_type;
  bool has_body = false;
  // How many times framing headers were sent: a request says its length and its host once
  // (two Content-Lengths are how requests are smuggled past a proxy that reads the other one).
  int content_length_count = 0;
  int host_count = 0;
};
struct HttpPolicy {
  std::vector<std::string> allowed_origins;
  std::vector<std::string> allowed_hosts;  // resolved: never empty unless any host is allowed
};
// The API's JSON decoding as Handle runs it, for tests and the fuzz target: the request message of
// `path`'s route decoded from `body` (NOT_FOUND for another path), and the error body a status
// is answered with.
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> DecodeApiRequest(
    absl::string_view path, absl::string_view body);
std::string ErrorBody(const absl::Status& status);

// The Host names allowed by default for a listen address ("127.0.0.1:8080" -> localhost,
// 127.0.0.1, ::1, and its host; a wildcard listen address -> empty = any).
class HttpGateway {
 public:
  // Starts serving; `channel` reaches the Advisor service (in-process).
  static absl::StatusOr<std::unique_ptr<HttpGateway>> Start(const HttpGatewayOptions& options,
                                                            std::shared_ptr<grpc::Channel> channel,
                                                            Metrics* metrics);
  ~HttpGateway();  // stops serving (waits for requests in progress)
  HttpGateway(const HttpGateway&) = delete;
  HttpGateway& operator=(const HttpGateway&) = delete;

  int port() const { return port_; }

 private:
  HttpGateway(const HttpGatewayOptions& options, std::shared_ptr<grpc::Channel> channel,
              Metrics* metrics);
  static int Dispatch(mg_connection* conn, void* self);
  int Handle(mg_connection* conn);
  int ServeStatic(mg_connection* conn, const std::string& method, const std::string& path);

  HttpGatewayOptions options_;
  HttpPolicy policy_;
  std::shared_ptr<grpc::Channel> channel_;
  Metrics* metrics_;
  mg_context* ctx_ = nullptr;
  int port_ = 0;
};

// The HTTP status gRPC-gateway maps a status code to.
int HttpStatusFor(absl::StatusCode code);

std::vector<std::string> DefaultAllowedHosts(const std::string& listen);
// OK, or the status to answer with: PERMISSION_DENIED (Origin), INVALID_ARGUMENT (Content-Type,
// with the field), FAILED_PRECONDITION (Host). `cors_origin` is set to the Origin to echo in
// Access-Control-Allow-Origin when the request is an allowed cross-origin one.
absl::Status CheckBrowserPolicy(const HttpHeaders& h, const HttpPolicy& p,
                                std::string* cors_origin);
// The file under `root` that `path` names, if it may be served: a regular file with a known
// extension, no path segment starting with '.', no symlink on the way. Sets `mime`.
absl::StatusOr<std::string> StaticFileFor(const std::string& root, const std::string& path,
                                          std::string* mime);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_HTTP_GATEWAY_H_
