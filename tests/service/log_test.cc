// The structured log (service/log.h): its values as JSON, and the buffering the server turns on.
// Each test runs in its own process (gtest_discover_tests), with stderr sent to a file.
#include "service/log.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/text.h"

namespace wavecrest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// stderr into a file for the life of the fixture; Messages() reads the "msg" of each line.
class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One file per test process: ctest runs the tests of this file side by side.
    path_ = absl::StrCat(::testing::TempDir(), "/log_test_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                         getpid(), ".txt");
    std::fflush(stderr);
    saved_ = dup(2);
    const int fd = open(path_.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    dup2(fd, 2);
    close(fd);
  }
  void TearDown() override {
    SetLogFlushInterval(absl::ZeroDuration());
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    std::remove(path_.c_str());
  }
  std::vector<std::string> Messages() const {
    std::ifstream in(path_);
    std::vector<std::string> out;
    std::string line;
    while (std::getline(in, line)) {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      out.push_back(j.is_discarded() ? "unparsable: " + line : j.value("msg", ""));
    }
    return out;
  }
  std::string path_;
  int saved_ = -1;
};

TEST_F(LogTest, EveryLineAtOnceByDefault) {
  LogInfo("one");
  EXPECT_THAT(Messages(), ElementsAre("one"));
  LogDebug("hidden");  // below the default level
  LogWarning("two");
  EXPECT_THAT(Messages(), ElementsAre("one", "two"));
}

TEST_F(LogTest, InfoLinesWaitAndAWarningWritesThemFirstInOrder) {
  SetLogFlushInterval(absl::Seconds(30));  // longer than the test: only warnings and Flush write
  LogInfo("a");
  LogInfo("b");
  EXPECT_THAT(Messages(), ElementsAre());
  LogWarning("w");
  EXPECT_THAT(Messages(), ElementsAre("a", "b", "w"));
  LogInfo("c");
  EXPECT_THAT(Messages(), ElementsAre("a", "b", "w"));
  FlushLogs();
  EXPECT_THAT(Messages(), ElementsAre("a", "b", "w", "c"));
  LogInfo("d");
  SetLogFlushInterval(absl::ZeroDuration());  // turning it off writes what waits
  EXPECT_THAT(Messages(), ElementsAre("a", "b", "w", "c", "d"));
  LogInfo("e");
  EXPECT_THAT(Messages(), ElementsAre("a", "b", "w", "c", "d", "e"));
}

TEST_F(LogTest, TheFlusherWritesWithinItsInterval) {
  // stderr into a pipe for this test: poll() wakes when the flusher thread writes (no sleeping).
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::fflush(stderr);
  const int file = dup(2);
  dup2(fds[1], 2);
  SetLogFlushInterval(absl::Milliseconds(50));
  LogInfo("soon");
  pollfd ready{fds[0], POLLIN, 0};
  const int events = poll(&ready, 1, 10000);
  char buf[4096];
  const ssize_t n = events == 1 ? read(fds[0], buf, sizeof buf) : 0;
  SetLogFlushInterval(absl::ZeroDuration());
  std::fflush(stderr);
  dup2(file, 2);
  close(file);
  close(fds[0]);
  close(fds[1]);
  ASSERT_EQ(events, 1) << "nothing was written within 10 s";
  EXPECT_THAT(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), HasSubstr("\"msg\":\"soon\""));
}

TEST_F(LogTest, PastItsCapABufferIsWrittenWithoutWaitingForTheFlusher) {
  SetLogFlushInterval(absl::Seconds(30));
  const std::string pad(1000, 'x');
  for (int i = 0; i < 100; ++i) LogInfo("big", {{"pad", pad}});
  // About 64 KiB of ~1.1 kB lines went out; the rest waits.
  EXPECT_GE(Messages().size(), 55u);
  EXPECT_LT(Messages().size(), 100u);
}

// The values as JSON, as nlohmann::json writes them (numbers stay numbers, text is escaped, bytes
// that are not UTF-8 become U+FFFD).
TEST_F(LogTest, ValuesAreWrittenAsTypedJson) {
  const std::string bad = "bad\xff byte \"quoted\" back\\slash\ttab";
  LogInfo("values", {{"text", "plain"},
                     {"bad", bad},
                     {"int", int64_t{-42}},
                     {"uint", uint64_t{18446744073709551615u}},
                     {"small", 7},
                     {"double", 0.1},
                     {"nan", std::nan("")},
                     {"flag", true},
                     {"msg", "ignored: never twice"}});
  std::ifstream in(path_);
  std::string line;
  std::getline(in, line);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], "values");
  EXPECT_EQ(j["text"], "plain");
  EXPECT_EQ(j["bad"], ToValidUtf8(bad));
  EXPECT_EQ(j["int"], -42);
  EXPECT_EQ(j["uint"], 18446744073709551615u);
  EXPECT_EQ(j["small"], 7);
  EXPECT_EQ(j["double"], 0.1);
  EXPECT_TRUE(j["nan"].is_null());
  EXPECT_EQ(j["flag"], true);
  EXPECT_THAT(line, HasSubstr(R"("double":0.1,)"));
  EXPECT_THAT(line, HasSubstr(R"("flag":true})"));
  EXPECT_EQ(LogValue(bad).json(), ToValidUtf8(bad));
  EXPECT_EQ(LogValue(3.5).json(), 3.5);
}

}  // namespace
}  // namespace wavecrest
