#include "server/http_gateway.h"

#include <civetweb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/health_check_service_interface.h"
#include "nlohmann/json.hpp"
#include "server/auth.h"
#include "server/http_body.h"
#include "server/server.h"
#include "service/errors.h"
#include "core/json_limits.h"
#include "service/log.h"
#include "service/spec_io.h"
#include "service/text.h"
#include "wavecrest/v1/advisor.grpc.pb.h"

namespace wavecrest {
namespace {

constexpr double kDefaultUnaryDeadlineS = 60;
constexpr double kDefaultStreamDeadlineS = 600;
constexpr double kMaxDeadlineS = 3600;

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

std::string ErrorJson(const absl::Status& st) {
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

// Headers every reply of the request this thread serves carries (CORS for an allowed origin).
thread_local std::string t_response_headers;

void Reply(mg_connection* c, int status, absl::string_view content_type, absl::string_view body,
          absl::string_view extra_headers = "") {
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
  Reply(c, status, "application/json", ErrorJson(st), extra);
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

}  // namespace

// What the gateway needs of one HTTP request.
struct HttpRequest {
  std::string method;
  std::string path;
  std::string body;
  std::string authorization;  // as the service checks it (BearerAuthorization)
  std::string peer;           // "ipv4:10.0.0.7"
  double deadline_s = 0;
  HttpHeaders headers;
};

namespace {

// The request line and headers as HttpHeaders (before the body is read).
HttpHeaders HeadersOf(mg_connection* c) {
  const mg_request_info* ri = mg_get_request_info(c);
  HttpHeaders h;
  h.method = ri->request_method ? ri->request_method : "";
  h.path = ri->local_uri ? ri->local_uri : "";
  h.http_version = ri->http_version ? ri->http_version : "";
  for (int i = 0; i < ri->num_headers; ++i) {
    const char* name = ri->http_headers[i].name;
    const char* value = ri->http_headers[i].value;
    if (name == nullptr) continue;
    // civetweb 1.15 accepts "Name : value" and overwrites the spaces before the colon with NULs
    // in its header buffer: a NUL right after the name's own terminator, before the value, is
    // one of them (the colon itself became the terminator otherwise).
    const char* end = name + std::strlen(name);
    if (value != nullptr && end + 1 < value && end[1] == '\0') h.space_before_colon = true;
    if (absl::EqualsIgnoreCase(name, "Content-Length")) {
      ++h.content_length_count;
      h.content_lengths.push_back(value ? value : "");
    }
    if (absl::EqualsIgnoreCase(name, "Host")) {
      ++h.host_count;
      h.host = value ? value : "";
    }
    if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) h.transfer_encoding = true;
    if (absl::EqualsIgnoreCase(name, "Origin")) h.origin = value ? value : "";
    if (absl::EqualsIgnoreCase(name, "Content-Type")) h.content_type = value ? value : "";
  }
  return h;
}

// A request that failed before it reached a route: the status to answer and, where HTTP has a
// better one than gRPC-gateway's mapping, that status (401, 408, 413, 503).
struct ReadRefusal {
  absl::Status status;
  int http_status = 0;
};

constexpr char kTooBusy[] =
    "too many requests are sending bodies now (from this client, or from all); retry in a second";

absl::StatusOr<HttpRequest> ReadRequest(mg_connection* c, const HttpGatewayOptions& o,
                                        const BodyLimits& limits, BodySlots& slots,
                                        ReadRefusal* refusal) {
  const mg_request_info* ri = mg_get_request_info(c);
  HttpRequest r;
  r.headers = HeadersOf(c);
  r.method = r.headers.method;
  r.path = r.headers.path;
  const std::string addr = ri->remote_addr;
  r.peer = absl::StrContains(addr, ':') ? absl::StrCat("ipv6:[", addr, "]") : "ipv4:" + addr;
  auto refuse = [&](absl::Status st, int http = 0) -> absl::Status {
    *refusal = {st, http};
    return st;
  };
  if (absl::Status st = CheckFraming(r.headers); !st.ok()) return refuse(st, 400);
  if (const char* a = mg_get_header(c, "Authorization")) {
    // Forwarded as gRPC metadata, whose values must be printable ASCII: gRPC C++ asserts (ends
    // the process) on any other byte rather than failing the call.
    for (const char* p = a; *p; ++p) {
      const unsigned char ch = static_cast<unsigned char>(*p);
      if (ch < 0x20 || ch > 0x7E) {
        return refuse(FieldError("Authorization", "must be printable ASCII: \"Bearer <token>\""));
      }
    }
    r.authorization = BearerAuthorization(a);
  }
  if (const char* d = mg_get_header(c, "X-Wavecrest-Deadline-S")) {
    if (!absl::SimpleAtod(d, &r.deadline_s) ||
        !(r.deadline_s > 0 && r.deadline_s <= kMaxDeadlineS)) {
      return refuse(FieldError("X-Wavecrest-Deadline-S",
                               absl::StrCat("\"", ForTerminal(d), "\": seconds in (0, ",
                                            kMaxDeadlineS, "]")));
    }
  }
  // Who may send a body is known from the headers: an API call without a valid token is refused
  // before a byte of its body is read (GET /v1/health stays open, as the gRPC health service).
  if (o.auth != nullptr && absl::StartsWith(r.path, "/v1/") && r.path != "/v1/health") {
    const absl::string_view a(r.authorization);
    if (absl::Status st = o.auth->CheckAuthorization(r.authorization.empty() ? nullptr : &a,
                                                     r.peer, Role::kClient);
        !st.ok()) {
      return refuse(st, HttpStatusFor(st.code()));
    }
  }
  const int64_t declared = ri->content_length;  // -1: none (or chunked)
  if (declared > o.max_body_bytes) {
    return refuse(absl::InvalidArgumentError(
                      absl::StrCat("the body has ", declared, " bytes; at most ", o.max_body_bytes)),
                  413);
  }
  if (declared <= 0 && !r.headers.transfer_encoding) return r;
  if (r.method != "POST") {
    return refuse(FieldError("body", absl::StrCat(r.method, " takes no body; send it with POST")));
  }
  std::optional<BodySlots::Slot> slot =
      slots.Take(r.peer, declared < 0 || declared > limits.large_body_bytes);
  if (!slot) return refuse(absl::UnavailableError(kTooBusy), 503);
  // A client that waits to be asked for its body (curl does for bodies over 1 MB) is asked now,
  // once it may send it; a refusal above went out instead, and the body never came.
  if (const char* expect = mg_get_header(c, "Expect")) {
    if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(expect), "100-continue")) {
      return refuse(FieldError("Expect", absl::StrCat("\"", ForTerminal(expect),
                                                      "\": only 100-continue is known")),
                    417);
    }
    mg_printf(c, "HTTP/1.1 100 Continue\r\n\r\n");
  }
  int http_status = 0;
  if (absl::Status st = ReadBody([c](char* buf, size_t n) { return mg_read(c, buf, n); }, limits,
                                 declared, Clock::Real(), &r.body, &http_status);
      !st.ok()) {
    return refuse(st, http_status);
  }
  return r;
}

// The path and the body must be UTF-8 (JSON text is, RFC 8259 section 8.1): a 400 that says
// where the first bad byte is, rather than a parser's guess at what was meant.
absl::Status CheckUtf8(const HttpRequest& r) {
  if (size_t at = FirstInvalidUtf8(r.path); at != absl::string_view::npos) {
    return FieldError("path", absl::StrCat("not UTF-8 (byte ", at, " after percent-decoding)"));
  }
  if (size_t at = FirstInvalidUtf8(r.body); at != absl::string_view::npos) {
    return FieldError("body", absl::StrCat("not UTF-8 at byte ", at,
                                           ": JSON text must be UTF-8 (RFC 8259 section 8.1)"));
  }
  return absl::OkStatus();
}

void Prepare(const HttpRequest& r, double default_deadline_s, grpc::ClientContext* ctx) {
  const double d = r.deadline_s > 0 ? r.deadline_s : default_deadline_s;
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(d)));
  if (!r.authorization.empty()) ctx->AddMetadata("authorization", r.authorization);
  ctx->AddMetadata(std::string(kHttpPeerMetadata), r.peer);
}

// One unary RPC: `call(ctx, response)`, and the reply `encode(response)` as JSON.
template <typename Response, typename CallFn, typename Encode>
int Call(mg_connection* c, const HttpRequest& r, const CallFn& call, const Encode& encode) {
  grpc::ClientContext ctx;
  Prepare(r, kDefaultUnaryDeadlineS, &ctx);
  Response resp;
  const grpc::Status st = call(&ctx, &resp);
  if (!st.ok()) return SendError(c, FromGrpcStatus(st));
  Reply(c, 200, "application/json", encode(resp));
  return 200;
}

// A unary RPC whose request is the body in the protobuf JSON mapping and whose reply is the
// response message.
template <typename Request, typename Response, typename CallFn>
int Unary(mg_connection* c, const HttpRequest& r, const CallFn& call) {
  Request req;
  if (absl::Status st = FromJson(r.body, &req); !st.ok()) return SendError(c, st);
  return Call<Response>(
      c, r, [&](grpc::ClientContext* ctx, Response* a) { return call(ctx, req, a); },
      [](const Response& a) { return ToJson(a); });
}

int WrongMethod(mg_connection* c, const HttpRequest& r, const char* allowed) {
  Reply(c, 405, "application/json",
       ErrorJson(absl::InvalidArgumentError(absl::StrCat(r.method, " ", r.path, ": use ", allowed))),
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
                       : absl::StatusCodeToString(FromGrpcStatus(st).code());
  }
  Reply(c, 200, "application/json", JsonText(out));
  return 200;
}

// A server stream as newline-delimited JSON: one message a line, flushed as it comes. An error
// before the first message is an HTTP error; after it, a last line {"error": ...}.
template <typename Request, typename Response, typename Start>
int Stream(mg_connection* c, const HttpRequest& r, const Start& start) {
  Request req;
  if (absl::Status st = FromJson(r.body, &req); !st.ok()) return SendError(c, st);
  grpc::ClientContext ctx;
  Prepare(r, kDefaultStreamDeadlineS, &ctx);
  auto reader = start(&ctx, req);
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
    const std::string line = ErrorJson(FromGrpcStatus(st)) + "\n";
    mg_send_chunk(c, line.data(), static_cast<unsigned>(line.size()));
  }
  if (!gone) mg_send_chunk(c, "", 0);
  return 200;
}

}  // namespace

namespace {

// "host:port", "[v6]:port", "host" -> the host, lowercase, without brackets.
std::string HostOnly(absl::string_view hostport) {
  std::string h(absl::AsciiStrToLower(absl::StripAsciiWhitespace(hostport)));
  if (!h.empty() && h[0] == '[') {
    const size_t end = h.find(']');
    return end == std::string::npos ? h : h.substr(1, end - 1);
  }
  if (std::count(h.begin(), h.end(), ':') == 1) h = h.substr(0, h.find(':'));
  return h;
}

bool ListIncludes(const std::vector<std::string>& list, absl::string_view x) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& y) { return absl::EqualsIgnoreCase(x, y); });
}

constexpr std::pair<const char*, const char*> kMimeTypes[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".map", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
    {".woff2", "font/woff2"},
};

}  // namespace

std::vector<std::string> DefaultAllowedHosts(const std::string& listen) {
  const std::string host = HostOnly(listen);
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "*") return {};
  std::vector<std::string> out = {"localhost", "127.0.0.1", "::1"};
  if (!ListIncludes(out, host)) out.push_back(host);
  return out;
}

absl::Status CheckBrowserPolicy(const HttpHeaders& h, const HttpPolicy& p,
                                std::string* cors_origin) {
  cors_origin->clear();
  if (h.content_length_count > 1) {
    return FieldError("Content-Length", absl::StrCat("sent ", h.content_length_count,
                                                     " times; a request has one length"));
  }
  if (h.host_count > 1) {
    return FieldError("Host", absl::StrCat("sent ", h.host_count, " times; a request has one"));
  }
  if (!h.host.empty() && !p.allowed_hosts.empty() &&
      !ListIncludes(p.allowed_hosts, HostOnly(h.host))) {
    return FieldError("Host", absl::StrCat("\"", ForTerminal(h.host),
                                           "\" is not a name this server answers to (allowed: ",
                                           absl::StrJoin(p.allowed_hosts, ", "),
                                           "; add one with --http_allowed_hosts)"));
  }
  if (!h.origin.empty()) {
    const bool same = !h.host.empty() && (absl::EqualsIgnoreCase(h.origin, "http://" + h.host) ||
                                          absl::EqualsIgnoreCase(h.origin, "https://" + h.host));
    if (!same) {
      if (!ListIncludes(p.allowed_origins, h.origin)) {
        return absl::PermissionDeniedError(
            absl::StrCat("cross-origin request from ", ForTerminal(h.origin),
                         " refused; allow an origin with --http_allowed_origins"));
      }
      *cors_origin = h.origin;
    }
  }
  if (h.method == "POST" && (h.has_body || !h.content_type.empty())) {
    const std::string type = absl::AsciiStrToLower(
        absl::StripAsciiWhitespace(absl::string_view(h.content_type).substr(
            0, std::min(h.content_type.find(';'), h.content_type.size()))));
    if (type != "application/json") {
      return FieldError("Content-Type",
                        absl::StrCat("\"", ForTerminal(h.content_type),
                                     "\": POST bodies must be application/json"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFraming(const HttpHeaders& h) {
  if (h.content_length_count > 1) {
    return FieldError("Content-Length", absl::StrCat("sent ", h.content_length_count,
                                                     " times; a request has one length"));
  }
  for (const std::string& v : h.content_lengths) {
    // Digits only (RFC 9112 section 6.3): "+5", "5, 5", " 5" and "0x5" each read two ways.
    if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), absl::ascii_isdigit)) {
      return FieldError("Content-Length", absl::StrCat("\"", ForTerminal(v),
                                                       "\": a length is decimal digits only"));
    }
  }
  if (h.transfer_encoding && h.content_length_count > 0) {
    return FieldError("Transfer-Encoding",
                      "sent with Content-Length; a request has one way to say its length");
  }
  if (h.host_count > 1) {
    return FieldError("Host", absl::StrCat("sent ", h.host_count, " times; a request has one"));
  }
  if (h.host_count == 0 && h.http_version == "1.1") {
    return FieldError("Host", "missing; an HTTP/1.1 request names its host");
  }
  if (h.space_before_colon) {
    return FieldError("headers", "a header name is followed by a space before its colon");
  }
  return absl::OkStatus();
}

std::string BearerAuthorization(absl::string_view header) {
  absl::string_view v = absl::StripAsciiWhitespace(header);
  if (!absl::ConsumePrefix(&v, "Basic ")) return std::string(header);
  std::string decoded;
  if (!absl::Base64Unescape(absl::StripAsciiWhitespace(v), &decoded)) return std::string(header);
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return std::string(header);
  std::string out = absl::StrCat("Bearer ", decoded.substr(colon + 1));
  // The token goes on as gRPC metadata: printable ASCII only (ReadRequest's rule).
  for (unsigned char ch : out) {
    if (ch < 0x20 || ch > 0x7E) return std::string(header);
  }
  return out;
}

absl::StatusOr<std::string> StaticFileFor(const std::string& root, const std::string& path,
                                          std::string* mime) {
  std::string rel = path == "/" || path.empty() ? "/index.html" : path;
  if (rel.find('\0') != std::string::npos || rel[0] != '/') {
    return absl::NotFoundError("no such file");
  }
  std::filesystem::path file(root);
  for (absl::string_view seg : absl::StrSplit(absl::string_view(rel).substr(1), '/')) {
    if (seg.empty() || seg[0] == '.' || absl::StrContains(seg, '\\')) {
      return absl::NotFoundError("no such file");  // dotfiles, "..", "//" and Windows separators
    }
    file /= std::string(seg);
    std::error_code ec;
    const auto st = std::filesystem::symlink_status(file, ec);
    if (ec || std::filesystem::is_symlink(st)) return absl::NotFoundError("no such file");
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(file, ec)) || ec) {
    return absl::NotFoundError("no such file");
  }
  const std::string ext = absl::AsciiStrToLower(file.extension().string());
  for (const auto& [e, m] : kMimeTypes) {
    if (ext == e) {
      *mime = m;
      return file.string();
    }
  }
  return absl::NotFoundError("no such file");
}

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

HttpGateway::HttpGateway(const HttpGatewayOptions& options, std::shared_ptr<grpc::Channel> channel,
                         Metrics* metrics)
    : options_(options), channel_(std::move(channel)), metrics_(metrics) {}

// Headers on every response, the dashboard's files included: no MIME sniffing, and a content
// security policy that lets the page load only its own scripts and call only this origin.
constexpr const char* kStaticHeaders =
    "X-Content-Type-Options: nosniff\r\n"
    "Content-Security-Policy: default-src 'self'; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'\r\n"
    "Referrer-Policy: no-referrer";

BodyLimits BodyLimitsOf(const HttpGatewayOptions& o) {
  BodyLimits l;
  l.slots = o.body_slots > 0 ? o.body_slots : std::max(2, o.threads / 4);
  l.large_slots = std::min(o.large_body_slots, l.slots);
  l.per_client_slots = o.per_client_body_slots > 0 ? o.per_client_body_slots
                                                   : std::max(1, l.slots / 4);
  l.large_body_bytes = o.large_body_bytes;
  l.max_body_bytes = o.max_body_bytes;
  l.budget = absl::Milliseconds(std::max(o.request_timeout_ms, 100));
  l.io_timeout = absl::Milliseconds(std::max(o.io_timeout_ms, 100));
  l.min_bytes_per_s = o.min_body_bytes_per_s;
  return l;
}

absl::StatusOr<std::unique_ptr<HttpGateway>> HttpGateway::Start(
    const HttpGatewayOptions& options, std::shared_ptr<grpc::Channel> channel, Metrics* metrics) {
  std::unique_ptr<HttpGateway> g(new HttpGateway(options, std::move(channel), metrics));
  if (!options.static_dir.empty() && !std::filesystem::is_directory(options.static_dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_static_dir ", options.static_dir, ": not a directory"));
  }
  g->policy_.allowed_origins = options.allowed_origins;
  g->policy_.allowed_hosts = options.allowed_hosts.empty() ? DefaultAllowedHosts(options.listen)
                                                           : options.allowed_hosts;
  const std::string threads = std::to_string(std::max(options.threads, 2));
  // civetweb's request_timeout_ms bounds the headers and each read and write; the body's own
  // budget (request_timeout_ms) and rate are the gateway's (server/http_body.h).
  const std::string timeout = std::to_string(std::max(options.io_timeout_ms, 100));
  g->body_limits_ = BodyLimitsOf(options);
  g->body_slots_ = std::make_unique<BodySlots>(g->body_limits_);
  // No document_root: civetweb serves nothing itself (no CGI, SSI, Lua or listings); every
  // request reaches Dispatch.
  std::vector<const char*> opts = {"listening_ports",
                                   options.listen.c_str(),
                                   "num_threads",
                                   threads.c_str(),
                                   "request_timeout_ms",
                                   timeout.c_str(),
                                   "enable_keep_alive",
                                   "no",
                                   "enable_directory_listing",
                                   "no",
                                   // civetweb answers CORS preflights itself with "*" unless this
                                   // is empty; the gateway answers them (allowed origins only).
                                   "access_control_allow_origin",
                                   "",
                                   nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = [](const mg_connection*, const char* message) {
    LogInfo("http", {{"message", message}});
    return 1;
  };
  // civetweb's own error replies (a request it could not parse) echo the request's version text
  // into the status line, CR and LF included; the gateway writes them itself, as JSON.
  callbacks.http_error = [](mg_connection* c, int status, const char* message) {
    absl::StatusCode code = absl::StatusCode::kInvalidArgument;
    if (status == 404) code = absl::StatusCode::kNotFound;
    if (status == 405) code = absl::StatusCode::kUnimplemented;
    if (status == 408) code = absl::StatusCode::kDeadlineExceeded;
    if (status == 413 || status == 431) code = absl::StatusCode::kResourceExhausted;
    if (status >= 500 && status != 505) code = absl::StatusCode::kInternal;
    const std::string body = ErrorJson(absl::Status(
        code, ToValidUtf8(message != nullptr && *message ? message : "malformed request")));
    mg_printf(c,
              "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
              "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
              "Connection: close\r\n\r\n",
              status, mg_get_response_code_text(c, status), body.size());
    mg_write(c, body.data(), body.size());
    return 0;  // handled
  };
  g->ctx_ = mg_start(&callbacks, nullptr, opts.data());
  if (g->ctx_ == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "--http_listen ", options.listen, ": cannot listen (is another process on that port?)"));
  }
  mg_set_request_handler(g->ctx_, "/", &HttpGateway::Dispatch, g.get());
  mg_server_port ports[4];
  const int n = mg_get_server_ports(g->ctx_, 4, ports);
  g->port_ = n > 0 ? ports[0].port : 0;
  return g;
}

HttpGateway::~HttpGateway() {
  if (ctx_) mg_stop(ctx_);
}

int HttpGateway::Dispatch(mg_connection* conn, void* self) {
  // No exception leaves a handler: civetweb is C, and one escaping its thread ends the process.
  // What was thrown is logged and the caller gets a 500 (if the reply has not begun, it is
  // whole; if it has, the connection closes mid-reply and the client sees a truncated body).
  auto* gateway = static_cast<HttpGateway*>(self);
  const char* what = "an exception that is not a std::exception";
  try {
    return gateway->Handle(conn);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  LogError("http", {{"message", "handler failed; answered 500"}, {"exception", ToValidUtf8(what)}});
  if (gateway->metrics_) gateway->metrics_->HttpRequest("other", 500);
  Reply(conn, 500, "application/json",
       ErrorJson(absl::InternalError("the gateway failed on this request; see the server log")));
  return 500;
}

namespace {

constexpr const char* kRoutes[] = {
    "/v1/analyze", "/v1/recommend", "/v1/sweep",       "/v1/time-gemms",   "/v1/time-layers",
    "/v1/devices", "/v1/health",    "/v1/models",      "/v1/parse-model", "/v1/export-model"};

// The route label for metrics: a bounded set, whatever paths callers try.
std::string RouteLabel(absl::string_view path) {
  for (const char* known : kRoutes) {
    if (path == known) return known;
  }
  return "other";
}

}  // namespace

int HttpGateway::Handle(mg_connection* c) {
  ReadRefusal refusal;
  absl::StatusOr<HttpRequest> read = ReadRequest(c, options_, body_limits_, *body_slots_, &refusal);
  const std::string route = read.ok() ? RouteLabel(read->path) : "other";
  auto done = [&](int status) {
    if (metrics_) metrics_->HttpRequest(route, status);
    return status;  // civetweb: a non-zero return means "handled"
  };
  if (!read.ok()) {
    // What is left of a refused body is not read: civetweb would otherwise read (and wait for)
    // all of it after the reply, holding the thread; the connection closes instead.
    mg_disable_connection_keep_alive(c);
    if (refusal.http_status == 0) return done(SendError(c, read.status()));
    std::string extra = refusal.http_status == 503 ? "Retry-After: 1\r\n" : "";
    if (refusal.http_status == 401) extra = "WWW-Authenticate: Bearer realm=\"wavecrest\"\r\n";
    Reply(c, refusal.http_status, "application/json", ErrorJson(read.status()),
          extra + "Connection: close\r\n");
    return done(refusal.http_status);
  }
  HttpRequest& r = *read;
  if (absl::Status st = CheckUtf8(r); !st.ok()) return done(SendError(c, st));
  r.headers.has_body = !r.body.empty();
  std::string cors;
  if (absl::Status st = CheckBrowserPolicy(r.headers, policy_, &cors); !st.ok()) {
    const std::vector<FieldViolation> why = ViolationsOf(st);
    const std::string field = why.empty() ? "" : why[0].field;
    const int status = field == "Content-Type"                          ? 415
                       : field == "Host" && r.headers.host_count <= 1 ? 421
                                                                      : HttpStatusFor(st.code());
    Reply(c, status, "application/json", ErrorJson(st));
    return done(status);
  }
  const std::string cors_headers =
      cors.empty() ? ""
                   : absl::StrCat("Access-Control-Allow-Origin: ", cors, "\r\nVary: Origin\r\n");
  if (r.method == "OPTIONS") {  // a CORS preflight from an allowed origin (others were refused)
    mg_printf(c,
              "HTTP/1.1 204 No Content\r\n%sAccess-Control-Allow-Methods: GET, POST\r\n"
              "Access-Control-Allow-Headers: Content-Type, Authorization, "
              "X-Wavecrest-Deadline-S\r\nAccess-Control-Max-Age: 600\r\nContent-Length: 0\r\n\r\n",
              cors_headers.c_str());
    return done(204);
  }
  if (!absl::StartsWith(r.path, "/v1/") && r.path != "/v1") {
    return done(ServeStatic(c, r.method, r.path, r.authorization, r.peer));
  }
  // Every reply of this request carries them (civetweb serves one request per thread at a time).
  t_response_headers = cors_headers;
  struct Clear {
    ~Clear() { t_response_headers.clear(); }
  } clear;
  // Limits before work: no JSON body is parsed (or printed) past them.
  if (r.method == "POST") {
    if (absl::Status st = CheckJsonLimits(r.body); !st.ok()) {
      return done(SendError(c, FieldError("body", st.message())));
    }
  }
  return done(ServeApi(c, r));
}

namespace {

// One /v1/ route: its method and how it calls the service.
struct ApiRoute {
  const char* path;
  const char* method;
  const char* rpc;  // the Advisor method it calls
  std::function<int(mg_connection*, const HttpRequest&, v1::Advisor::Stub&)> serve;
};

// The API routes onto Advisor RPCs. Requests are the body in the protobuf JSON mapping but for
// parse-model (the body is the text to parse); replies are the response message but for
// parse-model (its model) and export-model (the file's text itself).
const std::vector<ApiRoute>& ApiRoutes() {
  using v1::Advisor;
  static const auto* routes = new std::vector<ApiRoute>{
      {"/v1/analyze", "POST", "Analyze",
       [](mg_connection* c, const HttpRequest& r, Advisor::Stub& s) {
         return Unary<v1::AnalyzeRequest, v1::AnalyzeResponse>(
             c, r, [&](auto* ctx, const auto& q, auto* a) { return s.Analyze(ctx, q, a); });
       }},
      {"/v1/recommend", "POST", "Recommend",
       [](mg_connection* c, const HttpRequest& r, Advisor::Stub& s) {
         return Stream<v1::RecommendRequest, v1::RecommendResponse>(
             c, r, [&](auto* ctx, const auto& q) { return s.Recommend(ctx, q); });
       }},
      {"/v1/sweep", "POST", "Sweep",
       [](mg_connection* c, const HttpRequest& r, Advisor::Stub& s) {
         return Stream<v1::SweepRequest, v1::SweepResponse>(
             c, r, [&](auto* ctx, const auto& q) { return s.Sweep(ctx, q); });
       }},
      {"/v1/time-gemms", "POST", "TimeGemms",
       [](mg_connection* c, const HttpRequest& r, Advisor::Stub& s) {
         return Stream<v1::TimeGemmsRequest, v1::TimeGemmsResponse>(
             c, r, [&](auto* ctx, const auto& q) { return s.TimeGemms(ctx, q); });
       }},
      {"/v1/time-layers", "POST", "TimeLayers",
       [](mg_connection* c, const HttpRequest& r, Advisor::Stub& s) {
         return Stream<v1::TimeLayersRequest, v1::TimeLayersResponse>(
             c, r, [&](auto* ctx, const auto& q) { return s.TimeLayers(ctx, q); });
       }},
      {"/v1/devices", "GET", "ListDevices",
       [](mg_connection* c, const HttpRequest& r, Advisor::Stub& s) {
         return Unary<v1::ListDevicesRequest, v1::ListDevicesResponse>(
             c, r, [&](auto* ctx, const auto& q, auto* a) { return s.ListDevices(ctx, q, a); });
       }},
      {"/v1/models", "GET", "ListModels",
       [](mg_connection* c, const HttpRequest& r, Advisor::Stub& s) {
         return Unary<v1::ListModelsRequest, v1::ListModelsResponse>(
             c, r, [&](auto* ctx, const auto& q, auto* a) { return s.ListModels(ctx, q, a); });
       }},
      {"/v1/parse-model", "POST", "ParseModel",
       [](mg_connection* c, const HttpRequest& r, Advisor::Stub& s) {
         v1::ParseModelRequest q;
         q.set_text(r.body);
         return Call<v1::ParseModelResponse>(
             c, r, [&](auto* ctx, auto* a) { return s.ParseModel(ctx, q, a); },
             [](const v1::ParseModelResponse& a) { return ToJson(a.model()); });
       }},
      {"/v1/export-model", "POST", "ExportModel",
       [](mg_connection* c, const HttpRequest& r, Advisor::Stub& s) {
         v1::ExportModelRequest q;
         if (absl::Status st = FromJson(r.body, &q); !st.ok()) return SendError(c, st);
         return Call<v1::ExportModelResponse>(
             c, r, [&](auto* ctx, auto* a) { return s.ExportModel(ctx, q, a); },
             [](const v1::ExportModelResponse& a) { return a.text(); });
       }},
  };
  return *routes;
}

}  // namespace

std::vector<HttpRoute> HttpApiRoutes() {
  std::vector<HttpRoute> out;
  for (const ApiRoute& r : ApiRoutes()) out.push_back({r.method, r.path, r.rpc});
  return out;
}

int HttpGateway::ServeApi(mg_connection* c, const HttpRequest& r) {
  if (r.path == "/v1/health") {
    if (r.method != "GET") return WrongMethod(c, r, "GET");
    return ServeHealth(c, r, *grpc::health::v1::Health::NewStub(channel_));
  }
  for (const ApiRoute& route : ApiRoutes()) {
    if (r.path != route.path) continue;
    if (r.method != route.method) return WrongMethod(c, r, route.method);
    auto stub = v1::Advisor::NewStub(channel_);
    return route.serve(c, r, *stub);
  }
  return SendError(
      c, absl::NotFoundError(absl::StrCat(
             "no route ", r.path,
             "; the API is POST /v1/analyze, "
             "/v1/recommend, /v1/sweep, /v1/time-gemms, /v1/time-layers, /v1/parse-model, "
             "/v1/export-model and GET /v1/devices, /v1/health, /v1/models")));
}

int HttpGateway::ServeStatic(mg_connection* c, const std::string& method, const std::string& path,
                             const std::string& authorization, const std::string& peer) {
  if (method != "GET" && method != "HEAD") {
    Reply(c, 405, "application/json",
         ErrorJson(absl::InvalidArgumentError(absl::StrCat(method, " ", path, ": use GET"))),
         "Allow: GET, HEAD\r\n");
    return 405;
  }
  // With tokens on, the dashboard's files need one as the API does; a browser asks for it as
  // HTTP Basic (the token as the password) and sends it on with the page's API calls.
  if (options_.auth != nullptr && options_.auth->enabled()) {
    const absl::string_view a(authorization);
    if (absl::Status st =
            options_.auth->CheckAuthorization(authorization.empty() ? nullptr : &a, peer,
                                              Role::kClient);
        !st.ok()) {
      Reply(c, 401, "application/json", ErrorJson(st),
           "WWW-Authenticate: Basic realm=\"wavecrest\", charset=\"UTF-8\"\r\n");
      return 401;
    }
  }
  std::string mime;
  absl::StatusOr<std::string> file =
      options_.static_dir.empty() ? absl::NotFoundError("no dashboard")
                                  : StaticFileFor(options_.static_dir, path, &mime);
  std::string body;
  if (file.ok()) {
    std::ifstream in(*file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    body = text.str();
    if (!in.good() && !in.eof()) file = absl::NotFoundError("unreadable");
  }
  if (!file.ok()) {
    Reply(c, 404, "application/json", ErrorJson(absl::NotFoundError("no such file")));
    return 404;
  }
  mg_printf(c,
            "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-cache\r\n%s\r\n\r\n",
            mime.c_str(), body.size(), kStaticHeaders);
  if (method == "GET") mg_write(c, body.data(), body.size());
  return 200;
}

absl::StatusOr<std::unique_ptr<google::protobuf::Message>> DecodeApiRequest(
    absl::string_view path, absl::string_view body) {
  if (absl::Status st = CheckJsonLimits(body); !st.ok()) return FieldError("body", st.message());
  std::unique_ptr<google::protobuf::Message> m;
  if (path == "/v1/parse-model") {  // the body is the text, not a message
    auto q = std::make_unique<v1::ParseModelRequest>();
    q->set_text(std::string(body));
    return q;
  }
  if (path == "/v1/analyze") m = std::make_unique<v1::AnalyzeRequest>();
  if (path == "/v1/recommend") m = std::make_unique<v1::RecommendRequest>();
  if (path == "/v1/sweep") m = std::make_unique<v1::SweepRequest>();
  if (path == "/v1/time-gemms") m = std::make_unique<v1::TimeGemmsRequest>();
  if (path == "/v1/time-layers") m = std::make_unique<v1::TimeLayersRequest>();
  if (path == "/v1/export-model") m = std::make_unique<v1::ExportModelRequest>();
  if (!m) return absl::NotFoundError(absl::StrCat("no JSON route ", ToValidUtf8(path)));
  if (absl::Status st = FromJson(body, m.get()); !st.ok()) return st;
  return m;
}

std::string ErrorBody(const absl::Status& status) { return ErrorJson(status); }

}  // namespace wavecrest
