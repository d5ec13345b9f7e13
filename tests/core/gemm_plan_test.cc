// The cuBLASLt engine's decisions, tested without a GPU (core/gemm_plan.h).
#include "core/gemm_plan.h"

#include "core/timing_stats.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

using testing::H100Limits;

GemmKey GemmKeyOf(int64_t m, int64_t n, int64_t k, int64_t batch = 1, Layout l = Layout::kTN,
                  DType d = DType::kBf16) {
  return {{m, n, k, batch}, l, d};
}

// Defect 1: 2^30 × 2^30 × 2^30 × 8 BF16 wrapped to 0 bytes and passed the memory check. The
// worker's own FLOP cap refuses it first (and every byte size within the cap fits in 64 bits);
// the sizes are still computed with overflow checks.
TEST(GemmPlanTest, ByteSizesThatOverflowAreRefusedBeforeAnyAllocation) {
  const int64_t g = int64_t{1} << 30;
  auto plan = PlanGemm(GemmKeyOf(g, g, g, 8), H100Limits(), EngineOptions());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("FLOPs"));
  // Past the worker's own caps, whatever the server let through.
  EXPECT_EQ(
      PlanGemm(GemmKeyOf(int64_t{1} << 32, 8, 8), H100Limits(), EngineOptions()).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      PlanGemm(GemmKeyOf(1 << 20, 1 << 20, 1 << 20), H100Limits(), EngineOptions()).status().code(),
      absl::StatusCode::kInvalidArgument);  // 2.2e18 FLOPs
  // A legal GEMM too big for free memory: RESOURCE_EXHAUSTED, with the sizes.
  auto big = PlanGemm(GemmKeyOf(1 << 18, 1 << 18, 1 << 12), H100Limits(), EngineOptions());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(big.status().message(), HasSubstr("MiB of device memory"));
}

TEST(GemmPlanTest, SizesAreTheCublasViewOfTheRowMajorProduct) {
  auto p = PlanGemm(GemmKeyOf(8192, 12288, 4096, 1, Layout::kTN), H100Limits(), EngineOptions());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->m, 12288);  // cuBLAS m = our N
  EXPECT_EQ(p->n, 8192);
  EXPECT_TRUE(p->trans_a);
  EXPECT_FALSE(p->trans_b);
  EXPECT_EQ(p->lda, 4096);
  EXPECT_EQ(p->ldb, 4096);
  EXPECT_EQ(p->ldd, 12288);
  EXPECT_EQ(p->a_bytes, int64_t{12288} * 4096 * 2);
  EXPECT_EQ(p->set_bytes,
            (int64_t{12288} * 4096 + int64_t{4096} * 8192 + int64_t{12288} * 8192) * 2);
}

// Defect 8: FP8 dgrad (NN) and wgrad (NT) were refused, so every measured FP8 backward GEMM
// failed. On Ada/Hopper they run as TN on transposed copies (Transformer Engine); Blackwell takes
// them as they are. Fast accumulation is set and labelled; the 16-byte rule is checked up front.
TEST(GemmPlanTest, Fp8BackwardLayoutsRunLikeTransformerEngineRunsThem) {
  for (Layout l : {Layout::kNN, Layout::kNT}) {
    auto hopper =
        PlanGemm(GemmKeyOf(4096, 4096, 4096, 1, l, DType::kFp8E4M3), H100Limits(), EngineOptions());
    ASSERT_TRUE(hopper.ok()) << hopper.status();
    EXPECT_TRUE(hopper->fp8_transposed_copies);
    EXPECT_TRUE(hopper->trans_a);
    EXPECT_FALSE(hopper->trans_b);
    EXPECT_FALSE(hopper->fp8_fast_accumulation);  // TE: split accumulator for dgrad, wgrad
    const SampleSchedule sched =
        ScheduleSamples(1e-3, hopper->sets, hopper->set_bytes, 50 << 20, {});
    EXPECT_THAT(EngineMethod(*hopper, sched, {}),
                HasSubstr("fp8-split-accum fp8-transposed-copies"));
    DeviceLimits b200 = H100Limits();
    b200.compute_capability = 100;
    auto blackwell =
        PlanGemm(GemmKeyOf(4096, 4096, 4096, 1, l, DType::kFp8E4M3), b200, EngineOptions());
    ASSERT_TRUE(blackwell.ok());
    EXPECT_FALSE(blackwell->fp8_transposed_copies);
    EXPECT_EQ(blackwell->trans_b, l == Layout::kNT);
  }
  auto fwd =
      PlanGemm(GemmKeyOf(4096, 4096, 4096, 1, Layout::kTN, DType::kFp8E4M3), H100Limits(), {});
  ASSERT_TRUE(fwd.ok());
  EXPECT_TRUE(fwd->fp8_fast_accumulation);  // TE: fast accumulation in the forward GEMM
  EXPECT_FALSE(fwd->fp8_transposed_copies);
  auto odd = PlanGemm(GemmKeyOf(4096, 4096, 4100, 1, Layout::kTN, DType::kFp8E4M3), H100Limits(),
                      EngineOptions());
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(odd.status().message(), HasSubstr("not a multiple of 16"));
  auto odd_n =
      PlanGemm(GemmKeyOf(4096, 4100, 4096, 1, Layout::kTN, DType::kFp8E4M3), H100Limits(), {});
  EXPECT_THAT(odd_n.status().message(), HasSubstr("D (BF16)'s is 4100 elements"));
  DeviceLimits a100 = H100Limits();
  a100.compute_capability = 80;
  EXPECT_EQ(PlanGemm(GemmKeyOf(64, 64, 64, 1, Layout::kTN, DType::kFp8E4M3), a100, EngineOptions())
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

// Defect 9: the heuristic's first choice must be what a framework gets.
TEST(GemmPlanTest, WorkspaceIsTheFrameworksAndIsNamed) {
  EXPECT_EQ(FrameworkWorkspaceBytes(90), int64_t{32} << 20);
  EXPECT_EQ(FrameworkWorkspaceBytes(100), int64_t{32} << 20);
  EXPECT_EQ(FrameworkWorkspaceBytes(80), int64_t{4} << 20);
  auto p = PlanGemm(GemmKeyOf(4096, 4096, 4096), H100Limits(), EngineOptions());
  ASSERT_TRUE(p.ok());
  const SampleSchedule s = ScheduleSamples(100e-6, p->sets, p->set_bytes, 50 << 20, {});
  EXPECT_THAT(EngineMethod(*p, s, {}), HasSubstr(" ws32MiB"));
}

// Defect 4: replays restart at set 0, so a replay shorter than the rotation never touched the
// later sets and L2 stayed warm, while the method said cold.
TEST(GemmPlanTest, ColdL2IsComputedFromTheSetsOneReplayTouches) {
  EngineOptions o;
  const int64_t l2 = 50 << 20;
  // Small sets: 16 needed for 3 × L2; a fast GEMM's replay of ~1 ms goes round all of them.
  SampleSchedule fast = ScheduleSamples(5e-6, 16, 10 << 20, l2, o);
  EXPECT_EQ(fast.launches_per_sample % 16, 0);
  EXPECT_EQ(fast.sets_used, 16);
  EXPECT_TRUE(fast.cold_l2);
  // A slow GEMM (3 ms a launch) gets launches raised to cover the sets, not 1 launch on set 0.
  SampleSchedule slow = ScheduleSamples(3e-3, 16, 10 << 20, l2, o);
  EXPECT_EQ(slow.launches_per_sample, 16);
  EXPECT_TRUE(slow.cold_l2);
  // Even past the launch cap, a replay goes round every set (cold beats a short sample).
  o.max_launches_per_sample = 4;
  EXPECT_EQ(ScheduleSamples(3e-3, 16, 10 << 20, l2, o).sets_used, 16);
  // When memory allows too few sets for 2 × L2, it says so, and so does the method.
  SampleSchedule capped = ScheduleSamples(3e-3, 4, 10 << 20, l2, EngineOptions());
  EXPECT_EQ(capped.sets_used, 4);
  EXPECT_FALSE(capped.cold_l2);
  GemmPlan p;
  p.workspace_bytes = 32 << 20;
  EXPECT_THAT(EngineMethod(p, capped, EngineOptions()), HasSubstr("warm-L2 (cold not reachable)"));
  EXPECT_THAT(EngineMethod(p, fast, EngineOptions()), HasSubstr("cold-L2"));
  // Warm L2 asked for: one set, said so.
  EngineOptions warm;
  warm.warm_l2 = true;
  EXPECT_THAT(EngineMethod(p, ScheduleSamples(1e-4, 1, 10 << 20, l2, warm), warm),
              HasSubstr(" warm-L2 "));
}

// A cold-L2 request that the input sets fitting in memory cannot meet fails; warm L2 is timed.
TEST(GemmPlanTest, AColdRequestThatCannotBeMetIsRefusedNotMislabelled) {
  DeviceLimits tight = H100Limits();
  tight.free_bytes = tight.margin_bytes + (int64_t{32} << 20) + (int64_t{40} << 20);
  const GemmKey key = GemmKeyOf(1024, 1024, 1536);  // 3 + 3 + 2 MiB a set: 5 fit, 40 MiB < 2 × L2
  auto cold = PlanGemm(key, tight, EngineOptions());
  EXPECT_EQ(cold.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(cold.status().message(), HasSubstr("warm_l2"));
  EngineOptions warm;
  warm.warm_l2 = true;
  auto p = PlanGemm(key, tight, warm);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->sets, 1);
  // With the whole device free, tiny GEMMs get enough sets (one buffer per operand holds them).
  auto tiny = PlanGemm(GemmKeyOf(64, 64, 64), H100Limits(), EngineOptions());
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  EXPECT_GE(static_cast<double>(tiny->sets) * tiny->set_bytes, 2.0 * (50 << 20));
}

// Defect 6: timing stopped before steady power. From cold, every launch gets a warm-up (100 ms
// long, 50 ms short) and at least 50 ms sampled.
TEST(GemmPlanTest, AColdGpuGetsWarmUpAndAMinimumSampledTime) {
  const SampleSchedule s = ScheduleSamples(2e-3, 1, 1 << 30, 50 << 20, EngineOptions());
  EXPECT_GE(s.warmup_replays * 2e-3 * s.launches_per_sample, 0.1);
  EXPECT_DOUBLE_EQ(s.min_sampled_s, 0.05);
  const SampleSchedule quick = ScheduleSamples(10e-6, 1, 1 << 30, 50 << 20, EngineOptions());
  EXPECT_GE(quick.warmup_replays * 10e-6 * quick.launches_per_sample, 0.05);
  EXPECT_LT(quick.warmup_replays * 10e-6 * quick.launches_per_sample, 0.1);
  EXPECT_DOUBLE_EQ(quick.min_sampled_s, 0.05);
}

// Issues 21 and 35: a sweep's GEMMs follow each other on a GPU already at its power state; only
// the first warms it up. A hot GPU gets the options' short warm-up and minimum, and says so.
TEST(GemmPlanTest, AHotGpuGetsAShortWarmUpAndSaysSo) {
  const EngineOptions o;
  const int64_t l2 = 50 << 20;
  const SampleSchedule cold = ScheduleSamples(2e-3, 1, 1 << 30, l2, o, /*gpu_hot=*/false);
  const SampleSchedule hot = ScheduleSamples(2e-3, 1, 1 << 30, l2, o, /*gpu_hot=*/true);
  EXPECT_FALSE(cold.hot);
  EXPECT_TRUE(hot.hot);
  EXPECT_EQ(ScheduleNote(cold), "");
  EXPECT_EQ(ScheduleNote(hot),
            "; hot GPU (timed work within 2 s): 5 ms warm-up, at least 10 ms sampled");
  // Same replays (the schedule's L2 and batching do not depend on heat), shorter warm-up and
  // minimum.
  EXPECT_EQ(hot.launches_per_sample, cold.launches_per_sample);
  EXPECT_EQ(hot.cold_l2, cold.cold_l2);
  EXPECT_LT(hot.warmup_replays, cold.warmup_replays);
  EXPECT_GE(hot.warmup_replays * 2e-3 * hot.launches_per_sample, 0.005);
  EXPECT_DOUBLE_EQ(hot.min_sampled_s, 0.01);
  // The options set them (the device plan tries a longer hot schedule beside the default).
  EngineOptions longer;
  longer.hot_warmup_s = 0.02;
  longer.hot_min_sampled_s = 0.05;
  EXPECT_EQ(ScheduleNote(ScheduleSamples(2e-3, 1, 1 << 30, l2, longer, true)),
            "; hot GPU (timed work within 2 s): 20 ms warm-up, at least 50 ms sampled");
  // A window of 0 turns it off: every GEMM is scheduled cold.
  EngineOptions off;
  off.hot_window_s = 0;
  const SampleSchedule never = ScheduleSamples(2e-3, 1, 1 << 30, l2, off, true);
  EXPECT_FALSE(never.hot);
  EXPECT_EQ(never.warmup_replays, cold.warmup_replays);
  EXPECT_EQ(never.min_sampled_s, cold.min_sampled_s);
}

// The least GPU time a schedule takes: warm-up plus the fewest samples its rule allows, plus the
// overhead of each window. For a 2 ms GEMM, cold: 100 ms + 50 ms (25 samples, one window); hot:
// 5 ms + 20 samples (the median rule's minimum: 10 in the first window, 4 in each later one, the
// ~5 ms target being 3 replays).
TEST(GemmPlanTest, TheLeastTimeOfASchedule) {
  const EngineOptions o;
  const int64_t l2 = 50 << 20;
  const SampleSchedule cold = ScheduleSamples(2e-3, 1, 1 << 30, l2, o, false);
  const SampleSchedule hot = ScheduleSamples(2e-3, 1, 1 << 30, l2, o, true);
  ASSERT_EQ(cold.launches_per_sample, 1);
  EXPECT_NEAR(ScheduleLeastSeconds(cold, 2e-3, 0), 0.1 + 0.05, 1e-9);
  EXPECT_NEAR(ScheduleLeastSeconds(hot, 2e-3, 0), 0.006 + 20 * 2e-3, 1e-9);
  // Windows: 10, 4, 4, 2 (the last capped at the samples wanted): four waits.
  EXPECT_NEAR(ScheduleLeastSeconds(hot, 2e-3, 1e-3), 0.006 + 20 * 2e-3 + 4e-3, 1e-9);
  EXPECT_NEAR(ScheduleLeastSeconds(cold, 2e-3, 1e-3), 0.1 + 0.05 + 1e-3, 1e-9);
}

// Samples run back to back in windows, one wait each: the first window reaches the rule's
// minimums, later ones about 5 ms of replays; never more than kMaxWindow samples, kMaxWindowS of
// replays, or the samples the rule still allows.
TEST(GemmPlanTest, WindowsReachTheMinimumsThenGoInSmallSteps) {
  const EngineOptions o;
  const int64_t l2 = 50 << 20;
  const SampleSchedule hot = ScheduleSamples(2e-3, 1, 1 << 30, l2, o, true);  // 10 ms, 10 samples
  EXPECT_EQ(WindowSamples(hot, 2e-3, 0, 0, 2000), 10);
  EXPECT_EQ(WindowSamples(hot, 2e-3, 10, 0.02, 2000), kMinWindow);    // 5 ms is 3 replays
  EXPECT_EQ(WindowSamples(hot, 100e-6, 10, 0.01, 2000), 50);          // ~5 ms of replays
  EXPECT_EQ(WindowSamples(hot, 100e-6, 0, 0, 2000), kMaxWindow);       // 100 wanted
  EXPECT_EQ(WindowSamples(hot, 2e-3, 10, 0.02, 12), 2);               // the rule's cap
  const SampleSchedule cold = ScheduleSamples(2e-3, 1, 1 << 30, l2, o, false);  // 50 ms
  EXPECT_EQ(WindowSamples(cold, 2e-3, 0, 0, 2000), 25);
  EXPECT_EQ(WindowSamples(cold, 2e-3, 20, 0.04, 2000), 5);            // the rest of the 50 ms
  EXPECT_EQ(WindowSamples(cold, 0.1, 0, 0, 2000), 2);                 // 250 ms of 100 ms replays
  EXPECT_EQ(WindowSamples(cold, 1.0, 0, 0, 2000), 1);                 // one long replay at a time
}

// Issue 35: things timed together sample in rounds, every one in every round, at least
// kMinInterleavedRounds, then until all rules are met or the batch's budget is spent.
TEST(GemmPlanTest, InterleavedRoundsGoOnUntilAllRulesAreMetOrTheBudgetIsSpent) {
  EXPECT_TRUE(AnotherRound(0, /*all_met=*/true, 0.0, 2.0));
  EXPECT_TRUE(AnotherRound(kMinInterleavedRounds - 1, true, 0.1, 2.0));
  EXPECT_FALSE(AnotherRound(kMinInterleavedRounds, true, 0.1, 2.0));
  EXPECT_TRUE(AnotherRound(kMinInterleavedRounds, false, 1.9, 2.0));
  EXPECT_FALSE(AnotherRound(20, false, 2.1, 2.0));
  EXPECT_TRUE(AnotherRound(1, false, 5.0, 2.0));  // the minimum rounds even past the budget
}

// Defect 2: a GEMM slower than the watchdog allows was killed and quarantined; now it is refused
// up front with the reason, and anything shorter is timed with progress after every replay.
TEST(GemmPlanTest, TheWatchdogRefusesOnlyWhatItWouldKill) {
  EngineOptions o;
  o.watchdog_s = 60;
  EXPECT_TRUE(CheckWatchdog(7.5, o, GemmKeyOf(60000, 60000, 60000)).ok());
  const absl::Status st = CheckWatchdog(45, o, GemmKeyOf(60000, 60000, 60000));
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("watchdog"));
  o.watchdog_s = 0;
  EXPECT_TRUE(CheckWatchdog(1000, o, GemmKeyOf(1, 1, 1)).ok());
}

}  // namespace
}  // namespace wavecrest
