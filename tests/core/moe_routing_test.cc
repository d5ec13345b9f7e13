#include "core/moe_routing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

namespace wavecrest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// One MoE layer: T = seq tokens, E experts, k per token, e expert-parallel ranks.
ModelSpec MoeLayer(int64_t tokens, int64_t experts, int64_t k, int64_t ep = 1) {
  ModelSpec s;
  s.hidden_size = 512;
  s.num_attention_heads = 8;
  s.num_layers = 1;
  s.vocab_size = 1;
  s.seq_length = tokens;
  s.mlp = Mlp::kSwiglu;
  s.ffn_hidden_size = 256;
  s.num_experts = experts;
  s.experts_per_token = k;
  s.expert_parallel = ep;
  return *NormalizeSpec(s);
}

TEST(MoeRoutingTest, BalancedIsThePlannersRows) {
  // 1024 tokens × 2 copies over 8 experts: 256 rows each.
  EXPECT_THAT(ExpertTokenCounts(MoeLayer(1024, 8, 2), {}),
              ElementsAre(256, 256, 256, 256, 256, 256, 256, 256));
  EXPECT_EQ(Derive(MoeLayer(1024, 8, 2)).expert_tokens, 256);
}

TEST(MoeRoutingTest, ZipfSharesByHand) {
  // S = 1 over 4 experts, 100 tokens, k = 1: shares 1, 1/2, 1/3, 1/4 of 100 / (25/12).
  MoeRouting zipf1{1.0, {}};
  EXPECT_THAT(ExpertTokenCounts(MoeLayer(100, 4, 1), zipf1), ElementsAre(48, 24, 16, 12));
  // S = 2, k = 2: the busiest would get 140.5 of 200 copies but a token picks it at most once:
  // capped at 100; the other 100 go 1/4 : 1/9 : 1/16 = 59.02, 26.23, 14.75, rounded by largest
  // remainder to 59, 26, 15.
  MoeRouting zipf2{2.0, {}};
  EXPECT_THAT(ExpertTokenCounts(MoeLayer(100, 4, 2), zipf2), ElementsAre(100, 59, 26, 15));
}

TEST(MoeRoutingTest, ExpertParallelRankHoldsTheBusiestExperts) {
  // 64 tokens on each of 2 ranks, k = 2: 256 copies over 8 experts by 1/(i+1) (H8 = 2.7179):
  // 94.19, 47.10, 31.40, 23.55, 18.84, 15.70, 13.46, 11.77 -> floors sum 252, the 4 largest
  // remainders (.84, .77, .70, .55) round up; the rank runs the 4 busiest.
  const std::vector<int64_t> rows = ExpertTokenCounts(MoeLayer(64, 8, 2, 2), {1.0, {}});
  EXPECT_THAT(rows, ElementsAre(94, 47, 31, 24));
  // Balanced under the same split: 256 / 8 = 32 each, the planner's.
  EXPECT_THAT(ExpertTokenCounts(MoeLayer(64, 8, 2, 2), {}), ElementsAre(32, 32, 32, 32));
}

TEST(MoeRoutingTest, CountsAndCapacity) {
  absl::StatusOr<MoeRouting> r = ParseRouting("counts:1,3", "routing");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(ExpertTokenCounts(MoeLayer(100, 2, 1), *r), ElementsAre(75, 25));
  EXPECT_EQ(RoutingName(*r), "counts:1,3");
  EXPECT_THAT(CheckRouting(*r, 8, "routing").message(), HasSubstr("2 counts for a layer of 8"));
  // A capacity factor pads every expert to C × its balanced share, whatever the routing.
  ModelSpec cap = MoeLayer(1000, 8, 2);
  cap.moe_capacity_factor = 1.25;
  EXPECT_THAT(ExpertTokenCounts(*NormalizeSpec(cap), {1.0, {}}),
              ElementsAre(313, 313, 313, 313, 313, 313, 313, 313));  // ceil(1.25 × 250)
  EXPECT_TRUE(ExpertTokenCounts(MoeLayer(100, 0, 0), {}).empty());
}

TEST(MoeRoutingTest, ParsesAndRefusesWithTheAllowedForms) {
  EXPECT_TRUE(ParseRouting("", "r")->balanced());
  EXPECT_TRUE(ParseRouting("balanced", "r")->balanced());
  EXPECT_EQ(ParseRouting("zipf:1.2", "r")->zipf, 1.2);
  EXPECT_EQ(ParseRouting("ZIPF0.5", "r")->zipf, 0.5);
  EXPECT_EQ(RoutingName(*ParseRouting("zipf:1.2", "r")), "zipf1.2");
  for (const char* bad : {"zipf:9", "zipf:x", "counts:0,0", "counts:1,-2", "skewed"}) {
    absl::StatusOr<MoeRouting> r = ParseRouting(bad, "--routing");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("--routing: ")) << bad;
  }
  EXPECT_THAT(ParseRouting("skewed", "").status().message(), HasSubstr("allowed: balanced"));
}

}  // namespace
}  // namespace wavecrest
