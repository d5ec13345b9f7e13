// docs/ARCHITECTURE.md's method table and the code agree (issue 37, item 1): every Advisor RPC of
// the .proto is a row and every row an RPC, and each HTTP route the table names is one the
// gateway serves, calling that RPC (and the gateway serves no other).
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "server/http_gateway.h"
#include "wavecrest/v1/advisor.grpc.pb.h"

namespace wavecrest {
namespace {

struct Row {
  std::string role, runs, route;
};

// The rows of the table under "## The methods", by method.
std::map<std::string, Row> MethodTable() {
  std::ifstream in(std::string(WAVECREST_SOURCE_DIR) + "/docs/ARCHITECTURE.md");
  std::map<std::string, Row> rows;
  bool in_section = false, in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (absl::StartsWith(line, "## ")) in_section = line == "## The methods";
    if (!in_section) continue;
    if (absl::StartsWith(line, "| method |")) {
      in_table = true;
      continue;
    }
    if (!in_table || absl::StartsWith(line, "|---")) continue;
    if (!absl::StartsWith(line, "|")) {
      in_table = false;
      continue;
    }
    std::vector<std::string> cells = absl::StrSplit(line, '|');
    for (std::string& c : cells) c = std::string(absl::StripAsciiWhitespace(c));
    if (cells.size() < 6) continue;
    rows[cells[1]] = {cells[2], cells[3], cells[4]};
  }
  return rows;
}

TEST(MethodTable, EveryAdvisorRpcIsARowAndEveryRowAnRpc) {
  const std::map<std::string, Row> table = MethodTable();
  ASSERT_FALSE(table.empty()) << "no method table in docs/ARCHITECTURE.md";
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          "wavecrest.v1.Advisor");
  ASSERT_NE(service, nullptr);
  std::set<std::string> rpcs;
  for (int i = 0; i < service->method_count(); ++i) rpcs.insert(service->method(i)->name());
  for (const std::string& m : rpcs) EXPECT_TRUE(table.count(m)) << m << " has no row";
  for (const auto& [m, row] : table) {
    EXPECT_TRUE(rpcs.count(m)) << m << " is not an Advisor RPC";
    EXPECT_TRUE(row.runs == "inline" || row.runs == "queued") << m << ": " << row.runs;
    EXPECT_TRUE(absl::StartsWith(row.role, "client") || row.role == "admin") << m;
  }
}

TEST(MethodTable, EveryHttpRouteIsTheRpcTheTableSays) {
  const std::map<std::string, Row> table = MethodTable();
  std::map<std::string, std::string> served;  // "POST /v1/analyze" -> RPC
  for (const HttpRoute& r : HttpApiRoutes()) served[r.method + " " + r.path] = r.rpc;
  std::set<std::string> listed;
  for (const auto& [m, row] : table) {
    if (row.route == "-") continue;
    listed.insert(row.route);
    auto it = served.find(row.route);
    ASSERT_NE(it, served.end()) << row.route << " (" << m << ") is not served";
    EXPECT_EQ(it->second, m) << row.route;
  }
  for (const auto& [route, rpc] : served) EXPECT_TRUE(listed.count(route)) << route << " unlisted";
}

}  // namespace
}  // namespace wavecrest
