// The emulating worker's price of a layer program against the planner's sum of parts: where they
// agree (the same GEMMs and attention kernels) and where the gap comes from (MoE routing, the
// router, dispatch and combine).
#include "core/layer_emulation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/cost_model.h"
#include "tests/core/test_specs.h"

namespace wavecrest {
namespace {

using testing::H100;

LayerEmulation Emulate(const LayerKey& key) {
  absl::StatusOr<LayerProgram> p = PlanLayerProgram(key);
  EXPECT_TRUE(p.ok()) << p.status();
  return EmulateLayerProgram(H100(), key, *p);
}

TEST(LayerEmulationTest, DenseLayerRunsThePlannersKernels) {
  ModelSpec s = testing::LlamaLike(4096, 32, 8, 32, 14336, 128256);
  s.seq_length = 4096;
  const LayerKey key = *MakeLayerKey(LayerKind::kTransformerLayer, *NormalizeSpec(s));
  const LayerEmulation e = Emulate(key);
  const LayerPrediction planner = PredictLayer(H100(), key);
  // GEMMs and fused attention: the same kernels, priced the same.
  EXPECT_NEAR(e.gemm_time_s + e.attention_time_s, planner.gemm_time_s, 1e-12);
  EXPECT_DOUBLE_EQ(e.flops, planner.flops);
  // Elementwise: each kernel's bytes at the catalog's elementwise bandwidth plus a launch.
  const absl::StatusOr<LayerProgram> p = PlanLayerProgram(key);
  const CostModelParams& mp = H100().Model(DType::kBf16);
  const double bw = H100().memory_bandwidth_bytes_per_s * mp.elementwise_memory_efficiency;
  double elementwise = 0;
  for (const LayerOp& op : p->ops) {
    const bool kernel_of_bytes = op.kind != LayerOpKind::kGemm &&
                                 op.kind != LayerOpKind::kFusedAttention &&
                                 op.kind != LayerOpKind::kFusedAttentionBackward;
    if (kernel_of_bytes) elementwise += mp.launch_s + LayerOpBytes(*p, op) / bw;
  }
  EXPECT_NEAR(e.elementwise_time_s, elementwise, 1e-15);
  EXPECT_GT(e.elementwise_time_s, 0);
  EXPECT_NEAR(e.time_s, e.gemm_time_s + e.attention_time_s + e.elementwise_time_s, 1e-15);
  EXPECT_LT(e.band_p10, 0);
  EXPECT_GT(e.band_p90, 0);
}

// A mixture of 128 narrow experts, 8 per token.
ModelSpec FineGrainedMoe() {
  ModelSpec s = testing::LlamaLike(2048, 32, 4, 4, 768, 1000);
  s.seq_length = 4096;
  s.num_experts = 128;
  s.experts_per_token = 8;
  return *NormalizeSpec(s);
}

// The planner's MoE layer against its program: the gap is the grouped experts' per-expert GEMMs
// against one batched GEMM, and the routing kernels the planner's estimate leaves out.
TEST(LayerEmulationTest, MoeGapIsGroupedExpertsAndRouting) {
  const ModelSpec m = FineGrainedMoe();
  const LayerKey key = *MakeLayerKey(LayerKind::kTransformerLayer, m);
  const LayerEmulation e = Emulate(key);
  const LayerPrediction planner = PredictLayer(H100(), key);
  double batched = 0, grouped = 0;
  for (const Gemm& g : LayerGemms(key)) {
    if (g.shape.batch == 128) batched += PredictGemm(H100(), g.key()).time_s;
  }
  const absl::StatusOr<LayerProgram> p = PlanLayerProgram(key);
  for (const LayerOp& op : p->ops) {
    if (op.kind != LayerOpKind::kGroupedGemm) continue;
    for (size_t j = 0; j < op.groups.size(); ++j) {
      grouped += PredictGemm(H100(), GroupGemm(op, j)).time_s;
    }
  }
  EXPECT_GT(batched, 0);
  // The rest of the GEMMs and the attention agree kernel for kernel.
  EXPECT_NEAR(e.gemm_time_s + e.attention_time_s - grouped, planner.gemm_time_s - batched,
              1e-9 * planner.gemm_time_s);
  // The gap, as a number: the program is slower than the planner's price.
  const double gap = planner.time_s / e.time_s - 1;
  EXPECT_LT(gap, 0);
  EXPECT_NEAR(e.time_s - planner.time_s,
              (grouped - batched) + (e.elementwise_time_s - planner.elementwise_time_s),
              1e-9 * e.time_s);
  // Uneven routing: the planner's price does not move, the program's does. Under expert
  // parallelism (8 ranks of 16 experts) the rank holding the busiest experts runs more rows.
  ModelSpec ep = m;
  ep.expert_parallel = 8;
  ep = *NormalizeSpec(ep);
  const LayerKey balanced_ep = *MakeLayerKey(LayerKind::kTransformerLayer, ep);
  const LayerKey skewed_ep =
      *MakeLayerKey(LayerKind::kTransformerLayer, ep, DefaultRole(ep), MoeRouting{1.2, {}});
  EXPECT_DOUBLE_EQ(PredictLayer(H100(), skewed_ep).time_s, PredictLayer(H100(), balanced_ep).time_s);
  EXPECT_GT(Emulate(skewed_ep).time_s, 1.5 * Emulate(balanced_ep).time_s);
  // On one rank the same copies run in any split; the program's price moves with it.
  const LayerKey skewed =
      *MakeLayerKey(LayerKind::kTransformerLayer, m, DefaultRole(m), MoeRouting{1.2, {}});
  EXPECT_DOUBLE_EQ(PredictLayer(H100(), skewed).time_s, planner.time_s);
  EXPECT_NE(Emulate(skewed).time_s, e.time_s);
}

// Long-context attention: the program runs the planner's fused kernels (local and global,
// s = 32768), so the two agree; the gap of a whole layer is its elementwise kernels only.
TEST(LayerEmulationTest, LongContextAttentionAgreesWithThePlanner) {
  ModelSpec s = testing::LlamaLike(4096, 32, 8, 32, 14336, 32000);
  s.seq_length = 32768;
  s.sliding_window = 4096;
  s.sliding_window_layers = 16;
  absl::StatusOr<std::vector<LayerUse>> stack = LayerStackOf(*NormalizeSpec(s));
  ASSERT_TRUE(stack.ok());
  int attention = 0;
  for (const LayerUse& u : *stack) {
    const LayerEmulation e = Emulate(u.key);
    const LayerPrediction planner = PredictLayer(H100(), u.key);
    if (u.key.kind == LayerKind::kFusedAttention) {
      ++attention;
      EXPECT_NEAR(e.time_s, planner.time_s, 1e-12 * planner.time_s) << LayerKeyString(u.key);
      EXPECT_EQ(e.elementwise_time_s, 0);
    } else {
      EXPECT_NEAR(e.gemm_time_s + e.attention_time_s, planner.gemm_time_s,
                  1e-9 * planner.gemm_time_s);
    }
  }
  EXPECT_EQ(attention, 2);  // local and global
}

}  // namespace
}  // namespace wavecrest
