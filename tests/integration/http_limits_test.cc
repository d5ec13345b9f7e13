// The HTTP gateway under hostile input (issue "Nothing crashes it"): limits checked before any
// work on every route, one token check for every route and the dashboard's files, the models
// directory's own files only, bounded memory and threads for bodies, and strict framing. A real
// server each, over real sockets.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/http_client.h"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using testing::ConnectLoopback;
using testing::Http;
using testing::HttpReply;
using testing::Json;
using testing::RawReply;
using testing::MakeDashboard;
using testing::RawStatus;
using testing::ServerUnderTest;
using testing::SourcePath;
using testing::TempDir;

constexpr char kPythia[] =
    R"({"hidden_size":2560,"num_attention_heads":32,"num_layers":32,"vocab_size":50304})";

std::string Nested(int depth) {
  return absl::StrCat(R"({"model": )", std::string(depth, '['), std::string(depth, ']'), "}");
}

// {"model": [[[...]]]} nested 600, 20k and 1M deep to every POST route, and the same inside a
// parse-model text: each a 400 naming the body, before any parser or printer recurses; the
// server answers after.
TEST(HttpLimitsTest, DeepNestingOnEveryRouteIsRefusedBeforeAnyParse) {
  ServerUnderTest server({"--http_listen=127.0.0.1:0"});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  const int port = server.http_port();
  for (int depth : {600, 20000, 1000000}) {
    for (const char* route : {"/v1/export-model", "/v1/parse-model", "/v1/analyze",
                              "/v1/recommend", "/v1/sweep", "/v1/time-gemms",
                              "/v1/time-layers"}) {
      const HttpReply r = Http(port, "POST", route, Nested(depth));
      EXPECT_EQ(r.status, 400) << route << " " << depth << ": " << r.body.substr(0, 200);
      EXPECT_THAT(r.body, HasSubstr("deeper than 32")) << route;
    }
  }
  // Wide instead of deep: a 2-million-value array is refused by count, not parsed.
  std::string wide = R"({"model": [)";
  for (int i = 0; i < 2'000'000; ++i) absl::StrAppend(&wide, i ? ",1" : "1");
  wide += "]}";
  const HttpReply r = Http(port, "POST", "/v1/parse-model", wide);
  EXPECT_EQ(r.status, 400) << r.body.substr(0, 200);
  EXPECT_THAT(r.body, HasSubstr("more than 100000 values"));
  EXPECT_EQ(Http(port, "GET", "/v1/health").status, 200) << server.Log();
}

// parse-model validates as every call does: a 4 MiB name and a raw NUL are refused, naming the
// field, as gRPC refuses them.
TEST(HttpLimitsTest, ParseModelValidatesTheModelAsGrpcDoes) {
  ServerUnderTest server({"--http_listen=127.0.0.1:0"});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  const int port = server.http_port();
  const std::string base = R"("hidden_size":2560,"num_attention_heads":32,"num_layers":32,)"
                           R"("vocab_size":50304)";
  HttpReply ok = Http(port, "POST", "/v1/parse-model", absl::StrCat("{", base, "}"));
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(Json(ok.body)["hidden_size"], "2560");
  HttpReply long_name = Http(port, "POST", "/v1/parse-model",
                             absl::StrCat(R"({"name":")", std::string(1 << 20, 'a'), R"(",)",
                                          base, "}"));
  EXPECT_EQ(long_name.status, 400);
  EXPECT_EQ(Json(long_name.body)["error"]["field_violations"][0]["field"], "model.name");
  HttpReply nul = Http(port, "POST", "/v1/parse-model",
                       absl::StrCat(R"({"name":"a\u0000b",)", base, "}"));
  EXPECT_EQ(nul.status, 400) << nul.body;
  EXPECT_THAT(nul.body, HasSubstr("model.name"));
}

// With tokens, every route answers 401 without one, the dashboard's files included (with a
// Basic challenge a browser answers); a Bearer token or Basic with the token as the password
// passes. Health stays open, as on gRPC.
TEST(HttpLimitsTest, WithTokensEveryRouteAndTheDashboardNeedOne) {
  TempDir dir;
  std::ofstream(dir.File("tokens")) << "client-token-0123456789 client\n";
  std::filesystem::permissions(dir.File("tokens"), std::filesystem::perms::owner_read |
                                                       std::filesystem::perms::owner_write);
  const std::string dashboard = MakeDashboard(dir);
  ServerUnderTest server({"--http_listen=127.0.0.1:0", "--auth_tokens_file=" + dir.File("tokens"),
                          "--http_static_dir=" + dashboard,
                          "--http_models_dir=" + SourcePath("examples/models")});
  ASSERT_TRUE(server.WaitReady(absl::Seconds(30), {{}, "client-token-0123456789"}))
      << server.Log();
  const int port = server.http_port();
  const std::string spec = absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"h100-sxm"})");
  struct Route {
    const char* method;
    const char* path;
    std::string body;
  };
  const std::vector<Route> routes = {
      {"GET", "/", ""},
      {"GET", "/index.html", ""},
      {"GET", "/v1/models", ""},
      {"GET", "/v1/devices", ""},
      {"POST", "/v1/parse-model", kPythia},
      {"POST", "/v1/export-model", absl::StrCat(R"({"model":)", kPythia, "}")},
      {"POST", "/v1/analyze", spec},
  };
  const std::string bearer = "-H 'Authorization: Bearer client-token-0123456789'";
  const std::string basic = absl::StrCat(
      "-H 'Authorization: Basic ", absl::Base64Escape("anyone:client-token-0123456789"), "'");
  for (const Route& r : routes) {
    EXPECT_EQ(Http(port, r.method, r.path, r.body).status, 401) << r.path;
    EXPECT_EQ(Http(port, r.method, r.path, r.body, "-H 'Authorization: Bearer wrong-0123456789'")
                  .status,
              401)
        << r.path;
    EXPECT_EQ(Http(port, r.method, r.path, r.body, bearer).status, 200) << r.path;
    EXPECT_EQ(Http(port, r.method, r.path, r.body, basic).status, 200) << r.path;
  }
  const std::string page = RawReply(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_THAT(page, HasSubstr("HTTP/1.1 401"));
  EXPECT_THAT(page, HasSubstr("WWW-Authenticate: Basic realm=\"wavecrest\""));
  EXPECT_EQ(Http(port, "GET", "/v1/health").status, 200);
}

// The models directory lists its own regular files: a symlink to a file outside it, or a linked
// folder, is not followed.
TEST(HttpLimitsTest, TheModelsDirectoryListsOnlyItsOwnRegularFiles) {
  TempDir dir;
  std::filesystem::create_directories(dir.File("models/hf"));
  std::filesystem::create_directories(dir.File("outside"));
  std::filesystem::copy_file(SourcePath("examples/models/pythia-160m.json"),
                             dir.File("models/pythia-160m.json"));
  std::filesystem::copy_file(SourcePath("examples/models/llama-2-7b.json"),
                             dir.File("outside/secret.json"));
  std::filesystem::create_symlink(dir.File("outside/secret.json"), dir.File("models/linked.json"));
  std::filesystem::create_directory_symlink(dir.File("outside"), dir.File("models/hf/sub"));
  ServerUnderTest server({"--http_listen=127.0.0.1:0", "--http_models_dir=" + dir.File("models")});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  const HttpReply r = Http(server.http_port(), "GET", "/v1/models");
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json models = Json(r.body)["models"];
  ASSERT_EQ(models.size(), 1u) << r.body;
  EXPECT_EQ(models[0]["file"], "pythia-160m.json");
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("secret")));
}

// Framing a proxy could read another way, and a body that stops short: each a 400 at once,
// naming the header, never run as the request.
TEST(HttpLimitsTest, AmbiguousFramingAndShortBodiesAreRefused) {
  ServerUnderTest server({"--http_listen=127.0.0.1:0", "--http_request_timeout_ms=3000"});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  const int port = server.http_port();
  const std::string body = absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"h100-sxm"})");
  const std::string line = "POST /v1/analyze HTTP/1.1\r\n";
  const std::string host = "Host: 127.0.0.1\r\n";
  const std::string type = "Content-Type: application/json\r\n";
  const std::string length = absl::StrCat("Content-Length: ", body.size(), "\r\n");
  ASSERT_EQ(RawStatus(port, line + host + type + length + "\r\n" + body), 200);
  struct Case {
    const char* what;
    std::string raw;
    const char* names;
  };
  const std::vector<Case> cases = {
      {"chunked with a length",
       line + host + type + "Transfer-Encoding: chunked\r\n" + length + "\r\n" + body,
       "Transfer-Encoding"},
      {"a length list", line + host + type +
                            absl::StrCat("Content-Length: ", body.size(), ", ", body.size()) +
                            "\r\n\r\n" + body,
       "Content-Length"},
      {"a signed length", line + host + type + absl::StrCat("Content-Length: +", body.size()) +
                              "\r\n\r\n" + body,
       "Content-Length"},
      {"a space before the colon",
       line + host + type + absl::StrCat("Content-Length : ", body.size()) + "\r\n\r\n" + body,
       "headers"},
      {"no Host", line + type + length + "\r\n" + body, "Host"},
      {"a short body", line + host + type + length + "\r\n" + body.substr(0, 10),
       "Content-Length"},
  };
  for (const Case& c : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string reply = RawReply(port, c.raw);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 400")) << c.what << ": " << reply;
    EXPECT_THAT(reply, HasSubstr(c.names)) << c.what;
    EXPECT_LT(s, 2.5) << c.what << " waited for the request timeout";
  }
  // A body that stops short and keeps the connection open: 408 after the request timeout.
  const std::string stalled =
      RawReply(port, line + host + type + length + "\r\n" + body.substr(0, 10), 10, false);
  EXPECT_TRUE(absl::StartsWith(stalled, "HTTP/1.1 408")) << stalled;
  EXPECT_EQ(Http(port, "GET", "/v1/health").status, 200) << server.Log();
}

// 128 clients at once, each sending a 4 MiB parse-model body of 2 million values: each is
// refused (too many values, or no body slot free: 503 with Retry-After) and the server's peak
// memory stays under 1 GiB; the dashboard answers throughout.
TEST(HttpLimitsTest, ConcurrentLargeBodiesStayWithinMemory) {
  TempDir dir;
  const std::string dashboard = MakeDashboard(dir);
  ServerUnderTest server({"--http_listen=127.0.0.1:0", "--http_static_dir=" + dashboard});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  const int port = server.http_port();
  std::string values = "[";
  for (int i = 0; i < 2'000'000; ++i) values += i ? ",1" : "1";
  values += "]";
  const std::string raw = absl::StrCat(
      "POST /v1/parse-model HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: ", values.size(), "\r\n\r\n", values);
  std::atomic<int> refused{0}, busy{0}, other{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 128; ++i) {
    clients.emplace_back([&] {
      const std::string reply = RawReply(port, raw, 30);
      if (absl::StartsWith(reply, "HTTP/1.1 400")) {
        ++refused;
      } else if (absl::StartsWith(reply, "HTTP/1.1 503") || reply.empty()) {
        ++busy;  // refused before its body was read (the server may close while it sends)
      } else {
        ++other;
      }
    });
  }
  const HttpReply page = Http(port, "GET", "/");
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(other.load(), 0);
  EXPECT_GT(refused.load(), 0);
  const int64_t peak = server.process().StatusBytes("VmHWM");
  std::printf("128 x 4 MiB bodies: %d refused by the value limit, %d without a body slot; peak RSS "
              "%.0f MiB\n",
              refused.load(), busy.load(), peak / 1048576.0);
  EXPECT_GT(peak, 0);
  EXPECT_LT(peak, int64_t{1} << 30);
  EXPECT_EQ(Http(port, "GET", "/v1/health").status, 200) << server.Log();
}

// 140 connections that declare a 4 MB body and send a byte now and then hold at most the body
// slots: the dashboard answers while they trickle, and each is answered 503 or 408 in the end.
TEST(HttpLimitsTest, SlowBodiesDoNotBlockTheDashboard) {
  TempDir dir;
  const std::string dashboard = MakeDashboard(dir);
  ServerUnderTest server({"--http_listen=127.0.0.1:0", "--http_request_timeout_ms=2000",
                          "--http_static_dir=" + dashboard});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  const int port = server.http_port();
  std::vector<int> slow;
  for (int i = 0; i < 140; ++i) {
    const int fd = ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    const std::string head =
        "POST /v1/parse-model HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 4000000\r\n\r\n{";
    (void)!send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  int pages = 0;
  for (int probe = 0; probe < 6; ++probe) {
    for (int fd : slow) (void)!send(fd, " ", 1, MSG_NOSIGNAL);
    pages += Http(port, "GET", "/").status == 200;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_EQ(pages, 6);
  int answered = 0;
  for (int fd : slow) {
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[256];
    const ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
    if (n > 0) {
      buf[n] = 0;
      const std::string reply(buf);
      answered += absl::StartsWith(reply, "HTTP/1.1 503") || absl::StartsWith(reply, "HTTP/1.1 408");
    }
    close(fd);
  }
  EXPECT_EQ(answered, 140);
  EXPECT_EQ(Http(port, "GET", "/v1/health").status, 200) << server.Log();
}

}  // namespace
}  // namespace wavecrest
