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
//   GET  /v1/models           ListModelsResponse: the example models (--http_models_dir)
//   POST /v1/parse-model      a wavecrest spec or a Hugging Face config.json (the body itself)
//                             -> ModelSpec JSON (ParseModel)
//   POST /v1/export-model     ExportModelRequest -> the file's text (ExportModel)
//   GET  /...                 the dashboard (--http_static_dir)
//
// Every /v1/ route is an Advisor RPC, so each is counted per method, admitted by the same token
// check and limited as gRPC calls are. With --auth_tokens_file the dashboard's files need a token
// too: "Authorization: Bearer <token>", or HTTP Basic with the token as the password (what a
// browser asks for; the gateway passes it on as Bearer).
//
// Limits before work: framing is checked on the headers (one Content-Length of digits only, not
// with Transfer-Encoding, one Host, and one is required; no space before a header's colon);
// an API call's token is checked on its headers, before any of its body is read (401); a body
// comes only with POST; it needs a slot (body_slots at once, per_client_body_slots of them from
// one address, large_body_slots of them for bodies over large_body_bytes or of unknown length;
// 503 with Retry-After otherwise), keeps up min_body_bytes_per_s and arrives whole within
// request_timeout_ms (408; server/http_body.h); a refused request's connection is closed at once,
// its body unread; JSON bodies are checked against core/json_limits.h before any parse.
//
// JSON is the protobuf JSON mapping (field names as in the .proto files; unknown fields are an
// error). An error is {"error": {"code": "INVALID_ARGUMENT", "message": ..., "field_violations":
// [{"field", "description"}], "retry_after_s"}} with the HTTP status gRPC-gateway uses (400, 401,
// 403, 404, 429, 499, 500, 501, 503, 504). A stream that fails after its first message ends with
// one such error line.
#ifndef WAVECREST_SERVER_HTTP_GATEWAY_H_
#define WAVECREST_SERVER_HTTP_GATEWAY_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "server/auth.h"
#include "server/http_body.h"
#include "server/metrics.h"

struct mg_context;
struct mg_connection;

namespace wavecrest {

struct HttpRequest;  // one request as the gateway read it (http_gateway.cc)

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
// - io_timeout_ms bounds the headers and each read and write (civetweb's request_timeout_ms);
//   request_timeout_ms the whole body; `threads` connections are served at once (civetweb 1.15
//   runs one thread per connection and has no per-address cap), at most body_slots of them read
//   a body, a bounded share of those from one address, each at a minimum rate, so slow senders
//   cannot hold every thread.
struct HttpGatewayOptions {
  std::string listen;      // "127.0.0.1:8080"; port 0 picks a free one
  std::string static_dir;  // the dashboard's files; empty = no dashboard
  std::string models_dir;  // example model specs for /v1/models; empty = none
  int threads = 128;       // connections served at once (streams hold one each)
  int request_timeout_ms = 10000;  // a whole body
  int io_timeout_ms = 2000;        // the headers, and each read or write
  int64_t max_body_bytes = int64_t{4} << 20;
  std::vector<std::string> allowed_origins;  // "https://dash.example.com"; same-origin always
  std::vector<std::string> allowed_hosts;    // empty = the default above
  int body_slots = 0;                        // bodies read at once; 0 = threads / 4 (at least 2)
  int large_body_slots = 8;                  // of them, bodies over large_body_bytes
  int per_client_body_slots = 0;             // of them, from one address; 0 = body slots / 4
  int64_t min_body_bytes_per_s = 16 << 10;   // after the first second (server/http_body.h)
  int64_t large_body_bytes = int64_t{64} << 10;
  const Auth* auth = nullptr;                // tokens for the dashboard's files (null: none)
};

// The browser-safety checks above, as pure functions (tested and fuzzed without a socket).
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
// The API's JSON decoding as Handle runs it, for tests and the fuzz target: the limits checked,
// then the request message of `path`'s route decoded from `body` (NOT_FOUND for another path),
// and the error body a status is answered with.
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
  int ServeStatic(mg_connection* conn, const std::string& method, const std::string& path,
                  const std::string& authorization, const std::string& peer);
  int ServeApi(mg_connection* conn, const HttpRequest& r);
  // The body slots and the rules bodies are read by (server/http_body.h).
  BodyLimits body_limits_;
  std::unique_ptr<BodySlots> body_slots_;

  HttpGatewayOptions options_;
  HttpPolicy policy_;
  std::shared_ptr<grpc::Channel> channel_;
  Metrics* metrics_;
  mg_context* ctx_ = nullptr;
  int port_ = 0;
};

// The API's routes: each an Advisor RPC (docs/ARCHITECTURE.md's method table lists them; a test
// holds the two together). GET /v1/health, the gRPC health service, is not among them.
struct HttpRoute {
  std::string method, path, rpc;
};
std::vector<HttpRoute> HttpApiRoutes();

// The HTTP status gRPC-gateway maps a status code to.
int HttpStatusFor(absl::StatusCode code);

std::vector<std::string> DefaultAllowedHosts(const std::string& listen);
// OK, or the status to answer with: PERMISSION_DENIED (Origin), INVALID_ARGUMENT (Content-Type,
// with the field), FAILED_PRECONDITION (Host). `cors_origin` is set to the Origin to echo in
// Access-Control-Allow-Origin when the request is an allowed cross-origin one.
absl::Status CheckBrowserPolicy(const HttpHeaders& h, const HttpPolicy& p,
                                std::string* cors_origin);
// OK, or INVALID_ARGUMENT naming the header: the framing rules above (RFC 9112 sections 3.2 and
// 6.3: a request whose length could be read two ways is refused, not guessed).
absl::Status CheckFraming(const HttpHeaders& h);
// An Authorization header as the gRPC metadata the service checks: "Bearer <token>" as sent, and
// "Basic base64(user:token)" (a browser's) as "Bearer <token>"; anything else unchanged.
std::string BearerAuthorization(absl::string_view header);
// The file under `root` that `path` names, if it may be served: a regular file with a known
// extension, no path segment starting with '.', no symlink on the way. Sets `mime`.
absl::StatusOr<std::string> StaticFileFor(const std::string& root, const std::string& path,
                                          std::string* mime);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_HTTP_GATEWAY_H_
