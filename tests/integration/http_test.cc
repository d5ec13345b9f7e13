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
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/http_client.h"
#include "tests/integration/process.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using testing::ServerUnderTest;
using testing::Shell;
using testing::SourcePath;
using testing::TempDir;
using testing::Http;
using testing::HttpReply;
using testing::Json;
using testing::Lines;
using testing::ConnectLoopback;
using testing::MakeDashboard;
using testing::RawStatus;

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
  // A model exported as a Hugging Face config.json (and parsed back), or as a wavecrest spec.
  const nlohmann::json spec = Json(parsed.body);
  HttpReply exported = Http(port_, "POST", "/v1/export-model",
                            nlohmann::json{{"model", spec}, {"format", "hf"}}.dump());
  ASSERT_EQ(exported.status, 200) << exported.body;
  EXPECT_EQ(Json(exported.body)["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(Json(exported.body)["num_hidden_layers"], 32);
  HttpReply back = Http(port_, "POST", "/v1/parse-model", exported.body);
  ASSERT_EQ(back.status, 200) << back.body;
  EXPECT_EQ(Json(back.body)["intermediate_size"], Json(parsed.body)["intermediate_size"]);
  HttpReply as_spec = Http(port_, "POST", "/v1/export-model",
                           nlohmann::json{{"model", spec}, {"format", "wavecrest"}}.dump());
  ASSERT_EQ(as_spec.status, 200) << as_spec.body;
  EXPECT_EQ(Json(as_spec.body)["num_layers"], "32");
  HttpReply bad = Http(port_, "POST", "/v1/export-model",
                       nlohmann::json{{"model", spec}, {"format", "onnx"}}.dump());
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body, HasSubstr("format"));
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

// HTTP framing a proxy and this server could read differently, and malformed bodies and values:
// each is refused with a 4xx (or the connection closed), and the server stays up.
TEST_F(HttpTest, AmbiguousFramingAndOutOfRangeValuesAreRefused) {
  const std::string body = absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"h100-sxm"})");
  const std::string head =
      "POST /v1/analyze HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  const std::string length = absl::StrCat("Content-Length: ", body.size(), "\r\n");
  ASSERT_EQ(RawStatus(port_, head + length + "\r\n" + body), 200);
  struct Case {
    const char* what;
    std::string raw;
  };
  const std::vector<Case> cases = {
      {"two Content-Lengths that differ", head + length + "Content-Length: 5\r\n\r\n" + body},
      {"two Content-Lengths that agree", head + length + length + "\r\n" + body},
      {"two Hosts", head + "Host: other.example\r\n" + length + "\r\n" + body},
      {"a negative Content-Length", head + "Content-Length: -5\r\n\r\n" + body},
      {"a Content-Length past 2^64", head + "Content-Length: 99999999999999999999\r\n\r\n" + body},
      {"a Content-Length with junk", head + "Content-Length: 12abc\r\n\r\n" + body},
      {"a chunk size that is not hex", head + "Transfer-Encoding: chunked\r\n\r\nZZ\r\nab\r\n0\r\n\r\n"},
      {"a chunk longer than its size", head + "Transfer-Encoding: chunked\r\n\r\n5\r\nabcdefghij\r\n0\r\n\r\n"},
      {"chunked and a Content-Length", head + "Transfer-Encoding: chunked\r\n" + length + "\r\n" + body},
      {"a coding before chunked", head + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"},
      {"no request line", "GARBAGE\r\n\r\n"},
      {"a 20 kB header", "GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " +
                             std::string(20000, 'a') + "\r\n\r\n"},
  };
  for (const Case& c : cases) {
    const int status = RawStatus(port_, c.raw);
    EXPECT_TRUE(status == 0 || (status >= 400 && status < 500)) << c.what << ": " << status;
  }
  // Values a JSON number can hold and an int64 cannot, and a string where a number goes.
  for (const char* value : {"18446744073709551615", "9223372036854775808", "1e30", "-1", "\"x\""}) {
    HttpReply r = Http(port_, "POST", "/v1/analyze",
                       absl::StrCat(R"({"model":{"hidden_size":2560,"num_attention_heads":32,)",
                                    R"("num_layers":32,"vocab_size":50304,"micro_batch_size":)",
                                    value, R"(},"gpu":"h100-sxm"})"));
    EXPECT_EQ(r.status, 400) << value << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr("micro_batch_size")) << value;
  }
  EXPECT_EQ(Http(port_, "GET", "/v1/health").status, 200) << "the server died: " << server_->Log();
}

// A short live fuzz over real sockets: a valid request mutated at random (bytes flipped, inserted,
// cut; headers repeated or dropped; bodies spliced), 1500 times from a fixed seed. No reply is a
// 5xx and the server answers afterwards.
TEST_F(HttpTest, MutatedRequestsOverRealSocketsNeverCrashOrFailTheServer) {
  const std::string body = absl::StrCat(R"({"model":)", kPythia, R"(,"gpu":"h100-sxm"})");
  const std::vector<std::string> seeds = {
      absl::StrCat("POST /v1/analyze HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                   "application/json\r\nContent-Length: ",
                   body.size(), "\r\n\r\n", body),
      "GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n",
      "GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n",
      absl::StrCat("POST /v1/parse-model HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                   "application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n"),
  };
  // Bytes that matter to HTTP and JSON, a NUL and invalid UTF-8 among them (sizeof keeps the NUL).
  static constexpr char kBytes[] = "\r\n:{}\"\\%/.-0 \x00\xff\x80\xc3";
  const std::string alphabet =
      std::string(kBytes, sizeof(kBytes) - 1) + "aAzZ9\tchunkedContent-LengthHost";
  uint64_t state = 0x2545F4914F6CDD1DULL;
  auto next = [&]() {  // xorshift64: the same sequence on every run
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int server_errors = 0, replies = 0;
  std::map<int, int> by_status;  // -1: could not connect; 0: closed without a reply
  for (int i = 0; i < 1500; ++i) {
    std::string raw = seeds[next() % seeds.size()];
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits && !raw.empty(); ++e) {
      const size_t at = next() % raw.size();
      switch (next() % 5) {
        case 0:
          raw[at] = alphabet[next() % alphabet.size()];
          break;
        case 1:
          raw.insert(at, 1, alphabet[next() % alphabet.size()]);
          break;
        case 2:
          raw.erase(at, 1 + next() % 8);
          break;
        case 3: {  // repeat a line (a header twice)
          const size_t start = raw.rfind('\n', at);
          const size_t end = raw.find('\n', at);
          if (start != std::string::npos && end != std::string::npos && end > start) {
            raw.insert(end + 1, raw.substr(start + 1, end - start));
          }
          break;
        }
        default:
          raw.resize(at);  // cut short
      }
    }
    const int status = RawStatus(port_, raw);
    replies += status > 0;
    ++by_status[status];
    // 505: the request line names an HTTP version that does not exist (the client's fault,
    // numbered 5xx by RFC 9110).
    if (status >= 500 && status != 505) {
      ++server_errors;
      ADD_FAILURE() << "status " << status << " for " << absl::CEscape(raw);
      if (server_errors > 3) break;
    }
  }
  std::string statuses;
  for (auto [status, n] : by_status) absl::StrAppend(&statuses, " ", status, ":", n);
  std::printf("live fuzz: 1500 mutated requests, %d HTTP replies, %d 5xx other than 505; by "
              "status%s\n",
              replies, server_errors, statuses.c_str());
  EXPECT_EQ(by_status.count(-1), 0u) << "connections refused";
  EXPECT_EQ(Http(port_, "GET", "/v1/health").status, 200) << "the server died: " << server_->Log();
}

// A connection that sends its request one byte at a time.
int SlowConnection(int port) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return -1;
  (void)!write(fd, "G", 1);
  return fd;
}

// 100 slow clients (a header byte now and then) do not starve the others: the dashboard and an
// Analyze still answer, and the slow connections are dropped after the request timeout. The
// times are printed, not asserted (bench/results holds figures; this machine is shared).
TEST(HttpSlowClientTest, SlowClientsDoNotStarveTheDashboardAndAreDropped) {
  TempDir dir;
  const std::string dashboard = MakeDashboard(dir);
  ServerUnderTest server({"--http_listen=127.0.0.1:0", "--http_request_timeout_ms=2000",
                          "--http_static_dir=" + dashboard});
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
