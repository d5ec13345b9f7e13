// The HTTP API's route table (server/http_routes.h): its routes, the bounded metric labels, the
// list the 404 and --help give, and how each route decodes its body (the JSON limits first).
#include "server/http_routes.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/errors.h"
#include "wavecrest/v1/advisor.pb.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(HttpRoutesTest, EachRouteIsOnePathOneMethodOneRpc) {
  const std::vector<HttpRoute> routes = HttpApiRoutes();
  ASSERT_GE(routes.size(), 9u);
  std::set<std::string> paths, rpcs;
  for (const HttpRoute& r : routes) {
    EXPECT_TRUE(absl::StartsWith(r.path, "/v1/")) << r.path;
    EXPECT_TRUE(r.method == "GET" || r.method == "POST") << r.path << " " << r.method;
    EXPECT_TRUE(paths.insert(r.path).second) << r.path << " twice";
    EXPECT_TRUE(rpcs.insert(r.rpc).second) << r.rpc << " twice";
  }
  // The health route is the gRPC health service's, not an Advisor RPC.
  EXPECT_EQ(paths.count("/v1/health"), 0u);
  EXPECT_EQ(paths.count("/v1/export-model"), 1u);
}

TEST(HttpRoutesTest, TheRouteListNamesEveryRouteWithItsMethodAndHealth) {
  const std::string list = HttpRouteList();
  const size_t get_at = list.find(" and GET ");
  ASSERT_NE(get_at, std::string::npos) << list;
  ASSERT_TRUE(absl::StartsWith(list, "POST ")) << list;
  for (const HttpRoute& r : HttpApiRoutes()) {
    const size_t at = list.find(r.path);
    ASSERT_NE(at, std::string::npos) << r.path << " missing from " << list;
    EXPECT_EQ(r.method == "GET", at > get_at) << r.path << " under the wrong method: " << list;
  }
  EXPECT_TRUE(absl::EndsWith(list, "/v1/health")) << list;
}

TEST(HttpRoutesTest, MetricLabelsAreTheRoutesHealthOrOther) {
  for (const HttpRoute& r : HttpApiRoutes()) EXPECT_EQ(RouteLabel(r.path), r.path);
  EXPECT_EQ(RouteLabel("/v1/health"), "/v1/health");
  for (const char* path : {"/v1/nope", "/v1/analyze/", "/", "/index.html", "/V1/ANALYZE", ""}) {
    EXPECT_EQ(RouteLabel(path), "other") << path;
  }
}

TEST(HttpRoutesTest, JsonRoutesDecodeTheProtobufJsonMapping) {
  auto analyze = DecodeApiRequest("/v1/analyze", R"({"gpu": "h100-sxm", "model": {"name": "m"}})");
  ASSERT_TRUE(analyze.ok()) << analyze.status();
  const auto* q = dynamic_cast<const v1::AnalyzeRequest*>(analyze->get());
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->gpu(), "h100-sxm");
  EXPECT_EQ(q->model().name(), "m");
  // A GET route's empty body is its default request.
  auto devices = DecodeApiRequest("/v1/devices", "");
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_NE(dynamic_cast<const v1::ListDevicesRequest*>(devices->get()), nullptr);
}

TEST(HttpRoutesTest, ParseModelTakesTheBodyAsTheTextToParse) {
  const std::string text = R"({"model_type": "llama", "hidden_size": 4096})";
  auto parsed = DecodeApiRequest("/v1/parse-model", text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const auto* q = dynamic_cast<const v1::ParseModelRequest*>(parsed->get());
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->text(), text);
}

TEST(HttpRoutesTest, BadBodiesAreRefusedNamingTheBody) {
  auto unknown = DecodeApiRequest("/v1/analyze", R"({"no_such_field": 1})");
  ASSERT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  auto not_json = DecodeApiRequest("/v1/sweep", "{");
  ASSERT_EQ(not_json.status().code(), absl::StatusCode::kInvalidArgument);
  // Past the JSON limits (core/json_limits.h) nothing is parsed: the body is the field.
  const std::string deep = std::string(10000, '[') + std::string(10000, ']');
  auto too_deep = DecodeApiRequest("/v1/analyze", deep);
  ASSERT_EQ(too_deep.status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<FieldViolation> why = ViolationsOf(too_deep.status());
  ASSERT_FALSE(why.empty()) << too_deep.status();
  EXPECT_EQ(why[0].field, "body");
}

TEST(HttpRoutesTest, APathThatIsNoRouteIsNotFound) {
  EXPECT_EQ(DecodeApiRequest("/v1/nope", "{}").status().code(), absl::StatusCode::kNotFound);
  // /v1/health has no request body to decode: it is no JSON route.
  EXPECT_EQ(DecodeApiRequest("/v1/health", "").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace wavecrest
