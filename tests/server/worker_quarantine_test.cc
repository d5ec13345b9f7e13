// The worker pool's quarantine (server/worker_quarantine.h) on a fake clock: an item is
// quarantined after `after` worker deaths, per kind; the quarantine ends `lasts` after its last
// crash (and the count starts again), never when `lasts` is 0, or when cleared.
#include "server/worker_quarantine.h"

#include "gtest/gtest.h"
#include "tests/fakes/fake_clock.h"

namespace wavecrest {
namespace {

constexpr char kCrashingGemm[] = "4096x4096x4096 tn bf16";

TEST(WorkerQuarantineTest, TwoDeathsQuarantineAnItemOnItsKindOnly) {
  FakeClock clock;
  WorkerQuarantine q(/*after=*/2, absl::Hours(1), &clock);
  EXPECT_FALSE(q.Charge("h100-sxm", kCrashingGemm));
  EXPECT_FALSE(q.Quarantined("h100-sxm", kCrashingGemm)) << "one death is not enough";
  EXPECT_EQ(q.Count(), 0);
  clock.Advance(absl::Minutes(5));
  EXPECT_TRUE(q.Charge("h100-sxm", kCrashingGemm)) << "the second death quarantines it";
  EXPECT_TRUE(q.Quarantined("h100-sxm", kCrashingGemm));
  EXPECT_FALSE(q.Quarantined("a100-sxm4-80gb", kCrashingGemm)) << "another kind is not concerned";
  EXPECT_EQ(q.Count(), 1);
  EXPECT_FALSE(q.Charge("h100-sxm", kCrashingGemm)) << "a third death quarantines nothing new";
}

TEST(WorkerQuarantineTest, AQuarantineEndsAnHourAfterTheLastCrash) {
  FakeClock clock;
  WorkerQuarantine q(2, absl::Hours(1), &clock);
  q.Charge("h100-sxm", kCrashingGemm);
  q.Charge("h100-sxm", kCrashingGemm);
  clock.Advance(absl::Minutes(60));
  EXPECT_TRUE(q.Quarantined("h100-sxm", kCrashingGemm)) << "an hour exactly: still";
  clock.Advance(absl::Seconds(1));
  EXPECT_FALSE(q.Quarantined("h100-sxm", kCrashingGemm));
  EXPECT_EQ(q.Count(), 0) << "the expired entry was dropped";
  // Counting starts again: one death is not enough.
  EXPECT_FALSE(q.Charge("h100-sxm", kCrashingGemm));
  EXPECT_FALSE(q.Quarantined("h100-sxm", kCrashingGemm));
  // A death more than an hour after the one before starts afresh too; one soon after counts.
  clock.Advance(absl::Hours(2));
  EXPECT_FALSE(q.Charge("h100-sxm", kCrashingGemm));
  clock.Advance(absl::Minutes(1));
  EXPECT_TRUE(q.Charge("h100-sxm", kCrashingGemm));
}

TEST(WorkerQuarantineTest, WithoutAnEndItLastsUntilCleared) {
  FakeClock clock;
  WorkerQuarantine q(2, absl::ZeroDuration(), &clock);
  for (const char* kind : {"h100-sxm", "h100-sxm", "a100-sxm4-80gb", "a100-sxm4-80gb"}) {
    q.Charge(kind, kCrashingGemm);
  }
  q.Charge("h100-sxm", "other");
  clock.Advance(absl::Hours(24 * 365));
  EXPECT_TRUE(q.Quarantined("h100-sxm", kCrashingGemm));
  EXPECT_EQ(q.Count(), 2);
  EXPECT_EQ(q.Clear("h100-sxm"), 1) << "one quarantined item; the once-crashed one is not counted";
  EXPECT_FALSE(q.Quarantined("h100-sxm", kCrashingGemm));
  EXPECT_TRUE(q.Quarantined("a100-sxm4-80gb", kCrashingGemm));
  EXPECT_FALSE(q.Charge("h100-sxm", "other")) << "its count was cleared with its kind";
  EXPECT_EQ(q.Clear(""), 1) << "every kind";
  EXPECT_EQ(q.Count(), 0);
}

}  // namespace
}  // namespace wavecrest
