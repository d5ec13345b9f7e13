// The HTTP gateway (server/http_gateway.h), in process on a port of its own choosing: the body
// limits its options give, what Start refuses, and the order a request goes through (framing, the
// token before the body, the browser rules, static files, the API's routes), each answered as
// the gateway answers it and counted under a bounded route label. The routes' calls into the
// service are tested in http_routes_test.cc and, with the real server, in tests/integration.
#include "server/http_gateway.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "server/http_routes.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kToken[] = "gateway-test-token-0123456789";

// Sends `request` to the gateway and returns all it wrote back before closing the connection
// (the gateway keeps no connection alive). Reads wait at most 10 s for a byte.
std::string Exchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "socket failed";
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) reply.append(buf, n);
  }
  close(fd);
  return reply;
}

class HttpGatewayTest : public ::testing::Test {
 protected:
  HttpGatewayTest()
      : dir_(std::filesystem::temp_directory_path() /
             ("wavecrest-gateway-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        // Nothing listens there: no test here reaches the service.
        channel_(grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials())) {
    std::filesystem::create_directories(dir_ / "static");
    std::ofstream(dir_ / "static" / "index.html") << "<!doctype html><title>wavecrest</title>";
    options_.listen = "127.0.0.1:0";
    options_.threads = 4;
  }
  ~HttpGatewayTest() override {
    gateway_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Start() {
    absl::StatusOr<std::unique_ptr<HttpGateway>> g =
        HttpGateway::Start(options_, channel_, &metrics_);
    ASSERT_TRUE(g.ok()) << g.status();
    gateway_ = std::move(*g);
    ASSERT_GT(gateway_->port(), 0);
  }
  std::string Get(const std::string& path, const std::string& headers = "") {
    return Exchange(gateway_->port(), absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: localhost\r\n",
                                                   headers, "\r\n"));
  }
  std::string Scrape() {
    return prometheus::TextSerializer().Serialize(metrics_.registry()->Collect());
  }

  std::filesystem::path dir_;
  std::shared_ptr<grpc::Channel> channel_;
  Metrics metrics_;
  HttpGatewayOptions options_;
  std::unique_ptr<HttpGateway> gateway_;
};

TEST(HttpGatewayLimitsTest, BodyLimitsFollowTheOptions) {
  HttpGatewayOptions o;
  o.threads = 128;
  BodyLimits l = BodyLimitsOf(o);
  EXPECT_EQ(l.slots, 32);
  EXPECT_EQ(l.per_client_slots, 8);
  EXPECT_EQ(l.large_slots, 8);
  EXPECT_EQ(l.budget, absl::Milliseconds(o.request_timeout_ms));
  EXPECT_EQ(l.io_timeout, absl::Milliseconds(o.io_timeout_ms));

  o.threads = 4;  // few threads still leave two bodies and one per client
  o.request_timeout_ms = 1;
  o.io_timeout_ms = 0;
  l = BodyLimitsOf(o);
  EXPECT_EQ(l.slots, 2);
  EXPECT_EQ(l.per_client_slots, 1);
  EXPECT_EQ(l.large_slots, 2);  // never more than the slots
  EXPECT_EQ(l.budget, absl::Milliseconds(100));
  EXPECT_EQ(l.io_timeout, absl::Milliseconds(100));

  o.body_slots = 10;
  o.per_client_body_slots = 3;
  o.large_body_slots = 4;
  o.min_body_bytes_per_s = 1000;
  l = BodyLimitsOf(o);
  EXPECT_EQ(l.slots, 10);
  EXPECT_EQ(l.per_client_slots, 3);
  EXPECT_EQ(l.large_slots, 4);
  EXPECT_EQ(l.min_bytes_per_s, 1000);
}

TEST_F(HttpGatewayTest, StartRefusesAStaticDirThatIsNoDirectory) {
  options_.static_dir = (dir_ / "static" / "index.html").string();
  absl::StatusOr<std::unique_ptr<HttpGateway>> g = HttpGateway::Start(options_, channel_, nullptr);
  ASSERT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(), HasSubstr("--http_static_dir"));
}

TEST_F(HttpGatewayTest, StartRefusesAPortInUse) {
  Start();
  options_.listen = absl::StrCat("127.0.0.1:", gateway_->port());
  absl::StatusOr<std::unique_ptr<HttpGateway>> second =
      HttpGateway::Start(options_, channel_, nullptr);
  ASSERT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("--http_listen"));
}

TEST_F(HttpGatewayTest, AnUnknownApiPathIsNotFoundAndNamesTheRoutes) {
  Start();
  const std::string reply = Get("/v1/no-such-route");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 404 "));
  EXPECT_THAT(reply, HasSubstr("\"NOT_FOUND\""));
  EXPECT_THAT(reply, HasSubstr(HttpRouteList()));
  EXPECT_THAT(Scrape(),
              HasSubstr("wavecrest_http_requests_total{route=\"other\",status=\"404\"} 1"));
}

TEST_F(HttpGatewayTest, AnApiCallWithoutATokenIsRefusedBeforeItsBodyIsRead) {
  const std::string tokens = (dir_ / "tokens").string();
  std::ofstream(tokens) << kToken << " client\n";
  chmod(tokens.c_str(), 0600);
  const Auth auth = *Auth::FromTokensFile(tokens);
  options_.auth = &auth;
  Start();
  // The body is announced and never sent: a gateway that read it first would time out (408).
  const std::string reply =
      Exchange(gateway_->port(),
               "POST /v1/analyze HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
               "Content-Length: 1000\r\n\r\n");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 401 "));
  EXPECT_THAT(reply, HasSubstr("WWW-Authenticate: Bearer"));
  EXPECT_THAT(reply, HasSubstr("\"UNAUTHENTICATED\""));
  // A request refused before it reached a route counts under "other".
  EXPECT_THAT(Scrape(),
              HasSubstr("wavecrest_http_requests_total{route=\"other\",status=\"401\"} 1"));
  // The health route stays open, as the gRPC health service does; its answer here is what the
  // unreachable service says, but it is not a 401.
  EXPECT_THAT(Get("/v1/health"), StartsWith("HTTP/1.1 200 "));
}

TEST_F(HttpGatewayTest, FramingThatCouldBeReadTwoWaysIsRefused) {
  Start();
  const std::string reply =
      Exchange(gateway_->port(),
               "POST /v1/analyze HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
               "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 400 "));
  EXPECT_THAT(reply, HasSubstr("Content-Length"));
}

TEST_F(HttpGatewayTest, ABodyComesOnlyWithPost) {
  Start();
  const std::string reply =
      Exchange(gateway_->port(),
               "GET /v1/devices HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 400 "));
  EXPECT_THAT(reply, HasSubstr("send it with POST"));
}

TEST_F(HttpGatewayTest, AnUnknownHostIsMisdirected) {
  Start();
  const std::string reply =
      Exchange(gateway_->port(), "GET /v1/devices HTTP/1.1\r\nHost: attacker.example\r\n\r\n");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 421 "));
}

TEST_F(HttpGatewayTest, TheDashboardsFilesAreServedWithTheirSecurityHeaders) {
  options_.static_dir = (dir_ / "static").string();
  Start();
  const std::string page = Get("/index.html");
  EXPECT_THAT(page, StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(page, HasSubstr("Content-Type: text/html"));
  EXPECT_THAT(page, HasSubstr("X-Content-Type-Options: nosniff"));
  EXPECT_THAT(page, HasSubstr("Content-Security-Policy: default-src 'self'"));
  EXPECT_THAT(page, HasSubstr("<title>wavecrest</title>"));
  EXPECT_THAT(Get("/missing.js"), StartsWith("HTTP/1.1 404 "));
  EXPECT_THAT(Get("/.hidden.html"), StartsWith("HTTP/1.1 404 "));
  const std::string post =
      Exchange(gateway_->port(), "DELETE /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_THAT(post, StartsWith("HTTP/1.1 405 "));
  EXPECT_THAT(post, HasSubstr("Allow: GET, HEAD"));
}

TEST_F(HttpGatewayTest, WithTokensTheDashboardAsksForOneAsHttpBasic) {
  const std::string tokens = (dir_ / "tokens").string();
  std::ofstream(tokens) << kToken << " client\n";
  chmod(tokens.c_str(), 0600);
  const Auth auth = *Auth::FromTokensFile(tokens);
  options_.auth = &auth;
  options_.static_dir = (dir_ / "static").string();
  Start();
  const std::string refused = Get("/index.html");
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 401 "));
  EXPECT_THAT(refused, HasSubstr("WWW-Authenticate: Basic"));
  EXPECT_THAT(Get("/index.html", absl::StrCat("Authorization: Bearer ", kToken, "\r\n")),
              StartsWith("HTTP/1.1 200 "));
}

TEST_F(HttpGatewayTest, APreflightFromAnAllowedOriginIsAnswered) {
  options_.allowed_origins = {"https://dash.example.com"};
  Start();
  const std::string ok = Exchange(
      gateway_->port(),
      "OPTIONS /v1/analyze HTTP/1.1\r\nHost: localhost\r\nOrigin: https://dash.example.com\r\n"
      "Access-Control-Request-Method: POST\r\n\r\n");
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 204 "));
  EXPECT_THAT(ok, HasSubstr("Access-Control-Allow-Origin: https://dash.example.com"));
  EXPECT_THAT(ok, HasSubstr("Access-Control-Allow-Methods: GET, POST"));
  const std::string refused = Exchange(
      gateway_->port(),
      "OPTIONS /v1/analyze HTTP/1.1\r\nHost: localhost\r\nOrigin: https://evil.example\r\n\r\n");
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 403 "));
  EXPECT_THAT(refused, Not(HasSubstr("Access-Control-Allow-Origin")));
}

}  // namespace
}  // namespace wavecrest
