// The HTTP API's routes, in one table (http_routes.cc): each /v1/ route is an Advisor RPC over
// the server's in-process gRPC channel, so HTTP callers get exactly the gRPC validation, limits,
// authentication (the Authorization header is passed on), metrics and errors. The caller's
// address travels as the x-wavecrest-http-peer metadata, which the service trusts only on
// in-process calls (server/auth.h PeerOf).
//
// Requests are the body in the protobuf JSON mapping (parse-model: the body is the text to
// parse); replies are the response message (parse-model: its model; export-model: the file's
// text itself; streams: newline-delimited messages). GET /v1/health answers the gRPC health
// service's view: {"overall": "SERVING", "advisor": ..., "measure": ...}.
#ifndef WAVECREST_SERVER_HTTP_ROUTES_H_
#define WAVECREST_SERVER_HTTP_ROUTES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "server/http_policy.h"

struct mg_connection;

namespace wavecrest {

// The longest X-Wavecrest-Deadline-S a caller may ask for.
inline constexpr double kMaxDeadlineS = 3600;

// One request as the gateway read it.
struct HttpRequest {
  std::string method;
  std::string path;
  std::string body;
  std::string authorization;  // as the service checks it (BearerAuthorization)
  std::string peer;           // "ipv4:10.0.0.7"
  double deadline_s = 0;      // X-Wavecrest-Deadline-S; 0 = the route's default
  HttpHeaders headers;
};

// The API's routes: each an Advisor RPC (docs/ARCHITECTURE.md's method table lists them; a test
// holds the two together). GET /v1/health, the gRPC health service, is not among them.
struct HttpRoute {
  std::string method, path, rpc;
};
std::vector<HttpRoute> HttpApiRoutes();

// The routes in a line, "POST /v1/analyze, ... and GET /v1/devices, ..., /v1/health": what the
// 404 of an unknown /v1/ path and the server's --help say.
std::string HttpRouteList();

// The label `path` is counted under in metrics: a route's path, "/v1/health", or "other" (a
// bounded set, whatever paths callers try).
std::string RouteLabel(absl::string_view path);

// The request message of `path`'s route decoded from `body`, as the route decodes it (after the
// JSON limits): NOT_FOUND for a path that is no route; the fuzz target and tests call it.
absl::StatusOr<std::unique_ptr<google::protobuf::Message>> DecodeApiRequest(absl::string_view path,
                                                                            absl::string_view body);

// Serves a /v1/ request through `channel`: its route (405 for another method, 404 naming the
// routes for a path that is none). Returns the HTTP status sent.
int ServeApiRequest(mg_connection* c, const HttpRequest& r,
                    const std::shared_ptr<grpc::Channel>& channel);

}  // namespace wavecrest

#endif  // WAVECREST_SERVER_HTTP_ROUTES_H_
