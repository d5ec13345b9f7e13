// wavecrest-server's command line (server/main.cc), run as the program: its --help lists the HTTP
// API's routes exactly as the one route table has them, bad flags are refused naming the flag
// (exit 2) before anything starts, and copy-store is its one command.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http_routes.h"
#include "tests/test_paths.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

struct Ran {
  int code = -1;
  std::string out;  // stdout and stderr together
};

// Runs wavecrest-server with `args` (shell words) and no WAVECREST_* settings from the test's
// environment; returns its exit code and output.
Ran RunServerProgram(const std::string& args) {
  const std::string command =
      absl::StrCat("env $(env | sed -n 's/^\\(WAVECREST_[A-Z_]*\\)=.*/-u \\1/p') ",
                   ::wavecrest::testing::BinaryPath("server/wavecrest-server"), " ", args, " 2>&1");
  Ran r;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(ServerMainTest, HelpListsExactlyTheRoutesOfTheRouteTable) {
  const Ran help = RunServerProgram("--help");
  ASSERT_THAT(help.out, HasSubstr("wavecrest-server: the wavecrest Advisor gRPC service"));
  std::set<std::string> table = {"/v1/health"};
  for (const HttpRoute& r : HttpApiRoutes()) table.insert(r.path);
  // Every /v1/ path the help names anywhere, and the line that lists them.
  std::set<std::string> named;
  const std::regex path(R"(/v1/[a-z-]+)");
  for (std::sregex_iterator it(help.out.begin(), help.out.end(), path), end; it != end; ++it) {
    named.insert(it->str());
  }
  EXPECT_EQ(named, table);
  EXPECT_THAT(help.out,
              HasSubstr(absl::StrCat("HTTP/JSON API (--http_listen): ", HttpRouteList(), ".")));
}

TEST(ServerMainTest, BadFlagsAreRefusedNamingTheFlag) {
  Ran r = RunServerProgram("--store_timeout_ms=10");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--store_timeout_ms must be at least 50"));

  r = RunServerProgram("--store=a.db --cache=b.db");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("give --store or --cache, not both"));

  r = RunServerProgram("--queue_capacity=0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--queue_capacity must be >= 1"));

  r = RunServerProgram("--log_flush_ms=-1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--log_flush_ms -1 is outside [0, 10000]"));
}

TEST(ServerMainTest, CopyStoreIsTheOneCommand) {
  Ran r = RunServerProgram("frobnicate");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("the one command is"));
  EXPECT_THAT(r.out, HasSubstr("copy-store FROM TO"));
  r = RunServerProgram("copy-store only-one.db");
  EXPECT_EQ(r.code, 2) << r.out;
}

TEST(ServerMainTest, CopyStoreCopiesOneSqliteStoreIntoAnother) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("wavecrest-main-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string from = (dir / "from.db").string(), to = (dir / "to.db").string();
  Ran r = RunServerProgram(absl::StrCat("copy-store ", from, " ", to));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("copied 0 results from"));
  EXPECT_TRUE(std::filesystem::exists(to));
  // A FROM that cannot be opened (under a plain file, no folder can be made): exit 1, saying
  // which side failed.
  std::ofstream(dir / "plain") << "not a folder";
  r = RunServerProgram(absl::StrCat("copy-store ", (dir / "plain" / "from.db").string(), " ", to));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("copy-store: FROM:"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace wavecrest
