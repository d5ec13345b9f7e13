// The HTTP/JSON gateway (server/http_gateway.h) of a real server, with curl: the Advisor API as
// JSON in and out, streams as newline-delimited JSON, errors as JSON naming the field with the
// HTTP status gRPC-gateway uses, the same metrics and authentication as gRPC, the dashboard's
// files.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using testing::ServerUnderTest;
using testing::Shell;
using testing::SourcePath;
using testing::TempDir;

struct HttpReply {
  int status = 0;
  std::string body;
};

// curl: `method` `path` with `body` (a file, so that any JSON passes the shell unharmed).
HttpReply Http(int port, const std::string& method, const std::string& path,
               const std::string& body = "", const std::string& headers = "") {
  TempDir dir;
  std::ofstream(dir.File("body")) << body;
  // A JSON body says so (the gateway refuses other types), unless the test sets its own.
  const std::string type = body.empty() || absl::StrContains(headers, "Content-Type")
                               ? ""
                               : " -H 'Content-Type: application/json'";
  auto [code, out] = Shell(absl::StrCat("curl -s -N -X ", method, " ", headers, type,
                                        body.empty() ? "" : " --data-binary @" + dir.File("body"),
                                        " -w '\\n%{http_code}' http://127.0.0.1:", port, path));
  HttpReply r;
  const size_t nl = out.rfind('\n');
  if (code != 0 || nl == std::string::npos) return r;
  r.status = std::atoi(out.c_str() + nl + 1);
  r.body = out.substr(0, nl);
  return r;
}

nlohmann::json Json(const std::string& text) { return nlohmann::json::parse(text, nullptr, false); }

std::vector<nlohmann::json> Lines(const std::string& ndjson) {
  std::vector<nlohmann::json> out;
  for (absl::string_view line : absl::StrSplit(ndjson, '\n', absl::SkipEmpty())) {
    out.push_back(Json(std::string(line)));
  }
  return out;
}

constexpr char kPythia[] =
    R"({"hidden_size":2560,"num_attention_heads":32,"num_layers":32,"vocab_size":50304})";

class HttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(static_dir_.path());
    std::ofstream(static_dir_.File("index.html")) << "<!doctype html><title>wavecrest</title>";
    server_ = std::make_unique<ServerUnderTest>(
        std::vector<std::string>{"--http_listen=127.0.0.1:0", "--workers=auto",
                                 "--http_models_dir=" + SourcePath("examples/models"),
                                 "--http_static_dir=" + static_dir_.path()});
    ASSERT_TRUE(server_->WaitReady()) << server_->Log();
    port_ = server_->http_port();
    ASSERT_GT(port_, 0);
  }
  TempDir static_dir_;
  std::unique_ptr<ServerUnderTest> server_;
  int port_ = 0;
};

TEST_F(HttpTest, AnalyzeIsJsonInAndOut) {
  HttpReply r = Http(port_, "POST", "/v1/analyze",
                     absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"a100-sxm-80gb"})"));
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json j = Json(r.body);
  EXPECT_EQ(j["params"]["total_params"], "2774471680");  // int64 as a string (proto JSON)
  EXPECT_FALSE(j["gemms"].empty());
}

TEST_F(HttpTest, ErrorsAreJsonNamingTheFieldWithTheRightStatus) {
  HttpReply bad = Http(port_, "POST", "/v1/analyze", R"({"model":{"hidden_size":-5},"gpu":""})");
  EXPECT_EQ(bad.status, 400);
  nlohmann::json e = Json(bad.body)["error"];
  EXPECT_EQ(e["code"], "INVALID_ARGUMENT");
  bool named_hidden = false, named_gpu = false;
  for (const auto& v : e["field_violations"]) {
    named_hidden |= v["field"] == "model.hidden_size";
    named_gpu |= v["field"] == "gpu";
  }
  EXPECT_TRUE(named_hidden && named_gpu) << bad.body;

  HttpReply typo = Http(port_, "POST", "/v1/analyze", R"({"modle":{}})");
  EXPECT_EQ(typo.status, 400);
  EXPECT_EQ(Json(typo.body)["error"]["field_violations"][0]["field"], "body");
  EXPECT_THAT(typo.body, HasSubstr("modle"));

  HttpReply unknown_gpu = Http(port_, "POST", "/v1/analyze",
                               absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"h900"})"));
  EXPECT_EQ(unknown_gpu.status, 404);
  EXPECT_EQ(Json(unknown_gpu.body)["error"]["code"], "NOT_FOUND");

  EXPECT_EQ(Http(port_, "GET", "/v1/analyze").status, 405);
  HttpReply no_route = Http(port_, "POST", "/v1/nothing", "{}");
  EXPECT_EQ(no_route.status, 404);
  EXPECT_THAT(no_route.body, HasSubstr("/v1/analyze"));
  EXPECT_EQ(Http(port_, "POST", "/v1/analyze", "not json").status, 400);
}

TEST_F(HttpTest, RecommendAndSweepStreamNewlineDelimitedJson) {
  HttpReply rec = Http(port_, "POST", "/v1/recommend",
                       absl::StrCat(R"({"model":)", kPythia,
                                    R"(,"gpu":"a100-sxm-80gb","mode":"MODE_PREDICTED","top":3})"));
  ASSERT_EQ(rec.status, 200) << rec.body;
  std::vector<nlohmann::json> lines = Lines(rec.body);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_TRUE(lines.front().contains("progress"));
  EXPECT_EQ(lines.back()["done"], true);
  EXPECT_GE(lines.back()["candidates"].size(), 3u);

  HttpReply sweep = Http(port_, "POST", "/v1/sweep",
                         absl::StrCat(R"({"model":)", kPythia,
                                      R"(,"gpu":"a100-sxm-80gb","vary":"SWEEP_DIMENSION_HIDDEN",)"
                                      R"("from":2048,"to":4096,"step":64})"));
  ASSERT_EQ(sweep.status, 200) << sweep.body;
  lines = Lines(sweep.body);
  ASSERT_EQ(lines.back()["done"], true);
  EXPECT_EQ(lines.back()["points"].size(), 33u);
  EXPECT_EQ(lines.back()["points"][0]["source"], "SOURCE_PREDICTED");

  // A stream refused before it starts is an HTTP error, not a 200.
  HttpReply refused = Http(port_, "POST", "/v1/sweep",
                           absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"a100-sxm-80gb"})"));
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(Json(refused.body)["error"]["field_violations"][0]["field"], "vary");
}

TEST_F(HttpTest, DevicesHealthModelsAndTheDashboard) {
  HttpReply dev = Http(port_, "GET", "/v1/devices");
  ASSERT_EQ(dev.status, 200);
  EXPECT_FALSE(Json(dev.body)["catalog"].empty());
  HttpReply health = Http(port_, "GET", "/v1/health");
  ASSERT_EQ(health.status, 200);
  EXPECT_EQ(Json(health.body)["advisor"], "SERVING");
  HttpReply models = Http(port_, "GET", "/v1/models");
  ASSERT_EQ(models.status, 200);
  bool llama_hf = false;
  const nlohmann::json listed = Json(models.body);
  for (const auto& m : listed["models"]) llama_hf |= m["file"] == "hf/llama-2-7b.json";
  EXPECT_TRUE(llama_hf) << models.body.substr(0, 500);
  std::ifstream hf(SourcePath("examples/models/hf/llama-2-7b.json"));
  std::stringstream text;
  text << hf.rdbuf();
  HttpReply parsed = Http(port_, "POST", "/v1/parse-model", text.str());
  ASSERT_EQ(parsed.status, 200) << parsed.body;
  EXPECT_EQ(Json(parsed.body)["hidden_size"], "4096");
  HttpReply page = Http(port_, "GET", "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("<title>wavecrest</title>"));
}

// Bytes that are not UTF-8, anywhere a caller can put them, get a 400 naming where they are, and
// the server stays up. Before, one such byte in a JSON string aborted the process (nlohmann::json
// threw type_error 316 while the error reply was serialised).
TEST_F(HttpTest, BytesThatAreNotUtf8GetA400AndTheServerStaysUp) {
  struct Case {
    const char* what;
    std::string path, body;
    const char* field;
  };
  const std::vector<Case> cases = {
      {"a name", "/v1/analyze", "{\"model\":{\"name\":\"\xff\"}}", "body"},
      {"a truncated sequence", "/v1/analyze", "{\"model\":{\"name\":\"\xe2\x82\"}}", "body"},
      {"an overlong '/'", "/v1/recommend", "{\"gpu\":\"\xc0\xaf\"}", "body"},
      {"a surrogate", "/v1/parse-model", "{\"_name_or_path\":\"\xed\xa0\x80\"}", "body"},
      {"a key", "/v1/analyze", "{\"\xff\":1}", "body"},
      {"the path", "/v1/%FF", "{}", "path"},
      {"the path, truncated", "/v1/analyze%C3", "{}", "path"},
  };
  for (const Case& c : cases) {
    HttpReply r = Http(port_, "POST", c.path, c.body, "-H 'Content-Type: application/json'");
    EXPECT_EQ(r.status, 400) << c.what << ": " << r.body;
    const nlohmann::json e = Json(r.body)["error"];
    EXPECT_EQ(e["code"], "INVALID_ARGUMENT") << c.what;
    EXPECT_EQ(e["field_violations"][0]["field"], c.field) << c.what << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr("not UTF-8")) << c.what;
  }
  // Headers the gateway echoes or forwards.
  TempDir dir;
  std::ofstream(dir.File("deadline")) << "X-Wavecrest-Deadline-S: \xff\xfe\n";
  std::ofstream(dir.File("auth")) << "Authorization: Bearer \xff\x01\n";
  const std::string body = absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"h100-sxm"})");
  HttpReply deadline = Http(port_, "POST", "/v1/analyze", body, "-H @" + dir.File("deadline"));
  EXPECT_EQ(deadline.status, 400) << deadline.body;
  EXPECT_THAT(deadline.body, HasSubstr("X-Wavecrest-Deadline-S"));
  HttpReply auth = Http(port_, "POST", "/v1/analyze", body, "-H @" + dir.File("auth"));
  EXPECT_GE(auth.status, 400) << auth.body;
  EXPECT_LT(auth.status, 500) << auth.body;

  HttpReply health = Http(port_, "GET", "/v1/health");
  ASSERT_EQ(health.status, 200) << "the server died: " << server_->Log();
  EXPECT_EQ(Http(port_, "POST", "/v1/analyze", body).status, 200);
}

// What a hostile page or a careless deployment would try: each gets a 4xx, nothing is run or
// leaked, and the server stays up.
TEST_F(HttpTest, OtherSitesStaticTricksAndRebindingAreRefused) {
  const std::string body = absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"h100-sxm"})");
  // A cross-site "simple" request: text/plain from another origin (no preflight in a browser).
  HttpReply xsite = Http(port_, "POST", "/v1/recommend", body,
                         "-H 'Content-Type: text/plain' -H 'Origin: http://evil.example'");
  EXPECT_EQ(xsite.status, 403) << xsite.body;
  HttpReply plain = Http(port_, "POST", "/v1/analyze", body, "-H 'Content-Type: text/plain'");
  EXPECT_EQ(plain.status, 415) << plain.body;
  HttpReply form = Http(port_, "POST", "/v1/analyze", body,
                        "-H 'Content-Type: application/x-www-form-urlencoded'");
  EXPECT_EQ(form.status, 415);
  HttpReply preflight = Http(port_, "OPTIONS", "/v1/analyze", "",
                             "-H 'Origin: http://evil.example' "
                             "-H 'Access-Control-Request-Method: POST'");
  EXPECT_EQ(preflight.status, 403);
  HttpReply rebound = Http(port_, "POST", "/v1/analyze", body, "-H 'Host: rebind.example'");
  EXPECT_EQ(rebound.status, 421) << rebound.body;
  EXPECT_THAT(rebound.body, HasSubstr("--http_allowed_hosts"));
  // No response allows every origin.
  auto [code, headers] = Shell(absl::StrCat("curl -s -D - -o /dev/null -X POST ",
                                            "-H 'Content-Type: application/json' --data-binary '",
                                            body, "' http://127.0.0.1:", port_, "/v1/analyze"));
  EXPECT_THAT(headers, HasSubstr("200 OK"));
  EXPECT_THAT(headers, ::testing::Not(HasSubstr("Access-Control-Allow-Origin")));

  // The static directory serves its regular files and nothing else: no CGI, SSI, dotfiles,
  // listings or symlinks out of it.
  const std::string ran = static_dir_.File("cgi-ran");
  std::ofstream(static_dir_.File("run.cgi")) << "#!/bin/sh\ntouch " << ran << "\necho ran\n";
  std::filesystem::permissions(static_dir_.File("run.cgi"), std::filesystem::perms::owner_all);
  std::ofstream(static_dir_.File(".secret")) << "token";
  std::ofstream(static_dir_.File("page.shtml")) << "<!--#exec cmd=\"id\" -->";
  std::filesystem::create_symlink("/etc/passwd", static_dir_.File("passwd.txt"));
  std::filesystem::create_directories(static_dir_.File("sub"));
  for (const char* path : {"/run.cgi", "/.secret", "/page.shtml", "/passwd.txt", "/sub/", "/sub",
                           "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd"}) {
    HttpReply r = Http(port_, "GET", path);
    EXPECT_EQ(r.status, 404) << path << ": " << r.body;
    EXPECT_THAT(r.body, ::testing::Not(HasSubstr("root:"))) << path;
  }
  EXPECT_FALSE(std::filesystem::exists(ran)) << "the CGI script ran";
  EXPECT_EQ(Http(port_, "GET", "/").status, 200);
  EXPECT_EQ(Http(port_, "POST", "/index.html", "{}").status, 405);
  HttpReply health = Http(port_, "GET", "/v1/health");
  EXPECT_EQ(health.status, 200) << "the server died: " << server_->Log();
}

// A connection that sends its request one byte at a time.
int SlowConnection(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  (void)!write(fd, "G", 1);
  return fd;
}

// 100 slow clients (a header byte now and then) do not starve the others: the dashboard and an
// Analyze still answer, and the slow connections are dropped after the request timeout. The
// times are printed, not asserted (bench/results holds figures; this machine is shared).
TEST(HttpSlowClientTest, SlowClientsDoNotStarveTheDashboardAndAreDropped) {
  TempDir dir;
  std::filesystem::create_directories(dir.File("static"));
  std::ofstream(dir.File("static/index.html")) << "<!doctype html><title>wavecrest</title>";
  ServerUnderTest server({"--http_listen=127.0.0.1:0", "--http_request_timeout_ms=2000",
                          "--http_static_dir=" + dir.File("static")});
  ASSERT_TRUE(server.WaitReady()) << server.Log();
  const int port = server.http_port();
  std::vector<int> slow;
  for (int i = 0; i < 100; ++i) {
    const int fd = SlowConnection(port);
    ASSERT_GE(fd, 0);
    slow.push_back(fd);
  }
  for (int fd : slow) (void)!write(fd, "E", 1);  // still in the request line
  const auto t0 = std::chrono::steady_clock::now();
  HttpReply page = Http(port, "GET", "/");
  const auto t1 = std::chrono::steady_clock::now();
  HttpReply analyze = Http(port, "POST", "/v1/analyze",
                           absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"h100-sxm"})"));
  const auto t2 = std::chrono::steady_clock::now();
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(analyze.status, 200) << analyze.body;
  std::printf("with 100 slow connections: dashboard %.0f ms, analyze %.0f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
  // Past the request timeout every slow connection has been closed by the server.
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  int closed = 0;
  for (int fd : slow) {
    (void)!write(fd, "T", 1);
    timeval tv{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[512];
    const ssize_t n = read(fd, buf, sizeof(buf));  // 0 (closed) or an error reply, then 0
    closed += n >= 0;
    close(fd);
  }
  EXPECT_EQ(closed, 100);
  EXPECT_EQ(Http(port, "GET", "/v1/health").status, 200) << server.Log();
}

TEST_F(HttpTest, HttpCallsAreCountedAsTheRpcsTheyAre) {
  ASSERT_EQ(Http(port_, "POST", "/v1/analyze",
                 absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"h100-sxm"})"))
                .status,
            200);
  const std::string m =
      Shell(absl::StrCat("curl -s http://127.0.0.1:", server_->metrics_port(), "/metrics")).second;
  EXPECT_THAT(m, HasSubstr(R"(wavecrest_requests_total{code="OK",method="Analyze"} 1)"));
  EXPECT_THAT(m, HasSubstr(R"(wavecrest_http_requests_total{route="/v1/analyze",status="200"} 1)"));
}

TEST(HttpAuthTest, TokensApplyToHttpCallersAndAdminCallsNeedAnAdmin) {
  TempDir dir;
  std::ofstream(dir.File("tokens")) << "client-token-0123456789 client\n"
                                       "admin-token-0123456789ab admin\n";
  std::filesystem::permissions(dir.File("tokens"), std::filesystem::perms::owner_read |
                                                       std::filesystem::perms::owner_write);
  ServerUnderTest server({"--http_listen=127.0.0.1:0", "--auth_tokens_file=" + dir.File("tokens")});
  ASSERT_TRUE(server.WaitReady(absl::Seconds(30), {{}, "client-token-0123456789"})) << server.Log();
  const std::string body = absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"h100-sxm"})");
  EXPECT_EQ(Http(server.http_port(), "POST", "/v1/analyze", body).status, 401);
  EXPECT_EQ(Http(server.http_port(), "POST", "/v1/analyze", body,
                 "-H 'Authorization: Bearer client-token-0123456789'")
                .status,
            200);
  EXPECT_EQ(Http(server.http_port(), "POST", "/v1/analyze", body,
                 "-H 'Authorization: Bearer wrong-token-0123456789'")
                .status,
            401);
}

}  // namespace
}  // namespace wavecrest
