// The step of a training run under parallelism (core/parallelism.h): its components, the
// pipeline's bubble, the collectives' paths, the errors, and Megatron's published Selene runs.
#include "core/parallelism.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "bench/megatron_runs.h"
#include "core/collectives.h"
#include "core/elementwise_cost.h"
#include "core/gemm.h"
#include "core/model_stats.h"
#include "core/units.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::Llama70B;

// Llama 3 70B's layer, eight of them (fits a test's time, not a GPU), normalized.
ModelSpec EightLayers70B(int64_t tp, int64_t seq = 8192) {
  ModelSpec s = Llama70B(tp, 1);
  s.num_layers = 8;
  s.seq_length = seq;
  return *NormalizeSpec(s);
}

StepBreakdown Plan(const ModelSpec& s, const RunConfig& run, const char* gpu = "h100-sxm") {
  absl::StatusOr<Analysis> a = Analyze(s, **FindGpu(gpu));
  EXPECT_TRUE(a.ok()) << a.status();
  absl::StatusOr<StepBreakdown> b = PlanStep(*a, run);
  EXPECT_TRUE(b.ok()) << b.status();
  return *b;
}

// Whether one of the step's assumptions says `text`.
bool Says(const StepBreakdown& b, const std::string& text) {
  return std::any_of(b.assumptions.begin(), b.assumptions.end(),
                     [&](const std::string& a) { return a.find(text) != std::string::npos; });
}

double Sum(const StepBreakdown& b) {
  return b.compute_s + b.recompute_s + b.tp_comm_s + b.ep_comm_s + b.moe_host_s + b.cp_comm_s +
         b.offload_s + b.pp_bubble_s + b.pp_comm_s + b.dp_comm_s + b.optimizer_s;
}

// The case: tensor parallelism alone and with a pipeline no longer predict the same step,
// and every component shows.
TEST(ParallelismTest, Llama70BOn64H100sShowsEveryComponent) {
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 1024;
  const StepBreakdown b = Plan(Llama70B(8, 4), run);
  EXPECT_EQ(b.data_parallel, 2);
  EXPECT_EQ(b.nodes, 8);
  EXPECT_EQ(b.microbatches, 512);
  EXPECT_NEAR(b.step_s, Sum(b), 1e-9 * b.step_s);
  EXPECT_GT(b.tp_comm_s, 0);
  EXPECT_GT(b.pp_bubble_s, 0);
  EXPECT_GT(b.pp_comm_s, 0);
  EXPECT_GT(b.dp_comm_s, 0);
  EXPECT_GT(b.optimizer_s, 0);
  EXPECT_GT(b.mfu, 0.30);  // plausible, as published runs report
  EXPECT_LT(b.mfu, 0.60);
  RunConfig tp_only;
  tp_only.num_gpus = 8;
  tp_only.global_batch = 512;
  const StepBreakdown t = Plan(Llama70B(8, 1), tp_only);
  EXPECT_EQ(t.pp_bubble_s, 0);
  EXPECT_EQ(t.pp_comm_s, 0);
  EXPECT_NE(t.step_s / t.global_batch, b.step_s / b.global_batch);
}

TEST(ParallelismTest, OneGpuHasNoCommunication) {
  ModelSpec s = Llama70B(1, 1);
  s.num_layers = 4;
  s.seq_length = 2048;
  const StepBreakdown b = Plan(s, RunConfig());
  EXPECT_EQ(b.gpus, 1);
  EXPECT_EQ(b.tp_comm_s + b.pp_bubble_s + b.pp_comm_s + b.dp_comm_s, 0);
  EXPECT_NEAR(b.step_s, b.compute_s + b.optimizer_s, 1e-12);
}

// Multi-token prediction (RunConfig::mtp_layers) runs on the last stage: per module one more mean
// layer, its 2h × h projection (2h/V of the logits' work) and one more pass through the output
// layer and the loss, and its memory with one stage; out of its range it is refused naming the
// field.
TEST(ParallelismTest, MultiTokenPredictionAddsALayerAndAHeadToTheLastStage) {
  const ModelSpec s = EightLayers70B(8);  // 8 layers on one stage: the last stage is the only one
  const absl::StatusOr<Analysis> a = Analyze(s, **FindGpu("h100-sxm"));
  ASSERT_TRUE(a.ok()) << a.status();
  RunConfig run;
  run.num_gpus = 8;
  run.global_batch = 4;
  const StepBreakdown none = *PlanStep(*a, run);
  run.mtp_layers = 1;
  const StepBreakdown one = *PlanStep(*a, run);
  // The step's GEMMs at the GPU's sustained-load stretch, attention's fused kernel at its own.
  const double stretch = a->gpu->sustained_gemm_stretch;
  double logits = 0, layers = 0;
  for (const GemmAnalysis& g : a->gemms) {
    (g.gemm.name == kLogits ? logits : layers) += g.prediction.time_s *
                                                  static_cast<double>(g.gemm.count) *
                                                  (g.gemm.fused_attention ? 1.0 : stretch);
  }
  layers += 8 * a->elementwise.layer_time_s;
  const double head = logits + a->elementwise.loss_time_s;
  const double mtp = layers / 8 + logits * 2 * 8192 / 128256.0 + head;
  EXPECT_NEAR(one.compute_s - none.compute_s, none.microbatches * mtp, 1e-9 * one.compute_s);
  EXPECT_TRUE(Says(one, "multi-token prediction (mtp_layers 1)"));
  EXPECT_FALSE(Says(none, "multi-token prediction"));
  // Its memory on the one stage (core/memory.h, MemoryLayout::mtp_layers): more than a layer's
  // share of the state.
  EXPECT_GT(one.memory.total_bytes - none.memory.total_bytes,
            none.memory.weights_bytes / 8);
  run.mtp_layers = 9;
  EXPECT_THAT(std::string(PlanStep(*a, run).status().message()),
              ::testing::HasSubstr("run.mtp_layers: must be in [0, 8]; got 9"));
}

// A planned step holds the GPU at its power limit: its GEMMs run at the GPU's sustained-load
// stretch, attention's fused kernel and the elementwise kernels at their own rates; a GPU without
// a measured stretch keeps the model's rates, and each answer says which.
TEST(ParallelismTest, AStepRunsItsGemmsAtTheSustainedStretchAndSaysSo) {
  const ModelSpec s = EightLayers70B(8);
  RunConfig run;
  run.num_gpus = 8;
  run.global_batch = 4;
  for (const char* name : {"h100-sxm", "a100-sxm-80gb"}) {
    const GpuSpec& gpu = **FindGpu(name);
    const absl::StatusOr<Analysis> a = Analyze(s, gpu);
    ASSERT_TRUE(a.ok()) << a.status();
    const StepBreakdown step = *PlanStep(*a, run);
    double gemms = 0, attention = 0;
    for (const GemmAnalysis& g : a->gemms) {
      (g.gemm.fused_attention ? attention : gemms) +=
          g.prediction.time_s * static_cast<double>(g.gemm.count);
    }
    const double kernels = attention + 8 * a->elementwise.layer_time_s +
                           a->elementwise.loss_time_s;
    EXPECT_NEAR(step.compute_s,
                step.microbatches * (gpu.sustained_gemm_stretch * gemms + kernels),
                1e-9 * step.compute_s)
        << name;
    if (gpu.name == "h100-sxm") {
      EXPECT_GT(gpu.sustained_gemm_stretch, 1.0);
      EXPECT_TRUE(Says(step, absl::StrFormat("take %.2fx their predicted times",
                                             gpu.sustained_gemm_stretch)));
    } else {
      EXPECT_EQ(gpu.sustained_gemm_stretch, 1.0);
      EXPECT_TRUE(Says(step, "measured or fitted for the a100-sxm-80gb"));
    }
    // The run's own stretch replaces the GPU's (a cluster whose GPUs hold their clocks: 1).
    RunConfig held = run;
    held.sustained_gemm_stretch = 1.0;
    const StepBreakdown own = *PlanStep(*a, held);
    EXPECT_NEAR(own.compute_s, own.microbatches * (gemms + kernels), 1e-9 * own.compute_s) << name;
    EXPECT_TRUE(Says(own, "take 1.00x their predicted times"));
    EXPECT_TRUE(Says(own, "as given (--sustained-stretch"));
    held.sustained_gemm_stretch = 2.5;
    EXPECT_THAT(std::string(PlanStep(*a, held).status().message()),
                ::testing::HasSubstr("run.sustained_gemm_stretch: must be in [1, 2]"));
  }
}

// 1F1B: (p-1)/v of one stage's micro-batch time idles; interleaving divides it.
TEST(ParallelismTest, TheBubbleIsPMinusOneOverVStages) {
  for (int64_t v : {1, 2, 5}) {
    RunConfig run;
    run.num_gpus = 32;
    run.global_batch = 64;
    run.interleave = v;
    const StepBreakdown b = Plan(Llama70B(8, 4), run);
    const double stage = (b.compute_s + b.recompute_s + b.tp_comm_s) / b.microbatches;
    EXPECT_NEAR(b.pp_bubble_s, 3.0 / v * stage, 1e-9 * stage) << v;
  }
}

// Full recomputation repeats the forward (a third of the layers' work or so) and its all-reduces;
// a tensor-parallel group larger than the NVLink domain goes over the network.
TEST(ParallelismTest, RecomputationAndTheNetworkCost) {
  RunConfig none, full;
  none.num_gpus = full.num_gpus = 8;
  full.recompute = Recompute::kFull;
  const StepBreakdown a = Plan(Llama70B(8, 1), none);
  const StepBreakdown f = Plan(Llama70B(8, 1), full);
  EXPECT_NEAR(f.tp_comm_s / a.tp_comm_s, 6.0 / 4.0, 1e-9);
  EXPECT_GT(f.recompute_s, 0.25 * f.compute_s);
  EXPECT_LT(f.recompute_s, 0.40 * f.compute_s);
  RunConfig wide;
  wide.num_gpus = 16;
  const StepBreakdown w = Plan(Llama70B(16, 1), wide);
  // Half the bytes per rank each, but over the network at a ninth of NVLink's bandwidth.
  EXPECT_GT(w.tp_comm_s, 3 * a.tp_comm_s);
}

TEST(ParallelismTest, DataParallelReductionCanBeHidden) {
  RunConfig run;
  run.num_gpus = 128;
  run.global_batch = 256;
  const StepBreakdown exposed = Plan(Llama70B(8, 4), run);
  run.dp_overlap = 1;
  const StepBreakdown hidden = Plan(Llama70B(8, 4), run);
  EXPECT_GT(exposed.dp_comm_s, 0);
  EXPECT_EQ(hidden.dp_comm_s, 0);
  run.dp_overlap = 0;
  run.zero_stage = 1;
  const StepBreakdown sharded = Plan(Llama70B(8, 4), run);
  EXPECT_LT(sharded.optimizer_s, exposed.optimizer_s / 3);
}

// Megatron-Core's overlap_grad_reduce: the reduction beside the last micro-batch's backward (and
// the gather beside the first's forward) hides up to one micro-batch's compute of the stage, said
// in the assumptions; ZeRO-3 keeps its own overlap.
TEST(ParallelismTest, OverlapGradReduceHidesOneMicroBatchOfTheStage) {
  RunConfig run;
  run.num_gpus = 128;
  run.global_batch = 256;
  run.zero_stage = 1;
  const StepBreakdown plain = Plan(Llama70B(8, 4), run);
  run.overlap_grad_reduce = true;
  const StepBreakdown overlapped = Plan(Llama70B(8, 4), run);
  const double one = (plain.compute_s + plain.recompute_s) / plain.microbatches;
  ASSERT_GT(plain.dp_comm_s, one);  // more to reduce than one micro-batch hides
  EXPECT_NEAR(overlapped.dp_comm_s, plain.dp_comm_s - one, 1e-9 * plain.dp_comm_s);
  EXPECT_TRUE(Says(overlapped, "overlap_grad_reduce"));
  EXPECT_FALSE(Says(plain, "overlap_grad_reduce"));
  run.global_batch = 4096;  // more micro-batches: the same one is hidden, no more
  EXPECT_NEAR(Plan(Llama70B(8, 4), run).dp_comm_s, plain.dp_comm_s - one,
              1e-9 * plain.dp_comm_s);
  run.zero_stage = 3;
  RunConfig fsdp = run;
  fsdp.overlap_grad_reduce = false;
  EXPECT_EQ(Plan(Llama70B(8, 4), run).dp_comm_s, Plan(Llama70B(8, 4), fsdp).dp_comm_s);
}

// Megatron-Core's --tp-comm-overlap as a fraction: the tensor-parallel collectives shrink by it,
// nothing else moves, the assumptions say so; off (0) by default, as Megatron-LM has it.
TEST(ParallelismTest, TensorParallelCollectivesCanBeHidden) {
  RunConfig run;
  run.num_gpus = 32;
  const StepBreakdown plain = Plan(Llama70B(8, 4), run);
  run.tp_overlap = 0.75;
  const StepBreakdown hidden = Plan(Llama70B(8, 4), run);
  EXPECT_GT(plain.tp_comm_s, 0);
  EXPECT_NEAR(hidden.tp_comm_s, 0.25 * plain.tp_comm_s, 1e-12);
  EXPECT_EQ(hidden.compute_s, plain.compute_s);
  EXPECT_LT(hidden.step_s, plain.step_s);
  EXPECT_TRUE(Says(plain, "tensor-parallel collectives not overlapped"));
  EXPECT_TRUE(Says(hidden, "75% of the tensor-parallel collectives hidden"));
  run.tp_overlap = 1.5;
  EXPECT_FALSE(PlanStep(*Analyze(*NormalizeSpec(Llama70B(8, 4)), **FindGpu("h100-sxm")), run).ok());
}

// Megatron-LM overlaps the interleaved schedule's pipeline sends with compute by default
// (overlap_p2p_comm): only the warm-up's and the flush's chains, 2(p-1) sends, stay exposed, and
// the assumptions say so; --no-overlap-p2p-communication (pp_overlap false) exposes every send, and
// the plain 1F1B schedule cannot overlap them at all.
TEST(ParallelismTest, InterleavedPipelineSendsOverlapByDefault) {
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 256;
  run.interleave = 2;
  const StepBreakdown overlapped = Plan(Llama70B(8, 4), run);
  run.pp_overlap = false;
  const StepBreakdown exposed = Plan(Llama70B(8, 4), run);
  // 256 sequences over d = 2: 128 micro-batches, 2 chunks each, forward and backward.
  EXPECT_NEAR(overlapped.pp_comm_s / exposed.pp_comm_s, 2.0 * 3 / (128 * 2 * 2), 1e-9);
  EXPECT_EQ(overlapped.compute_s, exposed.compute_s);
  EXPECT_LT(overlapped.step_s, exposed.step_s);
  EXPECT_TRUE(Says(overlapped, "pipeline sends overlapped with the next chunk's compute"));
  EXPECT_TRUE(Says(exposed, "pipeline sends not overlapped (overlap_p2p_comm off)"));
  RunConfig plain;
  plain.num_gpus = 64;
  plain.global_batch = 256;
  const StepBreakdown one_f_one_b = Plan(Llama70B(8, 4), plain);
  plain.pp_overlap = false;
  EXPECT_EQ(Plan(Llama70B(8, 4), plain).pp_comm_s, one_f_one_b.pp_comm_s);
  EXPECT_TRUE(Says(one_f_one_b, "1F1B without interleaving cannot"));
}

// A named network sets what crosses nodes: the same run's data-parallel all-reduce takes half as
// long on NDR (400 Gb/s per GPU) as on HDR (200), the reference system's (DGX A100: HDR) is HDR's,
// SHARP reduces in the switches (each GPU sends once instead of 2(n-1)/n times), NVLink inside a
// node is untouched, the assumptions cite the profile, and an unknown name is refused naming the
// allowed ones.
TEST(ParallelismTest, NamedNetworksSetTheRateAcrossNodes) {
  ModelSpec s = Llama70B(8, 1);
  RunConfig run;
  run.num_gpus = 64;  // t = 8 in a node, d = 8 across nodes
  run.global_batch = 64;
  const StepBreakdown reference = Plan(s, run, "a100-sxm-80gb");
  run.network = "hdr-ib";
  const StepBreakdown hdr = Plan(s, run, "a100-sxm-80gb");
  run.network = "ndr-ib";
  const StepBreakdown ndr = Plan(s, run, "a100-sxm-80gb");
  run.network = "ndr-ib-sharp";
  const StepBreakdown sharp = Plan(s, run, "a100-sxm-80gb");
  EXPECT_DOUBLE_EQ(hdr.dp_comm_s, reference.dp_comm_s);
  ASSERT_GT(hdr.dp_comm_s, 0);
  // Bandwidth terms halve; the per-step latencies stay.
  EXPECT_NEAR(ndr.dp_comm_s / hdr.dp_comm_s, 0.5, 0.01);
  EXPECT_NEAR(sharp.dp_comm_s / ndr.dp_comm_s, 8.0 / (2 * 7), 0.01);
  EXPECT_EQ(ndr.tp_comm_s, hdr.tp_comm_s);  // TP stays on NVLink
  bool cited = false;
  for (const std::string& a : sharp.assumptions) {
    cited |= a.find("ndr-ib-sharp") != std::string::npos &&
             a.find("reduced in the network") != std::string::npos;
  }
  EXPECT_TRUE(cited);
  run.network = "myrinet";
  auto refused = PlanStep(*Analyze(*NormalizeSpec(s), **FindGpu("a100-sxm-80gb")), run);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("run.network: unknown value \"myrinet\"; allowed: hdr-ib, ndr-ib"));
}

// A collective's latency is NCCL's (src/graph/tuning.cc): a base plus a step per rank, the steps
// inside a node at NVLink's latency and only the node crossings at the network's; it takes the
// faster protocol (LL128 for latency-bound messages). A tiny model's FSDP collectives over 512
// GPUs of 64 nodes are latency alone: LL128's 14 + 448 x 1.9 + 63 x 4 us each, three a layer
// (two gathers, one reduce-scatter), not 511 network latencies.
TEST(ParallelismTest, CollectiveLatencyIsNcclsStepsInsideAndAcrossNodes) {
  ModelSpec s = testing::LlamaLike(64, 1, 1, 4, 256, 256);
  s.seq_length = 64;
  s = *NormalizeSpec(s);
  RunConfig run;
  run.zero_stage = 3;
  run.num_gpus = 512;
  run.global_batch = 512;
  const StepBreakdown b = Plan(s, run);
  const double ll128 = 1e-6 * (14 + 448 * 1.9 + 63 * 4.0);
  EXPECT_NEAR(b.dp_comm_s, 4 * 3 * ll128, 0.05 * 4 * 3 * ll128);
}

// ZeRO-2's sharded gradients cannot accumulate whole: every micro-batch reduce-scatters them, the
// weights are gathered once a step; four micro-batches cost about four reduce-scatters and one
// gather, not one of each.
TEST(ParallelismTest, ZeroTwoReduceScattersEveryMicroBatch) {
  const ModelSpec s = EightLayers70B(8);
  RunConfig run;
  run.zero_stage = 2;
  run.num_gpus = 16;
  run.global_batch = 2;
  const StepBreakdown one = Plan(s, run);
  run.global_batch = 8;
  const StepBreakdown four = Plan(s, run);
  ASSERT_GT(one.dp_comm_s, 0);
  // FP32 gradients (4 bytes) against 16-bit weights (2): (4·4 + 2) / (4 + 2).
  EXPECT_NEAR(four.dp_comm_s / one.dp_comm_s, 18.0 / 6.0, 0.1);
}

// Every run carries the planner's error band for its kind, as checked against the published
// runs (bench/results/planner_bands.txt): dense, expert-parallel MoE (wider), context parallel.
TEST(ParallelismTest, TheStepCarriesThePlannersErrorBandForItsKind) {
  RunConfig run;
  run.num_gpus = 64;
  const StepBreakdown dense = Plan(Llama70B(8, 1), run);
  EXPECT_EQ(dense.band_kind, kBandDense);
  EXPECT_LT(dense.band_p10, 0);
  EXPECT_GT(dense.band_p90, 0);
  EXPECT_GT(dense.band_runs, 50);
  ModelSpec cp = Llama70B(8, 1);
  cp.context_parallel = 2;
  EXPECT_EQ(Plan(*NormalizeSpec(cp), run).band_kind, kBandContextParallel);
  // FSDP (ZeRO stage 3) has its own band; under context parallelism the CP band is given.
  RunConfig fsdp = run;
  fsdp.zero_stage = 3;
  const StepBreakdown sharded = Plan(Llama70B(8, 1), fsdp);
  EXPECT_EQ(sharded.band_kind, kBandFsdp);
  EXPECT_GT(sharded.band_runs, 100);
  // Priced with ideal prefetch, the band of the runs priced so: wider above.
  fsdp.zero3_prefetch = true;
  const StepBreakdown prefetched = Plan(Llama70B(8, 1), fsdp);
  EXPECT_EQ(prefetched.band_kind, kBandFsdpPrefetch);
  EXPECT_GT(prefetched.band_p90, sharded.band_p90);
  fsdp.zero3_prefetch = false;
  EXPECT_EQ(Plan(*NormalizeSpec(cp), fsdp).band_kind, kBandContextParallel);
  fsdp.cp_ring = CpRing::kTorch;
  EXPECT_EQ(Plan(*NormalizeSpec(cp), fsdp).band_kind, kBandContextParallelTorch);
  // PyTorch's ring's band, the widest, wins over expert parallelism's.
  EXPECT_GT(PlannerBandOf(kBandContextParallelTorch).p90, PlannerBandOf(kBandExpertParallel).p90);
  ModelSpec experts = Llama70B(8, 1);
  experts.expert_parallel = 8;
  RunConfig torch_ring;
  torch_ring.cp_ring = CpRing::kTorch;
  EXPECT_EQ(std::string(PlannerBandKind(experts, torch_ring)), kBandExpertParallel);  // no CP
  experts.context_parallel = 2;
  EXPECT_EQ(std::string(PlannerBandKind(experts, torch_ring)), kBandContextParallelTorch);
  const PlannerBand& moe = PlannerBandOf(kBandExpertParallel);
  EXPECT_GT(moe.p90 - moe.p10, dense.band_p90 - dense.band_p10);
  EXPECT_EQ(&PlannerBandOf("unknown"), &PlannerBandOf(kBandDense));
  // The band's runs were on A100s, H100s and H200s: a B200's step carries it unchecked.
  EXPECT_TRUE(dense.band_gpu_checked);
  EXPECT_THAT(dense.band_gpus, ::testing::Contains("h100-sxm"));
  const StepBreakdown b200 = Plan(Llama70B(8, 1), run, "b200");
  EXPECT_FALSE(b200.band_gpu_checked);
  EXPECT_EQ(b200.band_gpus, PlannerBandGpus());
}

// Inside a DGX H100 the NVSwitch reduces all-reduces itself (NCCL's NVLS, ~275 GB/s of algorithm
// bandwidth against the ring's 2·7/8 of the bytes at 360): tensor parallelism without sequence
// parallelism pays bytes/275 GB/s + 25 us per all-reduce, four a layer; A100's NVSwitch cannot,
// so its all-reduces stay rings; and the assumptions say it.
TEST(ParallelismTest, AllReducesInsideAHopperNodeUseNvlinkSharp) {
  RunConfig run;
  run.num_gpus = 8;
  run.global_batch = 1;
  const ModelSpec s = EightLayers70B(8);
  const StepBreakdown h100 = Plan(s, run);
  const double bytes = 8192.0 * 8192 * 2;  // one micro-batch's hidden states, 16-bit
  EXPECT_NEAR(h100.tp_comm_s, 8 * 4 * (bytes / 275e9 + 25e-6), 1e-6);
  EXPECT_TRUE(Says(h100, "NVLink SHARP"));
  const StepBreakdown a100 = Plan(s, run, "a100-sxm-80gb");
  EXPECT_FALSE(Says(a100, "NVLink SHARP"));
  EXPECT_GT(a100.tp_comm_s, 8 * 4 * 2 * 7.0 / 8 * bytes / (300e9 * 0.8));
}

// A run on an older fused kernel is slower only by its attention, and the assumptions name the
// kernel, the paper and the figure its rate comes from on this architecture.
TEST(ParallelismTest, NamedAttentionKernelsChangeOnlyAttentionAndSaySo) {
  RunConfig run;
  run.num_gpus = 32;
  for (const char* gpu : {"a100-sxm-80gb", "h100-sxm"}) {
    ModelSpec triton = Llama70B(8, 4);
    triton.attention = Attention::kFlash1Triton;
    const StepBreakdown today = Plan(Llama70B(8, 4), run, gpu);
    const StepBreakdown older = Plan(triton, run, gpu);
    EXPECT_GT(older.compute_s, today.compute_s) << gpu;
    EXPECT_EQ(older.tp_comm_s, today.tp_comm_s) << gpu;
    const bool hopper = std::string(gpu) == "h100-sxm";
    int named = 0;
    for (const std::string& a : older.assumptions) {
      if (a.find("attention flash1_triton") == std::string::npos) continue;
      ++named;
      EXPECT_THAT(a, HasSubstr("arXiv:2307.08691"));
      EXPECT_THAT(a, HasSubstr(hopper ? "335 TFLOP/s" : "73% of peak"));
      EXPECT_THAT(a, HasSubstr("Triton kernel 1/1.4"));
    }
    EXPECT_EQ(named, 1) << gpu;
    for (const std::string& a : today.assumptions) {
      EXPECT_THAT(a, Not(HasSubstr("FlashAttention-2 paper")));
    }
  }
}

// Pipelines whose stages do not divide the layers take Megatron's uneven split: Llama 3 405B's 126
// layers on 16 stages run 7 on the first and last and 8 on the rest, and the planner prices the
// slowest stage; a split with no layer for an end stage is refused, naming the field.
TEST(ParallelismTest, UnevenStagesPutFewerLayersOnTheFirstAndLast) {
  const PipelineSplit llama3 = SplitLayers(126, 16);
  EXPECT_FALSE(llama3.even);
  EXPECT_TRUE(llama3.valid);
  EXPECT_EQ(llama3.first, 7);
  EXPECT_EQ(llama3.middle, 8);
  EXPECT_EQ(llama3.last, 7);
  EXPECT_EQ(llama3.first + 14 * llama3.middle + llama3.last, 126);
  EXPECT_TRUE(SplitLayers(80, 8).even);
  EXPECT_FALSE(SplitLayers(2, 4).valid);   // no layer for an end stage
  EXPECT_FALSE(SplitLayers(3, 4).valid);
  ModelSpec s = Llama70B(8, 16);
  s.num_layers = 126;
  s = *NormalizeSpec(s);
  RunConfig run;
  run.num_gpus = 256;
  run.global_batch = 64;
  const StepBreakdown uneven = Plan(s, run);
  s.num_layers = 128;  // 8 on every stage
  const StepBreakdown even = Plan(*NormalizeSpec(s), run);
  // The last stage, the slowest with the logits and the loss, holds one layer fewer.
  EXPECT_LT(uneven.compute_s, even.compute_s);
  EXPECT_GT(uneven.compute_s, 0.8 * even.compute_s);
  bool said = false;
  for (const std::string& a : uneven.assumptions) said |= absl::StrContains(a, "7 first, 8 middle, 7 last");
  EXPECT_TRUE(said);
  // Interleaved: the middle stages' 8 layers in two chunks of 4, the bubble half of 1F1B's; a
  // chunk count that does not divide the middle stages' layers is refused.
  run.interleave = 2;
  s.num_layers = 126;
  absl::StatusOr<Analysis> a = Analyze(*NormalizeSpec(s), **FindGpu("h100-sxm"));
  ASSERT_TRUE(a.ok());
  absl::StatusOr<StepBreakdown> interleaved = PlanStep(*a, run);
  ASSERT_TRUE(interleaved.ok()) << interleaved.status();
  EXPECT_NEAR(interleaved->pp_bubble_s, uneven.pp_bubble_s / 2, 1e-9 * uneven.pp_bubble_s);
  run.interleave = 3;
  EXPECT_THAT(PlanStep(*a, run).status().message(), HasSubstr("run.interleave"));
  ModelSpec two = Llama70B(8, 4);
  two.num_layers = 2;
  const absl::StatusOr<ModelSpec> refused = NormalizeSpec(two);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("pipeline_parallel"));
}

// Hybrid sharding (HSDP) on 64 GPUs in groups of 8 (a node): the weights, gradients and optimizer
// state shard over 8 ranks instead of 64, the gathers and reduce-scatters stay on NVLink, and
// each micro-batch's gradient shards are all-reduced over the 8 replica groups across nodes.
TEST(ParallelismTest, HybridShardingShardsWithinTheGroupAndAllReducesAcrossReplicas) {
  const ModelSpec s = EightLayers70B(1, 2048);
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 64;  // 1 micro-batch per rank
  run.zero_stage = 3;
  const StepBreakdown fsdp = Plan(s, run);
  run.fsdp_shard = 8;
  const StepBreakdown hsdp = Plan(s, run);
  EXPECT_NEAR(hsdp.memory.optimizer_bytes, 8 * fsdp.memory.optimizer_bytes, 1);
  EXPECT_NEAR(hsdp.memory.weights_bytes, 8 * fsdp.memory.weights_bytes, 1);
  // Its collectives: FSDP within one node plus the all-reduce across nodes.
  RunConfig node = run;
  node.num_gpus = 8;
  node.global_batch = 8;
  node.fsdp_shard = 0;
  const GpuSpec& h100 = testing::H100();
  absl::StatusOr<Analysis> a = Analyze(s, h100);
  ASSERT_TRUE(a.ok());
  const double params = static_cast<double>(a->params.total_params);
  const Path across = GroupPath(h100, run, 8, 8);
  EXPECT_NEAR(hsdp.dp_comm_s, Plan(s, node).dp_comm_s + AllReduceOver(params * 4 / 8, 8, across),
              1e-9);
  EXPECT_TRUE(Says(hsdp, "hybrid sharding (fsdp_shard 8)"));
  // Groups must tile the data-parallel ranks, under ZeRO-3.
  run.fsdp_shard = 6;
  EXPECT_FALSE(PlanStep(*a, run).ok());
  run.fsdp_shard = 8;
  run.zero_stage = 1;
  EXPECT_THAT(std::string(PlanStep(*a, run).status().message()),
              ::testing::HasSubstr("run.fsdp_shard: must be 0 (shard over all) or divide the 64"));
}

// ZeRO-3 (FSDP) by default exposes every gather and reduce-scatter of every micro-batch, which is
// how the published FSDP runs measure with prefetch on (MosaicML's llm-foundry tables on A100 and
// H100: bench/results/published_runs_*.txt); zero3_prefetch prices the ideal layer-by-layer
// overlap: the collectives hide under the layers' compute but for the first gather and the last
// reduce-scatter of each micro-batch and what a layer's collectives take beyond its compute.
TEST(ParallelismTest, ZeroThreeExposedUnlessPrefetchIsSaidToHide) {
  const ModelSpec s = EightLayers70B(1, 2048);
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 128;  // 2 micro-batches per rank
  run.zero_stage = 3;
  const StepBreakdown exposed = Plan(s, run);
  run.zero3_prefetch = true;
  const StepBreakdown prefetch = Plan(s, run);
  EXPECT_GT(prefetch.dp_comm_s, 0);
  EXPECT_LT(prefetch.dp_comm_s, exposed.dp_comm_s);
  EXPECT_LT(prefetch.step_s, exposed.step_s);
  EXPECT_TRUE(Says(exposed, "every layer's gathers (forward and backward) and reduce-scatter"));
  EXPECT_TRUE(Says(prefetch, "ideal prefetch"));
  // Inside one node (NVLink) the layers' compute hides most of the collectives under prefetch.
  // What FSDP2 copies on the compute stream stays: per micro-batch each gather's output split
  // into the parameters (read and write, 2 gathers of 2 bytes a parameter) and the 16-bit
  // gradients packed into the FP32 reduce-scatter input (2 + 4): 14 bytes a parameter.
  run.num_gpus = 8;
  run.global_batch = 16;  // 2 micro-batches per rank
  const StepBreakdown node = Plan(s, run);
  run.zero3_prefetch = false;
  const StepBreakdown node_exposed = Plan(s, run);
  const GpuSpec& h100 = **FindGpu("h100-sxm");
  const double copies =
      2 * 14 * static_cast<double>(CountParams(s).total_params) / ElementwiseBandwidth(s, h100);
  EXPECT_GT(node.dp_comm_s, copies);
  EXPECT_LT(node.dp_comm_s - copies, node_exposed.dp_comm_s / 2);
}

// FSDP2's reshard_after_forward=False (TorchTitan's default with pipeline stages): each layer's
// weights stay gathered from forward to backward, so the exposed gathers halve (one per layer and
// micro-batch, the reduce-scatters unchanged) and the memory holds the stage's gathered weights;
// the assumptions say which.
TEST(ParallelismTest, KeepingWeightsGatheredAfterForwardHalvesTheGathers) {
  const ModelSpec s = EightLayers70B(1, 2048);
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 128;
  run.zero_stage = 3;
  run.gradient_bytes = 2;  // gathers and reduce-scatters of the same bytes
  const StepBreakdown resharded = Plan(s, run);
  run.reshard_after_forward = false;
  const StepBreakdown kept = Plan(s, run);
  EXPECT_NEAR(kept.dp_comm_s, resharded.dp_comm_s * 2 / 3, 1e-9 * resharded.dp_comm_s);
  EXPECT_GT(kept.memory.gathered_bytes, 3 * resharded.memory.gathered_bytes);  // 8 layers
  EXPECT_TRUE(Says(kept, "kept gathered from its forward to its backward"));
  EXPECT_TRUE(Says(resharded, "gathered again for its backward"));
}

// FSDP2 under PyTorch's pipelining with the weights kept gathered: each stage's gradients build
// up unsharded (FP32, the reduce dtype) over the micro-batches beside the sharded ones, so the
// gradient memory grows by the stage's parameters per tensor-parallel rank times 4 bytes; not
// without pipeline stages, and not where the weights are resharded after forward.
TEST(ParallelismTest, PipelinedFsdpKeepingWeightsGatheredHoldsTheStagesGradientsUnsharded) {
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 256;
  run.zero_stage = 3;
  const ModelSpec piped = *NormalizeSpec(Llama70B(8, 2));
  const StepBreakdown resharded = Plan(piped, run);
  run.reshard_after_forward = false;
  const StepBreakdown kept = Plan(piped, run);
  // The fullest stage's parameters per tensor-parallel rank (its layers and one embedding).
  const ParamCounts p = CountParams(piped);
  const double stage_params =
      (static_cast<double>(p.per_layer_params) * 40 + 8192.0 * 128256) / 8;
  EXPECT_NEAR(kept.memory.gradients_bytes - resharded.memory.gradients_bytes, stage_params * 4,
              0.02 * stage_params * 4);
  EXPECT_TRUE(Says(kept, "gradients also held unsharded"));
  const ModelSpec flat = *NormalizeSpec(Llama70B(8, 1));
  const StepBreakdown flat_kept = Plan(flat, run);
  run.reshard_after_forward = true;
  const StepBreakdown flat_resharded = Plan(flat, run);
  EXPECT_DOUBLE_EQ(flat_kept.memory.gradients_bytes, flat_resharded.memory.gradients_bytes);
}

// Across nodes a collective's ranks that share a node send through as many NICs at once (NCCL
// runs a ring per NIC): FSDP over whole nodes (8 ranks a node) moves its bytes 8 NICs wide, capped
// by NVLink, so two nodes cost about what one does; a data-parallel group of one rank per node
// (t = 8) goes one NIC wide. The pipeline's point-to-point sends stay one NIC's.
TEST(ParallelismTest, CollectivesAcrossNodesUseTheNicsOfTheirRanksInANode) {
  const ModelSpec s = EightLayers70B(1, 2048);
  RunConfig run;
  run.zero_stage = 3;
  run.num_gpus = 8;
  run.global_batch = 8;
  const StepBreakdown one_node = Plan(s, run);
  run.num_gpus = 16;
  run.global_batch = 16;
  const StepBreakdown two_nodes = Plan(s, run);
  ASSERT_GT(one_node.dp_comm_s, 0);
  // NVLink 450 GB/s against 8 × 50 GB/s of NICs, and 15/16 of the bytes instead of 7/8.
  EXPECT_NEAR(two_nodes.dp_comm_s / one_node.dp_comm_s, (450.0 / 400.0) * (15.0 / 16) / (7.0 / 8),
              0.05);
  // One rank per node: the same bytes per rank go through one NIC.
  ModelSpec t8 = Llama70B(8, 1);
  RunConfig dp;
  dp.num_gpus = 16;
  dp.global_batch = 2;
  const StepBreakdown narrow = Plan(t8, dp);
  ModelSpec t4 = Llama70B(4, 1);
  dp.num_gpus = 8;  // the same two-rank data-parallel group, inside one node
  const StepBreakdown inside = Plan(t4, dp);
  ASSERT_GT(inside.dp_comm_s, 0);
  // Per rank t=8 holds half the parameters of t=4: NIC 50 vs NVLink 450 GB/s, half the bytes.
  EXPECT_NEAR(narrow.dp_comm_s / inside.dp_comm_s, 0.5 * 450.0 / 50.0, 0.5);
}

// Context parallelism: each of c ranks runs b·s/c rows through every linear GEMM and 1/c of
// attention's work, the model's FLOPs per micro-batch stay the same, the replica takes c times
// the GPUs, and the gradients reduce over d·c ranks. K and V go around the ring; with a long
// sequence the attention kernels hide the sends, with a short one over the network they do not.
TEST(ParallelismTest, ContextParallelismSplitsTheSequence) {
  ModelSpec s = Llama70B(8, 1);
  s.num_layers = 8;
  s.seq_length = 65536;
  const Analysis one = *Analyze(*NormalizeSpec(s), **FindGpu("h100-sxm"));
  s.context_parallel = 4;
  const Analysis four = *Analyze(*NormalizeSpec(s), **FindGpu("h100-sxm"));
  EXPECT_NEAR(four.flops.model_flops, one.flops.model_flops, 1e-9 * one.flops.model_flops);
  // The kernels' work splits four ways too, within the causal blocks the ring's chunks add on
  // their diagonals (0.2% here).
  EXPECT_NEAR(four.flops.step_flops, one.flops.step_flops / 4, 0.005 * one.flops.step_flops / 4);
  for (const GemmAnalysis& g : four.gemms) {
    if (g.gemm.name == kQkv && g.gemm.pass == Pass::kForward) {
      EXPECT_EQ(g.gemm.shape.m, 65536 / 4);
    }
    if (g.gemm.fused_attention) {
      EXPECT_EQ(g.gemm.count, 8 * 4);  // c ring steps per layer
    }
  }
  RunConfig run;
  run.num_gpus = 64;  // t·c = 32, d = 2
  run.global_batch = 8;
  run.zero_stage = 1;
  const StepBreakdown b = *PlanStep(four, run);
  EXPECT_EQ(b.context_parallel, 4);
  EXPECT_EQ(b.data_parallel, 2);
  EXPECT_EQ(b.gpus, 64);
  EXPECT_NEAR(b.step_s, Sum(b), 1e-9 * b.step_s);
  EXPECT_EQ(b.cp_comm_s, 0);  // 64K tokens: attention hides the ring
  RunConfig flat;
  flat.num_gpus = 16;
  flat.global_batch = 8;
  flat.zero_stage = 1;
  const StepBreakdown f = *PlanStep(one, flat);
  // Same global batch on 4x the GPUs: not slower than a quarter of the time plus communication.
  EXPECT_LT(b.step_s, f.step_s / 2);
  // Activations per GPU fall with c; the optimizer shards over d·c = 8 ranks instead of 2.
  EXPECT_NEAR(b.memory.activations_bytes, f.memory.activations_bytes / 4,
              0.02 * f.memory.activations_bytes);
  EXPECT_NEAR(b.memory.optimizer_bytes, f.memory.optimizer_bytes / 4, 1e-6 * f.memory.optimizer_bytes);

  // A short sequence of full multi-head attention (8 KV heads per rank) over a ring that leaves
  // the node (t·c = 16 > 8): the sends show.
  ModelSpec small = Llama70B(8, 1);
  small.num_layers = 8;
  small.num_kv_heads = 64;
  small.seq_length = 4096;
  small.context_parallel = 2;
  RunConfig two;
  two.num_gpus = 16;
  const StepBreakdown sb = Plan(small, two);
  EXPECT_GT(sb.cp_comm_s, 0);
  EXPECT_NEAR(sb.step_s, Sum(sb), 1e-9 * sb.step_s);
}

// PyTorch's ring (TorchTitan's context_parallel): K and V of every query head (torchtitan repeats
// the KV heads), all-gathered under the first step only, and FP32 gradients sent each step. Over
// a ring across nodes it shows where Transformer Engine's ring of the KV heads is hidden; the
// step carries that ring's own error band and its assumption names it.
TEST(ParallelismTest, PyTorchsRingMovesTheQueryHeadsKAndVAndShowsAcrossNodes) {
  ModelSpec s = Llama70B(8, 1);
  s.num_layers = 8;
  s.seq_length = 131072;
  s.context_parallel = 8;  // t·c = 64: every CP rank in another node
  RunConfig te;
  te.num_gpus = 64;
  te.recompute = Recompute::kFull;
  const StepBreakdown ring_te = Plan(s, te);
  RunConfig torch = te;
  torch.cp_ring = CpRing::kTorch;
  const StepBreakdown ring_torch = Plan(s, torch);
  EXPECT_EQ(ring_te.cp_comm_s, 0);
  EXPECT_GT(ring_torch.cp_comm_s, 0);
  EXPECT_NEAR(ring_torch.step_s, Sum(ring_torch), 1e-9 * ring_torch.step_s);
  EXPECT_EQ(ring_torch.compute_s, ring_te.compute_s);
  EXPECT_EQ(ring_te.band_kind, kBandContextParallel);
  EXPECT_EQ(ring_torch.band_kind, kBandContextParallelTorch);
  EXPECT_GT(ring_torch.band_p10, 0);  // its published runs all measured slower than priced
  EXPECT_TRUE(Says(ring_torch, "PyTorch's ring"));
  // Inside one node the gathers hide under the first step's attention, but the ring's FP32 merges
  // and copies stay on the compute stream: 40.5 bytes an output element a step after the first
  // and 12 once forward (twice under full recomputation), 58.5 and 76 backward.
  ModelSpec node = s;
  node.tensor_parallel = 1;
  node.context_parallel = 8;
  node = *NormalizeSpec(node);
  RunConfig eight = torch;
  eight.num_gpus = 8;
  const StepBreakdown in_node = Plan(node, eight);
  const double out_elements = (131072.0 / 8) * 64 * 128;  // b·(s/c) × heads × value head dim
  const double merges = ((7 * 40.5 + 12) * 2 + 7 * 58.5 + 76) * out_elements * 8 /
                        ElementwiseBandwidth(node, **FindGpu("h100-sxm"));  // 8 layers
  EXPECT_GE(in_node.cp_comm_s, merges * 0.999);
  EXPECT_LT(in_node.cp_comm_s, merges * 1.2);
  // Without context parallelism the knob changes nothing, and says so.
  s.context_parallel = 1;
  const StepBreakdown flat = Plan(s, torch);
  EXPECT_EQ(flat.cp_comm_s, 0);
  EXPECT_TRUE(Says(flat, "cp_ring torch prices context parallelism's ring, and this layout has none"));
  EXPECT_THAT(std::string(ParseCpRing("ulysses").status().message()),
              HasSubstr("allowed: te (the default), torch"));
}

// A model carrying multi-token prediction modules (DeepSeek-V3's) trains them only when the run
// says so; otherwise the answer says how to price them, and a spec cannot carry more than 8.
TEST(ParallelismTest, MtpModulesTheModelCarriesAreNamedUntilTrained) {
  ModelSpec s = Llama70B(8, 1);
  s.num_layers = 8;
  s.mtp_modules = 1;
  RunConfig run;
  run.num_gpus = 8;
  const StepBreakdown untrained = Plan(*NormalizeSpec(s), run);
  EXPECT_TRUE(Says(untrained, "carries 1 multi-token prediction module(s)"));
  EXPECT_TRUE(Says(untrained, "--mtp-layers 1 prices them"));
  run.mtp_layers = 1;
  const StepBreakdown trained = Plan(*NormalizeSpec(s), run);
  EXPECT_FALSE(Says(trained, "carries 1 multi-token prediction module(s)"));
  EXPECT_GT(trained.step_s, untrained.step_s);
  s.mtp_modules = 9;
  EXPECT_THAT(std::string(NormalizeSpec(s).status().message()), HasSubstr("mtp_modules"));
}

TEST(ParallelismTest, ContextParallelismTheSpecCannotHaveIsRefused) {
  ModelSpec s = Llama70B(8, 1);
  s.seq_length = 4096;
  s.context_parallel = 3;  // 4096 is not a multiple of 6
  EXPECT_THAT(std::string(NormalizeSpec(s).status().message()),
              HasSubstr("context_parallel: 2 × context_parallel must divide seq_length"));
  s.context_parallel = 2;
  s.workload = Workload::kDecode;
  EXPECT_THAT(std::string(NormalizeSpec(s).status().message()),
              HasSubstr("context_parallel: must be 1 for decode"));
  s.workload = Workload::kTraining;
  const Analysis a = *Analyze(*NormalizeSpec(s), **FindGpu("h100-sxm"));
  RunConfig run;
  run.num_gpus = 8;  // t·c = 16
  EXPECT_THAT(std::string(PlanStep(a, run).status().message()),
              HasSubstr("tensor_parallel × pipeline_parallel × context_parallel (16)"));
}

// Activation offload keeps two layers' activations on the GPU and the rest in host memory; the
// copies cost only what the layers' compute does not hide, and a plan offloads only when nothing
// faster fits.
TEST(ParallelismTest, ActivationOffloadTradesHostCopiesForMemory) {
  ModelSpec s = Llama70B(8, 1);
  s.num_layers = 16;
  RunConfig run;
  run.num_gpus = 8;
  const StepBreakdown kept = Plan(s, run);
  run.offload_activations = true;
  const StepBreakdown off = Plan(s, run);
  const double per_layer = kept.memory.stored_bytes_per_layer;
  EXPECT_GT(per_layer, 0);
  EXPECT_NEAR(off.memory.offloaded_bytes, 16 * per_layer, 1e-6 * per_layer);
  EXPECT_NEAR(kept.memory.activations_bytes - off.memory.activations_bytes, 14 * per_layer,
              1e-6 * per_layer);
  EXPECT_GE(off.offload_s, 0);
  EXPECT_NEAR(off.step_s, Sum(off), 1e-9 * off.step_s);
  EXPECT_NEAR(off.step_s - off.offload_s, kept.step_s, 1e-9 * kept.step_s);
  // On PCIe 4.0 (A100 80GB SXM), copying 8K tokens' activations of a layer takes longer than
  // the layer's forward: the exposed copy time is > 0. Its bound: both directions in full.
  const StepBreakdown slow = Plan(s, run, "a100-sxm-80gb");
  const double copy = slow.memory.stored_bytes_per_layer / (32e9 * kHostCopyEfficiency);
  EXPECT_GT(slow.offload_s, 0);
  EXPECT_LE(slow.offload_s, 2 * 16 * copy * slow.microbatches * (1 + 1e-9));
  // Planned: one GPU that fits without offload never offloads.
  RunConfig plan;
  plan.num_gpus = 8;
  plan.plan = true;
  EXPECT_FALSE(Plan(s, plan).offload_activations);
  // What goes to the host must fit there too: a DGX H100 has 2 TB for its 8 GPUs.
  EXPECT_DOUBLE_EQ(off.memory.host_capacity_bytes, 250e9);
  EXPECT_TRUE(off.memory.fits);
  // All 80 layers at 32k tokens under ZeRO-3 on 64 GPUs: the GPU's share fits, the host's not.
  ModelSpec deep = s;
  deep.num_layers = 80;
  deep.seq_length = 4 * s.seq_length;
  RunConfig sharded = run;
  sharded.num_gpus = 64;
  sharded.zero_stage = 3;
  const StepBreakdown overflow = Plan(*NormalizeSpec(deep), sharded);
  EXPECT_GT(overflow.memory.offloaded_bytes, 0.9 * 250e9);
  EXPECT_LE(overflow.memory.total_bytes, 0.9 * overflow.memory.capacity_bytes);  // the GPU's fits
  EXPECT_FALSE(overflow.memory.fits);
}

// Korthikanti et al. 2022, Table 5: eight published step times of 22B-1T GPT models on Selene,
// none of them fitted; each reproduced within 10%.
TEST(ParallelismTest, MegatronSeleneRunsWithinTenPercent) {
  for (const MegatronRun& run : kMegatronRuns) {
    for (bool seqsel : {false, true}) {
      const StepBreakdown b =
          Plan(MegatronRunSpec(run), MegatronRunConfig(run, seqsel), "a100-sxm-80gb");
      const double published = seqsel ? run.seqsel_s : run.full_s;
      EXPECT_NEAR(b.step_s / published, 1.0, 0.10) << run.model << (seqsel ? " seqsel" : " full");
    }
  }
}

// Korthikanti et al. 2022, Figure 1: the activation memory of the same runs' first stage, with
// tensor parallelism alone and with sequence parallelism and selective recomputation.
TEST(ParallelismTest, MegatronActivationMemoryWithinTenPercent) {
  for (const MegatronRun& run : kMegatronRuns) {
    for (bool seqsel : {false, true}) {
      const StepBreakdown b = Plan(
          MegatronRunSpec(run), MegatronRunConfig(run, seqsel, /*none=*/!seqsel), "a100-sxm-80gb");
      const double published = seqsel ? run.act_seqsel_gib : run.act_none_gib;
      EXPECT_NEAR(b.memory.activations_bytes / kGiB / published, 1.0, 0.10)
          << run.model << (seqsel ? " seqsel" : " none");
    }
  }
}

// ZeRO shards the optimizer state, then the gradients, then the weights; planning picks the
// fastest layout that fits, and says when none does.
TEST(ParallelismTest, ZeroStagesShardAndThePlanFindsALayoutThatFits) {
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 1024;
  std::vector<MemoryEstimate> m;
  for (int zero = 0; zero <= 3; ++zero) {
    run.zero_stage = zero;
    m.push_back(Plan(Llama70B(8, 4), run).memory);
  }
  EXPECT_NEAR(m[1].optimizer_bytes, m[0].optimizer_bytes / 2, 1);
  EXPECT_NEAR(m[2].gradients_bytes, m[0].gradients_bytes / 2, 1);
  EXPECT_NEAR(m[3].weights_bytes, m[0].weights_bytes / 2, 1);
  run.zero_stage = 0;
  EXPECT_FALSE(Plan(Llama70B(8, 4), run).memory.fits);  // 8K tokens, no recomputation
  run.plan = true;
  const StepBreakdown planned = Plan(Llama70B(8, 4), run);
  EXPECT_TRUE(planned.memory.fits);
  EXPECT_THAT(planned.assumptions.front(), HasSubstr("planned: "));
  // Among the layouts that fit, none is faster.
  int fitting = 0;
  for (const RunConfig& c : CandidateLayouts(Llama70B(8, 4), run)) {
    const StepBreakdown b = Plan(Llama70B(8, 4), c);
    if (!b.memory.fits) continue;
    ++fitting;
    EXPECT_GE(b.step_s, planned.step_s);
  }
  EXPECT_GT(fitting, 1);
  ModelSpec huge = Llama70B(1, 1);  // 70B on one GPU: nothing fits
  run.num_gpus = 1;
  run.global_batch = 1;
  EXPECT_THAT(Plan(huge, run).assumptions.front(), HasSubstr("none of the"));
}

// --plan on a layout a run states (issue 50): whenever that layout fits, the plan is never slower
// than it, and its first assumption says how the given one compares; an interleave whose rounds
// of p micro-batches the batch cannot fill is refused naming the field, not planned from nothing.
TEST(ParallelismTest, ThePlanIsNeverWorseThanTheLayoutAsGiven) {
  const Analysis a = *Analyze(*NormalizeSpec(Llama70B(8, 4)), **FindGpu("h100-sxm"));
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 1024;
  int fitting = 0, kept = 0;
  for (const RunConfig& c : CandidateLayouts(a.spec, run)) {
    const StepBreakdown given = *PlanStep(a, c);
    if (!given.memory.fits) continue;
    ++fitting;
    RunConfig planned_run = c;
    planned_run.plan = true;
    const StepBreakdown planned = *PlanStep(a, planned_run);
    EXPECT_LE(planned.step_s, given.step_s);
    EXPECT_THAT(planned.assumptions.front(), HasSubstr("the layout as given"));
    kept += planned.step_s == given.step_s;
  }
  EXPECT_GT(fitting, 10);
  EXPECT_GE(kept, 1);  // the fastest layout, given, is kept
  run.interleave = 2;
  run.global_batch = 6;  // 3 micro-batches per data-parallel rank on 4 stages
  run.plan = true;
  const absl::StatusOr<StepBreakdown> refused = PlanStep(a, run);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("run.global_batch"));
}

// A layout as given that the estimate puts past the share of the GPU the plan leaves to the model
// (kUsableMemoryFraction) but inside the GPU, where layouts that ran are published: the plan says
// it is faster and may fit, with its estimate; one past the GPU itself gets no such note.
// Llama 3 70B in FP8 on TP 4 x PP 8 with 5 stages per rank, as Megatron-Bridge publishes it.
TEST(ParallelismTest, ThePlanNamesAFasterGivenLayoutPastItsMarginButInsideTheGpu) {
  ModelSpec spec = Llama70B(4, 8);
  spec.dtype = DType::kFp8E4M3;
  const Analysis a = *Analyze(*NormalizeSpec(spec), **FindGpu("h100-sxm"));
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 128;
  run.interleave = 5;
  run.tp_overlap = 1;
  run.overlap_grad_reduce = true;
  int noted = 0, beyond = 0;
  for (const RunConfig& c : CandidateLayouts(a.spec, run)) {
    const StepBreakdown given = *PlanStep(a, c);
    if (given.memory.fits) continue;
    RunConfig planned_run = c;
    planned_run.plan = true;
    const StepBreakdown planned = *PlanStep(a, planned_run);
    const std::string& first = planned.assumptions.front();
    if (given.memory.total_bytes <= given.memory.capacity_bytes &&
        given.step_s < planned.step_s) {
      ++noted;
      EXPECT_THAT(first, HasSubstr("so that one may fit"));
      EXPECT_THAT(first, HasSubstr(absl::StrFormat("estimated at %.1f GiB",
                                                   given.memory.total_bytes / kGiB)));
    } else {
      beyond += given.memory.total_bytes > given.memory.capacity_bytes;
      EXPECT_THAT(first, Not(HasSubstr("may fit")));
    }
  }
  EXPECT_GE(noted, 1);
  EXPECT_GE(beyond, 1);
}

// With pipeline stages and no interleave given, the plan weighs Megatron-Core's virtual stages
// too (divisors of a stage's layers, up to 8, where the micro-batches make whole rounds of p):
// Llama 3 70B on 4 stages of 20 layers picks one above 1, a smaller bubble, and says it; an
// interleave given is kept; without stages there is none to choose.
TEST(ParallelismTest, ThePlanChoosesTheInterleaveWhenNoneIsGiven) {
  const ModelSpec s = Llama70B(8, 4);
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 1024;
  EXPECT_EQ(CandidateInterleaves(s, run), (std::vector<int64_t>{1, 2, 4, 5}));
  run.plan = true;
  const StepBreakdown planned = Plan(s, run);
  EXPECT_GT(planned.interleave, 1);
  EXPECT_THAT(planned.assumptions.front(), HasSubstr("interleaved stages per rank"));
  RunConfig plain = run;
  plain.plan = false;
  EXPECT_LT(planned.pp_bubble_s, Plan(s, plain).pp_bubble_s);
  run.interleave = 2;
  EXPECT_EQ(Plan(s, run).interleave, 2);
  EXPECT_EQ(CandidateInterleaves(Llama70B(8, 1), RunConfig()), (std::vector<int64_t>{1}));
}

// Layer-level activation offload beside pipeline stages or recomputation is priced, and the answer
// says Megatron-Core's cpu_offloading refuses it; alone it is not flagged.
TEST(ParallelismTest, OffloadWhereMegatronRefusesItIsFlagged) {
  RunConfig run;
  run.num_gpus = 64;
  run.global_batch = 1024;
  run.offload_activations = true;
  EXPECT_TRUE(Says(Plan(Llama70B(8, 4), run), "cpu_offloading refuses this run"));
  EXPECT_TRUE(OffloadRunsWith(1, Recompute::kNone, false));
  EXPECT_FALSE(OffloadRunsWith(1, Recompute::kNone, true));
  run.recompute = Recompute::kFull;
  EXPECT_TRUE(Says(Plan(Llama70B(8, 4), run), "cpu_offloading refuses this run"));
  run.recompute = Recompute::kNone;
  EXPECT_FALSE(Says(Plan(Llama70B(8, 1), run), "cpu_offloading refuses"));
}

// A planned run whose model leaves the micro-batch unset plans it too: Megatron-LM's GPT 32B on
// TP 8 over 48 nodes (its H100 weak-scaling table) exposes its FP32 gradient reduction at one
// sequence a micro-batch, four a step; a larger micro-batch hides more of it under the last
// backward, so the plan takes one above 1 and says which it weighed. Only those dividing the
// sequences per data-parallel rank are weighed; a micro-batch given, no plan or no global batch
// leaves it alone.
TEST(ParallelismTest, ThePlanChoosesTheMicroBatchWhenNoneIsGiven) {
  ModelSpec s = testing::LlamaLike(7168, 56, 56, 48, 28672, 131072);
  s.mlp = Mlp::kGelu;
  s.seq_length = 4096;
  s.tensor_parallel = 8;
  s.micro_batch_size = 0;
  RunConfig run;
  run.num_gpus = 384;
  run.global_batch = 192;
  run.overlap_grad_reduce = true;
  run.tp_overlap = 1;
  run.plan = true;
  const GpuSpec& gpu = **FindGpu("h100-sxm");
  const PlannedMicroBatch planned = PlanMicroBatch(s, gpu, run);
  EXPECT_GT(planned.micro_batch, 1) << planned.assumption;
  EXPECT_THAT(planned.assumption, HasSubstr("of 1, 2, 4 ("));  // 4 sequences per rank: not 8
  ModelSpec chosen = s;
  chosen.micro_batch_size = planned.micro_batch;
  ModelSpec one = s;
  one.micro_batch_size = 1;
  EXPECT_LT(Plan(chosen, run).step_s, Plan(one, run).step_s);
  EXPECT_EQ(Plan(chosen, run).micro_batch_size, planned.micro_batch);
  ASSERT_TRUE(planned.step.has_value());  // the chosen micro-batch's step, planned once
  EXPECT_DOUBLE_EQ(planned.step->step_s, Plan(chosen, run).step_s);
  EXPECT_EQ(PlanMicroBatch(one, gpu, run).micro_batch, 0);  // given: kept
  RunConfig unplanned = run;
  unplanned.plan = false;
  EXPECT_EQ(PlanMicroBatch(s, gpu, unplanned).micro_batch, 0);
  RunConfig no_batch = run;
  no_batch.global_batch = 0;
  EXPECT_EQ(PlanMicroBatch(s, gpu, no_batch).micro_batch, 0);
}

// Megatron-Core's --fp8-param-gather: FP8 training keeps the weights in FP8, so the weights take
// half the memory and the distributed optimizer's all-gather of them moves half the bytes (FSDP's
// gathers too); the gradients and the optimizer state do not change. It is refused, naming the
// field, for a BF16 model or without a ZeRO stage to gather.
TEST(ParallelismTest, Fp8ParamGatherHalvesTheWeightsAndTheirGathers) {
  ModelSpec s = EightLayers70B(8);
  s.dtype = DType::kFp8E4M3;
  RunConfig run;
  run.num_gpus = 128;  // d = 16, across nodes
  run.global_batch = 16;
  for (int zero : {1, 3}) {
    run.zero_stage = zero;
    run.fp8_param_gather = false;
    const StepBreakdown bf16 = Plan(s, run);
    run.fp8_param_gather = true;
    const StepBreakdown fp8 = Plan(s, run);
    EXPECT_NEAR(fp8.memory.weights_bytes, bf16.memory.weights_bytes / 2,
                1e-9 * bf16.memory.weights_bytes) << "zero " << zero;
    EXPECT_DOUBLE_EQ(fp8.memory.gradients_bytes, bf16.memory.gradients_bytes);
    EXPECT_DOUBLE_EQ(fp8.memory.optimizer_bytes, bf16.memory.optimizer_bytes);
    EXPECT_LT(fp8.dp_comm_s, bf16.dp_comm_s) << "zero " << zero;
    EXPECT_TRUE(Says(fp8, "all-gathered in FP8, 1 byte each"));
    EXPECT_TRUE(Says(bf16, "all-gathered in BF16"));
  }
  run.zero_stage = 0;
  absl::StatusOr<StepBreakdown> no_zero = PlanStep(*Analyze(s, **FindGpu("h100-sxm")), run);
  ASSERT_FALSE(no_zero.ok());
  EXPECT_THAT(no_zero.status().message(), HasSubstr("run.fp8_param_gather: needs dtype fp8_e4m3"));
  // A planned layout chooses the ZeRO stage: FP8 gathers where it has one.
  run.plan = true;
  const StepBreakdown planned = Plan(s, run);
  EXPECT_EQ(Says(planned, "all-gathered in FP8, 1 byte each"), planned.zero_stage >= 1);
  run.plan = false;
  run.zero_stage = 1;
  s.dtype = DType::kBf16;
  EXPECT_THAT(PlanStep(*Analyze(s, **FindGpu("h100-sxm")), run).status().message(),
              HasSubstr("got dtype bf16"));
}

// PyTorch's eager loss moves 26 more bytes a logit each micro-batch on the last stage and holds
// 8 more in memory; the answer says which loss it priced.
TEST(ParallelismTest, AnEagerLossCostsItsTrafficAndMemory) {
  ModelSpec s = EightLayers70B(1);
  RunConfig run;
  run.num_gpus = 8;
  run.global_batch = 16;
  const StepBreakdown fused = Plan(s, run);
  run.loss = LossKernel::kEager;
  const StepBreakdown eager = Plan(s, run);
  const double m = static_cast<double>(fused.microbatches);
  const ModelSpec n = *NormalizeSpec(s);
  EXPECT_NEAR(eager.compute_s - fused.compute_s, m * EagerLossExtraTimeS(n, **FindGpu("h100-sxm")),
              1e-9 * fused.compute_s);
  const double logits = static_cast<double>(n.seq_length * n.micro_batch_size) *
                        static_cast<double>(Derive(n).vocab_per_rank);
  EXPECT_NEAR(eager.memory.total_bytes - fused.memory.total_bytes, 8 * logits, 1.0);
  EXPECT_TRUE(Says(fused, "the loss fused"));
  EXPECT_TRUE(Says(eager, "eager cross_entropy over an FP32 copy"));
}

// Tensorwise FP8 (TE's recipes, torchao's tensorwise) gathers its FP8 copies over tensor
// parallelism; torchao's rowwise runs TP in 16 bits and pays its backward's casts and rescales.
TEST(ParallelismTest, Fp8RecipesSetTheTensorParallelGathersAndTheRowwiseCasts) {
  ModelSpec s = EightLayers70B(8);
  RunConfig run;
  run.num_gpus = 8;
  run.sequence_parallel = true;
  const StepBreakdown bf16 = Plan(s, run);
  s.dtype = DType::kFp8E4M3;
  const StepBreakdown tensorwise = Plan(s, run);
  run.fp8_recipe = Fp8Recipe::kRowwise;
  const StepBreakdown rowwise = Plan(s, run);
  // Rowwise: the collectives as BF16's; tensorwise: the 6 all-gathers at half the bytes, the 4
  // reduce-scatters as they were.
  EXPECT_DOUBLE_EQ(rowwise.tp_comm_s, bf16.tp_comm_s);
  EXPECT_LT(tensorwise.tp_comm_s, 0.8 * bf16.tp_comm_s);
  EXPECT_GT(tensorwise.tp_comm_s, 0.5 * bf16.tp_comm_s);
  EXPECT_GT(rowwise.compute_s, tensorwise.compute_s);
  EXPECT_LT(rowwise.compute_s, bf16.compute_s);
  EXPECT_TRUE(Says(tensorwise, "all-gathers move the FP8 copies"));
  EXPECT_TRUE(Says(rowwise, "with rowwise scales (--fp8-recipe rowwise"));
  EXPECT_FALSE(Says(rowwise, "Transformer Engine"));
  EXPECT_TRUE(Says(rowwise, "collectives in BF16"));
  // Without sequence parallelism the all-reduces stay 16-bit under either recipe.
  run.sequence_parallel = false;
  run.fp8_recipe = Fp8Recipe::kTensorwise;
  const double all_reduce = Plan(s, run).tp_comm_s;
  run.fp8_recipe = Fp8Recipe::kRowwise;
  EXPECT_DOUBLE_EQ(Plan(s, run).tp_comm_s, all_reduce);
  // BF16 steps: the recipe changes nothing, and the answer says so.
  s.dtype = DType::kBf16;
  const StepBreakdown bf16_rowwise = Plan(s, run);
  run.fp8_recipe = Fp8Recipe::kTensorwise;
  EXPECT_DOUBLE_EQ(bf16_rowwise.compute_s, Plan(s, run).compute_s);
  run.fp8_recipe = Fp8Recipe::kRowwise;
  EXPECT_TRUE(Says(bf16_rowwise, "fp8_recipe rowwise changes nothing here"));
  // FSDP's float8 all-gather is tensorwise only.
  s.dtype = DType::kFp8E4M3;
  run.zero_stage = 1;
  run.fp8_param_gather = true;
  EXPECT_THAT(PlanStep(*Analyze(s, **FindGpu("h100-sxm")), run).status().message(),
              HasSubstr("run.fp8_recipe: rowwise with fp8_param_gather"));
  EXPECT_EQ(*ParseFp8Recipe(""), Fp8Recipe::kTensorwise);
  EXPECT_EQ(*ParseFp8Recipe("rowwise"), Fp8Recipe::kRowwise);
  EXPECT_THAT(ParseFp8Recipe("blockwise").status().message(),
              HasSubstr("allowed: tensorwise (the default), rowwise"));
}

}  // namespace
}  // namespace wavecrest
