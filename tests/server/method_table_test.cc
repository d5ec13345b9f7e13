// docs/ARCHITECTURE.md's method table and glossary agree with the code (issue 37, items 1 and 2):
// every Advisor RPC of the .proto is a row and every row an RPC, and each HTTP route the table
// names is one the gateway serves, calling that RPC (and the gateway serves no other); every name
// of the glossary is declared where it says, and the retired names are gone from the code.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "core/network.h"
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

// The cells of the table under `section` whose header starts with `header`, row by row.
std::vector<std::vector<std::string>> DocTable(const std::string& section,
                                               const std::string& header) {
  std::ifstream in(std::string(WAVECREST_SOURCE_DIR) + "/docs/ARCHITECTURE.md");
  std::vector<std::vector<std::string>> rows;
  bool in_section = false, in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (absl::StartsWith(line, "## ")) in_section = line == section;
    if (!in_section) continue;
    if (absl::StartsWith(line, header)) {
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
    rows.push_back(std::move(cells));
  }
  return rows;
}

// The rows of the table under "## The methods", by method.
std::map<std::string, Row> MethodTable() {
  std::map<std::string, Row> rows;
  for (const std::vector<std::string>& cells : DocTable("## The methods", "| method |")) {
    if (cells.size() >= 6) rows[cells[1]] = {cells[2], cells[3], cells[4]};
  }
  return rows;
}

std::string ReadSource(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(MethodTable, EveryAdvisorRpcIsARowAndEveryRowAnRpc) {
  const std::map<std::string, Row> table = MethodTable();
  ASSERT_FALSE(table.empty()) << "no method table in docs/ARCHITECTURE.md";
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("wavecrest.v1.Advisor");
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

TEST(MethodTable, EveryRpcHasAnInProcessTest) {
  const std::string tests =
      ReadSource(std::string(WAVECREST_SOURCE_DIR) + "/tests/server/advisor_service_test.cc");
  for (const auto& [m, row] : MethodTable()) {
    EXPECT_TRUE(absl::StrContains(tests, "stub()." + m + "(")) << m << " is not called there";
  }
}

TEST(Glossary, EveryNameIsDeclaredWhereTheTableSays) {
  const auto rows = DocTable("## Glossary", "| name |");
  ASSERT_GE(rows.size(), 5u) << "no glossary in docs/ARCHITECTURE.md";
  for (const std::vector<std::string>& cells : rows) {
    ASSERT_GE(cells.size(), 5u);
    const std::string& name = cells[1];
    const std::string text = ReadSource(std::string(WAVECREST_SOURCE_DIR) + "/" + cells[3]);
    ASSERT_FALSE(text.empty()) << cells[3] << " (" << name << ") cannot be read";
    EXPECT_TRUE(absl::StrContains(text, "class " + name + " ") ||
                absl::StrContains(text, "struct " + name + " "))
        << name << " is not declared in " << cells[3];
  }
}

// Whether `text` holds `word` as a whole word (not inside a longer identifier), in any case
// when `any_case` (a retired phrase of prose: "Result cache" is the same word).
bool HoldsWord(const std::string& text, const std::string& word, bool any_case) {
  const std::string hay = any_case ? absl::AsciiStrToLower(text) : text;
  const std::string needle = any_case ? absl::AsciiStrToLower(word) : word;
  auto ident = [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) {
    const bool starts = at == 0 || !ident(hay[at - 1]);
    const size_t end = at + needle.size();
    if (starts && (end == hay.size() || !ident(hay[end]))) return true;
  }
  return false;
}

TEST(Glossary, HoldsWordMatchesWholeWordsOnly) {
  EXPECT_TRUE(HoldsWord("x = CodeName(c);", "CodeName", false));
  EXPECT_FALSE(HoldsWord("x = StatusCodeName(c);", "CodeName", false));
  EXPECT_TRUE(HoldsWord("// the Result Cache holds", "result cache", true));
  EXPECT_FALSE(HoldsWord("\"wavecrest-result-cache\"", "result cache", true));
}

// The retired names and words are gone from the code (help texts included: they are in the
// code), the .proto files (their comments are the API's documentation), the dashboard and the
// prose, but for the one paragraph of docs/ARCHITECTURE.md that lists them to keep them retired.
// Names are matched as whole identifiers; words (prose) as whole words in any case.
TEST(Glossary, RetiredNamesAreGoneFromCodeProtoAndProse) {
  const std::vector<std::string> names = {
      "ResultStore",        "ResultCache",          "WorkerDirectory", "TimingSummary",
      "PlanTimeGemms",      "PlanTimeLayers",       "LookUpCache",     "MarkFromCache",
      "CachedMeasurements", "CachedMeasurementsBy", "CodeName",        "WC_TRY_ASSIGN"};
  const std::vector<std::string> words = {"result cache", "results cache"};
  const std::filesystem::path source(WAVECREST_SOURCE_DIR);
  const std::set<std::string> kinds = {".cc", ".h", ".cu", ".proto", ".md", ".ts", ".html", ".py"};
  std::vector<std::filesystem::path> files = {source / "README.md", source / "SECURITY.md"};
  for (const char* dir : {"core", "service", "server", "client", "gpu_worker", "tests", "bench",
                          "proto", "docs", "web/src", "web/tests", "deploy", "examples"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(source / dir)) {
      if (entry.is_regular_file() && kinds.count(entry.path().extension().string()) > 0) {
        files.push_back(entry.path());
      }
    }
  }
  int read = 0;
  for (const std::filesystem::path& path : files) {
    if (path.filename() == "method_table_test.cc") continue;  // names them to refuse
    if (path.string().find("/python/wavecrest/v1/") != std::string::npos) continue;  // generated
    if (path.string().find("/node_modules/") != std::string::npos) continue;
    std::string text = ReadSource(path);
    if (path.filename() == "ARCHITECTURE.md") {
      const size_t from = text.find("Retired names (do not bring them back)");
      if (from != std::string::npos) text.erase(from, text.find("\n\n", from) - from);
    }
    ++read;
    for (const std::string& name : names) {
      EXPECT_FALSE(HoldsWord(text, name, false)) << path << " still says " << name;
    }
    for (const std::string& word : words) {
      EXPECT_FALSE(HoldsWord(text, word, true)) << path << " still says " << word;
    }
  }
  EXPECT_GT(read, 100);
}

// The same knobs in the CLI, the API and the dashboard: every named network and every attention
// kernel the core knows is an option of the dashboard's selects (the CLI's and the API's take the
// core's names and enums directly).
TEST(Clients, TheDashboardOffersEveryNetworkAndAttentionKernel) {
  const std::string page = ReadSource(std::string(WAVECREST_SOURCE_DIR) + "/web/index.html");
  ASSERT_FALSE(page.empty());
  for (const NetworkProfile& n : NetworkProfiles()) {
    EXPECT_NE(page.find("<option value=\"" + n.name + "\">"), std::string::npos) << n.name;
  }
  const google::protobuf::EnumDescriptor* attention =
      google::protobuf::DescriptorPool::generated_pool()->FindEnumTypeByName(
          "wavecrest.v1.Attention");
  ASSERT_NE(attention, nullptr);
  for (int i = 0; i < attention->value_count(); ++i) {
    const std::string name = attention->value(i)->name();
    if (name == "ATTENTION_UNSPECIFIED") continue;
    EXPECT_NE(page.find("<option value=\"" + name + "\">"), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace wavecrest
