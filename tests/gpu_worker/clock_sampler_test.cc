// Unit tests of the NVML clock sampler (gpu_worker/clock_sampler.h): opening only a real NVML, the
// median clock, and each sample's clock from the readings.
#include "gpu_worker/clock_sampler.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

// NVML is optional: without it (or without its entry points) the sampler says why and the engine
// falls back to its clock probe.
TEST(ClockSampler, OpensOnlyARealNvmlAndSaysWhyNot) {
  std::string why;
  EXPECT_EQ(ClockSampler::Open("0000:00:00.0", &why, "libwavecrest-no-such-nvml.so"), nullptr);
  EXPECT_THAT(why, HasSubstr("libwavecrest-no-such-nvml.so"));
  EXPECT_EQ(ClockSampler::Open("0000:00:00.0", &why, "libm.so.6"), nullptr);
  EXPECT_THAT(why, HasSubstr("entry points"));
  EXPECT_EQ(MedianMhz({}), 0);
  EXPECT_EQ(MedianMhz({1980, 1755, 1980, 1410, 1980}), 1980);
}

// Each sample gets the last NVML reading taken at or before its end (the clock it ran at), so
// that a clock that steps while sampling is seen per sample (core/sample_policies.h).
TEST(ClockPerSample, EachSampleTakesTheLastReadingBeforeItsEnd) {
  const std::vector<ClockReading> readings = {{100, 1980}, {200, 1980}, {300, 1485}, {400, 1485}};
  EXPECT_THAT(ClockPerSample(readings, {50, 150, 250, 300, 350, 900}),
              ::testing::ElementsAre(1980, 1980, 1980, 1485, 1485, 1485));
  EXPECT_THAT(ClockPerSample({}, {1, 2}), ::testing::ElementsAre(0, 0));
  const int64_t first = SteadyNowNs();
  EXPECT_LE(first, SteadyNowNs());  // steady
}

}  // namespace
}  // namespace wavecrest
