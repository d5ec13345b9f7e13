// The dashboard's client and the gateway's route table cannot drift (issue 53, item 3): every route
// that web/src/api.ts names in its ROUTES is one the gateway serves (server/http_routes.cc's
// HttpApiRoutes(), or GET /v1/health), with the same method, and no other file of web/src names a
// /v1/ path, so every call the dashboard makes goes through api.ts.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/http_routes.h"

namespace wavecrest {
namespace {

// One entry of api.ts's ROUTES: `name: { method: "GET", path: "/v1/devices" },`.
struct WebRoute {
  std::string name, method, path;
};

const std::filesystem::path& WebSourceDir() {
  static const std::filesystem::path dir =
      std::filesystem::path(WAVECREST_SOURCE_DIR) / "web" / "src";
  return dir;
}

std::string WebFileText(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text of api.ts's `export const ROUTES = { ... } as const;`, or "" when there is none.
std::string RoutesBlock(const std::string& api_ts) {
  const size_t begin = api_ts.find("export const ROUTES = {");
  if (begin == std::string::npos) return "";
  const size_t end = api_ts.find("} as const;", begin);
  if (end == std::string::npos) return "";
  return api_ts.substr(begin, end - begin);
}

// The entries of a ROUTES block, in order.
std::vector<WebRoute> ParseWebRoutes(const std::string& block) {
  static const std::regex kEntry(
      R"re((\w+):\s*\{\s*method:\s*"([A-Z]+)",\s*path:\s*"([^"]*)"\s*\})re");
  std::vector<WebRoute> out;
  for (std::sregex_iterator it(block.begin(), block.end(), kEntry), last; it != last; ++it) {
    out.push_back({(*it)[1], (*it)[2], (*it)[3]});
  }
  return out;
}

// How often `text` writes a /v1/ path as a string literal ("/v1/, '/v1/ or `/v1/).
int QuotedApiPaths(const std::string& text) {
  int n = 0;
  for (const char* quote : {"\"", "'", "`"}) {
    const std::string needle = absl::StrCat(quote, "/v1/");
    for (size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + 1)) {
      ++n;
    }
  }
  return n;
}

// The entries the gateway does not serve as written, each as "GET /v1/x (why)"; empty when all are.
std::vector<std::string> UnservedWebRoutes(const std::vector<WebRoute>& routes,
                                           const std::vector<HttpRoute>& table) {
  std::vector<std::string> out;
  for (const WebRoute& r : routes) {
    const std::string what = absl::StrCat(r.name, ": ", r.method, " ", r.path);
    if (r.path == "/v1/health") {
      if (r.method != "GET") out.push_back(absl::StrCat(what, " (the gateway answers GET)"));
      continue;
    }
    const HttpRoute* served = nullptr;
    for (const HttpRoute& t : table) {
      if (t.path == r.path) served = &t;
    }
    if (served == nullptr) {
      out.push_back(absl::StrCat(what, " (no such route in server/http_routes.cc)"));
    } else if (served->method != r.method) {
      out.push_back(absl::StrCat(what, " (the gateway answers ", served->method, ")"));
    }
  }
  return out;
}

TEST(WebRoutes, TheDashboardNamesOnlyTheGatewaysRoutes) {
  const std::string block = RoutesBlock(WebFileText(WebSourceDir() / "api.ts"));
  ASSERT_FALSE(block.empty()) << "web/src/api.ts has no `export const ROUTES = { ... } as const;`";
  const std::vector<WebRoute> routes = ParseWebRoutes(block);
  // Every path of the block is read as an entry: one written another way is not skipped unseen.
  ASSERT_EQ(routes.size(), static_cast<size_t>(QuotedApiPaths(block)))
      << "an entry of api.ts's ROUTES is not `name: { method: \"GET\", path: \"/v1/...\" }`";
  ASSERT_GE(routes.size(), 7u) << "the dashboard calls health, devices, models, parse-model, "
                                  "analyze, recommend and sweep at least";
  for (const std::string& wrong : UnservedWebRoutes(routes, HttpApiRoutes())) {
    ADD_FAILURE() << "web/src/api.ts " << wrong;
  }
}

TEST(WebRoutes, NoFileButApiTsNamesARoute) {
  const std::string api_ts = WebFileText(WebSourceDir() / "api.ts");
  const int in_routes = QuotedApiPaths(RoutesBlock(api_ts));
  EXPECT_EQ(QuotedApiPaths(api_ts), in_routes)
      << "web/src/api.ts writes a /v1/ path outside ROUTES: use ROUTES.<name>.path";
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(WebSourceDir())) {
    const std::filesystem::path& p = entry.path();
    if (!entry.is_regular_file() || p.extension() != ".ts" || p.filename() == "api.ts") continue;
    ++files;
    EXPECT_EQ(QuotedApiPaths(WebFileText(p)), 0)
        << p.lexically_relative(WebSourceDir()) << " names a /v1/ path: call it through api.ts";
  }
  EXPECT_GT(files, 1) << "no dashboard sources found under " << WebSourceDir();
}

// The check itself: a route the gateway lacks, or one under the wrong method, is reported.
TEST(WebRoutes, AnUnservedOrMisdirectedRouteIsReported) {
  const std::vector<WebRoute> routes = ParseWebRoutes(
      "export const ROUTES = {\n"
      "  health: { method: \"GET\", path: \"/v1/health\" },\n"
      "  analyze: { method: \"GET\", path: \"/v1/analyze\" },\n"
      "  gone: { method: \"POST\", path: \"/v1/no-such-route\" },\n"
      "  sweep: { method: \"POST\", path: \"/v1/sweep\" },\n");
  ASSERT_EQ(routes.size(), 4u);
  EXPECT_EQ(routes[2].name, "gone");
  EXPECT_EQ(routes[2].method, "POST");
  EXPECT_EQ(routes[2].path, "/v1/no-such-route");
  const std::vector<std::string> wrong = UnservedWebRoutes(routes, HttpApiRoutes());
  ASSERT_EQ(wrong.size(), 2u);
  EXPECT_TRUE(absl::StrContains(wrong[0], "analyze: GET /v1/analyze (the gateway answers POST)"))
      << wrong[0];
  EXPECT_TRUE(absl::StrContains(wrong[1], "/v1/no-such-route (no such route")) << wrong[1];
}

}  // namespace
}  // namespace wavecrest
