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

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/metrics.h"

struct mg_context;
struct mg_connection;

namespace wavecrest {

struct HttpGatewayOptions {
  std::string listen;      // "127.0.0.1:8080"; port 0 picks a free one
  std::string static_dir;  // the dashboard's files; empty = no dashboard
  std::string models_dir;  // example model specs for /v1/models; empty = none
  int threads = 16;        // concurrent HTTP requests (streams hold one each)
  int64_t max_body_bytes = int64_t{4} << 20;
};

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

  HttpGatewayOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  Metrics* metrics_;
  mg_context* ctx_ = nullptr;
  int port_ = 0;
};

// The HTTP status gRPC-gateway maps a status code to.
int HttpStatusFor(absl::StatusCode code);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_HTTP_GATEWAY_H_
