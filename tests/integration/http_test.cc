// The HTTP/JSON gateway (server/http_gateway.h) of a real server, with curl: the Advisor API as
// JSON in and out, streams as newline-delimited JSON, errors as JSON naming the field with the
// HTTP status gRPC-gateway uses, the same metrics and authentication as gRPC, the dashboard's
// files.
#include <fstream>

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
  auto [code, out] = Shell(absl::StrCat("curl -s -N -X ", method, " ", headers,
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
