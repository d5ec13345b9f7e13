// What of the server's assembly (server/server.h) runs in process: the shutdown's grace on a fake
// clock (calls in flight are waited for, up to the grace and no longer), which listen addresses
// stay on this host, and the errors of a bad --calibration file.
#include "server/server.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(ServerTest, TheGraceWaitsForCallsInFlightAndNoLonger) {
  FakeClock clock;
  // Calls that finish 250 ms into the grace.
  const absl::Time start = clock.Now();
  int left = DrainInFlight([&] { return clock.Now() - start < absl::Milliseconds(250) ? 3 : 0; },
                           absl::Seconds(20), clock);
  EXPECT_EQ(left, 0);
  EXPECT_EQ(clock.Now() - start, absl::Milliseconds(250));
  // A call that never finishes: the grace ends it.
  const absl::Time second = clock.Now();
  left = DrainInFlight([] { return 1; }, absl::Seconds(20), clock);
  EXPECT_EQ(left, 1);
  EXPECT_EQ(clock.Now() - second, absl::Seconds(20));
  // Nothing in flight: no wait at all.
  const absl::Time third = clock.Now();
  EXPECT_EQ(DrainInFlight([] { return 0; }, absl::Seconds(20), clock), 0);
  EXPECT_EQ(clock.Now(), third);
}

TEST(ServerTest, LoopbackAndUnixSocketsAreLocal) {
  EXPECT_TRUE(LocalListen("127.0.0.1:50051"));
  EXPECT_TRUE(LocalListen("localhost:50051"));
  EXPECT_TRUE(LocalListen("[::1]:50051"));
  EXPECT_TRUE(LocalListen("unix:/tmp/wavecrest.sock"));
  EXPECT_FALSE(LocalListen("0.0.0.0:50051"));
  EXPECT_FALSE(LocalListen("[::]:50051"));
  EXPECT_FALSE(LocalListen("10.0.0.7:50051"));
}

TEST(ServerTest, ABadCalibrationFileIsRefusedNamingTheFlag) {
  absl::Status st = ApplyCalibrationFile("/nonexistent/calibration.json");
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(st.message()), HasSubstr("--calibration"));
  const std::string path =
      ::testing::TempDir() + "/server-test-calibration-" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << "{not json";
  st = ApplyCalibrationFile(path);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr(path));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace wavecrest
