#include "server/http_gateway.h"

#include <civetweb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "server/auth.h"
#include "server/http_body.h"
#include "server/http_reply.h"
#include "service/errors.h"
#include "service/log.h"
#include "service/text.h"

namespace wavecrest {
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

// Records why the request is refused (`http`: the HTTP status, 0 = the status's own) and
// returns `st`.
absl::Status RefuseRequest(ReadRefusal* refusal, absl::Status st, int http = 0) {
  *refusal = {st, http};
  return st;
}

constexpr char kTooBusy[] =
    "too many requests are sending bodies now (from this client, or from all); retry in a second";

// The caller's address as gRPC writes peers ("ipv4:10.0.0.7", "ipv6:[::1]").
std::string PeerAddress(const mg_request_info* ri) {
  const std::string addr = ri->remote_addr;
  return absl::StrContains(addr, ':') ? absl::StrCat("ipv6:[", addr, "]") : "ipv4:" + addr;
}

// The headers the gateway reads values from: Authorization (passed on as gRPC metadata) and
// X-Wavecrest-Deadline-S.
absl::Status ReadHeaderValues(mg_connection* c, HttpRequest& r) {
  if (const char* a = mg_get_header(c, "Authorization")) {
    // Forwarded as gRPC metadata, whose values must be printable ASCII: gRPC C++ asserts (ends
    // the process) on any other byte rather than failing the call.
    for (const char* p = a; *p; ++p) {
      const unsigned char ch = static_cast<unsigned char>(*p);
      if (ch < 0x20 || ch > 0x7E) {
        return FieldError("Authorization", "must be printable ASCII: \"Bearer <token>\"");
      }
    }
    r.authorization = BearerAuthorization(a);
  }
  if (const char* d = mg_get_header(c, "X-Wavecrest-Deadline-S")) {
    if (!absl::SimpleAtod(d, &r.deadline_s) ||
        !(r.deadline_s > 0 && r.deadline_s <= kMaxDeadlineS)) {
      return FieldError(
          "X-Wavecrest-Deadline-S",
          absl::StrCat("\"", ForTerminal(d), "\": seconds in (0, ", kMaxDeadlineS, "]"));
    }
  }
  return absl::OkStatus();
}

// Who may send a body is known from the headers: an API call without a valid token is refused
// before a byte of its body is read (GET /v1/health stays open, as the gRPC health service).
absl::Status CheckApiToken(const HttpGatewayOptions& o, const HttpRequest& r) {
  if (o.auth == nullptr || !absl::StartsWith(r.path, "/v1/") || r.path == "/v1/health") {
    return absl::OkStatus();
  }
  const absl::string_view a(r.authorization);
  return o.auth->CheckAuthorization(r.authorization.empty() ? nullptr : &a, r.peer, Role::kClient);
}

// A client that waits to be asked for its body (curl does for bodies over 1 MB) is asked now,
// once it may send it; a refusal went out instead, and the body never came.
absl::Status AnswerExpect(mg_connection* c, ReadRefusal* refusal) {
  const char* expect = mg_get_header(c, "Expect");
  if (expect == nullptr) return absl::OkStatus();
  if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(expect), "100-continue")) {
    absl::Status st = FieldError(
        "Expect", absl::StrCat("\"", ForTerminal(expect), "\": only 100-continue is known"));
    return RefuseRequest(refusal, st, 417);
  }
  mg_printf(c, "HTTP/1.1 100 Continue\r\n\r\n");
  return absl::OkStatus();
}

// The body, if the request has one: only with POST, within max_body_bytes, in a body slot, at
// the minimum rate and within the budget (server/http_body.h).
absl::Status ReadRequestBody(mg_connection* c, const HttpGatewayOptions& o,
                             const BodyLimits& limits, BodySlots& slots, HttpRequest& r,
                             ReadRefusal* refusal) {
  const int64_t declared = mg_get_request_info(c)->content_length;  // -1: none (or chunked)
  if (declared > o.max_body_bytes) {
    return RefuseRequest(refusal,
                         absl::InvalidArgumentError(absl::StrCat(
                             "the body has ", declared, " bytes; at most ", o.max_body_bytes)),
                         413);
  }
  if (declared <= 0 && !r.headers.transfer_encoding) return absl::OkStatus();
  if (r.method != "POST") {
    return RefuseRequest(
        refusal, FieldError("body", absl::StrCat(r.method, " takes no body; send it with POST")));
  }
  std::optional<BodySlots::Slot> slot =
      slots.Take(r.peer, declared < 0 || declared > limits.large_body_bytes);
  if (!slot) return RefuseRequest(refusal, absl::UnavailableError(kTooBusy), 503);
  RETURN_IF_ERROR(AnswerExpect(c, refusal));
  int http_status = 0;
  if (absl::Status st = ReadBody([c](char* buf, size_t n) { return mg_read(c, buf, n); }, limits,
                                 declared, Clock::Real(), &r.body, &http_status);
      !st.ok()) {
    return RefuseRequest(refusal, st, http_status);
  }
  return absl::OkStatus();
}

// The request in the order of its checks: framing, header values, the token, then the body.
absl::StatusOr<HttpRequest> ReadRequest(mg_connection* c, const HttpGatewayOptions& o,
                                        const BodyLimits& limits, BodySlots& slots,
                                        ReadRefusal* refusal) {
  HttpRequest r;
  r.headers = HeadersOf(c);
  r.method = r.headers.method;
  r.path = r.headers.path;
  r.peer = PeerAddress(mg_get_request_info(c));
  if (absl::Status st = CheckFraming(r.headers); !st.ok()) return RefuseRequest(refusal, st, 400);
  if (absl::Status st = ReadHeaderValues(c, r); !st.ok()) return RefuseRequest(refusal, st);
  if (absl::Status st = CheckApiToken(o, r); !st.ok()) {
    return RefuseRequest(refusal, st, HttpStatusFor(st.code()));
  }
  RETURN_IF_ERROR(ReadRequestBody(c, o, limits, slots, r, refusal));
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

}  // namespace

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
  l.per_client_slots =
      o.per_client_body_slots > 0 ? o.per_client_body_slots : std::max(1, l.slots / 4);
  l.large_body_bytes = o.large_body_bytes;
  l.max_body_bytes = o.max_body_bytes;
  l.budget = absl::Milliseconds(std::max(o.request_timeout_ms, 100));
  l.io_timeout = absl::Milliseconds(std::max(o.io_timeout_ms, 100));
  l.min_bytes_per_s = o.min_body_bytes_per_s;
  return l;
}

namespace {

// civetweb's own log lines, as the server's (JSON lines).
int LogCivetwebMessage(const mg_connection*, const char* message) {
  LogInfo("http", {{"message", message}});
  return 1;
}

// civetweb's own error replies (a request it could not parse) echo the request's version text
// into the status line, CR and LF included; the gateway writes them itself, as JSON.
int AnswerCivetwebError(mg_connection* c, int status, const char* message) {
  absl::StatusCode code = absl::StatusCode::kInvalidArgument;
  if (status == 404) code = absl::StatusCode::kNotFound;
  if (status == 405) code = absl::StatusCode::kUnimplemented;
  if (status == 408) code = absl::StatusCode::kDeadlineExceeded;
  if (status == 413 || status == 431) code = absl::StatusCode::kResourceExhausted;
  if (status >= 500 && status != 505) code = absl::StatusCode::kInternal;
  const std::string body = ErrorBody(absl::Status(
      code, ToValidUtf8(message != nullptr && *message ? message : "malformed request")));
  mg_printf(c,
            "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
            "Connection: close\r\n\r\n",
            status, mg_get_response_code_text(c, status), body.size());
  mg_write(c, body.data(), body.size());
  return 0;  // handled
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpGateway>> HttpGateway::Start(
    const HttpGatewayOptions& options, std::shared_ptr<grpc::Channel> channel, Metrics* metrics) {
  std::unique_ptr<HttpGateway> g(new HttpGateway(options, std::move(channel), metrics));
  if (!options.static_dir.empty() && !std::filesystem::is_directory(options.static_dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_static_dir ", options.static_dir, ": not a directory"));
  }
  g->policy_.allowed_origins = options.allowed_origins;
  g->policy_.allowed_hosts =
      options.allowed_hosts.empty() ? DefaultAllowedHosts(options.listen) : options.allowed_hosts;
  g->body_limits_ = BodyLimitsOf(options);
  g->body_slots_ = std::make_unique<BodySlots>(g->body_limits_);
  RETURN_IF_ERROR(g->Listen());
  return g;
}

absl::Status HttpGateway::Listen() {
  const std::string threads = std::to_string(std::max(options_.threads, 2));
  // civetweb's request_timeout_ms bounds the headers and each read and write; the body's own
  // budget (request_timeout_ms) and rate are the gateway's (server/http_body.h).
  const std::string timeout = std::to_string(std::max(options_.io_timeout_ms, 100));
  // No document_root: civetweb serves nothing itself (no CGI, SSI, Lua or listings); every
  // request reaches Dispatch.
  std::vector<const char*> opts = {"listening_ports", options_.listen.c_str(), "num_threads",
                                   threads.c_str(), "request_timeout_ms", timeout.c_str(),
                                   "enable_keep_alive", "no", "enable_directory_listing", "no",
                                   // civetweb answers CORS preflights itself with "*" unless this
                                   // is empty; the gateway answers them (allowed origins only).
                                   "access_control_allow_origin", "", nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = &LogCivetwebMessage;
  callbacks.http_error = &AnswerCivetwebError;
  ctx_ = mg_start(&callbacks, nullptr, opts.data());
  if (ctx_ == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "--http_listen ", options_.listen, ": cannot listen (is another process on that port?)"));
  }
  mg_set_request_handler(ctx_, "/", &HttpGateway::Dispatch, this);
  mg_server_port ports[4];
  const int n = mg_get_server_ports(ctx_, 4, ports);
  port_ = n > 0 ? ports[0].port : 0;
  return absl::OkStatus();
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
        ErrorBody(absl::InternalError("the gateway failed on this request; see the server log")));
  return 500;
}

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
    Reply(c, refusal.http_status, "application/json", ErrorBody(read.status()),
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
    const int status = field == "Content-Type"                        ? 415
                       : field == "Host" && r.headers.host_count <= 1 ? 421
                                                                      : HttpStatusFor(st.code());
    Reply(c, status, "application/json", ErrorBody(st));
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
  // Limits before work: no JSON body is parsed (or printed) past them (server/http_routes.h).
  return done(ServeApiRequest(c, r, channel_));
}

int HttpGateway::ServeStatic(mg_connection* c, const std::string& method, const std::string& path,
                             const std::string& authorization, const std::string& peer) {
  if (method != "GET" && method != "HEAD") {
    Reply(c, 405, "application/json",
          ErrorBody(absl::InvalidArgumentError(absl::StrCat(method, " ", path, ": use GET"))),
          "Allow: GET, HEAD\r\n");
    return 405;
  }
  // With tokens on, the dashboard's files need one as the API does; a browser asks for it as
  // HTTP Basic (the token as the password) and sends it on with the page's API calls.
  if (options_.auth != nullptr && options_.auth->enabled()) {
    const absl::string_view a(authorization);
    if (absl::Status st = options_.auth->CheckAuthorization(authorization.empty() ? nullptr : &a,
                                                            peer, Role::kClient);
        !st.ok()) {
      Reply(c, 401, "application/json", ErrorBody(st),
            "WWW-Authenticate: Basic realm=\"wavecrest\", charset=\"UTF-8\"\r\n");
      return 401;
    }
  }
  std::string mime;
  absl::StatusOr<std::string> file = options_.static_dir.empty()
                                         ? absl::NotFoundError("no dashboard")
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
    Reply(c, 404, "application/json", ErrorBody(absl::NotFoundError("no such file")));
    return 404;
  }
  mg_printf(c,
            "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-cache\r\n%s\r\n\r\n",
            mime.c_str(), body.size(), kStaticHeaders);
  if (method == "GET") mg_write(c, body.data(), body.size());
  return 200;
}

}  // namespace wavecrest
