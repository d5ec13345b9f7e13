// The HTTP/JSON gateway (--http_listen): the Advisor API as JSON over HTTP for browsers and
// scripts (server/http_routes.h: each /v1/ route an Advisor RPC over the in-process channel), and
// the team dashboard's files (GET /...: --http_static_dir). The parts, each in its file:
//   http_policy.h   the rules on headers and paths (browser safety, framing, static files)
//   http_body.h     reading bodies (slots, per-client shares, a minimum rate, a budget)
//   http_routes.h   the route table and calling the service
//   http_reply.h    status lines, the JSON error body, the protobuf JSON mapping
// This file is civetweb's lifecycle and the order a request goes through them.
//
// With --auth_tokens_file the dashboard's files need a token too: "Authorization: Bearer
// <token>", or HTTP Basic with the token as the password (what a browser asks for; the gateway
// passes it on as Bearer).
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
#include "server/http_policy.h"
#include "server/http_routes.h"
#include "server/metrics.h"

struct mg_context;
struct mg_connection;

namespace wavecrest {

// Browser safety (server/http_policy.h) and slow clients (SECURITY.md):
// - civetweb serves no file itself: the gateway's own handler serves regular files under
//   static_dir (StaticFileFor's rules), and runs nothing (civetweb's CGI, SSI and Lua never see a
//   request).
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
  const Auth* auth = nullptr;  // tokens: the API's (checked on the headers) and the dashboard's
};

// The body limits the options give (server/http_body.h): body slots default to a quarter of the
// threads (at least 2), a client's share to a quarter of those (at least 1); timeouts are at
// least 100 ms.
BodyLimits BodyLimitsOf(const HttpGatewayOptions& o);

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
  // Starts civetweb on options_.listen with this gateway as its one handler; sets port_.
  absl::Status Listen();
  static int Dispatch(mg_connection* conn, void* self);
  int Handle(mg_connection* conn);
  int ServeStatic(mg_connection* conn, const std::string& method, const std::string& path,
                  const std::string& authorization, const std::string& peer);
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

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_HTTP_GATEWAY_H_
