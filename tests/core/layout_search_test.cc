// The layout search (core/layout_search.h): the degrees it chooses on a number of GPUs are no
// slower than any it could have been given by hand, held degrees stay, the runners-up say why they
// lose, and a token budget becomes time to train and GPU-hours.
#include "core/layout_search.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "tests/core/test_specs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ModelSpec Llama70B() {
  ModelSpec s = testing::LlamaLike(8192, 64, 8, 80, 28672, 128256);
  s.name = "llama-3-70b";
  s.seq_length = 8192;
  s.micro_batch_size = 1;
  return *NormalizeSpec(s);
}

RunConfig PlanRun(int64_t gpus, int64_t global_batch) {
  RunConfig run;
  run.num_gpus = gpus;
  run.global_batch = global_batch;
  run.plan = true;
  return run;
}

using testing::H100;

// The case: Llama 3 70B on 512 H100s at global batch 1024. The search's answer fits and
// is no slower than any tensor × pipeline split a team would try by hand (each planned for
// recomputation, ZeRO, offload and interleave as --plan does).
TEST(LayoutSearchTest, Llama70BOn512H100sIsNoSlowerThanAnyLayoutTriedByHand) {
  const ModelSpec spec = Llama70B();
  const RunConfig run = PlanRun(512, 1024);
  absl::StatusOr<LayoutSearch> search = SearchLayouts(spec, H100(), run, HeldDegrees{}, nullptr);
  ASSERT_TRUE(search.ok()) << search.status();
  ASSERT_FALSE(search->ranked.empty());
  const StepBreakdown& best = search->ranked.front().step;
  EXPECT_TRUE(best.memory.fits);
  EXPECT_EQ(best.gpus, 512);
  EXPECT_EQ(best.tensor_parallel * best.pipeline_parallel * best.context_parallel *
                best.data_parallel,
            512);
  EXPECT_GT(search->examined, 10);
  EXPECT_GT(search->fit, 0);
  EXPECT_THAT(search->assumption, HasSubstr("planned layout: TP "));
  int tried = 0;
  for (int64_t t : {1, 2, 4, 8}) {
    for (int64_t p : {1, 2, 4, 8, 16}) {
      ModelSpec s = spec;
      s.tensor_parallel = t;
      s.pipeline_parallel = p;
      absl::StatusOr<Analysis> a = Analyze(s, H100());
      ASSERT_TRUE(a.ok()) << a.status();
      absl::StatusOr<StepBreakdown> hand = PlanStep(*a, run);
      ASSERT_TRUE(hand.ok()) << hand.status();
      if (!hand->memory.fits) continue;
      ++tried;
      EXPECT_LE(best.step_s, hand->step_s * (1 + 1e-9)) << "TP " << t << " PP " << p;
    }
  }
  EXPECT_GT(tried, 3);
}

TEST(LayoutSearchTest, RunnersUpAreSlowerAndSayWhy) {
  absl::StatusOr<LayoutSearch> search =
      SearchLayouts(Llama70B(), H100(), PlanRun(512, 1024), HeldDegrees{}, nullptr, 6);
  ASSERT_TRUE(search.ok()) << search.status();
  ASSERT_GE(search->ranked.size(), 2u);
  EXPECT_EQ(search->ranked.front().why, "");
  double last = 0;
  for (size_t i = 0; i < search->ranked.size(); ++i) {
    const StepBreakdown& s = search->ranked[i].step;
    if (!s.memory.fits) {
      EXPECT_THAT(search->ranked[i].why, HasSubstr("does not fit"));
      continue;
    }
    // Ranked by the step moved by its kind's band midpoint (a CP layout's raw step may be the
    // shorter one).
    EXPECT_GE(ExpectedStepS(s), last);
    last = ExpectedStepS(s);
    if (i > 0) {
      EXPECT_THAT(search->ranked[i].why, HasSubstr("% step time"));
      // A runner-up within kLayoutNearTie of the winner says it is a near tie; one past it not.
      const bool tie =
          ExpectedStepS(s) < (1 + kLayoutNearTie) * ExpectedStepS(search->ranked[0].step);
      EXPECT_EQ(absl::StrContains(search->ranked[i].why, "a near tie"), tie) << i;
    }
  }
  // The answer's assumption counts them.
  const auto ties = std::count_if(search->ranked.begin() + 1, search->ranked.end(),
                                  [&](const LayoutChoice& c) {
                                    return absl::StrContains(c.why, "a near tie");
                                  });
  EXPECT_EQ(absl::StrContains(search->assumption, "near ties the planner cannot separate"),
            ties > 0);
  if (ties > 0) {
    EXPECT_THAT(search->assumption, HasSubstr(absl::StrCat("; ", ties, " of the layouts shown")));
  }
}

TEST(LayoutSearchTest, HeldDegreesStay) {
  ModelSpec spec = Llama70B();
  spec.tensor_parallel = 4;
  HeldDegrees held = HeldOf(spec, false);
  EXPECT_TRUE(held.tensor);
  EXPECT_FALSE(held.pipeline);
  absl::StatusOr<LayoutSearch> search =
      SearchLayouts(spec, H100(), PlanRun(512, 1024), held, nullptr);
  ASSERT_TRUE(search.ok()) << search.status();
  for (const LayoutChoice& c : search->ranked) EXPECT_EQ(c.step.tensor_parallel, 4);
  EXPECT_THAT(search->assumption, HasSubstr("held as given: TP 4"));
  // Everything held: one combination.
  spec.pipeline_parallel = 8;
  absl::StatusOr<LayoutSearch> one =
      SearchLayouts(spec, H100(), PlanRun(512, 1024), HeldOf(spec, true), nullptr);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->examined, 1);
}

// Long sequences open context parallelism to the search; local attention does not split.
// Llama 3.1 8B at 8k on 8 H100s with CP 2 (DGX Cloud's published layout, which ran): estimated
// past the 90% the plan leaves to the model but within the GPU, and faster than what the search
// chooses among the layouts that fit; the plan's answer names it instead of passing it over.
// Past the GPU, or slower than the plan, it says nothing of it.
TEST(LayoutSearchTest, AFasterLayoutAsGivenPastTheMarginButWithinTheGpuIsNamed) {
  ModelSpec spec = testing::LlamaLike(4096, 32, 8, 32, 14336, 128256);
  spec.seq_length = 8192;
  spec.micro_batch_size = 1;
  spec.context_parallel = 2;
  spec = *NormalizeSpec(spec);
  RunConfig run = PlanRun(8, 128);
  run.zero_stage = 1;
  RunConfig plain = run;
  plain.plan = false;
  const StepBreakdown given = *PlanStep(*Analyze(spec, H100()), plain);
  ASSERT_FALSE(given.memory.fits);
  ASSERT_LE(given.memory.total_bytes, given.memory.capacity_bytes);
  absl::StatusOr<LayoutSearch> search =
      SearchLayouts(spec, H100(), run, HeldOf(spec, false), nullptr);
  ASSERT_TRUE(search.ok()) << search.status();
  const StepBreakdown& best = search->ranked.front().step;
  ASSERT_LT(given.step_s, best.step_s);
  EXPECT_THAT(search->assumption,
              HasSubstr("longer than the layout as given (TP 1 × PP 1 × CP 2 × DP 4, "));
  // Past the GPU (a 32k sequence on the same GPUs): nothing said of it.
  ModelSpec longer = spec;
  longer.seq_length = 32768;
  const StepBreakdown too_big = *PlanStep(*Analyze(longer, H100()), plain);
  ASSERT_GT(too_big.memory.total_bytes, too_big.memory.capacity_bytes);
  absl::StatusOr<LayoutSearch> past =
      SearchLayouts(longer, H100(), run, HeldOf(longer, false), nullptr);
  ASSERT_TRUE(past.ok()) << past.status();
  ASSERT_GT(past->fit, 0);
  EXPECT_THAT(past->assumption, ::testing::Not(HasSubstr("layout as given")));
}

TEST(LayoutSearchTest, LongSequencesAddContextParallelDegrees) {
  ModelSpec spec = Llama70B();
  spec.num_layers = 16;
  absl::StatusOr<LayoutSearch> short_seq =
      SearchLayouts(spec, H100(), PlanRun(64, 64), HeldDegrees{}, nullptr);
  spec.seq_length = 32768;
  absl::StatusOr<LayoutSearch> long_seq =
      SearchLayouts(spec, H100(), PlanRun(64, 64), HeldDegrees{}, nullptr, 100);
  ASSERT_TRUE(short_seq.ok()) << short_seq.status();
  ASSERT_TRUE(long_seq.ok()) << long_seq.status();
  EXPECT_GT(long_seq->examined, short_seq->examined);
  bool cp = false;
  for (const LayoutChoice& c : long_seq->ranked) cp |= c.step.context_parallel > 1;
  EXPECT_TRUE(cp);
}

// At 128k tokens with PyTorch's ring, whose band's midpoint is far above the others', the layout
// with the shortest predicted step (context-parallel) ranks below those shown: the answer names
// it, where it ranks and why.
TEST(LayoutSearchTest, TheShortestPredictedStepIsNamedWhereItsBandRanksItBelowTheTable) {
  ModelSpec spec = Llama70B();
  spec.seq_length = 131072;
  RunConfig run = PlanRun(64, 16);
  run.cp_ring = CpRing::kTorch;
  absl::StatusOr<LayoutSearch> search = SearchLayouts(spec, H100(), run, HeldDegrees{}, nullptr, 3);
  ASSERT_TRUE(search.ok()) << search.status();
  double shortest = search->ranked.front().step.step_s;
  for (const LayoutChoice& c : search->ranked) shortest = std::min(shortest, c.step.step_s);
  EXPECT_EQ(shortest, search->ranked.front().step.step_s);  // not among the 3 shown
  EXPECT_THAT(search->shortest_note, HasSubstr("the shortest predicted step, "));
  EXPECT_THAT(search->shortest_note, HasSubstr("PyTorch-ring context parallel runs measure"));
  EXPECT_THAT(search->assumption, HasSubstr(search->shortest_note));
  // With every layout shown, the table itself has it: no note.
  absl::StatusOr<LayoutSearch> all = SearchLayouts(spec, H100(), run, HeldDegrees{}, nullptr, 500);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->shortest_note, "");
}

// A Llama-like mixture of experts at 4k tokens (`micro_batch` 0: the plan's to choose).
ModelSpec Moe(ModelSpec spec, int64_t experts, int64_t top_k, int64_t micro_batch) {
  spec.num_experts = experts;
  spec.experts_per_token = top_k;
  spec.seq_length = 4096;
  spec.micro_batch_size = micro_batch;
  return *NormalizeSpec(spec);
}

TEST(LayoutSearchTest, MixturesOfExpertsSearchExpertParallelism) {
  const ModelSpec spec = Moe(testing::LlamaLike(4096, 32, 8, 8, 14336, 32000), 8, 2, 1);
  absl::StatusOr<LayoutSearch> search =
      SearchLayouts(spec, H100(), PlanRun(64, 256), HeldDegrees{}, nullptr, 200);
  ASSERT_TRUE(search.ok()) << search.status();
  bool ep = false;
  for (const LayoutChoice& c : search->ranked) ep |= c.step.expert_parallel > 1;
  EXPECT_TRUE(ep);
}

// Dropless experts pay the fitted host wait per MoE layer and micro-batch; the plan says whether
// its choice survives without it, naming what a search without it picks. A run that sets its own
// wait gets no such note.
TEST(LayoutSearchTest, AMoePlanSaysWhetherItRestsOnTheHostWait) {
  const ModelSpec spec = Moe(testing::LlamaLike(2048, 32, 4, 48, 768, 151936), 128, 8, 0);
  const LayoutSearch with =
      *SearchLayouts(spec, H100(), PlanRun(64, 512), HeldDegrees{}, nullptr, 5);
  RunConfig none = PlanRun(64, 512);
  none.moe_host_s = 0;
  const LayoutSearch without = *SearchLayouts(spec, H100(), none, HeldDegrees{}, nullptr, 5);
  ASSERT_GT(with.ranked.front().step.moe_host_s, 0);
  EXPECT_THAT(with.assumption, HasSubstr("MoE host wait (--moe-host-ms: a fitted 3.0 ms"));
  const StepBreakdown& a = with.ranked.front().step;
  const StepBreakdown& b = without.ranked.front().step;
  if (DegreesName(a) == DegreesName(b) && a.micro_batch_size == b.micro_batch_size &&
      LayoutWords(a) == LayoutWords(b)) {
    EXPECT_THAT(with.assumption, HasSubstr("the same layout wins without"));
  } else if (DegreesName(a) == DegreesName(b)) {
    EXPECT_THAT(with.assumption,
                HasSubstr(absl::StrCat("the same degrees win with micro-batch ",
                                       b.micro_batch_size, ", ", LayoutWords(b))));
  } else {
    EXPECT_THAT(with.assumption,
                HasSubstr(absl::StrCat("the search picks ", DegreesName(b), ", micro-batch ",
                                       b.micro_batch_size)));
  }
  EXPECT_THAT(without.assumption, Not(HasSubstr("MoE host wait")));
  RunConfig own = PlanRun(64, 512);
  own.moe_host_s = 3e-3;
  EXPECT_THAT(SearchLayouts(spec, H100(), own, HeldDegrees{}, nullptr, 5)->assumption,
              Not(HasSubstr("MoE host wait")));
}

TEST(LayoutSearchTest, TokensBecomeTimeToTrainAndGpuHours) {
  RunConfig run = PlanRun(512, 1024);
  run.train_tokens = 15e12;
  absl::StatusOr<LayoutSearch> search = SearchLayouts(Llama70B(), H100(), run, HeldDegrees{},
                                                      nullptr);
  ASSERT_TRUE(search.ok()) << search.status();
  const StepBreakdown& b = search->ranked.front().step;
  const double steps = std::ceil(15e12 / (1024.0 * 8192));
  EXPECT_DOUBLE_EQ(b.train_tokens, 15e12);
  EXPECT_EQ(b.tokens_per_step, 1024 * 8192);  // the whole step's, not one micro-batch's
  EXPECT_NEAR(b.tokens_per_s_per_gpu * b.step_s * 512, 1024.0 * 8192, 1e-6 * 1024 * 8192);
  EXPECT_NEAR(b.time_to_train_s, steps * b.step_s, 1e-6 * b.time_to_train_s);
  EXPECT_NEAR(b.gpu_hours, b.time_to_train_s * 512 / 3600, 1e-6 * b.gpu_hours);
}

TEST(LayoutSearchTest, ErrorsNameTheirField) {
  RunConfig run = PlanRun(0, 1024);
  absl::StatusOr<LayoutSearch> s = SearchLayouts(Llama70B(), H100(), run, HeldDegrees{}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("run.num_gpus"));
  run = PlanRun(512, 0);
  s = SearchLayouts(Llama70B(), H100(), run, HeldDegrees{}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("run.global_batch"));
  // 3 GPUs at batch 2, every degree held at 1: 3 data-parallel ranks cannot split 2 sequences.
  s = SearchLayouts(Llama70B(), H100(), PlanRun(3, 2), HeldOf(Llama70B(), true), nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("run.num_gpus"));
}

TEST(LayoutSearchTest, WhyLosesNamesTheLargestDifference) {
  StepBreakdown w, l;
  w.step_s = 10;
  w.compute_s = 8;
  w.pp_bubble_s = 2;
  l = w;
  l.pp_bubble_s = 3.5;
  l.tp_comm_s = 0.5;
  l.step_s = 12;
  l.memory.fits = true;
  EXPECT_EQ(WhyLoses(l, w), "+20.0% step time: pipeline bubble +1.5 s, TP communication +0.5 s");
  // A part that shrank as much is named too, or the parts named would not add up to the step.
  l.dp_comm_s = -1.0;
  l.step_s = 11;
  EXPECT_EQ(WhyLoses(l, w),
            "+10.0% step time: pipeline bubble +1.5 s, TP communication +0.5 s, "
            "DP communication -1 s");
  l.memory.fits = false;
  l.memory.total_bytes = 100.0 * (1 << 30);
  l.memory.capacity_bytes = 80.0 * (1 << 30);
  EXPECT_EQ(WhyLoses(l, w), "does not fit: 100.0 GiB of 80");
}

}  // namespace
}  // namespace wavecrest
