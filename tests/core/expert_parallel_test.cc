// Expert parallelism (ModelSpec::expert_parallel): the experts' GEMMs on one rank, the all-to-alls
// of a step, the memory and gradient reduction of a rank's share of the experts, and the errors.
#include <algorithm>
#include <cmath>
#include <utility>
#include <string>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "core/analysis.h"
#include "core/elementwise_cost.h"
#include "core/gemm.h"
#include "core/memory.h"
#include "core/model_stats.h"
#include "core/parallelism.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

// `s` with n experts of which each token picks k, split over ep ranks, on 4k tokens.
ModelSpec Moe(ModelSpec s, int64_t n, int64_t k, int64_t ep) {
  s.num_experts = n;
  s.experts_per_token = k;
  s.seq_length = 4096;
  s.expert_parallel = ep;
  return *NormalizeSpec(s);
}

// Mixtral 8x7B's shape (mistralai/Mixtral-8x7B-v0.1 config.json).
ModelSpec Mixtral(int64_t ep) {
  return Moe(testing::LlamaLike(4096, 32, 8, 32, 14336, 32000), 8, 2, ep);
}

const Gemm* Find(const std::vector<Gemm>& gemms, absl::string_view name, Pass pass) {
  for (const Gemm& g : gemms) {
    if (g.name == name && g.pass == pass) return &g;
  }
  return nullptr;
}

absl::StatusOr<StepBreakdown> Step(const ModelSpec& s, const RunConfig& run) {
  absl::StatusOr<Analysis> a = Analyze(s, **FindGpu("h100-sxm"));
  if (!a.ok()) return a.status();
  return PlanStep(*a, run);
}

// The predicted forward time of one micro-batch's GEMMs of these names on an H100 SXM, as a
// planned step runs them (at the GPU's sustained-load stretch).
double ForwardS(const ModelSpec& s, std::initializer_list<absl::string_view> names) {
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  const Analysis a = *Analyze(s, gpu);
  double out = 0;
  for (const GemmAnalysis& g : a.gemms) {
    if (g.gemm.pass == Pass::kForward && absl::c_linear_search(names, g.gemm.name)) {
      out += g.prediction.time_s * static_cast<double>(g.gemm.count);
    }
  }
  return gpu.sustained_gemm_stretch * out;
}

// Mixtral on 64 GPUs (d = 64, each expert-parallel group of 8 in one node) at a batch of 512,
// without and with the all-to-all overlap.
RunConfig MixtralOn64() {
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 64 * 8;
  return run;
}
struct PlainAndOverlapped {
  StepBreakdown plain, overlapped;
};
PlainAndOverlapped MixtralOverlap() {
  RunConfig run = MixtralOn64();
  PlainAndOverlapped out;
  out.plain = *Step(Mixtral(8), run);
  run.ep_overlap = true;
  out.overlapped = *Step(Mixtral(8), run);
  return out;
}

// A rank runs E/e experts on the tokens of e ranks: the grouped GEMM's batch shrinks by e and its
// rows grow by e, so the rank's expert FLOPs stay those of its own tokens (balanced routing).
TEST(ExpertParallelTest, ARankRunsItsExpertsOnTheTokensOfEveryEpRank) {
  const std::vector<Gemm> one = BuildGemms(Mixtral(1));
  const std::vector<Gemm> eight = BuildGemms(Mixtral(8));
  const Gemm* a = Find(one, kMoeGateUp, Pass::kForward);
  const Gemm* b = Find(eight, kMoeGateUp, Pass::kForward);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->shape.batch, 8);
  EXPECT_EQ(b->shape.batch, 1);
  EXPECT_EQ(a->shape.m, 4096 * 2 / 8);
  EXPECT_EQ(b->shape.m, 4096 * 2);
  EXPECT_EQ(a->shape.n, b->shape.n);
  EXPECT_DOUBLE_EQ(a->step_flops(), b->step_flops());
  // The router still sees every token of the rank.
  EXPECT_EQ(Find(eight, kMoeRouter, Pass::kForward)->shape.m, 4096);
}

// The all-to-alls are a component of the step; inside one node they are cheaper than across
// nodes, and they are absent without expert parallelism.
TEST(ExpertParallelTest, AllToAllsCostMoreAcrossNodes) {
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 256;
  absl::StatusOr<StepBreakdown> none = Step(Mixtral(1), run);
  absl::StatusOr<StepBreakdown> node = Step(Mixtral(8), run);
  ASSERT_TRUE(none.ok()) << none.status();
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(none->ep_comm_s, 0);
  EXPECT_GT(node->ep_comm_s, 0);
  EXPECT_EQ(node->expert_parallel, 8);
  EXPECT_NEAR(node->step_s,
              node->compute_s + node->recompute_s + node->tp_comm_s + node->ep_comm_s +
                  node->moe_host_s + node->cp_comm_s + node->offload_s + node->pp_bubble_s + node->pp_comm_s +
                  node->dp_comm_s + node->optimizer_s,
              1e-9 * node->step_s);
  // Experts split over two ranks of tensor parallelism put the 8 expert-parallel ranks on two
  // nodes (every second rank).
  ModelSpec wide = Mixtral(8);
  wide.tensor_parallel = 2;
  wide.expert_tensor_parallel = 2;
  absl::StatusOr<StepBreakdown> across = Step(*NormalizeSpec(wide), run);
  ASSERT_TRUE(across.ok()) << across.status();
  EXPECT_GT(across->ep_comm_s, 2 * node->ep_comm_s);
  EXPECT_TRUE(std::any_of(node->assumptions.begin(), node->assumptions.end(),
                          [](const std::string& a) { return a.find("all-to-all") != a.npos; }));
}

// The experts' weights, gradients and (unsharded) optimizer state split over the e ranks; the
// distributed optimizer shards them over the d·c/e ranks holding the same experts, which leaves a
// GPU the same share as without expert parallelism.
TEST(ExpertParallelTest, MemoryOfARanksShareOfTheExperts) {
  MemoryLayout plain;
  plain.data_parallel = 8;
  plain.zero_stage = 0;
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  const MemoryEstimate one = EstimateMemory(Mixtral(1), gpu, plain);
  const MemoryEstimate eight = EstimateMemory(Mixtral(8), gpu, plain);
  const ParamCounts p = CountParams(Mixtral(1));
  EXPECT_GT(p.expert_params, 0.9 * p.total_params);
  EXPECT_NEAR(one.weights_bytes - eight.weights_bytes, 2.0 * p.expert_params * 7 / 8,
              1e-6 * one.weights_bytes);
  EXPECT_LT(eight.optimizer_bytes, one.optimizer_bytes / 5);
  MemoryLayout sharded = plain;
  sharded.zero_stage = 1;
  EXPECT_NEAR(EstimateMemory(Mixtral(8), gpu, sharded).optimizer_bytes,
              EstimateMemory(Mixtral(1), gpu, sharded).optimizer_bytes,
              1e-9 * one.optimizer_bytes);
  // A layout that does not say its data parallelism gets the fewest ranks the group needs (8),
  // not the spec's default of 1, which no expert-parallel run can have.
  MemoryLayout unsaid;
  unsaid.zero_stage = 1;
  EXPECT_DOUBLE_EQ(EstimateMemory(Mixtral(8), gpu, unsaid).optimizer_bytes,
                   EstimateMemory(Mixtral(8), gpu, sharded).optimizer_bytes);
}

// With d = e every rank holds different experts: their gradients have nothing to reduce with, so
// only the dense part's reduction is left.
TEST(ExpertParallelTest, ExpertGradientsReduceOverTheRanksHoldingTheSameExperts) {
  RunConfig run;
  run.num_gpus = 8;
  run.global_batch = 64;
  absl::StatusOr<StepBreakdown> one = Step(Mixtral(1), run);
  absl::StatusOr<StepBreakdown> eight = Step(Mixtral(8), run);
  ASSERT_TRUE(one.ok() && eight.ok());
  const ParamCounts p = CountParams(Mixtral(1));
  const double dense_share =
      static_cast<double>(p.total_params - p.expert_params) / static_cast<double>(p.total_params);
  EXPECT_NEAR(eight->dp_comm_s / one->dp_comm_s, dense_share, 0.02);
}

// Whole experts under tensor parallelism (expert_tensor_parallel 1, as NVIDIA's Qwen3 and
// DeepSeek recipes run them): the t ranks join the expert-parallel group, each routing its own
// T/t tokens to full-width experts; the MoE layers lose their MLP's tensor-parallel collectives.
TEST(ExpertParallelTest, WholeExpertsUnderTensorParallelism) {
  ModelSpec s = Mixtral(1);
  s.tensor_parallel = 2;
  s.expert_parallel = 8;
  s.expert_tensor_parallel = 1;
  absl::StatusOr<ModelSpec> whole = NormalizeSpec(s);
  ASSERT_TRUE(whole.ok()) << whole.status();
  const std::vector<Gemm> gemms = BuildGemms(*whole);
  const Gemm* up = Find(gemms, kMoeGateUp, Pass::kForward);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->shape.n, 2 * 14336);           // full width, gate and up
  EXPECT_EQ(up->shape.m, 4096 / 2 * 2 * 8 / 8);  // T/t tokens, k = 2, e/E = 1
  EXPECT_EQ(up->shape.batch, 1);
  // On 8 GPUs d = 4: the group of 8 is drawn from the t·d = 8 ranks.
  RunConfig run;
  run.num_gpus = 8;
  absl::StatusOr<StepBreakdown> b = Step(*whole, run);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->data_parallel, 4);
  s.expert_tensor_parallel = 2;
  absl::StatusOr<StepBreakdown> split = Step(*NormalizeSpec(s), run);
  ASSERT_FALSE(split.ok());  // 8 does not divide d·c = 4 when the experts are split over t
  EXPECT_THAT(std::string(split.status().message()), HasSubstr("model.expert_parallel"));
  s.expert_tensor_parallel = 4;
  EXPECT_THAT(std::string(NormalizeSpec(s).status().message()),
              HasSubstr("expert_tensor_parallel: must be 1 (whole experts) or tensor_parallel"));
  ModelSpec plain = Mixtral(1);
  plain.tensor_parallel = 2;
  plain.expert_tensor_parallel = 2;
  absl::StatusOr<StepBreakdown> dense_tp = Step(*NormalizeSpec(plain), run);
  ASSERT_TRUE(dense_tp.ok());
  EXPECT_LT(b->tp_comm_s, dense_tp->tp_comm_s);
}

TEST(ExpertParallelTest, ErrorsNameTheField) {
  ModelSpec s = Mixtral(1);
  s.expert_parallel = 3;
  absl::StatusOr<ModelSpec> bad = NormalizeSpec(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("expert_parallel: must divide num_experts (8); got 3"));
  ModelSpec dense = testing::LlamaLike(4096, 32, 8, 32, 14336, 32000);
  dense.expert_parallel = 2;
  bad = NormalizeSpec(dense);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("needs num_experts > 0"));
  // 8 expert-parallel ranks cannot split over 4 data-parallel ones.
  RunConfig run;
  run.num_gpus = 4;
  absl::StatusOr<StepBreakdown> b = Step(Mixtral(8), run);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(std::string(b.status().message()),
              HasSubstr("model.expert_parallel: must divide the data- × context-parallel ranks"));
  // No data parallelism stated: the fewest ranks that hold the expert-parallel group.
  b = Step(Mixtral(8), RunConfig());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->data_parallel, 8);
  EXPECT_EQ(b->gpus, 8);
}

// A capacity factor C runs every expert on C times its balanced share of the routed tokens,
// padded: the expert GEMMs' rows and work grow by C, the model's FLOPs (the useful work) do not,
// the all-to-alls carry the padded buffers, and the MLP's activations grow with it. Dropless (0)
// is the default; a factor without experts, or out of range, is refused naming the field.
TEST(ExpertParallelTest, CapacityFactorPadsEveryExpertToItsCapacity) {
  ModelSpec padded = Mixtral(8);
  padded.moe_capacity_factor = 1.5;
  padded = *NormalizeSpec(padded);
  const ModelSpec dropless = Mixtral(8);
  const std::vector<Gemm> gx = BuildGemms(dropless), gy = BuildGemms(padded);
  const Gemm* a = Find(gx, kMoeGateUp, Pass::kForward);
  const Gemm* b = Find(gy, kMoeGateUp, Pass::kForward);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->shape.m, 4096 * 2 * 3 / 2);
  EXPECT_DOUBLE_EQ(b->step_flops(), 1.5 * a->step_flops());
  const Analysis x = *Analyze(dropless, **FindGpu("h100-sxm"));
  const Analysis y = *Analyze(padded, **FindGpu("h100-sxm"));
  EXPECT_GT(y.flops.step_flops, x.flops.step_flops);
  EXPECT_NEAR(y.flops.model_flops, x.flops.model_flops, 1e-9 * x.flops.model_flops);
  RunConfig run;
  run.num_gpus = 64;
  const StepBreakdown sx = *Step(dropless, run);
  const StepBreakdown sy = *Step(padded, run);
  EXPECT_NEAR(sy.ep_comm_s / sx.ep_comm_s, 1.5, 0.05);
  EXPECT_GT(sy.compute_s, sx.compute_s);
  EXPECT_LT(sy.mfu, sx.mfu);  // padding is not the model's work
  EXPECT_GT(EstimateMemory(padded, **FindGpu("h100-sxm"), {}).activations_bytes,
            EstimateMemory(dropless, **FindGpu("h100-sxm"), {}).activations_bytes);

  ModelSpec wrong = Mixtral(1);
  wrong.moe_capacity_factor = 100;
  EXPECT_THAT(NormalizeSpec(wrong).status().message(), HasSubstr("moe_capacity_factor"));
  ModelSpec dense = testing::LlamaLike(4096, 32, 8, 32, 14336, 32000);
  dense.moe_capacity_factor = 1.25;
  EXPECT_THAT(NormalizeSpec(dense).status().message(), HasSubstr("needs num_experts > 0"));
}

// Megatron-Core's --overlap-moe-expert-parallel-comm: paired micro-batches hide their
// all-to-alls under each other's MoE layers; one micro-batch's worth stays (the unpaired first
// forward and last backward), so the exposed time falls but never below it, a single micro-batch
// hides nothing, and the assumptions say which.
TEST(ExpertParallelTest, EpOverlapHidesAllToAllsUnderAnotherMicroBatch) {
  const auto [plain, overlapped] = MixtralOverlap();
  ASSERT_GT(plain.ep_comm_s, 0);
  EXPECT_LT(overlapped.ep_comm_s, plain.ep_comm_s);
  EXPECT_GE(overlapped.ep_comm_s, plain.ep_comm_s / plain.microbatches - 1e-12);
  EXPECT_LT(overlapped.step_s, plain.step_s);
  EXPECT_DOUBLE_EQ(overlapped.compute_s, plain.compute_s);
  bool said = false;
  for (const std::string& a : overlapped.assumptions) said |= absl::StrContains(a, "ep_overlap");
  EXPECT_TRUE(said);
  RunConfig run = MixtralOn64();
  run.ep_overlap = true;
  run.global_batch = 64;  // one micro-batch: nothing to pair with
  EXPECT_DOUBLE_EQ(Step(Mixtral(8), run)->ep_comm_s, [&] {
    RunConfig off = run;
    off.ep_overlap = false;
    return Step(Mixtral(8), off)->ep_comm_s;
  }());
}

// 128 experts of which each token picks 8, Qwen3-30B-A3B's routing and shape (Qwen/Qwen3-30B-A3B
// config.json).
ModelSpec FineGrained(int64_t ep) {
  return Moe(testing::LlamaLike(2048, 32, 4, 48, 768, 151936), 128, 8, ep);
}

// P(one of `held` experts among k drawn from n without replacement), written independently of the
// planner's product: 1 - C(n-held, k) / C(n, k) by log-gamma.
double Hit(int n, int held, int k) {
  auto lchoose = [](int a, int b) { return std::lgamma(a + 1.0) - std::lgamma(b + 1.0) -
                                           std::lgamma(a - b + 1.0); };
  return 1 - std::exp(lchoose(n - held, k) - lchoose(n, k));
}

// The flex dispatcher (DeepEP, HybridEP) sends a token once to each rank holding one of its
// experts, not once per expert: inside one node its all-to-alls shrink by P(a rank holds one of
// the 8) = 1 - C(112,8)/C(128,8), about 0.66, against the alltoall dispatcher's 8 copies spread
// over 8 ranks. Across two nodes the network carries one copy per other node holding one
// (P = 1 - C(64,8)/C(128,8), nearly 1) instead of 4: the network-bound all-to-all about 4x
// shorter. Its kernels reach the link fractions DeepEP measured, NCCL's kCollectiveEfficiency.
// The names deepep and hybridep are the same dispatcher; others are refused.
TEST(ExpertParallelTest, FlexDispatcherSendsATokenOncePerRankAndNode) {
  RunConfig run;
  run.num_gpus = 16;
  run.global_batch = 16 * 4;
  const double nvlink = kCollectiveEfficiency / FlexLinkEfficiency(false, 8);
  const double network = kCollectiveEfficiency / FlexLinkEfficiency(true, 16);
  for (const auto& [ep, expected] : {std::pair<int64_t, double>{8, Hit(128, 16, 8) * nvlink},
                                     {16, Hit(128, 64, 8) / 4 * network}}) {
    const ModelSpec s = FineGrained(ep);
    run.ep_dispatcher = EpDispatcher::kAllToAll;
    const StepBreakdown alltoall = *Step(s, run);
    run.ep_dispatcher = EpDispatcher::kFlex;
    const StepBreakdown flex = *Step(s, run);
    ASSERT_GT(alltoall.ep_comm_s, 0);
    EXPECT_NEAR(flex.ep_comm_s / alltoall.ep_comm_s, expected, 0.02 * expected) << "ep " << ep;
    EXPECT_DOUBLE_EQ(flex.compute_s, alltoall.compute_s);
    bool said = false;
    for (const std::string& a : flex.assumptions) said |= absl::StrContains(a, "flex dispatcher");
    EXPECT_TRUE(said) << "ep " << ep;
  }
  EXPECT_EQ(*ParseEpDispatcher("deepep"), EpDispatcher::kFlex);
  EXPECT_EQ(*ParseEpDispatcher("hybridep"), EpDispatcher::kFlex);
  EXPECT_EQ(*ParseEpDispatcher(""), EpDispatcher::kAllToAll);
  const absl::StatusOr<EpDispatcher> bad = ParseEpDispatcher("nccl");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("allowed: alltoall"));
}

// Group-limited routing (DeepSeek-V3: 256 experts in 8 groups, each token within 4 of them):
// with EP 64 over 8 nodes a node holds one group, so a token reaches a node only when its group
// is among the 4 drawn: P(node) = 4/8 × (1 - C(96,8)/C(128,8)), about 0.45, against
// 1 - C(224,8)/C(256,8), about 0.66, without groups; the network-bound flex all-to-all shrinks
// by that ratio. The alltoall dispatcher's k copies do not change; the assumptions say it; a
// group count that does not divide the experts, or groups too few for k, are refused.
TEST(ExpertParallelTest, GroupLimitedRoutingSendsATokenToFewerNodes) {
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 64 * 4;
  run.ep_dispatcher = EpDispatcher::kFlex;
  const ModelSpec open_routing = Moe(testing::LlamaLike(2048, 32, 4, 8, 512, 32000), 256, 8, 64);
  ModelSpec grouped = open_routing;
  grouped.expert_groups = 8;
  grouped.expert_groups_per_token = 4;
  grouped = *NormalizeSpec(grouped);
  const StepBreakdown a = *Step(open_routing, run), b = *Step(grouped, run);
  ASSERT_GT(a.ep_comm_s, 0);
  const double expected = 0.5 * Hit(128, 32, 8) / Hit(256, 32, 8);
  EXPECT_NEAR(b.ep_comm_s / a.ep_comm_s, expected, 0.03 * expected);
  bool said = false;
  for (const std::string& x : b.assumptions) said |= absl::StrContains(x, "4 of 8 groups");
  EXPECT_TRUE(said);
  run.ep_dispatcher = EpDispatcher::kAllToAll;
  EXPECT_DOUBLE_EQ(Step(grouped, run)->ep_comm_s, Step(open_routing, run)->ep_comm_s);
  ModelSpec bad = open_routing;
  bad.expert_groups = 7;
  EXPECT_THAT(NormalizeSpec(bad).status().message(), HasSubstr("expert_groups"));
  bad.expert_groups = 64;  // 4 experts a group: one group cannot hold a token's 8
  bad.expert_groups_per_token = 1;
  EXPECT_THAT(NormalizeSpec(bad).status().message(), HasSubstr("expert_groups_per_token"));
}

// DeepEP's tables (docs/legacy.md at 0297fc80): over NVLink 153 and 158 GB/s of ~160; over RDMA
// 43 GB/s of ~50 at EP 16, the whole NIC from EP 32; no call across nodes shorter than its
// low-latency kernels (77 us dispatch and 114 combine at EP 8, 194 and 360 at EP 256), twice that
// at a NIC of half the rate.
TEST(ExpertParallelTest, DeepEpTablesGiveTheLinkFractionsAndCallFloors) {
  EXPECT_NEAR(FlexLinkEfficiency(false, 8), 155.5 / 160, 1e-12);
  EXPECT_NEAR(FlexLinkEfficiency(true, 16), 0.86, 1e-12);
  EXPECT_NEAR(FlexLinkEfficiency(true, 8), 0.86, 1e-12);
  EXPECT_DOUBLE_EQ(FlexLinkEfficiency(true, 64), 1.0);
  EXPECT_NEAR(CallFloor(8, 50e9).dispatch_s, 77e-6, 1e-12);
  EXPECT_NEAR(CallFloor(48, 50e9).combine_s, 273e-6, 1e-12);  // EP 32's row
  EXPECT_NEAR(CallFloor(1024, 50e9).combine_s, 360e-6, 1e-12);
  EXPECT_NEAR(CallFloor(16, 25e9).dispatch_s, 2 * 118e-6, 1e-12);
}

// A short micro-batch across nodes: its all-to-alls move little, and each call still takes
// DeepEP's floor: every MoE layer's two dispatches and two combines at least (forward and
// backward), the alltoall dispatcher's and the flex one's alike.
TEST(ExpertParallelTest, CallsAcrossNodesTakeAtLeastTheFloor) {
  ModelSpec s = FineGrained(16);
  s.seq_length = 128;
  s = *NormalizeSpec(s);
  RunConfig run;
  run.num_gpus = 16;
  run.global_batch = 16;
  const EpCallFloor floor = CallFloor(16, (**FindGpu("h100-sxm")).link.network_bytes_per_s);
  for (EpDispatcher d : {EpDispatcher::kAllToAll, EpDispatcher::kFlex}) {
    run.ep_dispatcher = d;
    const StepBreakdown b = *Step(s, run);
    EXPECT_NEAR(b.ep_comm_s, 48 * 2 * (floor.dispatch_s + floor.combine_s),
                1e-9 * b.ep_comm_s);
  }
}

// Hidden all-to-alls are not free: while the dispatch kernels hold kEpOverlapSms of the 132 SMs
// the compute beside them runs on the rest, so each hidden second costs 20/112 of a second.
TEST(ExpertParallelTest, OverlapCostsTheSmsTheDispatchHolds) {
  const auto [plain, overlapped] = MixtralOverlap();
  const double m = static_cast<double>(plain.microbatches);
  const double per = plain.ep_comm_s / m;
  // Mixtral's MoE layers outlast their all-to-alls: every paired one hidden.
  EXPECT_NEAR(overlapped.ep_comm_s, per + (m - 1) * per * 20 / 112, 1e-9 * plain.ep_comm_s);
}

// Dropless experts wait on the host at every MoE layer (kMoeHostWaitS unless the run says how
// long): the waits add up over the stage's MoE layers and micro-batches, as their own component of
// the step. A capacity factor's static shapes wait for nothing; out of range is refused naming
// the field.
TEST(ExpertParallelTest, HostWaitsPerMoeLayerAddUp) {
  const ModelSpec s = Mixtral(8);
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 64 * 8;
  run.moe_host_s = 0;
  const StepBreakdown none = *Step(s, run);
  run.moe_host_s = 2e-3;
  const StepBreakdown two = *Step(s, run);
  run.moe_host_s.reset();
  const StepBreakdown planner = *Step(s, run);
  const double m = static_cast<double>(none.microbatches);
  EXPECT_EQ(none.moe_host_s, 0);
  EXPECT_NEAR(two.moe_host_s, m * 32 * 2e-3, 1e-12);
  EXPECT_NEAR(two.step_s - none.step_s, two.moe_host_s, 1e-9 * two.step_s);
  EXPECT_NEAR(planner.moe_host_s, m * 32 * kMoeHostWaitS, 1e-12);
  bool said = false;
  for (const std::string& x : planner.assumptions) said |= absl::StrContains(x, "on the host");
  EXPECT_TRUE(said);
  ModelSpec padded = s;
  padded.moe_capacity_factor = 1.25;
  EXPECT_EQ(Step(*NormalizeSpec(padded), run)->moe_host_s, 0);
  run.moe_host_s = -1;
  EXPECT_THAT(std::string(Step(s, run).status().message()), HasSubstr("run.moe_host_s"));
}

// Under the expert-parallel overlap another micro-batch's queued kernels fill the GPU's idle share
// of each host wait (kMoeHostIdleS, at most the whole wait) for every micro-batch but the unpaired
// one; the rest of the wait (the host's launches) stays. Without the overlap nothing is filled.
TEST(ExpertParallelTest, OverlapFillsTheIdleShareOfTheHostWaits) {
  const auto [plain, overlapped] = MixtralOverlap();
  const double m = static_cast<double>(plain.microbatches);
  ASSERT_GT(m, 1);
  EXPECT_NEAR(plain.moe_host_s, m * 32 * kMoeHostWaitS, 1e-12);
  EXPECT_NEAR(overlapped.moe_host_s, 32 * (m * kMoeHostWaitS - (m - 1) * kMoeHostIdleS), 1e-12);
  // A wait shorter than the idle share is filled whole, but for the unpaired micro-batch.
  RunConfig run = MixtralOn64();
  run.ep_overlap = true;
  run.moe_host_s = kMoeHostIdleS / 2;
  EXPECT_NEAR(Step(Mixtral(8), run)->moe_host_s, 32 * kMoeHostIdleS / 2, 1e-12);
  run.moe_host_s = 0;
  EXPECT_EQ(Step(Mixtral(8), run)->moe_host_s, 0);
  bool said = false;
  for (const std::string& x : overlapped.assumptions) said |= absl::StrContains(x, "idle share");
  EXPECT_TRUE(said);
}

// An 8-layer model with DeepSeek-V3's multi-latent attention, 4K tokens, micro-batch 1.
ModelSpec MlaModel() {
  ModelSpec s = testing::WithMla(testing::LlamaLike(4096, 32, 8, 8, 14336, 32000));
  s.seq_length = 4096;
  s.micro_batch_size = 1;
  return *NormalizeSpec(s);
}

// Recomputing MLA's up-projections (RunConfig::recompute_mla_up_proj) adds their forward GEMMs
// to every layer's recomputation, says so, and frees memory; a model without MLA is refused naming
// the field.
TEST(ExpertParallelTest, RecomputingMlaUpProjectionsRerunsTheirForward) {
  const ModelSpec s = MlaModel();
  RunConfig run;
  run.num_gpus = 8;
  run.global_batch = 16;
  const StepBreakdown plain = *Step(s, run);
  run.recompute_mla_up_proj = true;
  const StepBreakdown again = *Step(s, run);
  const double up = ForwardS(s, {kMlaQUp, kMlaKvUp});
  ASSERT_GT(up, 0);
  EXPECT_NEAR(again.recompute_s - plain.recompute_s,
              static_cast<double>(plain.microbatches) * up, 1e-9 * again.step_s);
  EXPECT_LT(again.memory.activations_bytes, plain.memory.activations_bytes);
  bool said = false;
  for (const std::string& x : again.assumptions) said |= absl::StrContains(x, "mla_up_proj");
  EXPECT_TRUE(said);
  absl::StatusOr<StepBreakdown> gqa = Step(Mixtral(1), run);
  ASSERT_FALSE(gqa.ok());
  EXPECT_THAT(std::string(gqa.status().message()), HasSubstr("run.recompute_mla_up_proj"));
}

// The plan weighs MLA's up-projections recomputed or not, for MLA models only and not beside full
// recomputation (which reruns them anyway); the step it returns says which it took.
TEST(ExpertParallelTest, ThePlanWeighsRecomputingMlaUpProjections) {
  const ModelSpec s = MlaModel();
  RunConfig run;
  run.num_gpus = 8;
  run.global_batch = 16;
  int with = 0;
  for (const RunConfig& c : CandidateLayouts(s, run)) {
    if (!c.recompute_mla_up_proj) continue;
    ++with;
    EXPECT_NE(c.recompute, Recompute::kFull);
  }
  EXPECT_GT(with, 0);
  for (const RunConfig& c : CandidateLayouts(Mixtral(1), run)) {
    EXPECT_FALSE(c.recompute_mla_up_proj);
  }
  run.recompute_mla_up_proj = true;
  EXPECT_TRUE(Step(s, run)->recompute_mla_up_proj);
  run.recompute = Recompute::kFull;  // full recomputation reruns them: nothing apart to say
  EXPECT_FALSE(Step(s, run)->recompute_mla_up_proj);
}

// The slowest stage's MoE layers are its own: with the dense layers first (DeepSeek-V3's
// first_k_dense_replace) the last of 4 stages holds 8 MoE layers of Mixtral's 32, not the model's
// share of 29/32 of them; with every other layer MoE, 4.
TEST(ExpertParallelTest, TheSlowestStageCountsItsOwnMoeLayers) {
  ModelSpec s = Mixtral(1);
  s.first_dense_layers = 3;
  s.pipeline_parallel = 4;
  s = *NormalizeSpec(s);
  RunConfig run;
  run.num_gpus = 4;
  run.global_batch = 8;
  const StepBreakdown b = *Step(s, run);
  EXPECT_NEAR(b.moe_host_s, static_cast<double>(b.microbatches) * 8 * kMoeHostWaitS, 1e-12);
  s.first_dense_layers = 0;
  s.moe_layer_interval = 2;
  const StepBreakdown every_other = *Step(*NormalizeSpec(s), run);
  EXPECT_NEAR(every_other.moe_host_s, static_cast<double>(b.microbatches) * 4 * kMoeHostWaitS,
              1e-12);
}

// Megatron-Core's unfused expert ops (RunConfig::moe_unfused_ops) add to a step of biased experts
// with a clamped GLU what they move in every MoE layer of every micro-batch, say so in the
// assumptions, and leave Mixtral's experts (neither) as they were.
TEST(ExpertParallelTest, MegatronCoresUnfusedExpertOpsAddToBiasedClampedExperts) {
  ModelSpec oss = testing::GptOss120B(8);
  oss.pipeline_parallel = 4;
  oss = *NormalizeSpec(oss);
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 128;
  for (const ModelSpec& s : {oss, Mixtral(8)}) {
    const absl::StatusOr<Analysis> a = Analyze(s, **FindGpu("h100-sxm"));
    ASSERT_TRUE(a.ok()) << a.status();
    run.moe_unfused_ops = false;
    const absl::StatusOr<StepBreakdown> fused = PlanStep(*a, run);
    run.moe_unfused_ops = true;
    const absl::StatusOr<StepBreakdown> unfused = PlanStep(*a, run);
    ASSERT_TRUE(fused.ok() && unfused.ok());
    const MoeUnfusedTime t = MoeUnfusedOpsLayerTimeS(a->spec, **FindGpu("h100-sxm"));
    // The last stage's 9 layers, all MoE, for each of the micro-batches.
    EXPECT_NEAR(unfused->compute_s - fused->compute_s, unfused->microbatches * 9 * t.total_s,
                1e-9);
    bool said = false;
    for (const std::string& line : unfused->assumptions) {
      said |= absl::StrContains(line, "Megatron-Core's TEGroupedMLP");
    }
    EXPECT_TRUE(said);
  }
  EXPECT_GT(MoeUnfusedOpsLayerTimeS(oss, **FindGpu("h100-sxm")).total_s, 0);
  EXPECT_EQ(MoeUnfusedOpsLayerTimeS(Mixtral(8), **FindGpu("h100-sxm")).total_s, 0);
}

}  // namespace
}  // namespace wavecrest

namespace wavecrest {
namespace {

// recompute_moe (Megatron-Core's recompute_modules "moe") runs each MoE layer's forward again:
// its GEMMs' forward time and one more dispatch and combine; nothing more under full
// recomputation, which reruns it already; refused for a dense model.
TEST(ExpertParallelTest, RecomputingTheMoeLayersAddsTheirForwardAndAllToAlls) {
  const ModelSpec s = Mixtral(8);
  RunConfig run;
  run.num_gpus = 16;
  run.global_batch = 64;
  run.zero_stage = 1;
  const StepBreakdown base = *Step(s, run);
  run.recompute_moe = true;
  const StepBreakdown moe = *Step(s, run);
  const double forward = ForwardS(s, {kMoeRouter, kMoeGateUp, kMoeDown, kMoeUp});
  const double m = static_cast<double>(base.microbatches);
  EXPECT_NEAR(moe.recompute_s - base.recompute_s, m * forward, 1e-9 * m * forward);
  EXPECT_NEAR(moe.ep_comm_s / base.ep_comm_s, 1.5, 1e-9);  // 3 passes of dispatch and combine
  EXPECT_TRUE(absl::c_any_of(moe.assumptions, [](const std::string& x) {
    return absl::StrContains(x, "recompute_moe");
  }));
  // Its experts' activations are not kept: every layer of Mixtral is MoE, so each drops its
  // SwiGLU interior (6 bytes per unit of the active width, top 2 of 14336, per token).
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  MemoryLayout layout;
  const double kept = EstimateMemory(s, gpu, layout).activations_bytes;
  layout.recompute_moe = true;
  const double recomputed = EstimateMemory(s, gpu, layout).activations_bytes;
  EXPECT_DOUBLE_EQ(kept - recomputed, 32.0 * 4096 * 6 * 2 * 14336);
  EXPECT_LT(moe.memory.activations_bytes, base.memory.activations_bytes);
  run.recompute = Recompute::kFull;
  const StepBreakdown full = *Step(s, run);
  run.recompute_moe = false;
  const StepBreakdown full_alone = *Step(s, run);
  EXPECT_DOUBLE_EQ(full.step_s, full_alone.step_s);
  RunConfig dense_run;
  dense_run.recompute_moe = true;
  const ModelSpec dense_spec = *NormalizeSpec(testing::LlamaLike(4096, 32, 8, 32, 14336, 32000));
  absl::StatusOr<StepBreakdown> dense = Step(dense_spec, dense_run);
  ASSERT_FALSE(dense.ok());
  EXPECT_THAT(std::string(dense.status().message()), ::testing::HasSubstr("run.recompute_moe"));
}

}  // namespace
}  // namespace wavecrest
