#include "server/http_routes.h"

#include <civetweb.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/json_limits.h"
#include "core/status_macros.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "server/auth.h"
#include "server/http_reply.h"
#include "server/server.h"
#include "service/clock.h"
#include "service/errors.h"
#include "service/text.h"
#include "wavecrest/v1/advisor.grpc.pb.h"

namespace wavecrest {
namespace {

using Decoded = absl::StatusOr<std::unique_ptr<google::protobuf::Message>>;
using Stub = v1::Advisor::Stub;

constexpr double kDefaultUnaryDeadlineS = 60;
constexpr double kDefaultStreamDeadlineS = 600;

void Prepare(const HttpRequest& r, double default_deadline_s, grpc::ClientContext* ctx) {
  const double d = r.deadline_s > 0 ? r.deadline_s : default_deadline_s;
  ctx->set_deadline(absl::ToChronoTime(Clock::Real().Now() + absl::Seconds(d)));
  if (!r.authorization.empty()) ctx->AddMetadata("authorization", r.authorization);
  ctx->AddMetadata(std::string(kHttpPeerMetadata), r.peer);
}

// A request message from the body in the protobuf JSON mapping.
template <typename Request>
Decoded DecodeJson(absl::string_view body) {
  auto m = std::make_unique<Request>();
  RETURN_IF_ERROR(FromJson(body, m.get()));
  return std::unique_ptr<google::protobuf::Message>(std::move(m));
}

// parse-model's request: the body is the text to parse.
Decoded DecodeText(absl::string_view body) {
  auto m = std::make_unique<v1::ParseModelRequest>();
  m->set_text(std::string(body));
  return std::unique_ptr<google::protobuf::Message>(std::move(m));
}

template <typename Response>
std::string AsJson(const Response& a) {
  return ToJson(a);
}
std::string ModelJson(const v1::ParseModelResponse& a) { return ToJson(a.model()); }
std::string FileText(const v1::ExportModelResponse& a) { return a.text(); }

// A unary RPC; the reply is `Encode(response)`.
template <typename Request, typename Response,
          grpc::Status (Stub::*Method)(grpc::ClientContext*, const Request&, Response*),
          std::string (*Encode)(const Response&) = &AsJson<Response>>
int ServeUnary(mg_connection* c, const HttpRequest& r, const google::protobuf::Message& q,
               Stub& stub) {
  grpc::ClientContext ctx;
  Prepare(r, kDefaultUnaryDeadlineS, &ctx);
  Response a;
  const grpc::Status st = (stub.*Method)(&ctx, static_cast<const Request&>(q), &a);
  if (!st.ok()) return SendError(c, FromGrpcStatus(st));
  Reply(c, 200, "application/json", Encode(a));
  return 200;
}

// A server stream as newline-delimited JSON: one message a line, flushed as it comes. An error
// before the first message is an HTTP error; after it, a last line {"error": ...}.
template <typename Request, typename Response,
          std::unique_ptr<grpc::ClientReader<Response>> (Stub::*Method)(grpc::ClientContext*,
                                                                        const Request&)>
int ServeStream(mg_connection* c, const HttpRequest& r, const google::protobuf::Message& q,
                Stub& stub) {
  grpc::ClientContext ctx;
  Prepare(r, kDefaultStreamDeadlineS, &ctx);
  std::unique_ptr<grpc::ClientReader<Response>> reader =
      (stub.*Method)(&ctx, static_cast<const Request&>(q));
  Response msg;
  if (!reader->Read(&msg)) return SendError(c, FromGrpcStatus(reader->Finish()));
  mg_printf(c,
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
            "Transfer-Encoding: chunked\r\nCache-Control: no-store\r\n"
            "X-Content-Type-Options: nosniff\r\n%s\r\n",
            t_response_headers.c_str());
  bool gone = false;
  do {
    const std::string line = ToJson(msg) + "\n";
    if (mg_send_chunk(c, line.data(), static_cast<unsigned>(line.size())) < 0) {
      gone = true;  // the HTTP client left: stop the work
      ctx.TryCancel();
      break;
    }
  } while (reader->Read(&msg));
  const grpc::Status st = reader->Finish();
  if (!gone && !st.ok() && st.error_code() != grpc::StatusCode::CANCELLED) {
    const std::string line = ErrorBody(FromGrpcStatus(st)) + "\n";
    mg_send_chunk(c, line.data(), static_cast<unsigned>(line.size()));
  }
  if (!gone) mg_send_chunk(c, "", 0);
  return 200;
}

// One /v1/ route: its method, the Advisor RPC it is, how its body becomes the request, and how
// the RPC is called and answered.
struct ApiRoute {
  const char* path;
  const char* method;
  const char* rpc;
  Decoded (*decode)(absl::string_view body);
  int (*serve)(mg_connection*, const HttpRequest&, const google::protobuf::Message&, Stub&);
};

// The routes: the one list of them.
constexpr ApiRoute kApiRoutes[] = {
    {"/v1/analyze", "POST", "Analyze", &DecodeJson<v1::AnalyzeRequest>,
     &ServeUnary<v1::AnalyzeRequest, v1::AnalyzeResponse, &Stub::Analyze>},
    {"/v1/recommend", "POST", "Recommend", &DecodeJson<v1::RecommendRequest>,
     &ServeStream<v1::RecommendRequest, v1::RecommendResponse, &Stub::Recommend>},
    {"/v1/sweep", "POST", "Sweep", &DecodeJson<v1::SweepRequest>,
     &ServeStream<v1::SweepRequest, v1::SweepResponse, &Stub::Sweep>},
    {"/v1/time-gemms", "POST", "TimeGemms", &DecodeJson<v1::TimeGemmsRequest>,
     &ServeStream<v1::TimeGemmsRequest, v1::TimeGemmsResponse, &Stub::TimeGemms>},
    {"/v1/time-layers", "POST", "TimeLayers", &DecodeJson<v1::TimeLayersRequest>,
     &ServeStream<v1::TimeLayersRequest, v1::TimeLayersResponse, &Stub::TimeLayers>},
    {"/v1/parse-model", "POST", "ParseModel", &DecodeText,
     &ServeUnary<v1::ParseModelRequest, v1::ParseModelResponse, &Stub::ParseModel, &ModelJson>},
    {"/v1/export-model", "POST", "ExportModel", &DecodeJson<v1::ExportModelRequest>,
     &ServeUnary<v1::ExportModelRequest, v1::ExportModelResponse, &Stub::ExportModel, &FileText>},
    {"/v1/devices", "GET", "ListDevices", &DecodeJson<v1::ListDevicesRequest>,
     &ServeUnary<v1::ListDevicesRequest, v1::ListDevicesResponse, &Stub::ListDevices>},
    {"/v1/models", "GET", "ListModels", &DecodeJson<v1::ListModelsRequest>,
     &ServeUnary<v1::ListModelsRequest, v1::ListModelsResponse, &Stub::ListModels>},
};

constexpr char kHealthPath[] = "/v1/health";

const ApiRoute* RouteAt(absl::string_view path) {
  for (const ApiRoute& r : kApiRoutes) {
    if (path == r.path) return &r;
  }
  return nullptr;
}

// The body's limits, then the route's decoding.
Decoded Decode(const ApiRoute& route, absl::string_view body) {
  if (absl::Status st = CheckJsonLimits(body); !st.ok()) return FieldError("body", st.message());
  return route.decode(body);
}

int WrongMethod(mg_connection* c, const HttpRequest& r, const char* allowed) {
  Reply(
      c, 405, "application/json",
      ErrorBody(absl::InvalidArgumentError(absl::StrCat(r.method, " ", r.path, ": use ", allowed))),
      absl::StrCat("Allow: ", allowed, "\r\n"));
  return 405;
}

// GET /v1/health: the gRPC health service's answer for the server, the advisor and measuring.
int ServeHealth(mg_connection* c, const HttpRequest& r, grpc::health::v1::Health::Stub& health) {
  nlohmann::json out;
  for (auto [key, service] : {std::pair<const char*, const char*>{"overall", ""},
                              {"advisor", kAdvisorHealthName},
                              {"measure", kMeasureHealthName}}) {
    grpc::ClientContext ctx;
    Prepare(r, 5, &ctx);
    grpc::health::v1::HealthCheckRequest q;
    q.set_service(service);
    grpc::health::v1::HealthCheckResponse a;
    const grpc::Status st = health.Check(&ctx, q, &a);
    out[key] = st.ok() ? grpc::health::v1::HealthCheckResponse::ServingStatus_Name(a.status())
                       : StatusCodeName(st.error_code());
  }
  Reply(c, 200, "application/json", JsonText(out));
  return 200;
}

}  // namespace

std::vector<HttpRoute> HttpApiRoutes() {
  std::vector<HttpRoute> out;
  for (const ApiRoute& r : kApiRoutes) out.push_back({r.method, r.path, r.rpc});
  return out;
}

std::string HttpRouteList() {
  std::vector<std::string> post, get;
  for (const ApiRoute& r : kApiRoutes) {
    (std::string(r.method) == "POST" ? post : get).push_back(r.path);
  }
  get.push_back(kHealthPath);
  return absl::StrCat("POST ", absl::StrJoin(post, ", "), " and GET ", absl::StrJoin(get, ", "));
}

std::string RouteLabel(absl::string_view path) {
  if (const ApiRoute* r = RouteAt(path)) return r->path;
  return path == kHealthPath ? kHealthPath : "other";
}

Decoded DecodeApiRequest(absl::string_view path, absl::string_view body) {
  const ApiRoute* route = RouteAt(path);
  if (route == nullptr) {
    return absl::NotFoundError(absl::StrCat("no JSON route ", ToValidUtf8(path)));
  }
  return Decode(*route, body);
}

int ServeApiRequest(mg_connection* c, const HttpRequest& r,
                    const std::shared_ptr<grpc::Channel>& channel) {
  if (r.path == kHealthPath) {
    if (r.method != "GET") return WrongMethod(c, r, "GET");
    return ServeHealth(c, r, *grpc::health::v1::Health::NewStub(channel));
  }
  const ApiRoute* route = RouteAt(r.path);
  if (route == nullptr) {
    return SendError(c, absl::NotFoundError(
                            absl::StrCat("no route ", r.path, "; the API is ", HttpRouteList())));
  }
  if (r.method != route->method) return WrongMethod(c, r, route->method);
  Decoded request = Decode(*route, r.body);
  if (!request.ok()) return SendError(c, request.status());
  std::unique_ptr<Stub> stub = v1::Advisor::NewStub(channel);
  return route->serve(c, r, **request, *stub);
}

}  // namespace wavecrest
