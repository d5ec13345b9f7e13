// Where timings come from (server/timing_service.h): the store first, then a GPU worker, then the
// analytic model, each result saying which; with fake workers on a fake clock and a SQLite store
// in a temporary directory.
#include "server/timing_service.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/gpu_catalog.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics.h"
#include "server/sqlite_store.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_workers.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

constexpr const char* kWorkerKind = FakeWorkers::kKind;
constexpr char kOtherKind[] = "a100-sxm-80gb";  // no worker of it

// What one TimeGemms call answered.
struct Timed {
  absl::StatusOr<MeasureCounts> counts;
  std::vector<v1::GemmTiming> results;
};

class TimingServiceTest : public ::testing::Test {
 protected:
  TimingServiceTest()
      : dir_(std::filesystem::temp_directory_path() /
             ("wavecrest-timing-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        workers_(&clock_) {
    std::filesystem::create_directories(dir_);
    store_ = *SqliteStore::Open((dir_ / "store.db").string());
  }
  ~TimingServiceTest() override { std::filesystem::remove_all(dir_); }

  TimingTask Task(const std::string& kind, v1::Mode mode) const {
    TimingTask t;
    t.kind = kind;
    t.gpu = *FindGpu(kind);
    t.mode = mode;
    t.gemms = {GemmKey{{1024, 4096, 4096, 1}, Layout::kTN, DType::kBf16},
               GemmKey{{1024, 1024, 4096, 1}, Layout::kTN, DType::kBf16},
               GemmKey{{2048, 4096, 1024, 1}, Layout::kNN, DType::kBf16}};
    return t;
  }

  Timed Time(
      TimingService& timing, const TimingTask& task,
      const std::function<bool()>& cancelled = [] { return false; }) {
    Timed out;
    std::mutex mu;
    out.counts = timing.TimeGemms(
        task,
        [&](size_t, v1::GemmTiming t) {
          std::lock_guard<std::mutex> lock(mu);
          out.results.push_back(std::move(t));
        },
        [](int64_t, int64_t, absl::string_view) {}, cancelled);
    return out;
  }

  std::filesystem::path dir_;
  FakeClock clock_;
  FakeWorkers workers_;
  Metrics metrics_;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(TimingServiceTest, AGemmIsMeasuredOnceThenAnsweredFromTheStore) {
  TimingService timing(&workers_, store_.get(), &metrics_, &clock_);
  const Timed first = Time(timing, Task(kWorkerKind, v1::MODE_AUTO));
  ASSERT_TRUE(first.counts.ok()) << first.counts.status();
  EXPECT_EQ(first.counts->measured, 3);
  ASSERT_EQ(first.results.size(), 3u);
  for (const v1::GemmTiming& t : first.results) {
    EXPECT_EQ(t.provenance().source(), v1::SOURCE_MEASURED);
    EXPECT_GT(t.time_s(), 0);
  }
  const Timed second = Time(timing, Task(kWorkerKind, v1::MODE_AUTO));
  ASSERT_TRUE(second.counts.ok()) << second.counts.status();
  EXPECT_EQ(second.counts->cached, 3);
  EXPECT_EQ(second.counts->measured, 0);
  for (const v1::GemmTiming& t : second.results) {
    EXPECT_EQ(t.provenance().source(), v1::SOURCE_CACHED);
    EXPECT_TRUE(t.provenance().from_cache());
  }
  EXPECT_EQ(workers_.measured(), 3);  // the store answered the second call
}

TEST_F(TimingServiceTest, WithoutAStoreEveryCallMeasuresAgain) {
  TimingService timing(&workers_, nullptr, &metrics_, &clock_);
  ASSERT_TRUE(Time(timing, Task(kWorkerKind, v1::MODE_AUTO)).counts.ok());
  const Timed again = Time(timing, Task(kWorkerKind, v1::MODE_AUTO));
  ASSERT_TRUE(again.counts.ok()) << again.counts.status();
  EXPECT_EQ(again.counts->measured, 3);
  EXPECT_EQ(workers_.measured(), 6);
}

TEST_F(TimingServiceTest, PredictedModeAsksNoWorker) {
  TimingService timing(&workers_, store_.get(), &metrics_, &clock_);
  const Timed r = Time(timing, Task(kWorkerKind, v1::MODE_PREDICTED));
  ASSERT_TRUE(r.counts.ok()) << r.counts.status();
  EXPECT_EQ(r.counts->predicted, 3);
  for (const v1::GemmTiming& t : r.results) {
    EXPECT_EQ(t.provenance().source(), v1::SOURCE_PREDICTED);
  }
  EXPECT_EQ(workers_.measured(), 0);
}

TEST_F(TimingServiceTest, AutoWithNoWorkerOfTheKindPredictsAndSaysWhy) {
  TimingService timing(&workers_, store_.get(), &metrics_, &clock_);
  const Timed r = Time(timing, Task(kOtherKind, v1::MODE_AUTO));
  ASSERT_TRUE(r.counts.ok()) << r.counts.status();
  EXPECT_EQ(r.counts->predicted, 3);
  EXPECT_THAT(absl::StrJoin(r.counts->notes, "\n"), HasSubstr("worker is up"));
  EXPECT_EQ(workers_.measured(), 0);
}

TEST_F(TimingServiceTest, MeasuredModeWithNoWorkerConfiguredCannotSucceedByWaiting) {
  TimingService timing(&workers_, store_.get(), &metrics_, &clock_);
  const Timed r = Time(timing, Task(kOtherKind, v1::MODE_MEASURED));
  EXPECT_EQ(r.counts.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(timing.NoWorkerError(kOtherKind).code(), absl::StatusCode::kFailedPrecondition);
  // A worker of the kind is configured: waiting can help, so it is UNAVAILABLE (retryable).
  EXPECT_EQ(timing.NoWorkerError(kWorkerKind).code(), absl::StatusCode::kUnavailable);
  // No workers at all: nothing to wait for.
  TimingService no_workers(nullptr, nullptr, &metrics_, &clock_);
  EXPECT_EQ(no_workers.NoWorkerError(kWorkerKind).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(TimingServiceTest, ACancelledCallMeasuresNothing) {
  TimingService timing(&workers_, store_.get(), &metrics_, &clock_);
  const Timed r = Time(timing, Task(kWorkerKind, v1::MODE_MEASURED), [] { return true; });
  EXPECT_EQ(r.counts.status().code(), absl::StatusCode::kCancelled) << r.counts.status();
  EXPECT_EQ(workers_.measured(), 0);
}

TEST_F(TimingServiceTest, TheGpuIsACatalogNameOrAWorkersDeviceName) {
  TimingService timing(&workers_, store_.get(), &metrics_, &clock_);
  absl::StatusOr<GpuTarget> by_kind = timing.ResolveGpu(kWorkerKind, "gpu");
  ASSERT_TRUE(by_kind.ok()) << by_kind.status();
  EXPECT_EQ(by_kind->kind, kWorkerKind);
  absl::StatusOr<GpuTarget> by_device = timing.ResolveGpu("Fake H100", "gpu");
  ASSERT_TRUE(by_device.ok()) << by_device.status();
  EXPECT_EQ(by_device->kind, kWorkerKind);
  EXPECT_EQ(timing.ResolveGpu("", "gpu").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(timing.ResolveGpu("no-such-gpu", "gpu").ok());
  EXPECT_TRUE(timing.CanMeasure(kWorkerKind));
  EXPECT_FALSE(timing.CanMeasure(kOtherKind));
}

}  // namespace
}  // namespace wavecrest
