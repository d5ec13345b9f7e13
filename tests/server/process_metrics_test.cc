// The standard process_* metrics (server/process_metrics.h), read from /proc at each scrape: each
// family is there with its Prometheus type, and the values follow the process.
#include "server/process_metrics.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace wavecrest {
namespace {

// name -> the family, from one scrape.
std::map<std::string, prometheus::MetricFamily> Scrape() {
  std::map<std::string, prometheus::MetricFamily> out;
  for (prometheus::MetricFamily& f : ProcessMetrics().Collect()) out[f.name] = f;
  return out;
}

double Value(const prometheus::MetricFamily& f) {
  EXPECT_EQ(f.metric.size(), 1u) << f.name;
  if (f.metric.empty()) return -1;
  return f.type == prometheus::MetricType::Counter ? f.metric[0].counter.value
                                                   : f.metric[0].gauge.value;
}

TEST(ProcessMetricsTest, EveryStandardFamilyIsThereWithItsType) {
  const auto families = Scrape();
  const std::map<std::string, prometheus::MetricType> expected = {
      {"process_cpu_seconds_total", prometheus::MetricType::Counter},
      {"process_resident_memory_bytes", prometheus::MetricType::Gauge},
      {"process_virtual_memory_bytes", prometheus::MetricType::Gauge},
      {"process_start_time_seconds", prometheus::MetricType::Gauge},
      {"process_open_fds", prometheus::MetricType::Gauge},
      {"process_max_fds", prometheus::MetricType::Gauge},
  };
  for (const auto& [name, type] : expected) {
    auto it = families.find(name);
    ASSERT_NE(it, families.end()) << name;
    EXPECT_EQ(it->second.type, type) << name;
    EXPECT_FALSE(it->second.help.empty()) << name;
  }
}

TEST(ProcessMetricsTest, ValuesAreThisProcesss) {
  auto f = Scrape();
  EXPECT_GT(Value(f["process_resident_memory_bytes"]), 1 << 20);  // a test binary holds > 1 MiB
  EXPECT_GE(Value(f["process_virtual_memory_bytes"]), Value(f["process_resident_memory_bytes"]));
  EXPECT_GE(Value(f["process_cpu_seconds_total"]), 0);
  // Seconds since the epoch: after 2020, and a whole number of clock ticks after boot.
  EXPECT_GT(Value(f["process_start_time_seconds"]), 1.5e9);
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(Value(f["process_max_fds"]), static_cast<double>(limit.rlim_cur));
}

TEST(ProcessMetricsTest, OpenFdsCountsEveryDescriptorButTheScrapesOwn) {
  const double before = Value(Scrape()["process_open_fds"]);
  EXPECT_GE(before, 3);  // stdin, stdout, stderr at least
  const int fd = open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(Value(Scrape()["process_open_fds"]), before + 1);
  close(fd);
  EXPECT_EQ(Value(Scrape()["process_open_fds"]), before);
}

}  // namespace
}  // namespace wavecrest
